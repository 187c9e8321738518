/* Entry for the small SMP guests here (litmus, falseshare; RV64): hart 0
 * clears .bss and releases the others; harts 0-3 run two_cpu_main(hart) on
 * stacks of their own (16 KiB each, in the runtime's 64 KiB stack area),
 * and each guest uses the harts it needs (the others return at once).
 * Harts 4 and up park. Hart 0's return value goes to the finisher
 * (poweroff). */
  .section .text.init, "ax", @progbits
  .globl _start
_start:
  .option push
  .option norelax
  la gp, __global_pointer$
  .option pop
  li t1, 4
  bgeu a0, t1, park
  la sp, __stack_top
  slli t0, a0, 14
  sub sp, sp, t0
  bnez a0, secondary
  la t0, __bss_start
  la t1, __bss_end
1:
  bgeu t0, t1, 2f
  sd zero, 0(t0)
  addi t0, t0, 8
  j 1b
2:
  fence rw, rw
  la t0, two_cpu_booted
  li t1, 1
  sw t1, 0(t0)
  li a0, 0
  call two_cpu_main
  tail poweroff
secondary:
  la t0, two_cpu_booted
3:
  lw t1, 0(t0)
  beqz t1, 3b
  fence rw, rw
  call two_cpu_main  /* a0: the hart, as at reset */
park:
  csrw mie, zero
4:
  wfi
  j 4b
