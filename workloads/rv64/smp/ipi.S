/* Two harts and one IPI, bare metal: the scheduler's wake-up test.
 *
 * Hart 1 enables its software interrupt (mie.MSIE, mstatus.MIE) and waits
 * in wfi. Hart 0 counts down a short delay (so hart 1 is surely asleep),
 * raises hart 1's msip through the CLINT and spins until hart 1's handler
 * has stored a flag; then it reports success through tohost. Harts 2 and
 * up park with every interrupt disabled (they never wake).
 *
 * A correct exact scheduler runs hart 1 at its wake-up cycle, while hart 0
 * spins: the run ends a few hundred cycles after the IPI. A scheduler that
 * lets hart 0's slot run past the wake-up never ends (it reaches
 * --max-cycles). Any trap other than hart 1's software interrupt fails the
 * run with status 3. */
#define CLINT_MSIP 0x02000000
#define MIP_MSIP (1 << 3)
#define MSTATUS_MIE (1 << 3)
#define DELAY 100

  .section .text.init, "ax", @progbits
  .globl _start
_start:
  la t0, trap
  csrw mtvec, t0
  beqz a0, hart0
  li t0, 1
  bne a0, t0, park

hart1:
  li t0, MIP_MSIP
  csrw mie, t0
  csrsi mstatus, MSTATUS_MIE
1:
  wfi
  j 1b

hart0:
  li t0, DELAY
2:
  addi t0, t0, -1
  bnez t0, 2b
  li t0, CLINT_MSIP
  li t1, 1
  sw t1, 4(t0)            /* msip[1] = 1 */
  la t0, flag
3:
  ld t1, 0(t0)
  beqz t1, 3b
  li t1, 1                /* pass */
  la t0, tohost
  sd t1, 0(t0)
4:
  j 4b

  .balign 4
trap:
  csrr t0, mcause
  li t1, (1 << 63) | 3    /* machine software interrupt */
  bne t0, t1, bad
  csrr t0, mhartid
  li t1, 1
  bne t0, t1, bad
  li t0, CLINT_MSIP
  sw zero, 4(t0)          /* acknowledge */
  la t0, flag
  li t1, 1
  sd t1, 0(t0)
park:
  csrw mie, zero
  csrci mstatus, MSTATUS_MIE
5:
  wfi
  j 5b
bad:
  li t1, (3 << 1) | 1     /* fail with status 3 */
  la t0, tohost
  sd t1, 0(t0)
  j park

  .section .tohost, "aw", @progbits
  .balign 8
  .globl tohost
tohost: .dword 0
  .data
  .balign 8
flag: .dword 0
