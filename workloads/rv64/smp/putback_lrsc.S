/* A put-back's re-run must do what the run ahead did (issue 21, program 2).
 *
 * Hart 1 takes a reservation (lr.w on `a`) and loads `w`; hart 0 runs a
 * failing sc.w on `a`, then stores to `x`, beside `w` and on the page of
 * `a`. Hart 0 ran ahead over that store before hart 1's lr.w (earlier in
 * simulated time) flagged the page as holding a reservation; when hart 1's
 * load of `w` put hart 0 back, the re-run found the store into a flagged
 * page a sync point and stopped short ("re-running its run-ahead ...
 * diverged", an internal error). Powers off with status 0. */
  .option norvc
  .option norelax
  .text
  .globl _start
_start:
  bnez a0, hart1
hart0:
  la t1, a
  .rept 12
  nop
  .endr
  sc.w zero, zero, (t1)     /* fails: hart 0 holds no reservation */
  la x6, x
  ori x5, x0, 2
  sw x5, 0(x6)
  li t2, 0x00100000
  li t3, 0x5555
  sw t3, 0(t2)              /* power off, status 0 */
1: j 1b
hart1:
  .rept 15
  nop
  .endr
  la x12, a
  lr.w x13, 0(x12)
  la t0, w
  ld a0, 0(t0)
2: j 2b
  .data
  .balign 64
  .zero 128
w: .dword 0
x: .dword 0
  .zero 112
a: .dword 0
  .dword 0
