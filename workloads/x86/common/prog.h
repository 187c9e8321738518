/* Common header of the x86 guest programs (workloads/x86/<prog>/).
 *
 * Each program is built two ways from the same source:
 *  - as a guest (default): freestanding, console through libguest's printf;
 *  - as a native host program with -DKSIM_HOST: the C library's printf.
 * A correct simulator prints, byte for byte, what the native build prints.
 * So programs use only what both printf's do the same way: %d %i %u %x %X
 * %s %c %% with the l/ll/z modifiers and a width with a 0 or - flag. Not
 * %p (addresses differ), not %h/%hh, no precision, no '+', ' ' or '#'.
 * Integer types are LP64 (uint64_t prints with %lu/%lx). */
#ifndef KSIM_X86_PROG_H
#define KSIM_X86_PROG_H

#ifdef KSIM_HOST
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#else
#include "libguest.h"
#endif

/* EXPECT(cond): prints a FAIL line (same on both builds) and counts it;
 * main() returns prog_failures != 0, which the finisher turns into exit
 * status 1. */
static int prog_failures;
#define EXPECT(cond)                                           \
  do {                                                         \
    if (!(cond)) {                                             \
      printf("FAIL line %d: %s\n", __LINE__, #cond);           \
      ++prog_failures;                                         \
    }                                                          \
  } while (0)

/* Run-time inputs: a value read through a volatile, so the compiler cannot
 * fold the computations that depend on it at any optimisation level. */
static volatile uint64_t prog_seed_v = 0x9e3779b97f4a7c15ull;
static inline uint64_t prog_seed(void) { return prog_seed_v; }

/* xorshift64*: the pseudo-random inputs of every program. */
typedef struct {
  uint64_t s;
} prog_rng;
static inline uint64_t prog_rand(prog_rng *r) {
  uint64_t x = r->s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  r->s = x;
  return x * 0x2545f4914f6cdd1dull;
}

#define PROG_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
