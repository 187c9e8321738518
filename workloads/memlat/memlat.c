/* memlat: the memory hierarchy's load latency as a program sees it, in the
 * manner of lmbench's lat_mem_rd (McVoy and Staelin, "lmbench: Portable
 * Tools for Performance Analysis", USENIX 1996): a chain of pointers, one
 * per 64-byte line, through a working set of each size from 4 KiB up to
 * memlat_max_ws, is followed load after load, each load's address the
 * previous load's result, so no two loads overlap and the time per load is
 * the latency of wherever the lines are. Portable C (RV64 and x86-64).
 *
 * The chain visits the lines in a pseudo-random order (a single cycle made
 * with Sattolo's algorithm), as lat_mem_rd's random mode does, so that no
 * level is helped by an access pattern. Each size is walked once to warm
 * the caches, then timed with the cycle counter (RV64 rdcycle, x86 rdtsc)
 * over at least kMinLoads loads, 100 loads per loop iteration (lmbench's
 * HUNDRED), so the loop's own instructions add under 0.05 cycles a load.
 *
 * One line per size on the console:
 *   memlat: <bytes> bytes <cycles*100 / load> centicycles/load
 * The host may lower or raise memlat_max_ws before the run (the buffer
 * starts at the first MiB boundary 64 KiB past the stacks and must fit in
 * RAM). */
#include "libguest.h"

/* Largest working set, bytes (a power of two). */
volatile unsigned long memlat_max_ws = 32ul << 20;
/* Loads timed per size, at least. */
#define kMinLoads 20000ul
#define kLine 64ul

extern char __stack_top[];

/* xorshift64: the permutation's random numbers (fixed seed). */
static unsigned long rng = 0x9e3779b97f4a7c15ul;
static unsigned long next_random(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* Links the `lines` lines at `buf` into one random cycle; returns its start. */
static void **build_chain(char *buf, unsigned long lines, unsigned long *order) {
  for (unsigned long i = 0; i < lines; i++) order[i] = i;
  /* Sattolo: a uniformly random cyclic permutation. */
  for (unsigned long i = lines - 1; i > 0; i--) {
    const unsigned long j = next_random() % i;
    const unsigned long t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  for (unsigned long i = 0; i < lines; i++) {
    void **from = (void **)(buf + order[i] * kLine);
    *from = buf + order[(i + 1) % lines] * kLine;
  }
  return (void **)(buf + order[0] * kLine);
}

#define CHASE1 p = (void **)*p;
#define CHASE10 CHASE1 CHASE1 CHASE1 CHASE1 CHASE1 CHASE1 CHASE1 CHASE1 CHASE1 CHASE1
#define CHASE100 CHASE10 CHASE10 CHASE10 CHASE10 CHASE10 CHASE10 CHASE10 CHASE10 CHASE10 CHASE10

/* Follows the chain 100 * rounds times; returns where it ended (so the
 * compiler keeps every load). */
static __attribute__((noinline)) void **chase(void **p, unsigned long rounds) {
  for (unsigned long r = 0; r < rounds; r++) {
    CHASE100
  }
  return p;
}

int main(void) {
  const unsigned long max_ws = memlat_max_ws;
  char *buf = (char *)(((unsigned long)__stack_top + (64ul << 10) + (1ul << 20) - 1) & ~((1ul << 20) - 1));
  /* The permutation's scratch array sits after the largest working set. */
  unsigned long *order = (unsigned long *)(buf + max_ws);
  void **sink = 0;
  for (unsigned long ws = 4096; ws <= max_ws; ws *= 2) {
    const unsigned long lines = ws / kLine;
    void **p = build_chain(buf, lines, order);
    unsigned long loads = lines > kMinLoads ? lines : kMinLoads;
    const unsigned long rounds = (loads + 99) / 100;
    p = chase(p, (lines + 99) / 100); /* warm: every line once */
    const unsigned long t0 = guest_cycles();
    p = chase(p, rounds);
    const unsigned long t1 = guest_cycles();
    sink = p;
    printf("memlat: %lu bytes %lu centicycles/load\n", ws, (t1 - t0) * 100 / (rounds * 100));
  }
  return sink == 0;  /* never: keeps the last chase */
}
