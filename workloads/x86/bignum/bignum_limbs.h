/* One instance of the arbitrary-precision library, for one limb width.
 * bignum.c includes this file twice:
 *
 *   #define BN(name) bn32_##name   limb uint32_t, double limb uint64_t
 *   #define BN(name) bn64_##name   limb uint64_t, double limb unsigned __int128
 *
 * with BN_LIMB, BN_DLIMB and BN_BITS defined. Numbers have a fixed capacity
 * (BN_CAP_BITS); operations on results that do not fit stop the program
 * through bn_overflow(). Magnitudes are little-endian limb arrays with no
 * leading zero limbs (zero has n == 0). Signed numbers are sign and
 * magnitude, with C's truncating division. */

#define BN_CAP (BN_CAP_BITS / BN_BITS)
#define BN_BASE ((BN_DLIMB)1 << BN_BITS)

typedef struct {
  int n;
  BN_LIMB d[BN_CAP];
} BN(t);

typedef struct {
  int neg; /* never set for zero */
  BN(t) mag;
} BN(s);

/* How often algorithm D's quotient estimate was one too large. */
static unsigned BN(add_backs);

static void BN(norm)(BN(t) *x) {
  while (x->n > 0 && x->d[x->n - 1] == 0) --x->n;
}

static void BN(set_u64)(BN(t) *x, uint64_t v) {
  x->n = 0;
  while (v != 0) {
    x->d[x->n++] = (BN_LIMB)v;
    v = BN_BITS < 64 ? v >> (BN_BITS % 64) : 0;
  }
}

static int BN(is_zero)(const BN(t) *x) { return x->n == 0; }

static int BN(cmp)(const BN(t) *a, const BN(t) *b) {
  if (a->n != b->n) return a->n < b->n ? -1 : 1;
  for (int i = a->n - 1; i >= 0; --i)
    if (a->d[i] != b->d[i]) return a->d[i] < b->d[i] ? -1 : 1;
  return 0;
}

static int BN(bitlen)(const BN(t) *x) {
  if (x->n == 0) return 0;
  BN_LIMB top = x->d[x->n - 1];
  int bits = 0;
  while (top) {
    ++bits;
    top >>= 1;
  }
  return (x->n - 1) * BN_BITS + bits;
}

static int BN(bit)(const BN(t) *x, int i) {
  int limb = i / BN_BITS;
  return limb < x->n ? (int)((x->d[limb] >> (i % BN_BITS)) & 1) : 0;
}

/* r = a + b (r may alias a or b). */
static void BN(add)(BN(t) *r, const BN(t) *a, const BN(t) *b) {
  if (a->n < b->n) {
    const BN(t) *t = a;
    a = b;
    b = t;
  }
  BN_LIMB carry = 0;
  int i = 0;
  for (; i < b->n; ++i) {
    BN_DLIMB s = (BN_DLIMB)a->d[i] + b->d[i] + carry;
    r->d[i] = (BN_LIMB)s;
    carry = (BN_LIMB)(s >> BN_BITS);
  }
  for (; i < a->n; ++i) {
    BN_LIMB s = a->d[i] + carry;
    carry = s < carry;
    r->d[i] = s;
  }
  r->n = a->n;
  if (carry) {
    if (r->n >= BN_CAP) bn_overflow("add");
    r->d[r->n++] = carry;
  }
}

/* r = a - b for a >= b (r may alias a or b). Borrows without the double
 * limb: compare-and-subtract. */
static void BN(sub)(BN(t) *r, const BN(t) *a, const BN(t) *b) {
  BN_LIMB borrow = 0;
  for (int i = 0; i < a->n; ++i) {
    BN_LIMB bi = i < b->n ? b->d[i] : 0;
    BN_LIMB t = a->d[i] - bi;
    BN_LIMB b1 = a->d[i] < bi;
    BN_LIMB t2 = t - borrow;
    BN_LIMB b2 = t < borrow;
    r->d[i] = t2;
    borrow = b1 | b2;
  }
  if (borrow) bn_overflow("sub: negative result");
  r->n = a->n;
  BN(norm)(r);
}

/* x = x * m + add. */
static void BN(mul_small_add)(BN(t) *x, BN_LIMB m, BN_LIMB add) {
  BN_LIMB carry = add;
  for (int i = 0; i < x->n; ++i) {
    BN_DLIMB p = (BN_DLIMB)x->d[i] * m + carry;
    x->d[i] = (BN_LIMB)p;
    carry = (BN_LIMB)(p >> BN_BITS);
  }
  if (carry) {
    if (x->n >= BN_CAP) bn_overflow("mul_small");
    x->d[x->n++] = carry;
  }
  BN(norm)(x);
}

