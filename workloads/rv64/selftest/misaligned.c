/* Misaligned loads and stores to RAM. ksim performs them in hardware (the
 * spec allows either that or a trap), so every width at every offset must
 * behave like the equivalent sequence of byte accesses, including accesses
 * that straddle a doubleword and a 4 KiB page boundary. The accesses are
 * written in asm: from C, GCC would split a misaligned access into bytes. */
#include "libguest.h"

#define LOAD(insn, p)                                                  \
  ({                                                                   \
    uint64_t v_;                                                       \
    __asm__ volatile(insn " %0, 0(%1)" : "=r"(v_) : "r"(p) : "memory"); \
    v_;                                                                \
  })
#define STORE(insn, p, v) \
  __asm__ volatile(insn " %1, 0(%0)" : : "r"(p), "r"((uint64_t)(v)) : "memory")

/* Two pages, so an access can cross from the first into the second. */
static uint8_t area[8192] __attribute__((aligned(4096)));

/* Little-endian value of n bytes at p, from byte loads. */
static uint64_t bytes_le(const volatile uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

static uint64_t sext(uint64_t v, int bytes) {
  int shift = 64 - 8 * bytes;
  return (uint64_t)((int64_t)(v << shift) >> shift);
}

/* Every byte distinct-ish, with the top bit set in about half of them so
 * sign extension is exercised. Refills [from, to) of `area`. */
static void fill(int from, int to) {
  for (int i = from; i < to; ++i) area[i] = (uint8_t)(i * 37 + 0x81);
}

static void loads_at(volatile uint8_t *p) {
  CHECK_EQ(LOAD("lh", p), sext(bytes_le(p, 2), 2));
  CHECK_EQ(LOAD("lhu", p), bytes_le(p, 2));
  CHECK_EQ(LOAD("lw", p), sext(bytes_le(p, 4), 4));
  CHECK_EQ(LOAD("lwu", p), bytes_le(p, 4));
  CHECK_EQ(LOAD("ld", p), bytes_le(p, 8));
}

static void stores_at(volatile uint8_t *p) {
  const uint64_t v = 0x8877665544332211ull;
  /* Each store must write exactly its bytes: check the one before and the
   * one after stay as they were. */
  for (int n = 2; n <= 8; n *= 2) {
    uint8_t before = p[-1], after = p[n];
    if (n == 2) STORE("sh", p, v);
    if (n == 4) STORE("sw", p, v);
    if (n == 8) STORE("sd", p, v);
    CHECK_EQ(bytes_le(p, n), n == 8 ? v : v & ((1ull << (8 * n)) - 1));
    CHECK_EQ(p[-1], before);
    CHECK_EQ(p[n], after);
    int at = (int)(p - area);
    fill(at, at + n); /* undo the store for the next width */
  }
}

int main(void) {
  fill(0, (int)sizeof area);
  /* every offset within a doubleword, including the aligned one */
  for (int off = 0; off < 8; ++off) {
    loads_at(&area[64 + off]);
    stores_at(&area[64 + off]);
  }
  /* straddling the page boundary at area + 4096 */
  for (int back = 1; back < 8; ++back) {
    loads_at(&area[4096 - back]);
    stores_at(&area[4096 - back]);
  }
  printf("misaligned: %u checks passed\n", guest_checks_run);
  return 0;
}
