/* LR/SC on one hart: a constrained LR/SC pair succeeds and writes; an SC
 * after a successful SC fails (every SC drops the reservation) and does
 * not write; lr.w sign-extends; an LR/SC increment loop converges. */
#include "env.h"

ISA_BEGIN
  /* lr.d / sc.d succeed: rd = 0, memory updated */
  li TESTNUM, 1
  la a0, cell
  li t2, 100
  sd t2, 0(a0)
  lr.d t3, (a0)
  addi t3, t3, 1
  sc.d t5, t3, (a0)
  bnez t5, fail
  TEST_REG 2, t3, 101
  li TESTNUM, 3
  ld t3, 0(a0)
  li t4, 101
  bne t3, t4, fail

  /* a second SC has no reservation left */
  li TESTNUM, 4
  lr.d t3, (a0)
  li t1, 7
  li t2, 8
  sc.d t5, t1, (a0)
  sc.d t6, t2, (a0)
  bnez t5, fail
  beqz t6, fail
  TEST_REG 5, t3, 101
  li TESTNUM, 6
  ld t3, 0(a0)
  li t4, 7
  bne t3, t4, fail

  /* lr.w sign-extends; sc.w writes only its word */
  li TESTNUM, 7
  la a1, words
  li t2, 0x80000000
  sw t2, 0(a1)
  li t2, 0x5a5a5a5a
  sw t2, 4(a1)
  li t1, 0xffffffff00000042
  lr.w t3, (a1)
  sc.w t5, t1, (a1)
  bnez t5, fail
  TEST_REG 8, t3, 0xffffffff80000000
  li TESTNUM, 9
  ld t3, 0(a1)
  li t4, 0x5a5a5a5a00000042
  bne t3, t4, fail

  /* the usual retry loop: 50 atomic increments */
  li TESTNUM, 10
  sd zero, 0(a0)
  li s0, 50
1:
  lr.d t3, (a0)
  addi t3, t3, 1
  sc.d t5, t3, (a0)
  bnez t5, 1b
  addi s0, s0, -1
  bnez s0, 1b
  ld t3, 0(a0)
  li t4, 50
  bne t3, t4, fail
ISA_END

  .balign 8
cell:
  .dword 0
words:
  .word 0, 0
