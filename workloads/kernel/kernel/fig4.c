/* The 2006 OLS paper's Figure 4 microbenchmark (kernel_fig4 images,
 * CONFIG_FIG4): "drives CPUs to a rendezvous point through an IPI and the
 * CPUs are made to spin in a loop calling a routine with a kprobe
 * registered on it", 65,535 calls per CPU. Portable.
 *
 * After boot (CPU 0 releases the others with the boot IPI), every CPU
 * counts itself in fig4_arrived and waits; CPU 0 waits until all have
 * arrived, then releases them together (a release store of fig4_go and an
 * IPI to each waiting CPU). Each CPU then calls fig4_target() fig4_calls
 * times, folding the results into a sum as probe_bench does (no call can
 * be optimised away, each depends on the one before), stores its sum and
 * counts itself in fig4_done; the last CPU to finish IPIs CPU 0. CPU 0
 * checks that every CPU computed the same sum, prints it and powers off
 * with status 0, so the run's cycle count is the benchmark's time. No
 * timer tick and no threads: nothing but the loop runs once released. */
#ifdef CONFIG_FIG4
#include "arch/arch.h"
#include "kernel/atomic.h"
#include "kernel/compiler.h"
#include "kernel/kprobes.h"
#include "kernel/percpu.h"
#include "kernel/printk.h"
#include "kernel/sched.h"

#ifndef FIG4_CALLS
#error "FIG4_CALLS (calls per CPU) comes from the build"
#endif

/* Calls per CPU, read once by each CPU after the rendezvous; the host may
 * overwrite it before the run (tests use smaller counts). In .data. */
volatile unsigned long fig4_calls = FIG4_CALLS;
/* Each CPU's final sum (checked by CPU 0). */
unsigned long fig4_sums[CONFIG_MAX_CPUS];

static atomic_t fig4_arrived, fig4_done;
static unsigned fig4_go;

/* The probed routine: a real out-of-line function with its own symbol
 * (noinline, noclone, used), the same body as probe_bench's bench_target. */
__noinline_probe unsigned long fig4_target(unsigned long a, unsigned long b) {
  return ((a << 3) ^ (b >> 5)) + (a | 1) - (b & 0xff);
}

/* Waits with interrupts disabled until *flag (acquire) reaches `value`;
 * an IPI ends each wait (arch_cpu_idle loses no wakeup). */
static void wait_for(const atomic_t *counter, const unsigned *flag, int value) {
  arch_local_irq_disable();
  for (;;) {
    if (counter ? atomic_read_acquire(counter) >= value : smp_load_acquire(flag) == (unsigned)value) break;
    arch_cpu_idle();
  }
}

__noreturn void fig4_run(unsigned cpu) {
  atomic_add_return(&fig4_arrived, 1);
  if (cpu == 0) {
    /* The others IPI nobody on arrival: CPU 0 polls (it arrives first
     * almost always, and the others need only a few instructions). */
    while (atomic_read_acquire(&fig4_arrived) < (int)nr_cpus) arch_cpu_relax();
    smp_store_release(&fig4_go, 1);
    for (unsigned c = 1; c < nr_cpus; c++) smp_send_ipi(c, IPI_WAKEUP);
  } else {
    wait_for(NULL, &fig4_go, 1);
  }

  const unsigned long n = fig4_calls;
  unsigned long acc = 0;
  for (unsigned long i = 0; i < n; i++) acc += fig4_target(i, acc);
  fig4_sums[cpu] = acc;

  int done = atomic_add_return(&fig4_done, 1);
  if (cpu != 0) {
    if (done == (int)nr_cpus) smp_send_ipi(0, IPI_WAKEUP);
    arch_local_irq_disable();
    arch_halt();
  }
  wait_for(&fig4_done, NULL, (int)nr_cpus);
  for (unsigned c = 1; c < nr_cpus; c++)
    if (fig4_sums[c] != acc) panic("fig4: cpu %u computed %lx, cpu 0 %lx", c, fig4_sums[c], acc);
  printk("fig4: %u cpus x %lu calls of fig4_target, result %016lx", nr_cpus, n, acc);
  arch_poweroff(0);
}
#endif
