/* Entry of ksim x86-64 guests written in C.
 *
 * Every CPU starts here in 64-bit long mode with flat addressing,
 * interrupts disabled, RDI = its CPU number and RSP = 0. CPU 0 sets up its
 * stack, zeroes .bss and runs main(); the others park, because libguest and
 * the programs here are single-threaded. main()'s return value goes to the
 * finisher (poweroff() in libguest): 0 -> 0x5555 (exit status 0),
 * n -> (n << 16) | 0x3333 (exit status n).
 *
 * No IDT is installed: the programs expect no exception, and a fault in a
 * guest is the simulator's business (a guest crash). */
#include "ksim_platform.h"

  .section .text.init, "ax", @progbits
  .globl _start
  .type _start, @function
_start:
  test %edi, %edi
  jnz park_cpu

  /* The System V ABI wants DF clear at every call; do not rely on reset. */
  cld
  lea __stack_top(%rip), %rsp     /* 16-byte aligned (link.ld) */
  xor %ebp, %ebp                  /* ends frame-pointer walks */

  /* .bss is 16-byte aligned at both ends (link.ld): quadword stores. */
  lea __bss_start(%rip), %rdi
  lea __bss_end(%rip), %rcx
  xor %eax, %eax
1:
  cmp %rcx, %rdi
  jae 2f
  mov %rax, (%rdi)
  add $8, %rdi
  jmp 1b
2:
  /* RSP is 16-byte aligned here, so main() sees the ABI's RSP = 8 mod 16. */
  call main
  mov %eax, %edi
  call poweroff                   /* does not return */
3:
  hlt
  jmp 3b
  .size _start, . - _start

  .type park_cpu, @function
park_cpu:
  /* Interrupts are already off; cli makes sure hlt sleeps for good, and
   * the loop covers a hlt that returns anyway (an NMI on real hardware). */
  cli
  hlt
  jmp park_cpu
  .size park_cpu, . - park_cpu

  .section .note.GNU-stack, "", @progbits