/* q = a / d, returns a % d (q may alias a). d != 0. */
static BN_LIMB BN(divmod_small)(BN(t) *q, const BN(t) *a, BN_LIMB d) {
  BN_LIMB rem = 0;
  for (int i = a->n - 1; i >= 0; --i) {
    BN_DLIMB cur = ((BN_DLIMB)rem << BN_BITS) | a->d[i];
    q->d[i] = (BN_LIMB)(cur / d);
    rem = (BN_LIMB)(cur % d);
  }
  q->n = a->n;
  BN(norm)(q);
  return rem;
}

/* r = a * b, schoolbook (r may alias a or b). */
static void BN(mul)(BN(t) *r, const BN(t) *a, const BN(t) *b) {
  BN(t) t;
  if (a->n == 0 || b->n == 0) {
    r->n = 0;
    return;
  }
  if (a->n + b->n > BN_CAP) bn_overflow("mul");
  for (int i = 0; i < a->n + b->n; ++i) t.d[i] = 0;
  for (int i = 0; i < a->n; ++i) {
    BN_LIMB carry = 0;
    for (int j = 0; j < b->n; ++j) {
      BN_DLIMB p = (BN_DLIMB)a->d[i] * b->d[j] + t.d[i + j] + carry;
      t.d[i + j] = (BN_LIMB)p;
      carry = (BN_LIMB)(p >> BN_BITS);
    }
    t.d[i + b->n] = carry;
  }
  t.n = a->n + b->n;
  BN(norm)(&t);
  *r = t;
}

/* r = a << s, r = a >> s (r may alias a). */
static void BN(shl)(BN(t) *r, const BN(t) *a, int s) {
  int limbs = s / BN_BITS, bits = s % BN_BITS;
  if (a->n == 0) {
    r->n = 0;
    return;
  }
  int n = a->n + limbs + 1;
  if (n > BN_CAP) bn_overflow("shl");
  BN_LIMB top = bits ? a->d[a->n - 1] >> (BN_BITS - bits) : 0;
  for (int i = a->n - 1; i >= 0; --i) {
    BN_LIMB lo = (bits && i > 0) ? a->d[i - 1] >> (BN_BITS - bits) : 0;
    r->d[i + limbs] = (BN_LIMB)(a->d[i] << bits) | lo;
  }
  for (int i = 0; i < limbs; ++i) r->d[i] = 0;
  r->d[n - 1] = top;
  r->n = n;
  BN(norm)(r);
}

static void BN(shr)(BN(t) *r, const BN(t) *a, int s) {
  int limbs = s / BN_BITS, bits = s % BN_BITS;
  if (limbs >= a->n) {
    r->n = 0;
    return;
  }
  int n = a->n - limbs;
  for (int i = 0; i < n; ++i) {
    BN_LIMB hi = (bits && i + limbs + 1 < a->n) ? (BN_LIMB)(a->d[i + limbs + 1] << (BN_BITS - bits)) : 0;
    r->d[i] = (a->d[i + limbs] >> bits) | hi;
  }
  r->n = n;
  BN(norm)(r);
}

/* q = a / b, r = a % b: Knuth's algorithm D (TAOCP 4.3.1), after Hacker's
 * Delight's divmnu. q and r must not alias a, b or each other; either may
 * be NULL. b != 0. */
