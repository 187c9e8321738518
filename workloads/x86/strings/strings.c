/* A small string library and its exercise, for the x86-64 guest (see
 * workloads/x86/README.md). Everything is prefixed ks_ so the native build
 * does not collide with the C library: length, compare, copy (with strncpy's
 * padding), concatenate, search (naive, KMP, memmem), span, tokenise
 * (strtok_r), reverse, case mapping, integer <-> text in bases 2..36 with
 * overflow detection, base64, run-length coding, Levenshtein distance, and a
 * tiny snprintf with flags, width and precision.
 *
 * Byte loads and stores everywhere; fixed-size __builtin_memcpy/memset and
 * struct copies that GCC expands inline (rep movs/stos, or moves) at -O2. */
#include <stdarg.h>

#include "prog.h"

/* ---- basics ------------------------------------------------------------------ */

static size_t ks_strlen(const char *s) {
  const char *p = s;
  while (*p) ++p;
  return (size_t)(p - s);
}

static int ks_strcmp(const char *a, const char *b) {
  while (*a && *a == *b) ++a, ++b;
  return (unsigned char)*a - (unsigned char)*b;
}

static int ks_strncmp(const char *a, const char *b, size_t n) {
  for (; n > 0; --n, ++a, ++b) {
    if (*a != *b) return (unsigned char)*a - (unsigned char)*b;
    if (!*a) return 0;
  }
  return 0;
}

