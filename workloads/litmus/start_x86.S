/* Entry for the small SMP guests here (litmus, falseshare; x86-64): CPU 0
 * clears .bss and releases the others; CPUs 0-3 run two_cpu_main(cpu) on
 * stacks of their own (16 KiB each, in the runtime's 64 KiB stack area),
 * and each guest uses the CPUs it needs (the others return at once). CPUs
 * 4 and up park. CPU 0's return value goes to the finisher (poweroff).
 * Every CPU starts with RDI = its number and interrupts off. */
  .section .text.init, "ax", @progbits
  .globl _start
_start:
  cmp $4, %edi
  jae park
  cld
  lea __stack_top(%rip), %rsp
  mov %rdi, %rax
  shl $14, %rax
  sub %rax, %rsp
  xor %ebp, %ebp
  test %edi, %edi
  jnz secondary
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
  movl $1, two_cpu_booted(%rip)
  xor %edi, %edi
  call two_cpu_main
  mov %eax, %edi
  call poweroff
secondary:
  mov two_cpu_booted(%rip), %eax
  test %eax, %eax
  jz secondary
  call two_cpu_main  /* RDI: the CPU, as at reset */
park:
  cli
  hlt
  jmp park
