/* Shift amounts and sign extension. Register shifts use only the low 6
 * bits of rs2 (low 5 for the W forms), so 64 acts as 0 and -1 as 63; the W
 * forms shift the low 32 bits and sign-extend the 32-bit result, even for
 * srlw and a zero shift. In C these amounts are undefined, hence asm. */
#include "libguest.h"

#define RR(insn, a, b)                                                  \
  ({                                                                    \
    uint64_t r_;                                                        \
    __asm__ volatile(insn " %0, %1, %2"                                 \
                     : "=r"(r_)                                         \
                     : "r"((uint64_t)(a)), "r"((uint64_t)(b)));         \
    r_;                                                                 \
  })
#define RI(insn, a, imm)                                                \
  ({                                                                    \
    uint64_t r_;                                                        \
    __asm__ volatile(insn " %0, %1, " #imm : "=r"(r_) : "r"((uint64_t)(a))); \
    r_;                                                                 \
  })

#define SEXT32(x) ((uint64_t)(int64_t)(int32_t)(uint32_t)(x))
#define NEG 0x8000000000000001ull

static void shifts64(void) {
  CHECK_EQ(RR("sll", 1, 63), 0x8000000000000000ull);
  CHECK_EQ(RR("sll", 1, 64), 1);  /* amount 64 & 63 = 0 */
  CHECK_EQ(RR("sll", 1, 65), 2);
  CHECK_EQ(RR("sll", 3, -1), 0x8000000000000000ull); /* -1 & 63 = 63 */
  CHECK_EQ(RR("srl", NEG, 63), 1);
  CHECK_EQ(RR("srl", NEG, 64), NEG);
  CHECK_EQ(RR("srl", NEG, 0x101), 0x4000000000000000ull); /* 0x101 & 63 = 1 */
  CHECK_EQ(RR("sra", NEG, 63), ~0ull);
  CHECK_EQ(RR("sra", NEG, 64), NEG);
  CHECK_EQ(RR("sra", NEG, 65), 0xc000000000000000ull);
  CHECK_EQ(RR("sra", 0x7fffffffffffffffull, 127), 0); /* 127 & 63 = 63 */

  CHECK_EQ(RI("slli", 1, 63), 0x8000000000000000ull);
  CHECK_EQ(RI("srli", NEG, 63), 1);
  CHECK_EQ(RI("srai", NEG, 63), ~0ull);
  CHECK_EQ(RI("srai", NEG, 0), NEG);
  CHECK_EQ(RI("srai", 0x4000000000000000ull, 62), 1);
}

static void shifts32(void) {
  CHECK_EQ(RR("sllw", 1, 31), SEXT32(0x80000000u)); /* sign-extended */
  CHECK_EQ(RR("sllw", 1, 32), 1);                   /* 32 & 31 = 0 */
  CHECK_EQ(RR("sllw", 1, 33), 2);
  CHECK_EQ(RR("sllw", 0xffffffff00000003ull, 1), 6); /* upper bits ignored */
  CHECK_EQ(RR("srlw", 0x80000000ull, 0), SEXT32(0x80000000u));
  CHECK_EQ(RR("srlw", 0xffffffff80000000ull, 1), 0x40000000);
  CHECK_EQ(RR("srlw", 0xdeadbeef00000010ull, 4), 1);
  CHECK_EQ(RR("srlw", 0x80000000ull, 63), 1); /* 63 & 31 = 31 */
  CHECK_EQ(RR("sraw", 0x80000000ull, 4), SEXT32(0xf8000000u));
  CHECK_EQ(RR("sraw", 0x80000000ull, 32), SEXT32(0x80000000u));
  CHECK_EQ(RR("sraw", 0x00000000ffffff00ull, 4), SEXT32(0xfffffff0u));
  CHECK_EQ(RR("sraw", 0x7fffffff00000000ull, 1), 0); /* only low word counts */

  CHECK_EQ(RI("slliw", 1, 31), SEXT32(0x80000000u));
  CHECK_EQ(RI("slliw", 0x1ffffffffull, 1), SEXT32(0xfffffffeu));
  CHECK_EQ(RI("srliw", 0x80000000ull, 0), SEXT32(0x80000000u));
  CHECK_EQ(RI("srliw", 0x80000000ull, 31), 1);
  CHECK_EQ(RI("sraiw", 0x80000000ull, 31), ~0ull);
  CHECK_EQ(RI("sraiw", 0x1234567880000000ull, 1), SEXT32(0xc0000000u));
}

int main(void) {
  shifts64();
  shifts32();
  printf("shifts: %u checks passed\n", guest_checks_run);
  return 0;
}
