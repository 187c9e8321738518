/* Functions that exercise each refusal of the x86 jump optimizer's safety
 * check (kprobes/x86/optimize.cpp, Linux's can_optimize): nothing calls
 * them; the tests register probes on them and read why each is refused.
 * Written in assembly so that the compiler cannot change their shape. */
#include <asm/asm.h>

  .text
  .code64

/* A jump table: an indirect jmp in the function could land anywhere,
 * inside a detoured region too. */
  .balign 16
  .globl optcase_jump_table
  .type optcase_jump_table, @function
optcase_jump_table:
  push %rbp
  mov %rsp, %rbp
  and $3, %edi
  jmp *optcase_table(,%rdi,8)
1:
  mov $1, %eax
  pop %rbp
  ret
  .size optcase_jump_table, . - optcase_jump_table

/* A branch into the region after the probe point: probing at
 * optcase_branch_into+2 (`mov %rsp, %rbp`, then `add`, ...) would detour
 * bytes the loop's jne lands in. */
  .balign 16
  .globl optcase_branch_into
  .type optcase_branch_into, @function
optcase_branch_into:
  push %rbp              /* +0 */
  mov %rsp, %rbp         /* +1 */
  add $1, %eax           /* +4: the jne's target, inside [+1, +8) */
  sub $1, %edi           /* +7 */
  jne optcase_branch_into + 4
  pop %rbp
  ret
  .size optcase_branch_into, . - optcase_branch_into

/* A call right after the probe point: a call cannot run from the detour
 * buffer (its return address would point into it). */
  .balign 16
  .globl optcase_call_in_region
  .type optcase_call_in_region, @function
optcase_call_in_region:
  push %rbp
  call optcase_leaf
  pop %rbp
  ret
  .size optcase_call_in_region, . - optcase_call_in_region

/* Too short: from its second instruction there are fewer than 5 bytes to
 * the end of the function. */
  .balign 16
  .globl optcase_leaf
  .type optcase_leaf, @function
optcase_leaf:
  xor %eax, %eax
  inc %eax
  ret
  .size optcase_leaf, . - optcase_leaf

  .section .rodata
  .balign 8
optcase_table:
  .quad 1b, 1b, 1b, 1b
