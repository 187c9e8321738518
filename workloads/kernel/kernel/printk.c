/* printk: a small vsnprintf, one console line per call under the console
 * lock (irqsave), and the panic-path variant that cannot deadlock on it.
 * All blacklisted for kprobes. */
#include "kernel/printk.h"

#include "arch/arch.h"
#include "kernel/kprobes.h"
#include "kernel/percpu.h"
#include "kernel/spinlock.h"
#include "kernel/string.h"

#define PRINTK_LINE_MAX 256

static spinlock_t console_lock = SPIN_LOCK_UNLOCKED;

struct outbuf {
  char *buf;
  size_t size; /* capacity including the terminating NUL */
  size_t len;  /* characters produced (may exceed size - 1) */
};

static void out_char(struct outbuf *o, char c) {
  if (o->len + 1 < o->size) o->buf[o->len] = c;
  o->len++;
}

static void out_pad(struct outbuf *o, int n, char c) {
  while (n-- > 0) out_char(o, c);
}

/* An unsigned magnitude in base 10 or 16, in a field of `width` (negative:
 * left-aligned), with a '-' sign if `negative`. */
static void out_number(struct outbuf *o, unsigned long v, unsigned base, bool upper, int width,
                       char pad, bool negative) {
  const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  char tmp[24];
  int n = 0;
  do {
    tmp[n++] = digits[v % base];
    v /= base;
  } while (v != 0);
  int len = n + (negative ? 1 : 0);
  if (negative && pad == '0') out_char(o, '-');
  if (width > 0) out_pad(o, width - len, pad);
  if (negative && pad != '0') out_char(o, '-');
  while (n > 0) out_char(o, tmp[--n]);
  if (width < 0) out_pad(o, -width - len, ' ');
}

int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap) {
  struct outbuf o = {buf, size, 0};
  for (const char *p = fmt; *p; ++p) {
    if (*p != '%') {
      out_char(&o, *p);
      continue;
    }
    ++p;
    char pad = ' ';
    bool left = false;
    int width = 0, longs = 0;
    for (;; ++p) {
      if (*p == '-') left = true;
      else if (*p == '0') pad = '0';
      else break;
    }
    if (left) pad = ' ';
    while (*p >= '0' && *p <= '9') width = width * 10 + (*p++ - '0');
    if (left) width = -width;
    while (*p == 'l' || *p == 'z') {
      ++longs;
      ++p;
    }
    switch (*p) {
      case 'd':
      case 'i': {
        long v = longs ? va_arg(ap, long) : va_arg(ap, int);
        unsigned long mag = v < 0 ? 0UL - (unsigned long)v : (unsigned long)v;
        out_number(&o, mag, 10, false, width, pad, v < 0);
        break;
      }
      case 'u':
      case 'x':
      case 'X': {
        unsigned long v = longs ? va_arg(ap, unsigned long) : va_arg(ap, unsigned);
        out_number(&o, v, *p == 'u' ? 10 : 16, *p == 'X', width, pad, false);
        break;
      }
      case 'p':
        out_char(&o, '0');
        out_char(&o, 'x');
        out_number(&o, (unsigned long)(uintptr_t)va_arg(ap, void *), 16, false, width, pad, false);
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
      case '\0':
        --p; /* a lone '%' at the end */
        break;
      default:
        out_char(&o, '%');
        out_char(&o, *p);
        break;
    }
  }
  if (size > 0) buf[o.len < size ? o.len : size - 1] = '\0';
  return (int)o.len;
}
NOKPROBE_SYMBOL(vsnprintf);

int snprintf(char *buf, size_t size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, size, fmt, ap);
  va_end(ap);
  return n;
}
NOKPROBE_SYMBOL(snprintf);

/* "[cpu N] " + text + "\n" into line[PRINTK_LINE_MAX]; returns the length. */
static size_t format_line(char *line, const char *fmt, va_list ap) {
  int n = snprintf(line, PRINTK_LINE_MAX, "[cpu %u] ", smp_processor_id());
  int m = vsnprintf(line + n, PRINTK_LINE_MAX - (size_t)n, fmt, ap);
  size_t len = (size_t)n + (size_t)m;
  if (len > PRINTK_LINE_MAX - 2) len = PRINTK_LINE_MAX - 2; /* truncated */
  if (len == 0 || line[len - 1] != '\n') line[len++] = '\n';
  line[len] = '\0';
  return len;
}
NOKPROBE_SYMBOL(format_line);

static void console_write(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) arch_console_putc(s[i]);
}
NOKPROBE_SYMBOL(console_write);

int printk(const char *fmt, ...) {
  char line[PRINTK_LINE_MAX];
  va_list ap;
  va_start(ap, fmt);
  size_t len = format_line(line, fmt, ap);
  va_end(ap);
  arch_irqflags_t flags = spin_lock_irqsave(&console_lock);
  console_write(line, len);
  spin_unlock_irqrestore(&console_lock, flags);
  return (int)len;
}
NOKPROBE_SYMBOL(printk);

/* Never waits for a lock this CPU holds (a panic inside printk) and waits
 * only a bounded time for another CPU (which may be stuck or halted); then
 * writes without the lock. */
int panic_printk(const char *fmt, ...) {
  char line[PRINTK_LINE_MAX];
  va_list ap;
  va_start(ap, fmt);
  size_t len = format_line(line, fmt, ap);
  va_end(ap);
  arch_irqflags_t flags = arch_local_irq_save();
  bool locked = false;
  if (READ_ONCE(console_lock.cpu) != (int32_t)smp_processor_id()) {
    for (int tries = 0; tries < 100000 && !(locked = spin_trylock(&console_lock)); tries++)
      arch_cpu_relax();
  }
  console_write(line, len);
  if (locked) spin_unlock_no_resched(&console_lock);
  arch_local_irq_restore(flags);
  return (int)len;
}
NOKPROBE_SYMBOL(panic_printk);
