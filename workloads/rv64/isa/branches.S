/* Conditional branches, taken and not taken, at the signed/unsigned
 * boundaries; jal and jalr link values and jalr's clearing of bit 0. */
#include "env.h"

ISA_BEGIN
  TEST_BR_TAKEN 1, beq, 0, 0
  TEST_BR_TAKEN 2, beq, -1, -1
  TEST_BR_NOT_TAKEN 3, beq, 0, 1
  TEST_BR_NOT_TAKEN 4, beq, 0x100000000, 0     /* all 64 bits compared */
  TEST_BR_TAKEN 5, bne, 0x100000000, 0
  TEST_BR_NOT_TAKEN 6, bne, 7, 7

  TEST_BR_TAKEN 7, blt, -1, 0
  TEST_BR_TAKEN 8, blt, 0x8000000000000000, 0x7fffffffffffffff
  TEST_BR_NOT_TAKEN 9, blt, 0, -1
  TEST_BR_NOT_TAKEN 10, blt, 5, 5
  TEST_BR_TAKEN 11, bge, 5, 5
  TEST_BR_TAKEN 12, bge, 0, -1
  TEST_BR_NOT_TAKEN 13, bge, 0x8000000000000000, 0

  TEST_BR_TAKEN 14, bltu, 0, -1                /* -1 is the largest unsigned */
  TEST_BR_NOT_TAKEN 15, bltu, -1, 0
  TEST_BR_TAKEN 16, bltu, 0x7fffffffffffffff, 0x8000000000000000
  TEST_BR_NOT_TAKEN 17, bltu, 9, 9
  TEST_BR_TAKEN 18, bgeu, -1, 0
  TEST_BR_TAKEN 19, bgeu, 9, 9
  TEST_BR_NOT_TAKEN 20, bgeu, 0, 1

  /* backward branch: loop five times */
  li TESTNUM, 21
  li t1, 5
  li t3, 0
1:
  addi t3, t3, 1
  addi t1, t1, -1
  bnez t1, 1b
  li t4, 5
  bne t3, t4, fail

  /* jal links the address of the next instruction */
  li TESTNUM, 22
  jal t3, 2f
3:
  j fail
2:
  la t4, 3b
  bne t3, t4, fail

  /* jalr: target = (rs1 + imm) & ~1, link = next instruction. The target
   * register is also the link register here, so the old value must be
   * used before it is overwritten. */
  li TESTNUM, 23
  la t1, 4f
  addi t1, t1, -3           /* odd: 4f - 3 */
  jalr t1, 4(t1)            /* (4f + 1) & ~1 = 4f */
5:
  j fail
4:
  la t4, 5b
  bne t1, t4, fail

  /* jal with x0 as link is a plain jump */
  li TESTNUM, 24
  jal x0, 6f
  j fail
6:
ISA_END
