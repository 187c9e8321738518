/* Every AMO in .w and .d form: returned old value (sign-extended for .w)
 * and the value left in memory; .w must not touch the adjacent word. */
#include "env.h"

ISA_BEGIN
  TEST_AMO 1, amoswap.d, sd, ld, cell, 0x1122334455667788, -1, 0x1122334455667788, -1
  TEST_AMO 2, amoadd.d, sd, ld, cell, -1, 2, -1, 1
  TEST_AMO 3, amoand.d, sd, ld, cell, 0xff00ff00ff00ff00, 0x0ff00ff00ff00ff0, 0xff00ff00ff00ff00, 0x0f000f000f000f00
  TEST_AMO 4, amoor.d, sd, ld, cell, 0xf000000000000000, 0xf, 0xf000000000000000, 0xf00000000000000f
  TEST_AMO 5, amoxor.d, sd, ld, cell, 0xaaaaaaaaaaaaaaaa, -1, 0xaaaaaaaaaaaaaaaa, 0x5555555555555555
  TEST_AMO 6, amomin.d, sd, ld, cell, -5, 3, -5, -5
  TEST_AMO 7, amomax.d, sd, ld, cell, -5, 3, -5, 3
  TEST_AMO 8, amominu.d, sd, ld, cell, -5, 3, -5, 3
  TEST_AMO 9, amomaxu.d, sd, ld, cell, -5, 3, -5, -5
  TEST_AMO 10, amomin.d, sd, ld, cell, 0x7fffffffffffffff, 0x8000000000000000, 0x7fffffffffffffff, 0x8000000000000000

  /* .w: word `cell` with a sentinel in the word after it */
  li TESTNUM, 11
  la t1, cell
  li t2, 0x5a5a5a5a
  sw t2, 4(t1)
  TEST_AMO 12, amoswap.w, sw, lw, cell, 0x80000000, 0x12345678, 0xffffffff80000000, 0x12345678
  TEST_AMO 13, amoadd.w, sw, lw, cell, 0x7fffffff, 1, 0x7fffffff, 0xffffffff80000000
  TEST_AMO 14, amoadd.w, sw, lwu, cell, 0xffffffff, 1, -1, 0       /* no carry out */
  TEST_AMO 15, amoand.w, sw, lwu, cell, 0xf0f0f0f0, 0xff00ff00, 0xfffffffff0f0f0f0, 0xf000f000
  TEST_AMO 16, amoor.w, sw, lwu, cell, 0x80000000, 1, 0xffffffff80000000, 0x80000001
  TEST_AMO 17, amoxor.w, sw, lwu, cell, 0xaaaaaaaa, -1, 0xffffffffaaaaaaaa, 0x55555555
  TEST_AMO 18, amomin.w, sw, lwu, cell, 0x80000000, 1, 0xffffffff80000000, 0x80000000
  TEST_AMO 19, amomax.w, sw, lwu, cell, 0x80000000, 1, 0xffffffff80000000, 1
  TEST_AMO 20, amominu.w, sw, lwu, cell, 0x80000000, 1, 0xffffffff80000000, 1
  TEST_AMO 21, amomaxu.w, sw, lwu, cell, 0x80000000, 1, 0xffffffff80000000, 0x80000000
  /* only the low 32 bits of rs2 take part: 0x1_00000005 is 5 */
  TEST_AMO 22, amomax.w, sw, lwu, cell, 7, 0x100000005, 7, 7
  TEST_AMO 23, amominu.w, sw, lwu, cell, 7, 0x100000005, 7, 5
  li TESTNUM, 24
  la t1, cell
  lw t3, 4(t1)
  li t4, 0x5a5a5a5a
  bne t3, t4, fail

  /* aq/rl bits do not change the result; rd = x0 discards the old value */
  TEST_AMO 25, amoadd.d.aqrl, sd, ld, cell, 40, 2, 40, 42
  li TESTNUM, 26
  la t1, cell
  li t2, 8
  amoadd.d x0, t2, (t1)
  ld t3, 0(t1)
  li t4, 50
  bne t3, t4, fail
ISA_END

  .balign 8
cell:
  .dword 0
