/* Compute-bound benchmark kernel for measuring simulated MIPS.
 *
 * Each iteration runs four integer kernels over data in RAM: table-driven
 * CRC-32 over 32 KiB, a 40x40 int64 matrix multiply, a quicksort of 4096
 * 32-bit keys, and a 64-bit multiplicative hash over the same 32 KiB. The
 * results of every iteration are folded into one checksum, which is
 * compared with a value computed on the host; so a fast but wrong
 * simulator fails instead of posting a good number.
 *
 * Cost is about 1.88M guest instructions per iteration plus ~0.2M once
 * (measured with minstret under an instruction-counting reference emulator,
 * GCC 12 -O2):
 *   COMPUTE_ITERS=160 (compute.elf)       ~300M instructions
 *   COMPUTE_ITERS=10  (compute_small.elf) ~19M instructions
 *
 * Expected checksums: the program is plain portable C without undefined
 * behaviour (unsigned arithmetic wraps, signed values stay small), so a host
 * build computes the same numbers. To add an iteration count, run
 *   gcc -O2 -DCOMPUTE_HOST -DCOMPUTE_ITERS=N compute.c && ./a.out
 * and add the printed value to the table below. */
#ifdef COMPUTE_HOST
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#else
#include "libguest.h"
#endif

#ifndef COMPUTE_ITERS
#define COMPUTE_ITERS 10
#endif

/* Host-computed checksums (see above); the guest must reproduce them. */
#if COMPUTE_ITERS == 160
#define COMPUTE_EXPECTED 0x3653194b4c674180ull
#elif COMPUTE_ITERS == 10
#define COMPUTE_EXPECTED 0xca173a513c270e87ull
#elif !defined(COMPUTE_HOST) && !defined(COMPUTE_EXPECTED)
#error "no expected checksum for this COMPUTE_ITERS; see the comment above"
#endif

enum { BUF_BYTES = 32 * 1024, MAT_N = 40, SORT_N = 4096 };

static uint8_t buf[BUF_BYTES];
static uint32_t crc_table[256];
static int64_t mat_a[MAT_N][MAT_N], mat_b[MAT_N][MAT_N], mat_c[MAT_N][MAT_N];
static uint32_t keys[SORT_N];

/* xorshift64: cheap, deterministic, same on every host. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng_next(void) {
  uint64_t x = rng_state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return rng_state = x;
}

static void crc_init(void) {
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int b = 0; b < 8; ++b) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
    crc_table[i] = c;
  }
}

__attribute__((noinline)) uint32_t kernel_crc(const uint8_t *p, size_t n) {
  uint32_t crc = 0xffffffffu;
  for (size_t i = 0; i < n; ++i) crc = crc_table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

/* Entries stay within +-1024, so a sum of 40 products fits easily in
 * int64 and no signed overflow can occur. */
__attribute__((noinline)) uint64_t kernel_matmul(void) {
  for (int i = 0; i < MAT_N; ++i)
    for (int j = 0; j < MAT_N; ++j) {
      int64_t s = 0;
      for (int k = 0; k < MAT_N; ++k) s += mat_a[i][k] * mat_b[k][j];
      mat_c[i][j] = s;
    }
  uint64_t h = 0;
  for (int i = 0; i < MAT_N; ++i)
    for (int j = 0; j < MAT_N; ++j) h = h * 31 + (uint64_t)mat_c[i][j];
  return h;
}

static void quicksort(uint32_t *a, long lo, long hi) {
  while (lo < hi) {
    uint32_t pivot = a[lo + (hi - lo) / 2];
    long i = lo, j = hi;
    while (i <= j) {
      while (a[i] < pivot) ++i;
      while (a[j] > pivot) --j;
      if (i <= j) {
        uint32_t t = a[i];
        a[i] = a[j];
        a[j] = t;
        ++i;
        --j;
      }
    }
    /* Recurse into the smaller half, loop on the larger: bounded stack. */
    if (j - lo < hi - i) {
      quicksort(a, lo, j);
      lo = i;
    } else {
      quicksort(a, i, hi);
      hi = j;
    }
  }
}

__attribute__((noinline)) uint64_t kernel_sort(void) {
  for (int i = 0; i < SORT_N; ++i) keys[i] = (uint32_t)(rng_next() >> 32);
  quicksort(keys, 0, SORT_N - 1);
  uint64_t h = 0;
  for (int i = 0; i < SORT_N; ++i) {
    if (i > 0 && keys[i - 1] > keys[i]) return 0; /* unsorted: poison */
    h = h * 0x100000001b3ull + keys[i];
  }
  return h;
}

/* A multiply-xorshift hash over 64-bit words (in the spirit of FNV and
 * splitmix), reading the buffer byte by byte to stay endian-neutral. */
__attribute__((noinline)) uint64_t kernel_hash(const uint8_t *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i + 8 <= n; i += 8) {
    uint64_t w = 0;
    for (int b = 7; b >= 0; --b) w = (w << 8) | p[i + b];
    h ^= w;
    h *= 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
  }
  return h;
}

static void refill(void) {
  /* Fresh inputs every iteration so no kernel can be skipped as repeated. */
  for (size_t i = 0; i < BUF_BYTES; i += 8) {
    uint64_t r = rng_next();
    for (int b = 0; b < 8; ++b) buf[i + b] = (uint8_t)(r >> (8 * b));
  }
  for (int i = 0; i < MAT_N; ++i)
    for (int j = 0; j < MAT_N; ++j) {
      uint64_t r = rng_next();
      mat_a[i][j] = (int64_t)(r & 2047) - 1024;
      mat_b[i][j] = (int64_t)((r >> 16) & 2047) - 1024;
    }
}

uint64_t compute_checksum(unsigned iters) {
  uint64_t sum = 0;
  crc_init();
  for (unsigned it = 0; it < iters; ++it) {
    refill();
    sum = (sum << 7 | sum >> 57) ^ kernel_crc(buf, BUF_BYTES);
    sum = (sum << 7 | sum >> 57) ^ kernel_matmul();
    sum = (sum << 7 | sum >> 57) ^ kernel_sort();
    sum = (sum << 7 | sum >> 57) ^ kernel_hash(buf, BUF_BYTES);
  }
  return sum;
}

#ifdef COMPUTE_HOST
int main(void) {
  printf("COMPUTE_ITERS=%d checksum=0x%016llx\n", COMPUTE_ITERS,
         (unsigned long long)compute_checksum(COMPUTE_ITERS));
  return 0;
}
#else
int main(void) {
  printf("compute: %d iterations of crc32/matmul/sort/hash\n", COMPUTE_ITERS);
  uint64_t sum = compute_checksum(COMPUTE_ITERS);
#ifdef COMPUTE_REPORT_INSTRET
  /* Development aid only: ksim counts instructions itself, and a
   * simulator without minstret would trap here. */
  printf("compute: minstret=%lu\n", read_minstret());
#endif
  printf("compute: checksum 0x%016lx (expected 0x%016lx)\n", sum,
         (uint64_t)COMPUTE_EXPECTED);
  if (sum != COMPUTE_EXPECTED) {
    printf("compute: FAILED\n");
    return 1;
  }
  printf("compute: ok\n");
  return 0;
}
#endif
