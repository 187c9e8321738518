/* Compiler helpers (GCC). Portable. */
#ifndef KERNEL_COMPILER_H
#define KERNEL_COMPILER_H

#define __used __attribute__((used))
#define __noreturn __attribute__((noreturn))
#define __aligned(x) __attribute__((aligned(x)))
#define __section(s) __attribute__((section(s)))
#define __printf(a, b) __attribute__((format(printf, a, b)))
#define __always_inline inline __attribute__((always_inline))
/* A real, out-of-line function with its own symbol and its own signature:
 * no inlining, no .constprop/.isra clones. Used for probe targets. */
#define __noinline_probe __attribute__((noinline, noclone, used))

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* Compiler-only barrier. */
#define barrier() __asm__ __volatile__("" ::: "memory")

/* Single, untorn accesses to shared variables (no ordering implied). */
#define READ_ONCE(x) (*(const volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, v) (*(volatile __typeof__(x) *)&(x) = (v))

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define container_of(ptr, type, member) \
  ((type *)((char *)(ptr) - __builtin_offsetof(type, member)))

#endif