static void BN(divmod)(BN(t) *q, BN(t) *r, const BN(t) *a, const BN(t) *b) {
  if (b->n == 0) bn_overflow("divide by zero");
  if (BN(cmp)(a, b) < 0) {
    if (r) *r = *a;
    if (q) q->n = 0;
    return;
  }
  if (b->n == 1) {
    BN(t) qq;
    BN_LIMB rem = BN(divmod_small)(&qq, a, b->d[0]);
    if (q) *q = qq;
    if (r) BN(set_u64)(r, rem);
    return;
  }
  int m = a->n, n = b->n;
  if (m + 1 > BN_CAP) bn_overflow("divmod");
  /* Normalise: shift so the divisor's top limb has its top bit set. */
  int s = 0;
  for (BN_LIMB top = b->d[n - 1]; !(top >> (BN_BITS - 1)); top <<= 1) ++s;
  BN_LIMB vn[BN_CAP], un[BN_CAP + 1];
  for (int i = n - 1; i > 0; --i)
    vn[i] = s ? (BN_LIMB)(b->d[i] << s) | (b->d[i - 1] >> (BN_BITS - s)) : b->d[i];
  vn[0] = (BN_LIMB)(b->d[0] << s);
  un[m] = s ? a->d[m - 1] >> (BN_BITS - s) : 0;
  for (int i = m - 1; i > 0; --i)
    un[i] = s ? (BN_LIMB)(a->d[i] << s) | (a->d[i - 1] >> (BN_BITS - s)) : a->d[i];
  un[0] = (BN_LIMB)(a->d[0] << s);

  BN(t) qq;
  qq.n = m - n + 1;
  for (int j = m - n; j >= 0; --j) {
    /* Estimate the quotient digit from the top two limbs, then correct it
     * with the third: at most two decrements. */
    BN_DLIMB num = ((BN_DLIMB)un[j + n] << BN_BITS) | un[j + n - 1];
    BN_DLIMB qhat = num / vn[n - 1];
    BN_DLIMB rhat = num % vn[n - 1];
    while (qhat >= BN_BASE ||
           qhat * vn[n - 2] > ((rhat << BN_BITS) | un[j + n - 2])) {
      --qhat;
      rhat += vn[n - 1];
      if (rhat >= BN_BASE) break;
    }
    /* un[j .. j+n] -= qhat * vn */
    BN_LIMB borrow = 0, carry = 0;
    for (int i = 0; i < n; ++i) {
      BN_DLIMB p = qhat * vn[i] + carry;
      carry = (BN_LIMB)(p >> BN_BITS);
      BN_LIMB plo = (BN_LIMB)p;
      BN_LIMB t = un[i + j] - plo;
      BN_LIMB b1 = un[i + j] < plo;
      BN_LIMB t2 = t - borrow;
      BN_LIMB b2 = t < borrow;
      un[i + j] = t2;
      borrow = b1 | b2;
    }
    BN_LIMB t = un[j + n] - carry;
    BN_LIMB b1 = un[j + n] < carry;
    BN_LIMB t2 = t - borrow;
    BN_LIMB b2 = t < borrow;
    un[j + n] = t2;
    qq.d[j] = (BN_LIMB)qhat;
    if (b1 | b2) {
      /* qhat was one too large (rare): add the divisor back. */
      --qq.d[j];
      BN_LIMB c = 0;
      for (int i = 0; i < n; ++i) {
        BN_DLIMB sum = (BN_DLIMB)un[i + j] + vn[i] + c;
        un[i + j] = (BN_LIMB)sum;
        c = (BN_LIMB)(sum >> BN_BITS);
      }
      un[j + n] += c;
      ++BN(add_backs);
    }
  }
  BN(norm)(&qq);
  if (q) *q = qq;
  if (r) {
    /* Unnormalise the remainder. */
    for (int i = 0; i < n; ++i)
      r->d[i] = s ? (un[i] >> s) | (BN_LIMB)(un[i + 1] << (BN_BITS - s)) : un[i];
    r->n = n;
    BN(norm)(r);
  }
}

/* r = base^e mod m, left to right. m > 0. */
static void BN(powmod)(BN(t) *r, const BN(t) *base, const BN(t) *e,
                       const BN(t) *m) {
  BN(t) acc, b, t;
  BN(set_u64)(&acc, 1);
  BN(divmod)(0, &b, base, m);
  for (int i = BN(bitlen)(e) - 1; i >= 0; --i) {
    BN(mul)(&t, &acc, &acc);
    BN(divmod)(0, &acc, &t, m);
    if (BN(bit)(e, i)) {
      BN(mul)(&t, &acc, &b);
      BN(divmod)(0, &acc, &t, m);
    }
  }
  BN(divmod)(0, r, &acc, m); /* m == 1 gives 0 */
}

/* r = floor(sqrt(a)), Newton's iteration from a power of two above. */
static void BN(isqrt)(BN(t) *r, const BN(t) *a) {
  if (a->n == 0) {
    r->n = 0;
    return;
  }
  BN(t) x, y, q;
  BN(set_u64)(&x, 1);
  BN(shl)(&x, &x, (BN(bitlen)(a) + 1) / 2 + 1);
  for (;;) {
    BN(divmod)(&q, 0, a, &x);
    BN(add)(&y, &x, &q);
    BN(shr)(&y, &y, 1);
    if (BN(cmp)(&y, &x) >= 0) break;
    x = y;
  }
  *r = x;
}

/* Decimal digits of a into buf (which must hold BN_CAP_BITS * 3 / 10 + 2
 * bytes), chunk by chunk: divisions by 10^9 or 10^19. */
static char *BN(to_dec)(const BN(t) *a, char *buf) {
  const BN_LIMB chunk = BN_BITS == 32 ? (BN_LIMB)1000000000u
                                      : (BN_LIMB)10000000000000000000ull;
  const int chunk_digits = BN_BITS == 32 ? 9 : 19;
  char tmp[BN_CAP_BITS * 3 / 10 + 24];
  int len = 0;
  BN(t) x = *a;
  do {
    BN_LIMB rem = BN(divmod_small)(&x, &x, chunk);
    for (int k = 0; k < chunk_digits; ++k) {
      tmp[len++] = (char)('0' + rem % 10);
      rem /= 10;
      if (x.n == 0 && rem == 0) break; /* no leading zeros in the top chunk */
    }
  } while (x.n != 0);
  for (int i = 0; i < len; ++i) buf[i] = tmp[len - 1 - i];
  buf[len] = '\0';
  return buf;
}

