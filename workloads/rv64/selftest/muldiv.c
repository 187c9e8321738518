/* M-extension corner cases, each instruction issued through inline asm so
 * the compiler can neither fold the result nor avoid the instruction (C's
 * division by zero and INT64_MIN / -1 are undefined, RISC-V's are not).
 * Expected values are from the unprivileged spec, "Division Operations"
 * table: x/0 = all ones (div, divu), x%0 = x (rem, remu); the signed
 * overflow INT64_MIN / -1 = INT64_MIN with remainder 0. The W forms work
 * on the low 32 bits and sign-extend the 32-bit result. */
#include "libguest.h"

#define RR(insn, a, b)                                                  \
  ({                                                                    \
    uint64_t r_;                                                        \
    __asm__ volatile(insn " %0, %1, %2"                                 \
                     : "=r"(r_)                                         \
                     : "r"((uint64_t)(a)), "r"((uint64_t)(b)));         \
    r_;                                                                 \
  })

#define I64_MIN 0x8000000000000000ull
#define ALL1 0xffffffffffffffffull
#define SEXT32(x) ((uint64_t)(int64_t)(int32_t)(uint32_t)(x))

static void division(void) {
  /* ordinary signs: truncation toward zero, remainder has dividend's sign */
  CHECK_EQ(RR("div", -7, 2), -3);
  CHECK_EQ(RR("rem", -7, 2), -1);
  CHECK_EQ(RR("div", 7, -2), -3);
  CHECK_EQ(RR("rem", 7, -2), 1);
  CHECK_EQ(RR("divu", ALL1, 2), 0x7fffffffffffffffull);
  CHECK_EQ(RR("remu", ALL1, 10), 5); /* 18446744073709551615 % 10 */

  /* by zero */
  CHECK_EQ(RR("div", 12345, 0), ALL1);
  CHECK_EQ(RR("div", -12345, 0), ALL1);
  CHECK_EQ(RR("divu", 12345, 0), ALL1);
  CHECK_EQ(RR("rem", -12345, 0), (uint64_t)-12345);
  CHECK_EQ(RR("remu", 12345, 0), 12345);

  /* signed overflow */
  CHECK_EQ(RR("div", I64_MIN, -1), I64_MIN);
  CHECK_EQ(RR("rem", I64_MIN, -1), 0);
  /* ...but unsigned has no overflow case */
  CHECK_EQ(RR("divu", I64_MIN, ALL1), 0);
  CHECK_EQ(RR("remu", I64_MIN, ALL1), I64_MIN);
}

static void division_w(void) {
  /* only the low 32 bits of the operands count */
  CHECK_EQ(RR("divw", 0x1234567800000010ull, 0xff00000000000002ull), 8);
  CHECK_EQ(RR("divw", -7, 2), -3);
  CHECK_EQ(RR("remw", -7, 2), -1);
  /* 0xffffffff / 1 is 0xffffffff as 32-bit, sign-extended to 64 */
  CHECK_EQ(RR("divuw", 0xffffffffull, 1), ALL1);
  CHECK_EQ(RR("remuw", 0xfffffffbull, 0x10), 11);
  /* an unsigned 32-bit remainder with bit 31 set is still sign-extended */
  CHECK_EQ(RR("remuw", 0xfffffffbull, 0xfffffffeull), SEXT32(0xfffffffbu));

  /* by zero: quotient all ones; remainder the sign-extended dividend */
  CHECK_EQ(RR("divw", 5, 0), ALL1);
  CHECK_EQ(RR("divuw", 5, 0), ALL1);
  CHECK_EQ(RR("remw", 0x0000000180000000ull, 0), SEXT32(0x80000000u));
  CHECK_EQ(RR("remuw", 0x0000000180000000ull, 0), SEXT32(0x80000000u));

  /* 32-bit signed overflow */
  CHECK_EQ(RR("divw", 0x80000000ull, ALL1), SEXT32(0x80000000u));
  CHECK_EQ(RR("remw", 0x80000000ull, ALL1), 0);
}

static void multiplication(void) {
  CHECK_EQ(RR("mul", 0x123456789ull, 0x987654321ull), 0x123456789ull * 0x987654321ull);
  CHECK_EQ(RR("mul", ALL1, ALL1), 1);
  /* high halves: (-1)*(-1) = 1 -> high 0; MIN*MIN = 2^126 -> high 2^62 */
  CHECK_EQ(RR("mulh", ALL1, ALL1), 0);
  CHECK_EQ(RR("mulh", I64_MIN, I64_MIN), 0x4000000000000000ull);
  CHECK_EQ(RR("mulh", I64_MIN, 1), ALL1);
  CHECK_EQ(RR("mulhu", ALL1, ALL1), 0xfffffffffffffffeull);
  CHECK_EQ(RR("mulhu", 1ull << 32, 1ull << 32), 1);
  /* mulhsu: rs1 signed, rs2 unsigned. -1 * (2^64-1) = -(2^64-1): high all
   * ones. 2 * (2^64-1) = 2^65 - 2: high 1. */
  CHECK_EQ(RR("mulhsu", ALL1, ALL1), ALL1);
  CHECK_EQ(RR("mulhsu", 2, ALL1), 1);
  CHECK_EQ(RR("mulhsu", I64_MIN, 2), ALL1);
  CHECK_EQ(RR("mulhsu", 0, ALL1), 0);
}

static void multiplication_w(void) {
  CHECK_EQ(RR("mulw", 0x7fffffff, 2), SEXT32(0xfffffffeu));
  CHECK_EQ(RR("mulw", 0x100000003ull, 5), 15); /* upper bits ignored */
  CHECK_EQ(RR("mulw", 0x10000, 0x10000), 0);    /* 2^32 wraps to 0 */
  CHECK_EQ(RR("mulw", -3, 7), (uint64_t)-21);
}

int main(void) {
  division();
  division_w();
  multiplication();
  multiplication_w();
  printf("muldiv: %u checks passed\n", guest_checks_run);
  return 0;
}
