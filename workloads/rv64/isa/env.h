/* Test environment for the hand-written ISA tests, in the style of the
 * riscv-tests "-p-" (physical memory, no virtual memory) environment:
 *
 *   #include "env.h"
 *   ISA_BEGIN             M-mode setup, then mret into the body in U-mode
 *     TEST_RR 2, add, 3, 1, 2
 *     ...
 *   ISA_END               pass/fail epilogue, trap vector, tohost
 *   .data                 optional test data
 *
 * Reporting follows the riscv-tests "tohost" convention, which ksim
 * implements: the run ends when the program stores to the `tohost` symbol,
 * 1 meaning pass and (n << 1) | 1 meaning "failed with status n". The
 * current test's number is kept in gp (TESTNUM); a failing check jumps to
 * `fail`, so the run's exit status is the number of the failing test. An
 * unexpected trap is reported as a failure of the current test, or as
 * status 1023 if no test had started.
 *
 * Registers t0..t6 are scratch for the macros; gp is TESTNUM; tests may use
 * a0..a7 and s-registers freely. */
#ifndef ISA_ENV_H
#define ISA_ENV_H

#define TESTNUM gp
#define MSTATUS_MPP (3 << 11)
#define MCAUSE_ECALL_U 8
#define MCAUSE_ECALL_M 11
#define STATUS_NO_TEST 1023

/* Writes CSR `csr` with `val`, tolerating an illegal-instruction trap for
 * CSRs a core may lack (ksim has no S-mode, so medeleg, mideleg and satp
 * may not exist; PMP is optional). mtvec points just past the write, so a
 * trap lands there too. */
.macro WRITE_CSR_GUARDED csr, val
  la t0, 1f
  csrw mtvec, t0
  li t1, \val
  csrw \csr, t1
  .balign 4
1:
.endm

.macro ISA_BEGIN
  .section .text.init, "ax", @progbits
  .globl _start
_start:
  /* Every hart enters here with its id in a0; only hart 0 tests. */
  bnez a0, isa_park
  li TESTNUM, 0
  WRITE_CSR_GUARDED medeleg, 0
  WRITE_CSR_GUARDED mideleg, 0
  WRITE_CSR_GUARDED mie, 0
  WRITE_CSR_GUARDED satp, 0
  /* With PMP implemented, U-mode may touch no memory until an entry
   * allows it: one NAPOT entry over the whole address space, R+W+X. */
  WRITE_CSR_GUARDED pmpaddr0, -1
  WRITE_CSR_GUARDED pmpcfg0, 0x1f
  la t0, isa_trap_vector
  csrw mtvec, t0
  li t0, MSTATUS_MPP
  csrc mstatus, t0 /* MPP = U */
  la t0, isa_body
  csrw mepc, t0
  mret

isa_park:
  wfi
  j isa_park

  .text
isa_body:
.endm

/* ---- checks (each sets TESTNUM first) ---------------------------------- */

/* rd = insn(a, b) with distinct registers */
.macro TEST_RR num, insn, want, a, b
  li TESTNUM, \num
  li t1, \a
  li t2, \b
  \insn t3, t1, t2
  li t4, \want
  bne t3, t4, fail
.endm

/* rd == rs1: the result must overwrite the source correctly */
.macro TEST_RR_RD_IS_RS1 num, insn, want, a, b
  li TESTNUM, \num
  li t1, \a
  li t2, \b
  \insn t1, t1, t2
  li t4, \want
  bne t1, t4, fail
.endm

/* rd = rs1 = rs2 */
.macro TEST_RR_SAME num, insn, want, a
  li TESTNUM, \num
  li t1, \a
  \insn t1, t1, t1
  li t4, \want
  bne t1, t4, fail
.endm

/* writes to x0 are discarded */
.macro TEST_RR_X0 num, insn, a, b
  li TESTNUM, \num
  li t1, \a
  li t2, \b
  \insn x0, t1, t2
  bne x0, zero, fail
  mv t3, x0
  bnez t3, fail
.endm

.macro TEST_RI num, insn, want, a, imm
  li TESTNUM, \num
  li t1, \a
  \insn t3, t1, \imm
  li t4, \want
  bne t3, t4, fail
.endm

/* compares a register the test computed itself */
.macro TEST_REG num, reg, want
  li TESTNUM, \num
  li t4, \want
  bne \reg, t4, fail
.endm

.macro TEST_BR_TAKEN num, insn, a, b
  li TESTNUM, \num
  li t1, \a
  li t2, \b
  \insn t1, t2, 1f
  j fail
1:
.endm

.macro TEST_BR_NOT_TAKEN num, insn, a, b
  li TESTNUM, \num
  li t1, \a
  li t2, \b
  \insn t1, t2, fail
.endm

/* rd = load(base + off) */
.macro TEST_LOAD num, insn, want, off, base
  li TESTNUM, \num
  la t1, \base
  \insn t3, \off(t1)
  li t4, \want
  bne t3, t4, fail
.endm

/* store `val` at base + off, load it back with `load`, expect `want` */
.macro TEST_STORE num, store, load, val, want, off, base
  li TESTNUM, \num
  la t1, \base
  li t2, \val
  \store t2, \off(t1)
  \load t3, \off(t1)
  li t4, \want
  bne t3, t4, fail
.endm

/* AMO on the doubleword or word at `addr` (initialised to `init` with the
 * store `st`, read back with `ld`): checks the returned old value and the
 * memory afterwards. */
.macro TEST_AMO num, insn, st, ld, addr, init, val, want_old, want_mem
  li TESTNUM, \num
  la t1, \addr
  li t2, \init
  \st t2, 0(t1)
  li t2, \val
  \insn t3, t2, (t1)
  li t4, \want_old
  bne t3, t4, fail
  \ld t3, 0(t1)
  li t4, \want_mem
  bne t3, t4, fail
.endm

/* ---- end of the body; reporting ------------------------------------------ */

.macro ISA_END
  /* The body falls through to here when every test passed. */
pass:
  fence
  li a0, 0
  ecall
fail:
  fence
  li a0, 1
  ecall

  /* M-mode trap vector: ecall from the body reports, anything else fails. */
  .balign 4
isa_trap_vector:
  csrr t5, mcause
  li t6, MCAUSE_ECALL_U
  beq t5, t6, 1f
  li t6, MCAUSE_ECALL_M
  beq t5, t6, 1f
  li a0, 1 /* unexpected trap: fail the current test */
1:
  li t5, 1
  beqz a0, isa_write_tohost
  bnez TESTNUM, 2f
  li TESTNUM, STATUS_NO_TEST
2:
  slli t5, TESTNUM, 1
  ori t5, t5, 1
isa_write_tohost:
  la t6, tohost
  sd t5, 0(t6)
#ifdef KSIM_ISA_FINISHER_FALLBACK
  /* For boards without tohost handling (e.g. QEMU virt): the same status
   * through the SiFive test finisher. Never defined in ksim's build, where
   * the tests must exercise the tohost path. */
  srli t5, t5, 1
  li t4, 0x5555
  beqz t5, 3f
  slli t4, t5, 16
  li t3, 0x3333
  or t4, t4, t3
3:
  li t6, 0x100000
  sw t4, 0(t6)
#endif
4:
  j 4b

  /* HTIF-style mailbox. fromhost is unused but expected by tools that
   * know the convention; each gets its own 64-byte line. */
  .section .tohost, "aw", @progbits
  .balign 64
  .globl tohost
tohost:
  .dword 0
  .balign 64
  .globl fromhost
fromhost:
  .dword 0

  .data
.endm

#endif
