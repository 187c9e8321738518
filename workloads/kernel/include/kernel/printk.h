/* Console output and panic. Portable. */
#ifndef KERNEL_PRINTK_H
#define KERNEL_PRINTK_H

#include "kernel/types.h"

/* %d %i %u %x %X %p %s %c %% with l/ll/z, a width and the 0 / - flags. */
int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int snprintf(char *buf, size_t size, const char *fmt, ...) __printf(3, 4);

/* One console line "[cpu N] <text>\n" (the newline is added if missing),
 * written under the console lock so lines never interleave. */
int printk(const char *fmt, ...) __printf(1, 2);
/* The same for the panic path: never waits for a console lock held by this
 * CPU and gives up waiting for another CPU after a bounded time. */
int panic_printk(const char *fmt, ...) __printf(1, 2);

/* Prints the message and a backtrace, then powers the machine off with the
 * panic status (ksim: guest crash, exit status 4). */
__noreturn void panic(const char *fmt, ...) __printf(1, 2);

#define KCHECK(cond)                                                         \
  do {                                                                       \
    if (unlikely(!(cond))) panic("check failed: %s (%s:%d)", #cond, __FILE__, __LINE__); \
  } while (0)

#define KCHECK_EQ(got, want)                                                 \
  do {                                                                       \
    long got_ = (long)(got), want_ = (long)(want);                           \
    if (unlikely(got_ != want_))                                             \
      panic("check failed: %s == %s: got %ld, want %ld (%s:%d)", #got, #want, got_, want_, \
            __FILE__, __LINE__);                                             \
  } while (0)

#endif