static int ks_tolower(int c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }
static int ks_toupper(int c) { return c >= 'a' && c <= 'z' ? c - 32 : c; }
static int ks_isspace(int c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
static int ks_isalpha(int c) { return (c | 32) >= 'a' && (c | 32) <= 'z'; }

static int ks_strcasecmp(const char *a, const char *b) {
  int ca, cb;
  do {
    ca = ks_tolower((unsigned char)*a++);
    cb = ks_tolower((unsigned char)*b++);
  } while (ca && ca == cb);
  return ca - cb;
}

static char *ks_strcpy(char *dst, const char *src) {
  char *d = dst;
  while ((*d++ = *src++)) {
  }
  return dst;
}

/* strncpy: copies at most n bytes and pads with NULs up to n; the result is
 * not terminated when src has n or more characters. */
static char *ks_strncpy(char *dst, const char *src, size_t n) {
  size_t i = 0;
  for (; i < n && src[i]; ++i) dst[i] = src[i];
  for (; i < n; ++i) dst[i] = '\0';
  return dst;
}

/* strlcpy: always terminates (n > 0), returns strlen(src). */
static size_t ks_strlcpy(char *dst, const char *src, size_t n) {
  size_t len = ks_strlen(src);
  if (n > 0) {
    size_t k = len < n - 1 ? len : n - 1;
    memcpy(dst, src, k);
    dst[k] = '\0';
  }
  return len;
}

static char *ks_strcat(char *dst, const char *src) {
  ks_strcpy(dst + ks_strlen(dst), src);
  return dst;
}

static char *ks_strchr(const char *s, int c) {
  for (;; ++s) {
    if (*s == (char)c) return (char *)s;
    if (!*s) return 0;
  }
}

static char *ks_strrchr(const char *s, int c) {
  const char *last = 0;
  for (;; ++s) {
    if (*s == (char)c) last = s;
    if (!*s) return (char *)last;
  }
}

static size_t ks_strspn(const char *s, const char *accept) {
  size_t n = 0;
  while (s[n] && ks_strchr(accept, s[n])) ++n;
  return n;
}

static size_t ks_strcspn(const char *s, const char *reject) {
  size_t n = 0;
  while (s[n] && !ks_strchr(reject, s[n])) ++n;
  return n;
}

/* ---- search ------------------------------------------------------------------ */

static char *ks_strstr(const char *hay, const char *needle) {
  if (!*needle) return (char *)hay;
  for (; *hay; ++hay) {
    const char *h = hay, *n = needle;
    while (*n && *h == *n) ++h, ++n;
    if (!*n) return (char *)hay;
  }
  return 0;
}

/* Knuth-Morris-Pratt; needles up to 64 bytes. Returns the offset or -1. */
static long ks_find_kmp(const char *hay, size_t hn, const char *needle, size_t nn) {
  int fail[64];
  if (nn == 0) return 0;
  if (nn > 64) return -2;
  fail[0] = 0;
  for (size_t i = 1, k = 0; i < nn; ++i) {
    while (k > 0 && needle[i] != needle[k]) k = (size_t)fail[k - 1];
    if (needle[i] == needle[k]) ++k;
    fail[i] = (int)k;
  }
  for (size_t i = 0, k = 0; i < hn; ++i) {
    while (k > 0 && hay[i] != needle[k]) k = (size_t)fail[k - 1];
    if (hay[i] == needle[k]) ++k;
    if (k == nn) return (long)(i + 1 - nn);
  }
  return -1;
}

static void *ks_memmem(const void *hay, size_t hn, const void *needle, size_t nn) {
  const unsigned char *h = hay, *n = needle;
  if (nn == 0) return (void *)h;
  if (nn > hn) return 0;
  for (size_t i = 0; i + nn <= hn; ++i)
    if (h[i] == n[0] && memcmp(h + i, n, nn) == 0) return (void *)(h + i);
  return 0;
}

/* ---- tokens, reverse, case ---------------------------------------------------- */

static char *ks_strtok_r(char *s, const char *delim, char **save) {
  if (!s) s = *save;
  s += ks_strspn(s, delim);
  if (!*s) {
    *save = s;
    return 0;
  }
  char *end = s + ks_strcspn(s, delim);
  if (*end) *end++ = '\0';
  *save = end;
  return s;
}

static char *ks_reverse(char *s, size_t n) {
  for (size_t i = 0, j = n; i + 1 < j; ++i, --j) {
    char t = s[i];
    s[i] = s[j - 1];
    s[j - 1] = t;
  }
  return s;
}

static void ks_upcase(char *s) {
  for (; *s; ++s) *s = (char)ks_toupper((unsigned char)*s);
}

/* ---- integers <-> text ---------------------------------------------------------- */

static const char ks_digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";

/* Digits of v in `base` (2..36); returns the length. */
static size_t ks_utoa(uint64_t v, char *buf, unsigned base) {
  size_t n = 0;
  do {
    buf[n++] = ks_digits[v % base];
    v /= base;
  } while (v);
  buf[n] = '\0';
  ks_reverse(buf, n);
  return n;
}

static size_t ks_itoa(int64_t v, char *buf, unsigned base) {
  if (v < 0) {
    buf[0] = '-';
    return 1 + ks_utoa(0 - (uint64_t)v, buf + 1, base);
  }
  return ks_utoa((uint64_t)v, buf, base);
}

static int ks_digit_value(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = ks_tolower(c);
  if (c >= 'a' && c <= 'z') return c - 'a' + 10;
  return 99;
}

/* strtoull-like: leading space, an optional sign, base 0 (prefix 0x, 0b, 0
 * for octal, else decimal) or 2..36; saturates at UINT64_MAX and sets
 * *overflow. A '-' negates in unsigned arithmetic, as strtoull does. */
static uint64_t ks_strtou64(const char *s, const char **end, unsigned base,
                            int *overflow) {
  const char *p = s;
  int neg = 0;
  *overflow = 0;
  while (ks_isspace((unsigned char)*p)) ++p;
  if (*p == '+' || *p == '-') neg = *p++ == '-';
  if ((base == 0 || base == 16) && p[0] == '0' && (p[1] | 32) == 'x' &&
      ks_digit_value((unsigned char)p[2]) < 16) {
    p += 2;
    base = 16;
  } else if ((base == 0 || base == 2) && p[0] == '0' && (p[1] | 32) == 'b' &&
             ks_digit_value((unsigned char)p[2]) < 2) {
    p += 2;
    base = 2;
  } else if (base == 0) {
    base = p[0] == '0' ? 8 : 10;
  }
  uint64_t v = 0;
  const char *start = p;
  for (int d; (d = ks_digit_value((unsigned char)*p)) < (int)base; ++p) {
    if (v > (UINT64_MAX - (uint64_t)d) / base) {
      *overflow = 1;
      v = UINT64_MAX;
    } else if (!*overflow) {
      v = v * base + (uint64_t)d;
    }
  }
  if (p == start) { /* no digits */
    if (end) *end = s;
    return 0;
  }
  if (end) *end = p;
  return *overflow ? v : (neg ? 0 - v : v);
}

static int64_t ks_atoi(const char *s) {
  int ovf;
  return (int64_t)ks_strtou64(s, 0, 10, &ovf);
}

/* ---- base64, run-length coding ---------------------------------------------------- */

static const char b64chars[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static size_t b64_encode(const uint8_t *in, size_t n, char *out) {
  size_t o = 0;
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)in[i] << 16;
    if (i + 1 < n) v |= (uint32_t)in[i + 1] << 8;
    if (i + 2 < n) v |= in[i + 2];
    out[o++] = b64chars[v >> 18];
    out[o++] = b64chars[(v >> 12) & 63];
    out[o++] = i + 1 < n ? b64chars[(v >> 6) & 63] : '=';
    out[o++] = i + 2 < n ? b64chars[v & 63] : '=';
  }
  out[o] = '\0';
  return o;
}

