/* litmus: two to four CPUs run a memory-model litmus test over and over
 * and count its outcomes, so that a test can check which outcomes a memory
 * model allows (docs/TIMING.md). The shapes are the classic ones (as in the
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
 *   S                         WRC (3 CPUs)
 *   CPU 0      CPU 1          CPU 0    CPU 1       CPU 2
 *   x = 2      r0 = y         x = 1    r0 = x      r1 = y
 *   [fence]    [fence]                 [fence]     [fence]
 *   y = 1      x = 1                   y = 1       r2 = x
 *
 *   IRIW (4 CPUs)                          MP-fetch (a patched instruction)
 *   CPU 0   CPU 1   CPU 2      CPU 3       CPU 0            CPU 1
 *   x = 1   y = 1   r0 = x     r2 = y      patch fn         r0 = flag
 *                   [fence]    [fence]     fence            [fence.i / cpuid]
 *                   r1 = y     r3 = x      flag = 1         r1 = fn()
 *
 * SB's r0 = r1 = 0 is the store buffer's outcome: x86-TSO and RVWMO
 * allow it, SC does not, and neither does any model with the fences; so
 * is R's "y ended 2 and r1 = 0". MP's r0 = 1, r1 = 0 is allowed by RVWMO
 * without fences only, and so is 2+2W's "x ended 1 and y ended 1". LB's
 * r0 = r1 = 1 needs loads to be performed after later stores, which TSO
 * forbids and an in-order core never does. S's "r0 = 1 and x ended 2"
 * needs CPU 0's stores to become visible out of order (RVWMO without the
 * fence only). WRC's r0 = r1 = 1, r2 = 0 and IRIW's two readers seeing
 * the two writes in opposite orders break multi-copy atomicity, which
 * x86-TSO and RVWMO both keep (RVWMO with the fences; the in-order core
 * does not reorder its loads anyway). MP-fetch's "flag seen, old code"
 * is what a CPU that does not synchronise its instruction fetch may run:
 * RISC-V requires fence.i on the fetching hart, x86 a serialising
 * instruction (SDM vol. 3A §8.1.3); with them it is forbidden.
 *
 * Every round uses fresh lines for the shared locations (in memory, in no
 * cache), CPU 0 has just written `flag` (its line is modified in CPU
 * 0's cache, as a flag a producer keeps reusing is), and each CPU waits a
 * pseudo-random 0-31 loop iterations before its part, so the rounds
 * interleave in many ways (WRC's and IRIW's readers up to 255). A barrier
 * (an atomic counter) separates rounds.
 *
 * The host sets litmus_shape (0 SB, 1 MP, 2 LB, 3 R, 4 2+2W, 5 S, 6 WRC,
 * 7 IRIW, 8 MP-fetch), litmus_fence (0/1) and litmus_rounds before the
 * run, and runs it on at least as many CPUs as the shape has (the others
 * return at once); CPU 0 prints
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
static volatile unsigned long result2[kMaxRounds], result3[kMaxRounds];
static const char *const kShapes[] = {"SB", "MP", "LB", "R", "2+2W", "S", "WRC", "IRIW", "MP-fetch"};
static const unsigned long kShapeCpus[] = {2, 2, 2, 2, 2, 2, 3, 4, 2};
#define kShapeCount 9

/* MP-fetch's function: returns the value in its instruction's immediate,
 * which CPU 0 rewrites every round (in .text; nothing protects code). */
extern int litmus_fn(void);
#if defined(__riscv)
__asm__(".section .text\n.balign 64\n.globl litmus_fn\nlitmus_fn:\n"
        ".word 0x00000513\n" /* addi a0, zero, 0 */
        ".word 0x00008067\n" /* ret */
        ".balign 64\n");
static void patch_fn(unsigned long v) {
  __atomic_store_n((volatile unsigned *)(void *)litmus_fn, 0x00000513u | (unsigned)(v << 20), __ATOMIC_RELAXED);
}
static void sync_fetch(void) { __asm__ volatile("fence.i" ::: "memory"); }
#else
__asm__(".section .text\n.balign 64\n.globl litmus_fn\nlitmus_fn:\n"
        ".byte 0xb8\n.long 0\n" /* mov eax, imm32 */
        ".byte 0xc3\n"          /* ret */
        ".balign 64\n");
