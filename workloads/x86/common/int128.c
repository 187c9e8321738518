/* unsigned/signed __int128 division for x86-64 guests: what GCC calls for
 * `/` and `%` on 128-bit operands (the libgcc ABI: __udivti3, __umodti3,
 * __divti3, __modti3, and __udivmodti4/__divmodti4 for both at once).
 *
 * The guests do not link libgcc: its __umodti3 uses SSE registers, which
 * the machine does not have. Only general-purpose instructions here: one or
 * two 128/64 `div` per call, plus shifts and a 64x64 multiply. Division by
 * zero executes `div` by zero, i.e. #DE, as the libgcc version would. */
#include "libguest.h"

typedef unsigned __int128 u128;
typedef __int128 s128;

/* (hi:lo) / d with hi < d, so the quotient fits in 64 bits. */
static inline uint64_t div128by64(uint64_t hi, uint64_t lo, uint64_t d,
                                  uint64_t *rem) {
  uint64_t q, r;
  __asm__("divq %4" : "=a"(q), "=d"(r) : "a"(lo), "d"(hi), "rm"(d));
  *rem = r;
  return q;
}

/* Hacker's Delight, "udivti3" from 128/64 divisions. */
static u128 udivmod128(u128 n, u128 d, u128 *rem) {
  uint64_t n_hi = (uint64_t)(n >> 64), n_lo = (uint64_t)n;
  uint64_t d_hi = (uint64_t)(d >> 64), d_lo = (uint64_t)d;
  if (d_hi == 0) {
    uint64_t r;
    if (n_hi < d_lo) {
      uint64_t q = div128by64(n_hi, n_lo, d_lo, &r);
      *rem = r;
      return q;
    }
    /* Two steps: the high word first, its remainder is < d_lo. */
    uint64_t q_hi = div128by64(0, n_hi, d_lo, &r);
    uint64_t q_lo = div128by64(r, n_lo, d_lo, &r);
    *rem = r;
    return ((u128)q_hi << 64) | q_lo;
  }
  /* d >= 2^64: the quotient fits in 64 bits. Normalise d so its top bit is
   * set, divide n/2 by the top word, and correct the estimate by one. */
  int s = __builtin_clzll(d_hi); /* d_hi != 0; compiles to bsr */
  uint64_t v1 = (uint64_t)((d << s) >> 64);
  u128 n1 = n >> 1;
  uint64_t r;
  uint64_t q1 = div128by64((uint64_t)(n1 >> 64), (uint64_t)n1, v1, &r);
  uint64_t q0 = (uint64_t)(((u128)q1 << s) >> 63);
  if (q0 != 0) --q0;
  u128 rr = n - (u128)q0 * d;
  if (rr >= d) {
    ++q0;
    rr -= d;
  }
  *rem = rr;
  return q0;
}

/* GCC 12 calls these when it needs both the quotient and the remainder. */
u128 __udivmodti4(u128 n, u128 d, u128 *rem) {
  u128 r;
  u128 q = udivmod128(n, d, &r);
  if (rem) *rem = r;
  return q;
}

s128 __divmodti4(s128 n, s128 d, s128 *rem) {
  u128 un = n < 0 ? -(u128)n : (u128)n;
  u128 ud = d < 0 ? -(u128)d : (u128)d;
  u128 r;
  u128 q = udivmod128(un, ud, &r);
  *rem = (s128)(n < 0 ? -r : r);
  return (s128)(((n < 0) != (d < 0)) ? -q : q);
}

u128 __udivti3(u128 n, u128 d) {
  u128 r;
  return udivmod128(n, d, &r);
}

u128 __umodti3(u128 n, u128 d) {
  u128 r;
  udivmod128(n, d, &r);
  return r;
}

/* C semantics: the quotient truncates toward zero, the remainder has the
 * sign of the dividend. Negation in unsigned arithmetic (no overflow UB). */
s128 __divti3(s128 n, s128 d) {
  u128 un = n < 0 ? -(u128)n : (u128)n;
  u128 ud = d < 0 ? -(u128)d : (u128)d;
  u128 r;
  u128 q = udivmod128(un, ud, &r);
  return (s128)(((n < 0) != (d < 0)) ? -q : q);
}

s128 __modti3(s128 n, s128 d) {
  u128 un = n < 0 ? -(u128)n : (u128)n;
  u128 ud = d < 0 ? -(u128)d : (u128)d;
  u128 r;
  udivmod128(un, ud, &r);
  return (s128)(n < 0 ? -r : r);
}