static int b64_value(char c) {
  const char *p = ks_strchr(b64chars, c);
  return p && c ? (int)(p - b64chars) : -1;
}

/* Returns the decoded length, or -1 on malformed input. */
static long b64_decode(const char *in, uint8_t *out) {
  size_t n = ks_strlen(in), o = 0;
  if (n % 4) return -1;
  for (size_t i = 0; i < n; i += 4) {
    int v[4];
    for (int k = 0; k < 4; ++k) v[k] = in[i + k] == '=' ? 0 : b64_value(in[i + k]);
    if (v[0] < 0 || v[1] < 0 || v[2] < 0 || v[3] < 0) return -1;
    uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
    out[o++] = (uint8_t)(w >> 16);
    if (in[i + 2] != '=') out[o++] = (uint8_t)(w >> 8);
    if (in[i + 3] != '=') out[o++] = (uint8_t)w;
  }
  return (long)o;
}

/* "aaabcc" -> "3a1b2c" (counts up to 9 per run). */
static size_t rle_encode(const char *s, char *out) {
  size_t o = 0;
  while (*s) {
    char c = *s;
    int run = 0;
    while (*s == c && run < 9) ++s, ++run;
    out[o++] = (char)('0' + run);
    out[o++] = c;
  }
  out[o] = '\0';
  return o;
}

static size_t rle_decode(const char *s, char *out) {
  size_t o = 0;
  for (; s[0] && s[1]; s += 2)
    for (int k = 0; k < s[0] - '0'; ++k) out[o++] = s[1];
  out[o] = '\0';
  return o;
}

/* ---- edit distance ------------------------------------------------------------------ */

static int levenshtein(const char *a, const char *b) {
  int prev[64], cur[64];
  size_t n = ks_strlen(a), m = ks_strlen(b);
  if (m >= 64) return -1;
  for (size_t j = 0; j <= m; ++j) prev[j] = (int)j;
  for (size_t i = 1; i <= n; ++i) {
    cur[0] = (int)i;
    for (size_t j = 1; j <= m; ++j) {
      int del = prev[j] + 1, ins = cur[j - 1] + 1;
      int sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
      int best = del < ins ? del : ins;
      cur[j] = best < sub ? best : sub;
    }
    __builtin_memcpy(prev, cur, sizeof prev);
  }
  return prev[m];
}

/* ---- a tiny snprintf ------------------------------------------------------------------ */

/* Conversions %d %i %u %x %X %o %b (binary) %c %s %%; flags - 0 + space #;
 * a width and a precision (numbers: minimum digits; strings: maximum
 * characters), either may be *; length modifiers hh h l ll z. Output is
 * truncated to n-1 characters and terminated; returns the length the full
 * output would have, as C's snprintf. */
struct sink {
  char *buf;
  size_t cap, len;
};

static void sink_put(struct sink *s, char c) {
  if (s->len + 1 < s->cap) s->buf[s->len] = c;
  ++s->len;
}

static void sink_rep(struct sink *s, char c, int n) {
  while (n-- > 0) sink_put(s, c);
}

