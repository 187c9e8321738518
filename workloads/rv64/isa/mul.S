/* Multiplication: low and high halves with every signedness combination,
 * at 0, +-1 and the signed limits; mulw's 32-bit sign-extended result. */
#include "env.h"

ISA_BEGIN
  TEST_RR 1, mul, 0, 0, 0x7fffffffffffffff
  TEST_RR 2, mul, 0x0000000200000001, 0x100000001, 0x100000001 /* overflow bits lost */
  TEST_RR 3, mul, 1, -1, -1
  TEST_RR 4, mul, 0x8000000000000000, 0x8000000000000000, -1    /* MIN * -1 wraps */
  TEST_RR 5, mul, -6, 2, -3
  TEST_RR 6, mulh, 0, -1, -1
  TEST_RR 7, mulh, 0x4000000000000000, 0x8000000000000000, 0x8000000000000000
  TEST_RR 8, mulh, -1, 0x8000000000000000, 1
  TEST_RR 9, mulh, 0x3fffffffffffffff, 0x7fffffffffffffff, 0x7fffffffffffffff
  TEST_RR 10, mulhu, 0xfffffffffffffffe, -1, -1
  TEST_RR 11, mulhu, 1, 0x100000000, 0x100000000
  TEST_RR 12, mulhu, 0, 0xffffffff, 0xffffffff
  TEST_RR 13, mulhsu, -1, -1, -1                   /* -1 * (2^64 - 1) */
  TEST_RR 14, mulhsu, 1, 2, -1                     /* 2 * (2^64 - 1) */
  TEST_RR 15, mulhsu, -1, 0x8000000000000000, 2
  TEST_RR 16, mulhsu, 0, 0, -1
  TEST_RR 17, mulw, 0xfffffffffffffffe, 0x7fffffff, 2
  TEST_RR 18, mulw, 15, 0x100000003, 5             /* upper bits ignored */
  TEST_RR 19, mulw, 0, 0x10000, 0x10000            /* 2^32 wraps to 0 */
  TEST_RR 20, mulw, -21, -3, 7
  TEST_RR_SAME 21, mul, 0x0000000100000000, 0x10000
  TEST_RR_RD_IS_RS1 22, mulhu, 0, 7, 9
  TEST_RR_X0 23, mul, 3, 5
ISA_END
