/* The few string functions the kernel uses (and that GCC may call on its
 * own for struct copies). Portable. */
#ifndef KERNEL_STRING_H
#define KERNEL_STRING_H

#include "kernel/types.h"

void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
int strcmp(const char *a, const char *b);
char *strncpy_z(char *dst, const char *src, size_t size); /* always NUL-terminates */

#endif
