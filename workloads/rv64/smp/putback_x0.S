/* A put-back's re-run must not write x0 (issue 21, program 1).
 *
 * Hart 1 loads the word at `mod` as data and then executes it; hart 0
 * rewrites that instruction while hart 1 may be running ahead. Before the
 * fix, hart 0's put-back undid a block it had only been granted (its store
 * stopped at the code page's sync point) and so reset the decoded entry
 * hart 1's load was executing: the load wrote its value through the reset
 * entry's destination, x0, and hart 1's `sd zero` stored the low byte of
 * the word it loaded. Exit status: 1 + the low byte of what `sd zero`
 * stored, so 1 when x0 stayed 0 (the reference schedule's result). */
  .option norvc
  .option norelax
  .text
  .globl _start
_start:
  csrr a0, mhartid
  bnez a0, hart1
hart0:
  nop
  nop
  la a1, mod
  li t0, 0x00200f93          /* li t6, 2 */
  sw t0, 0(a1)               /* rewrite hart 1's instruction at mod */
  li t1, 300
1: addi t1, t1, -1
  bnez t1, 1b
  la t2, res
  ld t4, 0(t2)               /* what hart 1's `sd zero` stored */
  addi t4, t4, 1
  andi t4, t4, 0xff
  slli t4, t4, 16
  li t3, 0x3333
  or t3, t3, t4
  li t2, 0x00100000
  sw t3, 0(t2)               /* exit status = stored value + 1 */
2: j 2b
hart1:
  la a2, mod
  lwu s0, 0(a2)              /* read the instruction as data */
mod:
  li t6, 1
  nop
  nop
  nop
  nop
  la t2, res
  sd zero, 0(t2)
3: j 3b
  .data
  .balign 64
res: .dword 77
