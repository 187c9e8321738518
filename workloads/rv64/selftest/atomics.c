/* A-extension results on a single hart: every AMO's returned old value and
 * the value left in memory, for .w and .d, plus the LR/SC behaviour the
 * spec guarantees. The .w forms must sign-extend the old value they return
 * and leave the neighbouring word alone; min/max compare only 32 bits. */
#include "libguest.h"

#define AMO(insn, addr, val)                                   \
  ({                                                           \
    uint64_t old_;                                             \
    __asm__ volatile(insn " %0, %2, (%1)"                      \
                     : "=r"(old_)                              \
                     : "r"(addr), "r"((uint64_t)(val))         \
                     : "memory");                              \
    old_;                                                      \
  })

#define SEXT32(x) ((uint64_t)(int64_t)(int32_t)(uint32_t)(x))

static volatile uint64_t cell;
/* A .w target with a sentinel neighbour: [0] is operated on, [1] must not
 * change. Aligned to 8 so both words share one doubleword. */
static volatile uint32_t words[2] __attribute__((aligned(8)));

/* Runs `insn` on cell = init with `val`; checks old value and result. */
#define CHECK_AMO_D(insn, init, val, want_mem)      \
  do {                                              \
    cell = (init);                                  \
    CHECK_EQ(AMO(insn, &cell, val), (init));        \
    CHECK_EQ(cell, (want_mem));                     \
  } while (0)

#define CHECK_AMO_W(insn, init, val, want_mem)                  \
  do {                                                          \
    words[0] = (uint32_t)(init);                                \
    words[1] = 0x5a5a5a5au;                                     \
    CHECK_EQ(AMO(insn, &words[0], val), SEXT32(init));          \
    CHECK_EQ(words[0], (uint32_t)(want_mem));                   \
    CHECK_EQ(words[1], 0x5a5a5a5au);                            \
  } while (0)

static void amo_d(void) {
  CHECK_AMO_D("amoswap.d", 0x1122334455667788ull, 0xdeadbeefcafef00dull, 0xdeadbeefcafef00dull);
  CHECK_AMO_D("amoadd.d", 5, -3, 2);
  CHECK_AMO_D("amoadd.d", ~0ull, 2, 1); /* wraps */
  CHECK_AMO_D("amoand.d", 0xff00ff00ff00ff00ull, 0x0ff00ff00ff00ff0ull, 0x0f000f000f000f00ull);
  CHECK_AMO_D("amoor.d", 0xff00000000000000ull, 0x00000000000000ffull, 0xff000000000000ffull);
  CHECK_AMO_D("amoxor.d", 0xffff0000ffff0000ull, 0xff00ff00ff00ff00ull, 0x00ffff0000ffff00ull);
  /* signed vs unsigned: -5 is the smallest signed but the largest unsigned */
  CHECK_AMO_D("amomin.d", -5ull, 3, -5ull);
  CHECK_AMO_D("amomax.d", -5ull, 3, 3);
  CHECK_AMO_D("amominu.d", -5ull, 3, 3);
  CHECK_AMO_D("amomaxu.d", -5ull, 3, -5ull);
  CHECK_AMO_D("amomin.d", 0x8000000000000000ull, 0x7fffffffffffffffull, 0x8000000000000000ull);
  CHECK_AMO_D("amomaxu.d", 0x8000000000000000ull, 0x7fffffffffffffffull, 0x8000000000000000ull);
  /* ordering bits do not change results */
  CHECK_AMO_D("amoadd.d.aqrl", 40, 2, 42);
}

static void amo_w(void) {
  CHECK_AMO_W("amoswap.w", 0x80000001u, 0x12345678u, 0x12345678u);
  CHECK_AMO_W("amoadd.w", 0x7fffffffu, 1, 0x80000000u); /* wraps in 32 bits */
  CHECK_AMO_W("amoadd.w", 0xffffffffu, 2, 1);           /* no carry into [1] */
  CHECK_AMO_W("amoand.w", 0xf0f0f0f0u, 0xff00ff00u, 0xf000f000u);
  CHECK_AMO_W("amoor.w", 0x80000000u, 1, 0x80000001u);
  CHECK_AMO_W("amoxor.w", 0xaaaaaaaau, 0xffffffffu, 0x55555555u);
  CHECK_AMO_W("amomin.w", 0x80000000u, 1, 0x80000000u);
  CHECK_AMO_W("amomax.w", 0x80000000u, 1, 1);
  CHECK_AMO_W("amominu.w", 0x80000000u, 1, 1);
  CHECK_AMO_W("amomaxu.w", 0x80000000u, 1, 0x80000000u);
  /* only rs2's low 32 bits take part: 0x1_00000005 compares as 5 */
  CHECK_AMO_W("amomax.w", 7, 0x100000005ull, 7);
  CHECK_AMO_W("amominu.w", 7, 0x100000005ull, 5);
}

static void lrsc(void) {
  /* LR then SC to the same address with nothing in between succeeds. Done
   * in one asm block so no compiler-generated store can intervene. */
  cell = 100;
  uint64_t old, fail;
  __asm__ volatile(
      "lr.d %0, (%2)\n"
      "addi %0, %0, 1\n"
      "sc.d %1, %0, (%2)\n"
      : "=&r"(old), "=&r"(fail)
      : "r"(&cell)
      : "memory");
  CHECK_EQ(fail, 0);
  CHECK_EQ(old, 101);
  CHECK_EQ(cell, 101);

  /* An SC always invalidates the reservation, so a second SC fails and
   * leaves memory unchanged. One asm block again: only a constrained
   * LR/SC sequence is guaranteed to succeed. */
  uint64_t fail2;
  __asm__ volatile(
      "lr.d %0, (%3)\n"
      "sc.d %1, %4, (%3)\n"
      "sc.d %2, %5, (%3)\n"
      : "=&r"(old), "=&r"(fail), "=&r"(fail2)
      : "r"(&cell), "r"(7ull), "r"(8ull)
      : "memory");
  CHECK_EQ(old, 101);
  CHECK_EQ(fail, 0);
  CHECK(fail2 != 0);
  CHECK_EQ(cell, 7);

  /* lr.w sign-extends; sc.w writes only its word. */
  words[0] = 0x80000000u;
  words[1] = 0x5a5a5a5au;
  uint64_t loaded;
  __asm__ volatile(
      "lr.w %0, (%2)\n"
      "sc.w %1, %3, (%2)\n"
      : "=&r"(loaded), "=&r"(fail)
      : "r"(&words[0]), "r"(0xffffffff00000042ull)
      : "memory");
  CHECK_EQ(loaded, SEXT32(0x80000000u));
  CHECK_EQ(fail, 0);
  CHECK_EQ(words[0], 0x42);
  CHECK_EQ(words[1], 0x5a5a5a5au);
}

int main(void) {
  amo_d();
  amo_w();
  lrsc();
  printf("atomics: %u checks passed\n", guest_checks_run);
  return 0;
}
