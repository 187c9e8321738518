/* Integer add/sub, register and immediate, 64-bit and W forms: carries,
 * wrap-around at the signed limits, sign extension of W results and of
 * 12-bit immediates, rd aliasing a source, and x0 as destination. */
#include "env.h"

ISA_BEGIN
  TEST_RR 1, add, 0, 0, 0
  TEST_RR 2, add, 3, 1, 2
  TEST_RR 3, add, 0, -1, 1
  TEST_RR 4, add, 0x8000000000000000, 0x7fffffffffffffff, 1   /* wraps */
  TEST_RR 5, add, 0x7fffffffffffffff, 0x8000000000000000, -1
  TEST_RR 6, add, 0x0000000100000000, 0x00000000ffffffff, 1   /* carry past bit 31 */
  TEST_RR 7, sub, -1, 0, 1
  TEST_RR 8, sub, 0x7fffffffffffffff, 0x8000000000000000, 1
  TEST_RR 9, sub, 0, 0x123456789abcdef0, 0x123456789abcdef0
  TEST_RI 10, addi, 0x7ff, 0, 0x7ff
  TEST_RI 11, addi, -0x800, 0, -0x800                        /* imm sign-extended */
  TEST_RI 12, addi, 0x80000000000007fe, 0x7fffffffffffffff, 0x7ff
  TEST_RI 13, addi, 0xffffffff, 0x100000000, -1

  /* W forms: 32-bit result, sign-extended; upper source bits ignored */
  TEST_RR 14, addw, 0xffffffff80000000, 0x7fffffff, 1
  TEST_RR 15, addw, 0, 0xffffffff, 1
  TEST_RR 16, addw, 3, 0x1234567800000001, 0xabcdef0000000002
  TEST_RR 17, subw, 0x7fffffff, 0xffffffff80000000, 1
  TEST_RR 18, subw, 0xffffffffffffffff, 0, 1
  TEST_RI 19, addiw, 0xffffffff80000000, 0x7fffffff, 1
  TEST_RI 20, addiw, 0xfffffffffffff800, 0, -0x800
  TEST_RI 21, addiw, 0x7fffffff, 0xffffffff7fffffff, 0          /* sext.w */
  TEST_RI 22, addiw, 0xffffffff80000000, 0x80000000, 0

  /* aliasing and x0 */
  TEST_RR_RD_IS_RS1 23, add, 24, 13, 11
  TEST_RR_SAME 24, add, 26, 13
  TEST_RR_SAME 25, sub, 0, 0x5555
  TEST_RR_SAME 26, addw, 0xfffffffffffffffe, 0x7fffffffffffffff
  TEST_RR_X0 27, add, 1, 2

  /* lui/auipc: upper immediates are sign-extended from bit 31 */
  li TESTNUM, 28
  lui t3, 0x80000
  li t4, 0xffffffff80000000
  bne t3, t4, fail
  li TESTNUM, 29
1:
  auipc t3, 0
  la t4, 1b
  bne t3, t4, fail
ISA_END
