/* Functions that exercise each refusal of the RV64 jump optimizer's
 * safety check (kprobes/rv64/optimize.cpp: the out-of-tree series'
 * can_optimize with its register liveness check): nothing calls them; the
 * tests register probes on them and read why each is refused. Written in
 * assembly, without compressed instructions, so that neither the compiler
 * nor the assembler can change their shape. */
#include <asm/asm.h>

  .text
  .option push
  .option norvc

/* A jump table: an indirect jump (not a ret, not an auipc+jalr tail call)
 * could land anywhere, inside a detoured region too. */
  .balign 4
  .globl optcase_jump_table
  .type optcase_jump_table, @function
optcase_jump_table:
  andi a0, a0, 3
  slli a0, a0, 3
  lla t0, optcase_table
  add t0, t0, a0
  ld t0, 0(t0)
  jr t0
1:
  li a0, 1
  ret
  .size optcase_jump_table, . - optcase_jump_table

/* A branch into the region: probing at +0 detours [+0, +8), and the
 * loop's bnez lands at +4. */
  .balign 4
  .globl optcase_branch_into
  .type optcase_branch_into, @function
optcase_branch_into:
  li a1, 0               /* +0 */
  addi a1, a1, 1         /* +4: the bnez's target */
  addi a0, a0, -1        /* +8 */
  bnez a0, optcase_branch_into + 4
  mv a0, a1
  ret
  .size optcase_branch_into, . - optcase_branch_into

/* A call in the region: probing at +4 detours the sd and the jal, which is
 * PC-relative and whose return address would point into the detour
 * buffer. */
  .balign 4
  .globl optcase_call_in_region
  .type optcase_call_in_region, @function
optcase_call_in_region:
  addi sp, sp, -16
  sd ra, 8(sp)
  call optcase_leaf
  ld ra, 8(sp)
  addi sp, sp, 16
  ret
  .size optcase_call_in_region, . - optcase_call_in_region

/* No free register: every temporary and argument register is read after
 * the region (a0-a7 by the call, t0-t6 by the sum after it). */
  .balign 4
  .globl optcase_no_free_reg
  .type optcase_no_free_reg, @function
optcase_no_free_reg:
  addi sp, sp, -16       /* +0: the region, [+0, +8) */
  sd ra, 8(sp)           /* +4 */
  add s1, t0, t1         /* +8: reads t0-t6 */
  add s1, s1, t2
  add s1, s1, t3
  add s1, s1, t4
  add s1, s1, t5
  add s1, s1, t6
  call optcase_leaf      /* reads a0-a7 (the calling convention) */
  ld ra, 8(sp)
  addi sp, sp, 16
  ret
  .size optcase_no_free_reg, . - optcase_no_free_reg

/* Too short: from its second instruction there are fewer than 8 bytes to
 * the end of the function. */
  .balign 4
  .globl optcase_leaf
  .type optcase_leaf, @function
optcase_leaf:
  li a0, 0
  addi a0, a0, 1
  ret
  .size optcase_leaf, . - optcase_leaf

  .option pop

  .section .rodata
  .balign 8
optcase_table:
  .quad 1b, 1b, 1b, 1b