static int ks_vsnprintf(char *buf, size_t cap, const char *fmt, va_list ap) {
  struct sink s = {buf, cap, 0};
  for (const char *p = fmt; *p; ++p) {
    if (*p != '%') {
      sink_put(&s, *p);
      continue;
    }
    int left = 0, zero = 0, plus = 0, space = 0, alt = 0;
    for (;; ++p) {
      char f = p[1];
      if (f == '-') left = 1;
      else if (f == '0') zero = 1;
      else if (f == '+') plus = 1;
      else if (f == ' ') space = 1;
      else if (f == '#') alt = 1;
      else break;
    }
    ++p;
    int width = 0, prec = -1;
    if (*p == '*') {
      width = va_arg(ap, int);
      if (width < 0) left = 1, width = -width;
      ++p;
    } else {
      while (*p >= '0' && *p <= '9') width = width * 10 + (*p++ - '0');
    }
    if (*p == '.') {
      ++p;
      prec = 0;
      if (*p == '*') {
        prec = va_arg(ap, int);
        ++p;
      } else {
        while (*p >= '0' && *p <= '9') prec = prec * 10 + (*p++ - '0');
      }
    }
    int len_mod = 0; /* -2 hh, -1 h, 1 l, 2 ll, 3 z */
    if (*p == 'h') {
      len_mod = p[1] == 'h' ? (++p, -2) : -1;
      ++p;
    } else if (*p == 'l') {
      len_mod = p[1] == 'l' ? (++p, 2) : 1;
      ++p;
    } else if (*p == 'z') {
      len_mod = 3;
      ++p;
    }
    char conv = *p;
    if (conv == '\0') break;
    if (conv == '%') {
      sink_put(&s, '%');
      continue;
    }
    if (conv == 'c') {
      if (!left) sink_rep(&s, ' ', width - 1);
      sink_put(&s, (char)va_arg(ap, int));
      if (left) sink_rep(&s, ' ', width - 1);
      continue;
    }
    if (conv == 's') {
      const char *str = va_arg(ap, const char *);
      if (!str) str = "(null)";
      int n = 0;
      while (str[n] && (prec < 0 || n < prec)) ++n;
      if (!left) sink_rep(&s, ' ', width - n);
      for (int i = 0; i < n; ++i) sink_put(&s, str[i]);
      if (left) sink_rep(&s, ' ', width - n);
      continue;
    }
    uint64_t mag;
    int neg = 0;
    unsigned base = 10;
    if (conv == 'd' || conv == 'i') {
      int64_t v;
      switch (len_mod) {
        case -2: v = (signed char)va_arg(ap, int); break;
        case -1: v = (short)va_arg(ap, int); break;
        case 0: v = va_arg(ap, int); break;
        case 3: v = (int64_t)va_arg(ap, size_t); break;
        default: v = va_arg(ap, long); break;
      }
      neg = v < 0;
      mag = neg ? 0 - (uint64_t)v : (uint64_t)v;
    } else if (conv == 'u' || conv == 'x' || conv == 'X' || conv == 'o' || conv == 'b') {
      switch (len_mod) {
        case -2: mag = (unsigned char)va_arg(ap, unsigned); break;
        case -1: mag = (unsigned short)va_arg(ap, unsigned); break;
        case 0: mag = va_arg(ap, unsigned); break;
        case 3: mag = va_arg(ap, size_t); break;
        default: mag = va_arg(ap, unsigned long); break;
      }
      base = conv == 'u' ? 10 : conv == 'o' ? 8 : conv == 'b' ? 2 : 16;
    } else { /* unknown: copy verbatim */
      sink_put(&s, '%');
      sink_put(&s, conv);
      continue;
    }
    char digits[72];
    int nd = 0;
    if (!(prec == 0 && mag == 0)) {
      do {
        int d = (int)(mag % base);
        digits[nd++] = (char)(conv == 'X' ? "0123456789ABCDEF"[d] : ks_digits[d]);
        mag /= base;
      } while (mag);
    }
    const char *prefix = "";
    if (neg) prefix = "-";
    else if (plus && (conv == 'd' || conv == 'i')) prefix = "+";
    else if (space && (conv == 'd' || conv == 'i')) prefix = " ";
    else if (alt && nd > 0 && (conv == 'x' || conv == 'X' || conv == 'b'))
      prefix = conv == 'x' ? "0x" : conv == 'X' ? "0X" : "0b";
    else if (alt && conv == 'o' && (nd == 0 || digits[nd - 1] != '0') && prec <= nd)
      prefix = "0";
    int plen = (int)ks_strlen(prefix);
    int zeros = prec > nd ? prec - nd : 0;
    int total = plen + zeros + nd;
    if (zero && !left && prec < 0 && width > total) {
      zeros += width - total;
      total = width;
    }
    if (!left) sink_rep(&s, ' ', width - total);
    for (int i = 0; i < plen; ++i) sink_put(&s, prefix[i]);
    sink_rep(&s, '0', zeros);
    while (nd > 0) sink_put(&s, digits[--nd]);
    if (left) sink_rep(&s, ' ', width - total);
  }
  if (cap > 0) buf[s.len < cap ? s.len : cap - 1] = '\0';
  return (int)s.len;
}

