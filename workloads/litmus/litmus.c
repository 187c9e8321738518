/* litmus: two CPUs run a memory-model litmus test over and over and count
 * its outcomes, so that a test can check which outcomes a memory model
 * allows (docs/TIMING.md). The shapes are the classic ones (as in the
 * herd/litmus collections and the Intel SDM's section 8.2.3 examples):
 *
 *   SB (store buffering)      MP (message passing)     LB (load buffering)
 *   CPU 0      CPU 1          CPU 0        CPU 1       CPU 0      CPU 1
 *   x = 1      y = 1          data = 1     r0 = flag   r0 = x     r1 = y
 *   [fence]    [fence]        [fence]      [fence]     [fence]    [fence]
 *   r0 = y     r1 = x         flag = 1     r1 = data   y = 1      x = 1
 *
 *   R                         2+2W
 *   CPU 0      CPU 1          CPU 0        CPU 1
 *   x = 1      y = 2          x = 1        y = 1
 *   [fence]    [fence]        [fence]      [fence]
 *   y = 1      r1 = x         y = 2        x = 2
 *
 * SB's r0 = r1 = 0 is the store buffer's outcome: x86-TSO and RVWMO
 * allow it, SC does not, and neither does any model with the fences; so
 * is R's "y ended 2 and r1 = 0". MP's r0 = 1, r1 = 0 is allowed by RVWMO
 * without fences only, and so is 2+2W's "x ended 1 and y ended 1". LB's
 * r0 = r1 = 1 needs loads to be performed after later stores, which TSO
 * forbids and an in-order core never does.
 *
 * Every round uses fresh lines for the shared locations (in memory, in no
 * cache), CPU 0 has just written `flag` (its line is modified in CPU
 * 0's cache, as a flag a producer keeps reusing is), and each CPU waits a
 * pseudo-random 0-31 loop iterations before its part, so the rounds
 * interleave in many ways. A barrier (an atomic counter) separates rounds.
 *
 * The host sets litmus_shape (0 SB, 1 MP, 2 LB, 3 R, 4 2+2W), litmus_fence (0/1) and
 * litmus_rounds before the run; CPU 0 prints
 *   litmus: <shape> fence <0|1>: 00=<n> 01=<n> 10=<n> 11=<n>
 * with the count of each outcome (the two bits above) and keeps them in
 * litmus_counts. */
#include "libguest.h"
#include "two_cpu.h"

volatile unsigned two_cpu_booted __attribute__((section(".data"))) = 0;
/* In .data, not .bss: CPU 0 clears .bss, and the host sets these first. */
volatile unsigned long litmus_shape __attribute__((section(".data"))) = 0;
volatile unsigned long litmus_fence __attribute__((section(".data"))) = 0;
volatile unsigned long litmus_rounds __attribute__((section(".data"))) = 500;
volatile unsigned long litmus_counts[4];

#define kMaxRounds 4096
#define kLine 64
/* One line per location per round, x (or data) and y (or flag), in RAM no
 * one has touched (past the stacks, not .bss, which boot clears through
 * the caches): each is in memory, not in any cache, when its round comes. */
extern char __stack_top[];
static char *line_a(unsigned long i) {
  const unsigned long base = ((unsigned long)__stack_top + (64ul << 10) + (1ul << 20) - 1) & ~((1ul << 20) - 1);
  return (char *)(base + i * kLine);
}
static char *line_b(unsigned long i) { return line_a(kMaxRounds + i); }
static volatile unsigned long result1[kMaxRounds];
static const char *const kShapes[] = {"SB", "MP", "LB", "R", "2+2W"};


static void full_fence(void) {
#if defined(__riscv)
  __asm__ volatile("fence rw, rw" ::: "memory");
#else
  __asm__ volatile("mfence" ::: "memory");
#endif
}

static void delay(unsigned long n) {
  for (unsigned long k = 0; k < n; k++) __asm__ volatile("" ::: "memory");
}

int two_cpu_main(unsigned cpu) {
  const unsigned long shape = litmus_shape, fence = litmus_fence;
  unsigned long rounds = litmus_rounds;
  if (rounds > kMaxRounds) rounds = kMaxRounds;
  unsigned long sense = 0, rng = cpu ? 0x2545f4914f6cdd1dul : 0x9e3779b97f4a7c15ul;
  for (unsigned long i = 0; i < rounds; i++) {
    volatile unsigned long *a = (volatile unsigned long *)line_a(i);
    volatile unsigned long *b = (volatile unsigned long *)line_b(i);
    if (shape == 1 && cpu == 0) *b = 0; /* flag: modified in CPU 0's cache */
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    two_cpu_barrier(&sense);
    delay(rng & 31);
    unsigned long r = 0;
    if (shape == 0) { /* SB */
      if (cpu == 0) {
        *a = 1;
        if (fence) full_fence();
        r = *b;
      } else {
        *b = 1;
        if (fence) full_fence();
        r = *a;
      }
    } else if (shape == 1) { /* MP: a = data, b = flag */
      if (cpu == 0) {
        *a = 1;
        if (fence) full_fence();
        *b = 1;
      } else {
        const unsigned long f = *b;
        if (fence) full_fence();
        const unsigned long d = *a;
        r = (f << 1) | d;
      }
    } else if (shape == 2) { /* LB */
      if (cpu == 0) {
        r = *a;
        if (fence) full_fence();
        *b = 1;
      } else {
        r = *b;
        if (fence) full_fence();
        *a = 1;
      }
    } else if (shape == 3) { /* R */
      if (cpu == 0) {
        *a = 1;
        if (fence) full_fence();
        *b = 1;
      } else {
        *b = 2;
        if (fence) full_fence();
        r = *a;
      }
    } else { /* 2+2W */
      if (cpu == 0) {
        *a = 1;
        if (fence) full_fence();
        *b = 2;
      } else {
        *b = 1;
        if (fence) full_fence();
        *a = 2;
      }
    }
    if (cpu == 1) result1[i] = r;
    two_cpu_barrier(&sense);
    if (cpu == 0) {
      /* SB, LB: (CPU 0's r0, CPU 1's r1); MP: CPU 1's (flag, data); R:
       * (b ended 2, CPU 1's r1); 2+2W: (a ended 1, b ended 1). */
      const unsigned long v = result1[i];
      unsigned long o;
      if (shape == 0 || shape == 2) o = ((r & 1) << 1) | (v & 1);
      else if (shape == 1) o = v & 3;
      else if (shape == 3) o = ((unsigned long)(*b == 2) << 1) | (v & 1);
      else o = ((unsigned long)(*a == 1) << 1) | (unsigned long)(*b == 1);
      litmus_counts[o]++;
    }
  }
  if (cpu == 0)
    printf("litmus: %s fence %lu: 00=%lu 01=%lu 10=%lu 11=%lu\n", kShapes[shape > 4 ? 4 : shape], fence, litmus_counts[0],
           litmus_counts[1], litmus_counts[2], litmus_counts[3]);
  return 0;
}
