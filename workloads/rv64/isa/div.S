/* Division and remainder per the spec's table of special cases: by zero
 * (quotient all ones, remainder = dividend) and signed overflow
 * (MIN / -1 = MIN, remainder 0), for 64-bit and W forms; plus ordinary
 * truncation toward zero with mixed signs. */
#include "env.h"

ISA_BEGIN
  TEST_RR 1, div, -3, -7, 2
  TEST_RR 2, div, -3, 7, -2
  TEST_RR 3, div, 3, -7, -2
  TEST_RR 4, rem, -1, -7, 2
  TEST_RR 5, rem, 1, 7, -2
  TEST_RR 6, divu, 0x7fffffffffffffff, -1, 2
  TEST_RR 7, remu, 5, -1, 10
  TEST_RR 8, div, -1, 12345, 0
  TEST_RR 9, div, -1, -12345, 0
  TEST_RR 10, divu, -1, 12345, 0
  TEST_RR 11, rem, -12345, -12345, 0
  TEST_RR 12, remu, 12345, 12345, 0
  TEST_RR 13, div, 0x8000000000000000, 0x8000000000000000, -1
  TEST_RR 14, rem, 0, 0x8000000000000000, -1
  TEST_RR 15, divu, 0, 0x8000000000000000, -1
  TEST_RR 16, remu, 0x8000000000000000, 0x8000000000000000, -1

  TEST_RR 17, divw, 8, 0x1234567800000010, 0xff00000000000002
  TEST_RR 18, divw, -3, -7, 2
  TEST_RR 19, remw, -1, -7, 2
  TEST_RR 20, divuw, -1, 0xffffffff, 1       /* 0xffffffff sign-extended */
  TEST_RR 21, remuw, 0xfffffffffffffffb, 0xfffffffb, 0xfffffffe
  TEST_RR 22, divw, -1, 5, 0
  TEST_RR 23, divuw, -1, 5, 0
  TEST_RR 24, remw, 0xffffffff80000000, 0x180000000, 0
  TEST_RR 25, remuw, 0xffffffff80000000, 0x180000000, 0
  TEST_RR 26, divw, 0xffffffff80000000, 0x80000000, -1
  TEST_RR 27, remw, 0, 0x80000000, -1
  TEST_RR_SAME 28, div, 1, -9
  TEST_RR_RD_IS_RS1 29, rem, 0, 0, 0          /* 0 % 0 = 0 */
  TEST_RR_X0 30, div, 1, 0
ISA_END
