/* String functions. GCC may emit calls to memcpy/memset/memmove/memcmp on
 * its own (struct copies and clears), so these must exist. Blacklisted for
 * kprobes: the trap and panic paths may use them. */
#include "kernel/string.h"

#include "kernel/kprobes.h"

/* Keep GCC from turning these loops into calls to themselves. */
#pragma GCC optimize("no-tree-loop-distribute-patterns")

typedef uint64_t __attribute__((may_alias)) word_t;

void *memcpy(void *dst, const void *src, size_t n) {
  unsigned char *d = dst;
  const unsigned char *s = src;
  if ((((uintptr_t)d | (uintptr_t)s) & 7) == 0) {
    for (; n >= 8; n -= 8, d += 8, s += 8) *(word_t *)(void *)d = *(const word_t *)(const void *)s;
  }
  while (n--) *d++ = *s++;
  return dst;
}
NOKPROBE_SYMBOL(memcpy);

void *memmove(void *dst, const void *src, size_t n) {
  unsigned char *d = dst;
  const unsigned char *s = src;
  if (d == s || n == 0) return dst;
  if (d < s || d >= s + n) return memcpy(dst, src, n);
  while (n--) d[n] = s[n];
  return dst;
}
NOKPROBE_SYMBOL(memmove);

void *memset(void *dst, int c, size_t n) {
  unsigned char *d = dst;
  if (((uintptr_t)d & 7) == 0) {
    uint64_t v = (uint8_t)c * 0x0101010101010101UL;
    for (; n >= 8; n -= 8, d += 8) *(word_t *)(void *)d = v;
  }
  while (n--) *d++ = (unsigned char)c;
  return dst;
}
NOKPROBE_SYMBOL(memset);

int memcmp(const void *a, const void *b, size_t n) {
  const unsigned char *x = a, *y = b;
  for (size_t i = 0; i < n; i++)
    if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
  return 0;
}
NOKPROBE_SYMBOL(memcmp);

size_t strlen(const char *s) {
  size_t n = 0;
  while (s[n]) n++;
  return n;
}
NOKPROBE_SYMBOL(strlen);

int strcmp(const char *a, const char *b) {
  while (*a && *a == *b) {
    a++;
    b++;
  }
  return (unsigned char)*a - (unsigned char)*b;
}

char *strncpy_z(char *dst, const char *src, size_t size) {
  size_t i = 0;
  if (size == 0) return dst;
  for (; i + 1 < size && src[i]; i++) dst[i] = src[i];
  dst[i] = '\0';
  return dst;
}
