/* Arbitrary-precision arithmetic and its exercise, for the x86-64 guest (see
 * workloads/x86/README.md). bignum_limbs.h is instantiated twice: bn32_*
 * (32-bit limbs, 64-bit intermediates) and bn64_* (64-bit limbs, unsigned
 * __int128 intermediates: 64x64->128 `mul`, and 128/64 divisions, which GCC
 * turns into calls to __udivti3/__umodti3). Unsigned: add, sub, multiply,
 * shifts, divide by a limb, Knuth division, powmod, isqrt, decimal and hex
 * conversion; signed: add, sub, multiply, truncating divmod, modular inverse.
 *
 * Computes 100!, 2^500, 3^200, Fibonacci numbers, sqrt(2) to 100 digits,
 * Fermat tests modulo Mersenne primes and a composite, an RSA round trip
 * with a key built from two Mersenne primes, and division identities on
 * pseudo-random operands, with both limb widths; the two must agree, and
 * some results are checked against known values. Also direct signed and
 * unsigned __int128 arithmetic (__divti3/__modti3 on the guest). */
#include "prog.h"

#define BN_CAP_BITS 2560
#define DEC_BUF (BN_CAP_BITS * 3 / 10 + 2)

static void bn_overflow(const char *what) {
  printf("bignum: overflow or bad operand in %s\n", what);
  ++prog_failures;
}

#define BN(name) bn32_##name
#define BN_LIMB uint32_t
#define BN_DLIMB uint64_t
#define BN_BITS 32
#include "bignum_limbs.h"
#undef BN
#undef BN_LIMB
#undef BN_DLIMB
#undef BN_BITS

#define BN(name) bn64_##name
#define BN_LIMB uint64_t
#define BN_DLIMB unsigned __int128
#define BN_BITS 64
#include "bignum_limbs.h"
#undef BN
#undef BN_LIMB
#undef BN_DLIMB
#undef BN_BITS

static int str_eq(const char *a, const char *b) {
  while (*a && *a == *b) ++a, ++b;
  return *a == *b;
}

/* Decimal results of the two widths, compared by show(). */
static char dec32[DEC_BUF], dec64[DEC_BUF];

