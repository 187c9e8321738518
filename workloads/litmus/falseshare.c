/* falseshare: two CPUs each add 1 to a counter of their own, N times with
 * an atomic add, first with both counters in one cache line (false
 * sharing: every add must take the line from the other CPU), then with
 * each counter in a line of its own. CPU 0 times each phase with the cycle
 * counter; CPU 1 runs the same loops. Printed by CPU 0:
 *
 *   falseshare: same line <centicycles per add> own lines <centicycles per add>
 *
 * The difference is what one line transfer between the two CPUs' caches
 * costs (tests/memory_timing_test.cpp compares it with the machine
 * profile's transfer cost). */
#include "libguest.h"
#include "two_cpu.h"

volatile unsigned two_cpu_booted __attribute__((section(".data"))) = 0;
volatile unsigned long falseshare_adds __attribute__((section(".data"))) = 2000;

static unsigned long shared_line[8] __attribute__((aligned(64)));    /* [0] CPU 0's, [1] CPU 1's */
static unsigned long own_lines[2][8] __attribute__((aligned(64)));   /* a line each */

static unsigned long run(unsigned long *counter, unsigned long n, unsigned long *sense) {
  two_cpu_barrier(sense);
  const unsigned long t0 = guest_cycles();
  for (unsigned long i = 0; i < n; i++) __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
  const unsigned long t1 = guest_cycles();
  two_cpu_barrier(sense);
  return (t1 - t0) * 100 / n;
}

int two_cpu_main(unsigned cpu) {
  if (cpu > 1) return 0; /* two CPUs; others park */
  const unsigned long n = falseshare_adds;
  unsigned long sense = 0;
  const unsigned long same = run(&shared_line[cpu], n, &sense);
  const unsigned long own = run(&own_lines[cpu][0], n, &sense);
  if (cpu != 0) return 0;
  if (shared_line[0] != n || own_lines[0][0] != n) return 1;
  printf("falseshare: same line %lu own lines %lu\n", same, own);
  return 0;
}