/* No format attribute: %b is not a C17 conversion. */
static int ks_snprintf(char *buf, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = ks_vsnprintf(buf, cap, fmt, ap);
  va_end(ap);
  return n;
}

/* ---- main --------------------------------------------------------------------------- */

struct person { /* copied whole: GCC inlines the copy */
  char name[40];
  char city[40];
  int64_t id;
  uint8_t tags[48];
};

static void show_cmp(const char *a, const char *b) {
  int c = ks_strcmp(a, b);
  printf("cmp(\"%s\",\"%s\") %d ncmp3 %d casecmp %d\n", a, b,
         (c > 0) - (c < 0), ks_strncmp(a, b, 3) > 0 ? 1 : ks_strncmp(a, b, 3) < 0 ? -1 : 0,
         ks_strcasecmp(a, b) > 0 ? 1 : ks_strcasecmp(a, b) < 0 ? -1 : 0);
}

int main(void) {
  prog_rng rng = {prog_seed()};
  static char buf[512], buf2[512];
  printf("x86 strings\n");

  /* Compare, copy, concatenate. */
  show_cmp("apple", "apples");
  show_cmp("apple", "APPLE");
  show_cmp("abc", "abd");
  show_cmp("", "a");
  show_cmp("\xff", "a");
  EXPECT(ks_strlen("") == 0 && ks_strlen("hello, world") == 12);
  {
    char pad[12];
    __builtin_memset(pad, 'X', sizeof pad);
    ks_strncpy(pad, "abc", 8);
    printf("strncpy pad:");
    for (size_t i = 0; i < sizeof pad; ++i) printf(" %02x", (unsigned char)pad[i]);
    printf("\n");
    ks_strncpy(pad, "abcdefghijkl", 4);
    EXPECT(pad[3] == 'd' && pad[4] == 0);
    char small[6];
    size_t full = ks_strlcpy(small, "truncated", sizeof small);
    printf("strlcpy \"%s\" %u\n", small, (unsigned)full);
    ks_strcpy(buf, "foo");
    ks_strcat(buf, "/bar");
    ks_strcat(buf, "/baz.txt");
    printf("path %s dir-end %d ext %s\n", buf, (int)(ks_strrchr(buf, '/') - buf),
           ks_strrchr(buf, '.'));
    EXPECT(ks_strchr(buf, 'z') == buf + 10 && ks_strchr(buf, 'q') == 0 &&
           ks_strchr(buf, '\0') == buf + 15);
  }

  /* Search. */
  {
    static const char hay[] = "abracadabra abracadabra cadabra";
    static const char *const needles[] = {"abra", "cad", "dabra c", "bracket",
                                          "", "a", "aba", "cadabra"};
    for (size_t i = 0; i < PROG_ARRAY_SIZE(needles); ++i) {
      const char *n = needles[i];
      const char *s1 = ks_strstr(hay, n);
      long k = ks_find_kmp(hay, sizeof hay - 1, n, ks_strlen(n));
      const char *m = ks_memmem(hay, sizeof hay - 1, n, ks_strlen(n));
      EXPECT((s1 ? s1 - hay : -1) == k);
      EXPECT((m ? m - hay : -1) == k);
      printf("find \"%s\": %ld\n", n, k);
    }
    /* KMP over a long periodic text. */
    for (int i = 0; i < 400; ++i) buf[i] = "aab"[i % 3];
    buf[400] = 'c';
    buf[401] = '\0';
    printf("kmp periodic %ld %ld\n", ks_find_kmp(buf, 401, "aabaabac", 8),
           ks_find_kmp(buf, 401, "abaabc", 6));
    printf("spn %u cspn %u\n", (unsigned)ks_strspn("  \t x", " \t"),
           (unsigned)ks_strcspn("key=value;x", "=;"));
  }

  /* Tokenise, then reverse and upcase each token. */
  {
    ks_strcpy(buf, "  the quick,brown  fox;;jumps over,the lazy dog  ");
    char *save, *tok;
    int n = 0;
    buf2[0] = '\0';
    for (tok = ks_strtok_r(buf, " ,;", &save); tok; tok = ks_strtok_r(0, " ,;", &save)) {
      ks_reverse(tok, ks_strlen(tok));
      if (n % 2) ks_upcase(tok);
      if (n) ks_strcat(buf2, "|");
      ks_strcat(buf2, tok);
      ++n;
    }
    int letters = 0;
    for (const char *c = buf2; *c; ++c) letters += ks_isalpha((unsigned char)*c);
    printf("tokens %d letters %d: %s\n", n, letters, buf2);
  }

  /* Integers <-> text in every base. */
  {
    static const int64_t vals[] = {0, 1, -1, 255, -256, 1000000007,
                                   INT64_MAX, INT64_MIN, 0x123456789abcdefll};
    uint32_t h = 0x811c9dc5u;
    for (size_t i = 0; i < PROG_ARRAY_SIZE(vals); ++i)
      for (unsigned base = 2; base <= 36; ++base) {
        ks_itoa(vals[i], buf, base);
        int ovf;
        const char *end;
        uint64_t back = ks_strtou64(buf, &end, base, &ovf);
        EXPECT(!ovf && *end == '\0' && back == (uint64_t)vals[i]);
        for (const char *c = buf; *c; ++c) h = (h ^ (uint8_t)*c) * 0x01000193u;
        if (base == 2 || base == 8 || base == 16 || base == 36 || base == 7)
          printf("%ld base %u: %s\n", vals[i], base, buf);
      }
    printf("itoa hash %08x\n", h);
    static const char *const texts[] = {"42", "  -17", "+8", "0x1F", "0b1011",
                                        "0777", "18446744073709551615",
                                        "18446744073709551616", "12abc", "zz",
                                        "", "0x", "-0"};
    for (size_t i = 0; i < PROG_ARRAY_SIZE(texts); ++i) {
      int ovf;
      const char *end;
      uint64_t v = ks_strtou64(texts[i], &end, 0, &ovf);
      printf("strtou64(\"%s\", 0) = %lu ovf %d rest \"%s\"\n", texts[i], v, ovf, end);
    }
    printf("atoi %ld %ld\n", ks_atoi("-9223372036854775808"), ks_atoi("123xyz"));
    int ovf;
    printf("base36 zz %lu base16 DeadBeef %lx\n", ks_strtou64("zz", 0, 36, &ovf),
           ks_strtou64("DeadBeef", 0, 16, &ovf));
  }

  /* base64 of RFC 4648's test strings and of random bytes. */
  {
    static const char *const plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    for (size_t i = 0; i < PROG_ARRAY_SIZE(plain); ++i) {
      b64_encode((const uint8_t *)plain[i], ks_strlen(plain[i]), buf);
      long n = b64_decode(buf, (uint8_t *)buf2);
      EXPECT(n == (long)ks_strlen(plain[i]) && memcmp(buf2, plain[i], (size_t)n) == 0);
      printf("b64(\"%s\") = \"%s\"\n", plain[i], buf);
    }
    EXPECT(ks_strcmp((b64_encode((const uint8_t *)"foobar", 6, buf), buf), "Zm9vYmFy") == 0);
    uint8_t raw[100];
    for (size_t i = 0; i < sizeof raw; ++i) raw[i] = (uint8_t)(prog_rand(&rng) >> 56);
    b64_encode(raw, sizeof raw, buf);
    long n = b64_decode(buf, (uint8_t *)buf2);
    EXPECT(n == 100 && memcmp(buf2, raw, 100) == 0);
    printf("b64 random: %s\n", buf);
    printf("b64 bad: %ld %ld\n", b64_decode("abc", (uint8_t *)buf2),
           b64_decode("ab!d", (uint8_t *)buf2));
  }

  /* Run-length coding. */
  {
    static const char *const texts[] = {"aaabccddddd", "abc", "",
                                        "zzzzzzzzzzzzzzzzzzzzzzzz"};
    for (size_t i = 0; i < PROG_ARRAY_SIZE(texts); ++i) {
      rle_encode(texts[i], buf);
      rle_decode(buf, buf2);
      EXPECT(ks_strcmp(buf2, texts[i]) == 0);
      printf("rle(\"%s\") = \"%s\"\n", texts[i], buf);
    }
  }

  /* Edit distances. */
  {
    static const char *const pairs[][2] = {{"kitten", "sitting"},
                                           {"flaw", "lawn"},
                                           {"", "abc"},
                                           {"intention", "execution"},
                                           {"same", "same"}};
    for (size_t i = 0; i < PROG_ARRAY_SIZE(pairs); ++i)
      printf("lev(%s, %s) = %d\n", pairs[i][0], pairs[i][1],
             levenshtein(pairs[i][0], pairs[i][1]));
    EXPECT(levenshtein("kitten", "sitting") == 3);
  }

  /* The tiny snprintf. */
  {
    int n;
    n = ks_snprintf(buf, sizeof buf, "[%5d|%-5d|%05d|%+d|% d|%.3d|%x|%#X|%#o|%#b]",
                    42, 42, -42, 7, 7, 5, 0xbeefu, 0xbeefu, 8u, 5u);
    printf("%s (%d)\n", buf, n);
    n = ks_snprintf(buf, sizeof buf, "[%s|%8s|%-8s|%.2s|%c|%3c|%%|%ld|%lu|%zu|%hhd|%hu]",
                    "str", "right", "left", "truncate", 'x', 'y', INT64_MIN,
                    UINT64_MAX, (size_t)12345, 300, 70000);
    printf("%s (%d)\n", buf, n);
    n = ks_snprintf(buf, sizeof buf, "[%*d|%-*d|%.*s|%.0d|%#.0o|%lx|%llo]", 6, 1, 6,
                    2, 3, "abcdef", 0, 0u, 0xfedcba9876543210ul, 01234567ull);
    printf("%s (%d)\n", buf, n);
    n = ks_snprintf(buf, 10, "0123456789abcdef%d", 12345);
    printf("truncated \"%s\" (%d)\n", buf, n);
    EXPECT(n == 21 && ks_strlen(buf) == 9);
    n = ks_snprintf(0, 0, "%s-%d", "nothing", 99);
    printf("measure %d\n", n);
  }

  /* Struct copies and fixed-size block moves. */
  {
    static struct person people[8];
    struct person p;
    __builtin_memset(&p, 0, sizeof p);
    ks_strcpy(p.name, "Ada Lovelace");
    ks_strcpy(p.city, "London");
    p.id = 1815;
    for (size_t i = 0; i < sizeof p.tags; ++i) p.tags[i] = (uint8_t)(i * 7);
    for (int i = 0; i < 8; ++i) {
      people[i] = p; /* whole-struct copy */
      people[i].id += i;
      people[i].name[0] = (char)('A' + i);
    }
    struct person q = people[5];
    uint32_t h = 0x811c9dc5u;
    for (size_t i = 0; i < sizeof people; ++i)
      h = (h ^ ((const uint8_t *)people)[i]) * 0x01000193u;
    printf("people: %s %s %ld tags[47]=%u hash %08x\n", q.name, q.city, q.id,
           q.tags[47], h);
    char line[128];
    __builtin_memset(line, '-', sizeof line - 1);
    line[sizeof line - 1] = '\0';
    __builtin_memcpy(line + 10, "[ centred ]", 11);
    printf("%s\n", line + 60);
    memmove(line + 2, line, 20); /* overlapping, forwards */
    memmove(line, line + 5, 20);  /* overlapping, backwards */
    line[40] = '\0';
    printf("%s\n", line);
  }

  printf("strings: %s\n", prog_failures ? "FAILED" : "all ok");
  return prog_failures != 0;
}