/* The computations, once per width (C has no templates). */
#define DEFINE_COMPUTE(P)                                                     \
  static void P##factorial(P##t *r, unsigned n) {                             \
    P##set_u64(r, 1);                                                         \
    for (unsigned i = 2; i <= n; ++i) P##mul_small_add(r, i, 0);              \
  }                                                                           \
  static void P##pow_u(P##t *r, uint64_t base, unsigned e) {                  \
    P##t b;                                                                   \
    P##set_u64(r, 1);                                                         \
    P##set_u64(&b, base);                                                     \
    while (e) { /* right to left */                                           \
      if (e & 1) P##mul(r, r, &b);                                            \
      e >>= 1;                                                                \
      if (e) P##mul(&b, &b, &b);                                              \
    }                                                                         \
  }                                                                           \
  static void P##fib(P##t *r, unsigned n) {                                   \
    P##t a, b;                                                                \
    P##set_u64(&a, 0);                                                        \
    P##set_u64(&b, 1);                                                        \
    for (unsigned i = 0; i < n; ++i) {                                        \
      P##add(&a, &a, &b);                                                     \
      P##t t = a;                                                             \
      a = b;                                                                  \
      b = t;                                                                  \
    }                                                                         \
    *r = a;                                                                   \
  }                                                                           \
  static void P##mersenne(P##t *r, int p) { /* 2^p - 1 */                      \
    P##t one;                                                                 \
    P##set_u64(&one, 1);                                                      \
    P##shl(r, &one, p);                                                       \
    P##sub(r, r, &one);                                                       \
  }                                                                           \
  /* 1 when base^(n-1) == 1 (mod n). */                                       \
  static int P##fermat(const P##t *n, uint64_t base) {                        \
    P##t b, e, one, r;                                                        \
    P##set_u64(&b, base);                                                     \
    P##set_u64(&one, 1);                                                      \
    P##sub(&e, n, &one);                                                      \
    P##powmod(&r, &b, &e, n);                                                 \
    return P##cmp(&r, &one) == 0;                                             \
  }                                                                           \
  /* Division identities on pseudo-random operands: a == q*b + r, r < b.     \
   * Returns a digest of every quotient and remainder. */                     \
  static uint64_t P##div_identities(prog_rng *rng, int *ok) {                 \
    static const int abits[] = {64, 127, 128, 200, 520, 700};          \
    static const int bbits[] = {1, 31, 32, 33, 63, 64, 65, 96, 127, 128, 129, \
                                191, 500, 639};                               \
    uint64_t h = 0;                                                           \
    for (size_t i = 0; i < PROG_ARRAY_SIZE(abits); ++i)                       \
      for (size_t j = 0; j < PROG_ARRAY_SIZE(bbits); ++j)                     \
        for (int shape = 0; shape < 3; ++shape) {                             \
          P##t a, b, q, r, t;                                                 \
          random_bits_##P(&a, abits[i], rng, shape);                          \
          random_bits_##P(&b, bbits[j], rng, shape == 2 ? 0 : shape);         \
          if (P##is_zero(&b)) P##set_u64(&b, 7);                              \
          P##divmod(&q, &r, &a, &b);                                          \
          P##mul(&t, &q, &b);                                                 \
          P##add(&t, &t, &r);                                                 \
          if (P##cmp(&t, &a) != 0 || P##cmp(&r, &b) >= 0) *ok = 0;            \
          h = h * 0x100000001b3ull ^ P##digest(&q);                           \
          h = h * 0x100000001b3ull ^ P##digest(&r);                           \
        }                                                                     \
    return h;                                                                 \
  }

/* Random values of exactly `bits` bits (top bit set), built 32 bits at a
 * time so both widths draw the same numbers. shape 0: random; 1: all ones
 * (the hard case for the quotient estimate); 2: a top limb of ones over
 * zeros. */
#define DEFINE_RANDOM(P, BITS_PER_LIMB)                                       \
  static void random_bits_##P(P##t *x, int bits, prog_rng *rng, int shape) {  \
    x->n = 0;                                                                 \
    P##t w;                                                                   \
    for (int done = 0; done < bits; done += 32) {                             \
      uint32_t v = (uint32_t)(prog_rand(rng) >> 32);                          \
      if (shape == 1) v = 0xffffffffu;                                        \
      if (shape == 2) v = done + 32 >= bits ? 0xffffffffu : 0;                \
      P##set_u64(&w, v);                                                      \
      P##shl(x, x, 32);                                                       \
      P##add(x, x, &w);                                                       \
    }                                                                         \
    int extra = (bits + 31) / 32 * 32 - bits;                                 \
    P##shr(x, x, extra);                                                      \
    P##set_u64(&w, 1);                                                        \
    P##shl(&w, &w, bits - 1);                                                 \
    if (!P##bit(x, bits - 1)) P##add(x, x, &w);                               \
  }

DEFINE_RANDOM(bn32_, 32)
DEFINE_RANDOM(bn64_, 64)
DEFINE_COMPUTE(bn32_)
DEFINE_COMPUTE(bn64_)

static const char fact100[] =
    "93326215443944152681699238856266700490715968264381621468592963895217599"
    "99322991560894146397615651828625369792082722375825118521091686400000000"
    "0000000000000000";
static const char sqrt2_100[] =
    "14142135623730950488016887242096980785696718753769480731766797379907324"
    "784621070388503875343276415727";

/* Prints "label: value" after checking both widths agree. */
static void show(const char *label, const bn32_t *a, const bn64_t *b) {
  bn32_to_dec(a, dec32);
  bn64_to_dec(b, dec64);
  EXPECT(str_eq(dec32, dec64));
  printf("%s: %s\n", label, dec64);
}

static void print_u128(const char *label, unsigned __int128 v) {
  printf("%s %016lx%016lx\n", label, (uint64_t)(v >> 64), (uint64_t)v);
}

static void print_s128(const char *label, __int128 v) {
  unsigned __int128 u = (unsigned __int128)v;
  printf("%s %016lx%016lx\n", label, (uint64_t)(u >> 64), (uint64_t)u);
}

int main(void) {
  prog_rng rng = {prog_seed()};
  printf("x86 bignum: 32- and 64-bit limbs\n");

  static bn32_t a32, b32, c32, d32;
  static bn64_t a64, b64, c64, d64;
  static char hex[BN_CAP_BITS / 4 + 2];

  bn32_factorial(&a32, 100);
  bn64_factorial(&a64, 100);
  show("100!", &a32, &a64);
  EXPECT(str_eq(dec64, fact100));
  printf("100! bits %d hex %s\n", bn64_bitlen(&a64), bn64_to_hex(&a64, hex));

  bn32_pow_u(&a32, 2, 500);
  bn64_pow_u(&a64, 2, 500);
  show("2^500", &a32, &a64);
  EXPECT(bn64_bitlen(&a64) == 501);

  bn32_pow_u(&a32, 3, 200);
  bn64_pow_u(&a64, 3, 200);
  show("3^200", &a32, &a64);
  /* 3^200 / 3^100 == 3^100 exactly. */
  bn32_pow_u(&b32, 3, 100);
  bn64_pow_u(&b64, 3, 100);
  bn32_divmod(&c32, &d32, &a32, &b32);
  bn64_divmod(&c64, &d64, &a64, &b64);
  EXPECT(bn32_cmp(&c32, &b32) == 0 && bn32_is_zero(&d32));
  EXPECT(bn64_cmp(&c64, &b64) == 0 && bn64_is_zero(&d64));

  bn32_fib(&a32, 1000);
  bn64_fib(&a64, 1000);
  show("fib(1000)", &a32, &a64);

  /* sqrt(2) to 100 digits: isqrt(2 * 10^200). */
  bn32_pow_u(&a32, 10, 200);
  bn64_pow_u(&a64, 10, 200);
  bn32_mul_small_add(&a32, 2, 0);
  bn64_mul_small_add(&a64, 2, 0);
  bn32_isqrt(&b32, &a32);
  bn64_isqrt(&b64, &a64);
  show("isqrt(2e200)", &b32, &b64);
  EXPECT(str_eq(dec64, sqrt2_100));

  /* Decimal round trip and small division. */
  bn32_from_dec(&a32, fact100);
  bn64_from_dec(&a64, fact100);
  uint32_t r32 = bn32_divmod_small(&b32, &a32, 1000000007u);
  uint64_t r64 = bn64_divmod_small(&b64, &a64, 1000000007u);
  EXPECT(r32 == r64);
  printf("100! mod 1000000007 = %u\n", r32);
  r64 = bn64_divmod_small(&b64, &a64, 0xfffffffffffffffbull);
  printf("100! mod (2^64-5) = %lu\n", r64);
  bn32_to_hex(&b32, hex);
  printf("100!/1000000007 hex %s\n", hex);

  /* Fermat tests: Mersenne primes pass, 2^128+1 and M67 do not. */
  static const int mersenne[] = {61, 89, 107, 127, 67};
  for (size_t i = 0; i < PROG_ARRAY_SIZE(mersenne); ++i) {
    int p = mersenne[i];
    bn32_mersenne(&a32, p);
    bn64_mersenne(&a64, p);
    int f32 = bn32_fermat(&a32, 3), f64 = bn64_fermat(&a64, 3);
    EXPECT(f32 == f64);
    EXPECT(f64 == (p != 67));
    printf("3^(M%d-1) mod M%d == 1: %s\n", p, p, f64 ? "yes" : "no");
  }
  {
    bn64_t one;
    bn64_set_u64(&one, 1);
    bn64_shl(&a64, &one, 128);
    bn64_add(&a64, &a64, &one);
    int f = bn64_fermat(&a64, 3);
    EXPECT(!f);
    printf("3^(2^128) mod 2^128+1 == 1: %s\n", f ? "yes" : "no");
    /* 2^128 + 1 = 59649589127497217 * 5704689200685129054721 */
    bn64_from_dec(&b64, "59649589127497217");
    bn64_divmod(&c64, &d64, &a64, &b64);
    EXPECT(bn64_is_zero(&d64));
    bn32_from_dec(&c32, bn64_to_dec(&c64, dec64));
    show("(2^128+1)/59649589127497217", &c32, &c64);
  }

  /* RSA round trip: n = M89 * M107, e = 65537, d = e^-1 mod (p-1)(q-1). */
  {
    bn32_t p, q, n, phi, e, d, m, c, back, one;
    bn64_t p6, q6, n6, phi6, e6, d6, m6, c6, back6, one6;
    bn32_mersenne(&p, 89);
    bn32_mersenne(&q, 107);
    bn64_mersenne(&p6, 89);
    bn64_mersenne(&q6, 107);
    bn32_mul(&n, &p, &q);
    bn64_mul(&n6, &p6, &q6);
    bn32_set_u64(&one, 1);
    bn64_set_u64(&one6, 1);
    bn32_sub(&p, &p, &one);
    bn32_sub(&q, &q, &one);
    bn64_sub(&p6, &p6, &one6);
    bn64_sub(&q6, &q6, &one6);
    bn32_mul(&phi, &p, &q);
    bn64_mul(&phi6, &p6, &q6);
    bn32_set_u64(&e, 65537);
    bn64_set_u64(&e6, 65537);
    EXPECT(bn32_modinv(&d, &e, &phi));
    EXPECT(bn64_modinv(&d6, &e6, &phi6));
    show("rsa n", &n, &n6);
    show("rsa d", &d, &d6);
    bn32_from_dec(&m, "123456789012345678901234567890123456789");
    bn64_from_dec(&m6, "123456789012345678901234567890123456789");
    bn32_powmod(&c, &m, &e, &n);
    bn64_powmod(&c6, &m6, &e6, &n6);
    show("rsa c", &c, &c6);
    bn32_powmod(&back, &c, &d, &n);
    bn64_powmod(&back6, &c6, &d6, &n6);
    show("rsa m", &back, &back6);
    EXPECT(bn32_cmp(&back, &m) == 0 && bn64_cmp(&back6, &m6) == 0);
    /* e * d == 1 (mod phi) */
    bn64_mul(&c6, &e6, &d6);
    bn64_divmod(0, &back6, &c6, &phi6);
    EXPECT(bn64_cmp(&back6, &one6) == 0);
    /* No inverse when gcd != 1. */
    bn64_set_u64(&e6, 6);
    EXPECT(!bn64_modinv(&d6, &e6, &phi6));
  }

  /* Signed arithmetic: (-7)^77, mixed-sign truncating division. */
  {
    bn64_s x, y, q, r, t;
    bn32_s x3, y3, q3, r3;
    char buf[DEC_BUF + 1], buf2[DEC_BUF + 1];
    bn64_s_set_i64(&x, 1);
    bn64_s_set_i64(&y, -7);
    for (int i = 0; i < 77; ++i) bn64_s_mul(&x, &x, &y);
    printf("(-7)^77 = %s\n", bn64_s_to_dec(&x, buf));
    static const int64_t nums[] = {100, -100, 7, -7, 0, INT64_MIN, INT64_MAX, -1};
    static const int64_t dens[] = {7, -7, 100, -3, INT64_MAX, 2, -1};
    uint64_t h = 0;
    for (size_t i = 0; i < PROG_ARRAY_SIZE(nums); ++i)
      for (size_t j = 0; j < PROG_ARRAY_SIZE(dens); ++j) {
        bn64_s_set_i64(&x, nums[i]);
        bn64_s_set_i64(&y, dens[j]);
        bn64_s_divmod(&q, &r, &x, &y);
        bn32_s_set_i64(&x3, nums[i]);
        bn32_s_set_i64(&y3, dens[j]);
        bn32_s_divmod(&q3, &r3, &x3, &y3);
        /* Compare with C's int64 division where it is defined. */
        if (!(nums[i] == INT64_MIN && dens[j] == -1)) {
          char cq[24], cr[24];
          bn64_s cq_s, cr_s;
          bn64_s_set_i64(&cq_s, nums[i] / dens[j]);
          bn64_s_set_i64(&cr_s, nums[i] % dens[j]);
          EXPECT(str_eq(bn64_s_to_dec(&q, buf), bn64_s_to_dec(&cq_s, cq)));
          EXPECT(str_eq(bn64_s_to_dec(&r, buf), bn64_s_to_dec(&cr_s, cr)));
        }
        EXPECT(str_eq(bn64_s_to_dec(&q, buf), bn32_s_to_dec(&q3, buf2)));
        EXPECT(str_eq(bn64_s_to_dec(&r, buf), bn32_s_to_dec(&r3, buf2)));
        /* q*y + r == x */
        bn64_s_mul(&t, &q, &y);
        bn64_s_addsub(&t, &t, &r, 0);
        EXPECT(str_eq(bn64_s_to_dec(&t, buf), bn64_s_to_dec(&x, buf2)));
        h = h * 31 + bn64_digest(&q.mag) + (uint64_t)q.neg * 2 + bn64_digest(&r.mag) + (uint64_t)r.neg;
      }
    bn64_s_set_i64(&x, INT64_MIN);
    bn64_s_set_i64(&y, -1);
    bn64_s_divmod(&q, &r, &x, &y);
    printf("INT64_MIN / -1 = %s, signed div digest %016lx\n", bn64_s_to_dec(&q, buf), h);
  }

  /* Division identities; the digests must agree between widths. */
  {
    int ok32 = 1, ok64 = 1;
    prog_rng r1 = rng, r2 = rng;
    uint64_t h32 = bn32_div_identities(&r1, &ok32);
    uint64_t h64 = bn64_div_identities(&r2, &ok64);
    EXPECT(ok32 && ok64);
    EXPECT(h32 == h64);
    printf("division identities: %s digest %016lx add-backs %u/%u\n",
           ok32 && ok64 ? "ok" : "BAD", h64, bn32_add_backs, bn64_add_backs);
  }

  /* __int128 directly: unsigned and signed division and remainder. */
  {
    static volatile uint64_t hi_v = 0x0123456789abcdefull, lo_v = 0xfedcba9876543210ull;
    unsigned __int128 u = ((unsigned __int128)hi_v << 64) | lo_v;
    unsigned __int128 dv[] = {3, 10, 0xffffffffffffffffull,
                              ((unsigned __int128)1 << 64) + 1,
                              ((unsigned __int128)hi_v << 60) | 12345,
                              u, u + 1, ((unsigned __int128)1 << 127)};
    for (size_t i = 0; i < PROG_ARRAY_SIZE(dv); ++i) {
      unsigned __int128 q = u / dv[i], r = u % dv[i];
      EXPECT(q * dv[i] + r == u && r < dv[i]);
      print_u128("u128 q", q);
      print_u128("u128 r", r);
    }
    __int128 s = -(__int128)u;
    __int128 sd[] = {7, -7, -((__int128)1 << 70), (__int128)lo_v, -1};
    for (size_t i = 0; i < PROG_ARRAY_SIZE(sd); ++i) {
      __int128 q = s / sd[i], r = s % sd[i];
      EXPECT(q * sd[i] + r == s);
      print_s128("s128 q", q);
      print_s128("s128 r", r);
    }
    unsigned __int128 p = (unsigned __int128)hi_v * lo_v;
    print_u128("u64*u64", p);
    __int128 sp = (__int128)(int64_t)lo_v * (int64_t)hi_v;
    print_s128("s64*s64", sp);
  }

  printf("bignum: %s\n", prog_failures ? "FAILED" : "all ok");
  return prog_failures != 0;
}
