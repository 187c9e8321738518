/* Guest runtime: see libguest.h. Written for clarity over speed except for
 * the memory functions, which the benchmark leans on. */
#include "libguest.h"

#include <stdarg.h>

/* Keep GCC from turning the loops in memset/memcpy below into calls to
 * memset/memcpy themselves (infinite recursion). */
#pragma GCC optimize("no-tree-loop-distribute-patterns")

/* Word accesses to byte buffers: may_alias makes them legal C. */
typedef uint64_t __attribute__((may_alias)) word_alias;

#define MMIO8(addr) (*(volatile uint8_t *)(addr))
#define MMIO32(addr) (*(volatile uint32_t *)(addr))

void uart_putc(char c) {
  /* Polling LSR keeps this correct on a real 16550; ksim always reports
   * the transmitter empty, so the loop exits at once. */
  while ((MMIO8(KSIM_UART_BASE + KSIM_UART_LSR) & KSIM_UART_LSR_THRE) == 0) {
  }
  MMIO8(KSIM_UART_BASE + KSIM_UART_THR) = (uint8_t)c;
}

void uart_puts(const char *s) {
  while (*s) uart_putc(*s++);
}

void poweroff(int code) {
  uint32_t v = code == 0 ? KSIM_FINISHER_PASS
                         : ((uint32_t)(code & 0xffff) << 16) | KSIM_FINISHER_FAIL;
  /* A failure code whose low 16 bits are 0 would read as "pass". */
  if (code != 0 && (code & 0xffff) == 0) v = (1u << 16) | KSIM_FINISHER_FAIL;
  MMIO32(KSIM_FINISHER_BASE) = v;
  for (;;) __asm__ volatile("wfi"); /* the store ends the run */
}

/* ---- printf ---------------------------------------------------------- */

struct out {
  int count;
};

static void out_char(struct out *o, char c) {
  uart_putc(c);
  ++o->count;
}

static void out_pad(struct out *o, int n, char pad) {
  while (n-- > 0) out_char(o, pad);
}

/* Prints an unsigned value in base 10 or 16 in a field of `width`:
 * right-aligned, or left-aligned for a negative width ("%-5d"). */
static void out_uint(struct out *o, uint64_t v, unsigned base, int upper,
                     int width, char pad, int negative) {
  const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  char buf[24];
  int n = 0;
  do {
    buf[n++] = digits[v % base];
    v /= base;
  } while (v != 0);
  int len = n + (negative ? 1 : 0);
  if (negative && pad == '0') out_char(o, '-'); /* "-0042", not "00-42" */
  if (width > 0) out_pad(o, width - len, pad);
  if (negative && pad != '0') out_char(o, '-');
  while (n > 0) out_char(o, buf[--n]);
  if (width < 0) out_pad(o, -width - len, ' ');
}

int printf(const char *fmt, ...) {
  struct out o = {0};
  va_list ap;
  va_start(ap, fmt);
  for (const char *p = fmt; *p; ++p) {
    if (*p != '%') {
      out_char(&o, *p);
      continue;
    }
    ++p;
    char pad = ' ';
    int width = 0, longs = 0, left = 0;
    if (*p == '-') {
      left = 1;
      ++p;
    } else if (*p == '0') {
      pad = '0';
      ++p;
    }
    while (*p >= '0' && *p <= '9') width = width * 10 + (*p++ - '0');
    if (left) width = -width;
    while (*p == 'l' || *p == 'z') {
      ++longs;
      ++p;
    }
    switch (*p) {
      case 'd':
      case 'i': {
        int64_t v = longs ? va_arg(ap, long) : va_arg(ap, int);
        /* Negate in unsigned arithmetic so INT64_MIN prints correctly. */
        uint64_t mag = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
        out_uint(&o, mag, 10, 0, width, pad, v < 0);
        break;
      }
      case 'u':
      case 'x':
      case 'X': {
        uint64_t v = longs ? va_arg(ap, unsigned long) : va_arg(ap, unsigned);
        out_uint(&o, v, *p == 'u' ? 10 : 16, *p == 'X', width, pad, 0);
        break;
      }
      case 'p':
        out_char(&o, '0');
        out_char(&o, 'x');
        out_uint(&o, (uintptr_t)va_arg(ap, void *), 16, 0, width, pad, 0);
        break;
      case 's': {
        const char *s = va_arg(ap, const char *);
        if (!s) s = "(null)";
        int len = (int)strlen(s);
        if (width > 0) out_pad(&o, width - len, ' ');
        while (*s) out_char(&o, *s++);
        if (width < 0) out_pad(&o, -width - len, ' ');
        break;
      }
      case 'c':
        out_char(&o, (char)va_arg(ap, int));
        break;
      case '%':
        out_char(&o, '%');
        break;
      case '\0': /* lone '%' at the end */
        --p;
        break;
      default: /* unknown conversion: show it verbatim */
        out_char(&o, '%');
        out_char(&o, *p);
        break;
    }
  }
  va_end(ap);
  return o.count;
}

/* ---- checks and traps -------------------------------------------------- */

unsigned guest_checks_run;

static void report_check(const char *file, int line, const char *what) {
  printf("guest: CHECK %u failed at %s:%d: %s\n", guest_checks_run, file, line,
         what);
}

void guest_check_failed(const char *file, int line, const char *what) {
  report_check(file, line, what);
  poweroff((int)guest_checks_run);
}

void guest_check_eq_failed(const char *file, int line, const char *what,
                           uint64_t got, uint64_t want) {
  report_check(file, line, what);
  printf("guest:   got 0x%lx, want 0x%lx\n", got, want);
  poweroff((int)guest_checks_run);
}

void guest_unexpected_trap(uint64_t mcause, uint64_t mepc, uint64_t mtval) {
  printf("guest: unexpected trap mcause=0x%lx mepc=0x%lx mtval=0x%lx\n",
         mcause, mepc, mtval);
  poweroff(GUEST_TRAP_EXIT_CODE);
}

/* ---- memory and string functions ---------------------------------------
 * GCC emits calls to these for struct copies and zeroing even with
 * -ffreestanding. Word-at-a-time when both pointers allow it: the benchmark
 * and the default guest copy buffers, and byte loops would dominate. */

void *memcpy(void *dst, const void *src, size_t n) {
  unsigned char *d = dst;
  const unsigned char *s = src;
  if ((((uintptr_t)d | (uintptr_t)s) & 7) == 0) {
    for (; n >= 8; n -= 8, d += 8, s += 8)
      *(word_alias *)d = *(const word_alias *)s;
  }
  while (n--) *d++ = *s++;
  return dst;
}

void *memmove(void *dst, const void *src, size_t n) {
  unsigned char *d = dst;
  const unsigned char *s = src;
  if (d == s || n == 0) return dst;
  if (d < s || d >= s + n) return memcpy(dst, src, n);
  /* Overlap with dst above src: copy backwards. */
  while (n--) d[n] = s[n];
  return dst;
}

void *memset(void *dst, int c, size_t n) {
  unsigned char *d = dst;
  if (((uintptr_t)d & 7) == 0) {
    uint64_t w = (unsigned char)c * 0x0101010101010101ull;
    for (; n >= 8; n -= 8, d += 8) *(word_alias *)d = w;
  }
  while (n--) *d++ = (unsigned char)c;
  return dst;
}

int memcmp(const void *a, const void *b, size_t n) {
  const unsigned char *x = a, *y = b;
  for (size_t i = 0; i < n; ++i)
    if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
  return 0;
}

size_t strlen(const char *s) {
  size_t n = 0;
  while (s[n]) ++n;
  return n;
}