static char *BN(to_hex)(const BN(t) *a, char *buf) {
  static const char digits[] = "0123456789abcdef";
  int len = 0;
  if (a->n == 0) buf[len++] = '0';
  for (int i = a->n - 1; i >= 0; --i)
    for (int sh = BN_BITS - 4; sh >= 0; sh -= 4) {
      int dgt = (int)((a->d[i] >> sh) & 15);
      if (len == 0 && dgt == 0) continue;
      buf[len++] = digits[dgt];
    }
  buf[len] = '\0';
  return buf;
}

static void BN(from_dec)(BN(t) *x, const char *s) {
  x->n = 0;
  for (; *s; ++s) BN(mul_small_add)(x, 10, (BN_LIMB)(*s - '0'));
}

/* Order-dependent 64-bit summary of the value, the same for both limb
 * widths: FNV-1a over the significant bytes of the magnitude, low first. */
static uint64_t BN(digest)(const BN(t) *x) {
  uint64_t h = 0xcbf29ce484222325ull;
  int nbytes = (BN(bitlen)(x) + 7) / 8;
  for (int k = 0; k < nbytes; ++k) {
    h ^= (uint8_t)(x->d[k / (BN_BITS / 8)] >> (8 * (k % (BN_BITS / 8))));
    h *= 0x100000001b3ull;
  }
  return h;
}

/* ---- signed ---------------------------------------------------------------- */

static void BN(s_set_i64)(BN(s) *x, int64_t v) {
  x->neg = v < 0;
  BN(set_u64)(&x->mag, v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
}

static void BN(s_fix)(BN(s) *x) {
  if (x->mag.n == 0) x->neg = 0;
}

/* r = a + b, with b negated when `negate_b` (so subtraction too). */
static void BN(s_addsub)(BN(s) *r, const BN(s) *a, const BN(s) *b, int negate_b) {
  int bneg = b->neg ^ negate_b;
  if (a->neg == bneg) {
    BN(add)(&r->mag, &a->mag, &b->mag);
    r->neg = a->neg;
  } else if (BN(cmp)(&a->mag, &b->mag) >= 0) {
    BN(sub)(&r->mag, &a->mag, &b->mag);
    r->neg = a->neg;
  } else {
    BN(sub)(&r->mag, &b->mag, &a->mag);
    r->neg = bneg;
  }
  BN(s_fix)(r);
}

static void BN(s_mul)(BN(s) *r, const BN(s) *a, const BN(s) *b) {
  int neg = a->neg != b->neg;
  BN(mul)(&r->mag, &a->mag, &b->mag);
  r->neg = neg;
  BN(s_fix)(r);
}

/* Truncating division, as C's / and %: the remainder has a's sign. */
static void BN(s_divmod)(BN(s) *q, BN(s) *r, const BN(s) *a, const BN(s) *b) {
  BN(t) qm, rm;
  BN(divmod)(&qm, &rm, &a->mag, &b->mag);
  int qneg = a->neg != b->neg, rneg = a->neg;
  if (q) {
    q->mag = qm;
    q->neg = qneg;
    BN(s_fix)(q);
  }
  if (r) {
    r->mag = rm;
    r->neg = rneg;
    BN(s_fix)(r);
  }
}

static char *BN(s_to_dec)(const BN(s) *x, char *buf) {
  buf[0] = '-';
  BN(to_dec)(&x->mag, buf + x->neg);
  return buf;
}

/* Inverse of a modulo m by the extended Euclidean algorithm on signed
 * numbers; returns 0 when gcd(a, m) != 1. */
static int BN(modinv)(BN(t) *inv, const BN(t) *a, const BN(t) *m) {
  BN(s) r0, r1, s0, s1, q, t, u;
  r0.neg = 0;
  r0.mag = *m;
  r1.neg = 0;
  r1.mag = *a;
  BN(s_set_i64)(&s0, 0);
  BN(s_set_i64)(&s1, 1);
  while (!BN(is_zero)(&r1.mag)) {
    BN(s_divmod)(&q, &t, &r0, &r1);
    r0 = r1;
    r1 = t;
    BN(s_mul)(&u, &q, &s1);
    BN(s_addsub)(&t, &s0, &u, 1);
    s0 = s1;
    s1 = t;
  }
  if (!(r0.mag.n == 1 && r0.mag.d[0] == 1)) return 0;
  if (s0.neg) { /* bring into [0, m) */
    BN(s) ms;
    ms.neg = 0;
    ms.mag = *m;
    BN(s_addsub)(&s0, &s0, &ms, 0);
  }
  *inv = s0.mag;
  return 1;
}

#undef BN_CAP
#undef BN_BASE