static void patch_fn(unsigned long v) {
  __atomic_store_n((volatile unsigned *)(void *)((char *)litmus_fn + 1), (unsigned)v, __ATOMIC_RELAXED);
}
static void sync_fetch(void) {
  unsigned a = 0, b, c = 0, d;
  __asm__ volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d)::"memory");
}
#endif


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
  const unsigned long shape = litmus_shape < kShapeCount ? litmus_shape : 0, fence = litmus_fence;
  const unsigned long ncpus = kShapeCpus[shape];
  if (cpu >= ncpus) return 0;
  unsigned long rounds = litmus_rounds;
  if (rounds > kMaxRounds) rounds = kMaxRounds;
  static const unsigned long kSeeds[] = {0x9e3779b97f4a7c15ul, 0x2545f4914f6cdd1dul, 0xbf58476d1ce4e5b9ul,
                                         0x94d049bb133111ebul};
  unsigned long sense = 0, rng = kSeeds[cpu];
  for (unsigned long i = 0; i < rounds; i++) {
    volatile unsigned long *a = (volatile unsigned long *)line_a(i);
    volatile unsigned long *b = (volatile unsigned long *)line_b(i);
    /* flag (MP), y (S): modified in CPU 0's cache */
    if ((shape == 1 || shape == 5 || shape == 8) && cpu == 0) *b = 0;
    if (shape == 8 && cpu == 1) litmus_fn(); /* its line in CPU 1's I-cache */
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    cpu_barrier(&sense, ncpus);
    /* WRC and IRIW's readers wait longer, up to 255: long enough, now and
     * then, for a store that misses to be visible when they read. */
    delay(rng & ((shape == 6 || shape == 7) && cpu >= 1 ? 255 : 31));
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
    } else if (shape == 4) { /* 2+2W */
      if (cpu == 0) {
        *a = 1;
        if (fence) full_fence();
        *b = 2;
      } else {
        *b = 1;
        if (fence) full_fence();
        *a = 2;
      }
    } else if (shape == 5) { /* S: a = x, b = y */
      if (cpu == 0) {
        *a = 2;
        if (fence) full_fence();
        *b = 1;
      } else {
        r = *b;
        if (fence) full_fence();
        *a = 1;
      }
    } else if (shape == 6) { /* WRC: a = x, b = y */
      if (cpu == 0) {
        *a = 1;
      } else if (cpu == 1) {
        r = *a;
        if (fence) full_fence();
        *b = 1;
      } else {
        const unsigned long y = *b;
        if (fence) full_fence();
        r = (y << 1) | *a;
      }
    } else if (shape == 7) { /* IRIW: a = x, b = y */
      if (cpu == 0) {
        *a = 1;
      } else if (cpu == 1) {
        *b = 1;
      } else if (cpu == 2) {
        const unsigned long x = *a;
        if (fence) full_fence();
        r = (x << 1) | *b;
      } else {
        const unsigned long y = *b;
        if (fence) full_fence();
        r = (y << 1) | *a;
      }
    } else { /* MP-fetch: the new value is the round's number + 1 */
      if (cpu == 0) {
        patch_fn(i + 1);
        full_fence();
        *b = 1;
      } else {
        const unsigned long f = *b;
        if (fence) sync_fetch();
        r = (f << 1) | (unsigned long)((unsigned long)litmus_fn() == i + 1);
      }
    }
    if (cpu == 1) result1[i] = r;
    if (cpu == 2) result2[i] = r;
    if (cpu == 3) result3[i] = r;
    cpu_barrier(&sense, ncpus);
    if (cpu == 0) {
      /* SB, LB: (CPU 0's r0, CPU 1's r1); MP: CPU 1's (flag, data); R:
       * (b ended 2, CPU 1's r1); 2+2W: (a ended 1, b ended 1). */
      const unsigned long v = result1[i];
      unsigned long o;
      if (shape == 0 || shape == 2) o = ((r & 1) << 1) | (v & 1);
      else if (shape == 1) o = v & 3;
      else if (shape == 3) o = ((unsigned long)(*b == 2) << 1) | (v & 1);
      else if (shape == 4) o = ((unsigned long)(*a == 1) << 1) | (unsigned long)(*b == 1);
      /* S: (CPU 1 saw y = 1, x ended 2) */
      else if (shape == 5) o = ((v & 1) << 1) | (unsigned long)(*a == 2);
      /* WRC: (CPU 1 saw x and CPU 2 saw y, CPU 2 then saw x) */
      else if (shape == 6) o = ((unsigned long)((v & 1) && (result2[i] & 2)) << 1) | (result2[i] & 1);
      /* IRIW: (CPU 2 saw x before y, CPU 3 saw y before x) */
      else if (shape == 7) o = ((unsigned long)(result2[i] == 2) << 1) | (unsigned long)(result3[i] == 2);
      else o = v & 3; /* MP-fetch: (flag seen, the new code ran) */
      litmus_counts[o]++;
    }
  }
  if (cpu == 0)
    printf("litmus: %s fence %lu: 00=%lu 01=%lu 10=%lu 11=%lu\n", kShapes[shape], fence, litmus_counts[0],
           litmus_counts[1], litmus_counts[2], litmus_counts[3]);
  return 0;
}
