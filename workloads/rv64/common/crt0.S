/* M-mode entry for ksim RV64 guests written in C.
 *
 * Every hart starts here with a0 = hartid. Hart 0 runs main(); the others
 * park, because libguest and the programs here are single-threaded.
 * main()'s return value goes to the finisher: 0 passes, n fails with n. */
#include "ksim_platform.h"

/* Must equal GUEST_TRAP_EXIT_CODE in libguest.h (C-only header). */
.equ TRAP_EXIT_CODE, 99

  .section .text.init, "ax", @progbits
  .globl _start
  .type _start, @function
_start:
  /* gp must be set without relaxation, or the linker would rewrite this
   * very instruction into a gp-relative one. */
  .option push
  .option norelax
  la gp, __global_pointer$
  .option pop

  la t0, guest_trap_vector
  csrw mtvec, t0
  bnez a0, park_hart

  la sp, __stack_top
  /* .bss is 8-byte aligned at both ends (link.ld), so doubleword stores. */
  la t0, __bss_start
  la t1, __bss_end
1:
  bgeu t0, t1, 2f
  sd zero, 0(t0)
  addi t0, t0, 8
  j 1b
2:
  call main
  tail poweroff /* a0 already holds main's return value */
  .size _start, . - _start

park_hart:
  /* No interrupt is enabled, so wfi may sleep forever; the loop covers a
   * wfi that returns early, which the spec allows. */
  csrw mie, zero
3:
  wfi
  j 3b

  .text
  /* mtvec needs 4-byte alignment (its low two bits select the mode). */
  .balign 4
  .globl guest_trap_vector
  .type guest_trap_vector, @function
guest_trap_vector:
  /* A fault while reporting (say, in the UART code) must not re-enter
   * here forever: the second trap goes straight to the finisher. */
  la t0, guest_double_trap
  csrw mtvec, t0
  /* The trap may come from code with a broken sp: use a stack of its own. */
  la sp, __trap_stack_top
  csrr a0, mcause
  csrr a1, mepc
  csrr a2, mtval
  call guest_unexpected_trap
  .size guest_trap_vector, . - guest_trap_vector

  .balign 4
guest_double_trap:
  li t0, KSIM_FINISHER_BASE
  li t1, (TRAP_EXIT_CODE << 16) | KSIM_FINISHER_FAIL
  sw t1, 0(t0)
4:
  wfi
  j 4b
