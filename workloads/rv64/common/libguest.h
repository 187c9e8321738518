/* Minimal runtime for ksim RV64 guests: console output, power-off, the
 * string functions GCC may call on its own, and a CHECK macro. */
#ifndef LIBGUEST_H
#define LIBGUEST_H

#include <stddef.h>
#include <stdint.h>

#include "ksim_platform.h"

void uart_putc(char c);
void uart_puts(const char *s); /* no newline added */

/* Supports %d %i %u %x %X %p %s %c %%, the l/ll/z length modifiers, and a
 * field width with a 0 or - flag (%08lx, %-6s). No precision, no floats.
 * Returns the number of characters written. */
int printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Ends the run through the finisher: 0 passes, anything else is the exit
 * status (only the low 16 bits fit in the finisher's encoding). */
__attribute__((noreturn)) void poweroff(int code);

void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);

/* The cycle counter on either ISA (RV64 rdcycle, x86 rdtsc): the
 * simulated core's clock. */
static inline uint64_t guest_cycles(void) {
#if defined(__riscv)
  uint64_t v;
  __asm__ volatile("rdcycle %0" : "=r"(v));
  return v;
#else
  uint32_t lo, hi;
  __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
  return ((uint64_t)hi << 32) | lo;
#endif
}

static inline uint64_t read_mcycle(void) {
  uint64_t v;
  __asm__ volatile("csrr %0, mcycle" : "=r"(v));
  return v;
}
static inline uint64_t read_minstret(void) {
  uint64_t v;
  __asm__ volatile("csrr %0, minstret" : "=r"(v));
  return v;
}

/* CHECK(cond): on failure prints file:line and the condition, then powers
 * off with the check's number, i.e. how many CHECKs have run so far
 * including this one. A self-test's exit status therefore names the check
 * that failed and the printed line says where it is. */
extern unsigned guest_checks_run;
__attribute__((noreturn)) void guest_check_failed(const char *file, int line,
                                                  const char *what);
#define CHECK(cond)                                          \
  do {                                                       \
    ++guest_checks_run;                                      \
    if (!(cond)) guest_check_failed(__FILE__, __LINE__, #cond); \
  } while (0)

/* CHECK_EQ prints both values (as 64-bit hex) when they differ. */
__attribute__((noreturn)) void guest_check_eq_failed(const char *file, int line,
                                                     const char *what,
                                                     uint64_t got,
                                                     uint64_t want);
#define CHECK_EQ(got, want)                                          \
  do {                                                               \
    uint64_t got_ = (uint64_t)(got), want_ = (uint64_t)(want);       \
    ++guest_checks_run;                                              \
    if (got_ != want_)                                               \
      guest_check_eq_failed(__FILE__, __LINE__, #got " == " #want,   \
                            got_, want_);                            \
  } while (0)

/* Called by crt0's trap vector for any trap a guest did not ask for. */
__attribute__((noreturn)) void guest_unexpected_trap(uint64_t mcause,
                                                     uint64_t mepc,
                                                     uint64_t mtval);
#define GUEST_TRAP_EXIT_CODE 99

#endif
