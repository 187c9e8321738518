/* Loads and stores of every width: sign vs zero extension, positive and
 * negative offsets, and stores writing exactly their bytes. */
#include "env.h"

ISA_BEGIN
  TEST_LOAD 1, lb, 0xfffffffffffffff0, 0, data8
  TEST_LOAD 2, lbu, 0xf0, 0, data8
  TEST_LOAD 3, lb, 0x0f, 1, data8
  TEST_LOAD 4, lh, 0xffffffffffff80ff, 2, data8
  TEST_LOAD 5, lhu, 0x80ff, 2, data8
  TEST_LOAD 6, lw, 0xffffffff87654321, 4, data8
  TEST_LOAD 7, lwu, 0x87654321, 4, data8
  TEST_LOAD 8, ld, 0x8765432180ff0ff0, 0, data8
  TEST_LOAD 9, ld, 0x0123456789abcdef, 8, data8
  TEST_LOAD 10, lw, 0x01234567, -4, data8_end    /* negative offset */
  TEST_LOAD 11, lbu, 0xef, -8, data8_end

  TEST_STORE 12, sb, lb, 0x1234567890abcd80, 0xffffffffffffff80, 0, scratch
  TEST_STORE 13, sh, lh, 0x0000000000018001, 0xffffffffffff8001, 8, scratch
  TEST_STORE 14, sw, lw, 0xffffffff7fffffff, 0x7fffffff, 16, scratch
  TEST_STORE 15, sw, lwu, 0x00000000deadbeef, 0xdeadbeef, 20, scratch
  TEST_STORE 16, sd, ld, 0xfedcba9876543210, 0xfedcba9876543210, 24, scratch
  TEST_STORE 17, sd, ld, 0x1111111111111111, 0x1111111111111111, -8, scratch_end

  /* a byte store leaves its neighbours alone */
  li TESTNUM, 18
  la t1, scratch
  li t2, -1
  sd t2, 32(t1)
  sb zero, 35(t1)
  ld t3, 32(t1)
  li t4, 0xffffffff00ffffff
  bne t3, t4, fail
  /* a halfword store too */
  li TESTNUM, 19
  li t2, 0x1234
  sh t2, 38(t1)
  ld t3, 32(t1)
  li t4, 0x1234ffff00ffffff
  bne t3, t4, fail

  /* a load into x0 is discarded */
  li TESTNUM, 20
  la t1, data8
  ld x0, 0(t1)
  bnez x0, fail
ISA_END

  .balign 8
data8:
  .dword 0x8765432180ff0ff0
  .dword 0x0123456789abcdef
data8_end:

  .balign 8
scratch:
  .zero 64
scratch_end:
