/* RV64 boot entry: every hart starts here in M-mode with a0 = hartid.
 * Gives each CPU its boot stack (portable boot_stacks[cpu], see arch.h),
 * clears .bss on CPU 0 and calls kernel_main(cpu) with interrupts off.
 * The whole file is in the non-probeable text range. */
#include <asm/asm.h>
#include <asm/csr.h>

#include "kernel/config.h"
#include "ksim_platform.h"

/* Finisher panic code for a trap before the kernel's trap vector is set. */
#define EARLY_TRAP_PANIC_CODE 3

  .section .text.init, "ax", @progbits
  .globl _start
  .type _start, @function
_start:
  csrci mstatus, MSTATUS_MIE
  csrw mie, zero
  la t0, rv64_early_trap
  csrw mtvec, t0
  li t0, CONFIG_MAX_CPUS
  bgeu a0, t0, .Lpark

  /* sp = &boot_stacks[hartid + 1][0]: the top of this CPU's boot stack. */
  li t0, CONFIG_BOOT_STACK_SIZE
  addi t1, a0, 1
  mul t1, t1, t0
  la sp, boot_stacks
  add sp, sp, t1
  /* Terminate the frame-pointer chain; no per-CPU pointer yet. */
  li s0, 0
  li ra, 0
  li tp, 0
  bnez a0, .Lenter

  /* CPU 0 clears .bss (64-byte aligned at both ends, see kernel.ld), a
   * 64-byte block a pass: the loop's overhead stays small next to the
   * stores, so the cache-aligned data (kernel/cache.h) costs boot little. */
  la t0, __bss_start
  la t1, __bss_end
1:
  bgeu t0, t1, .Lenter
  sd zero, 0(t0)
  sd zero, 8(t0)
  sd zero, 16(t0)
  sd zero, 24(t0)
  sd zero, 32(t0)
  sd zero, 40(t0)
  sd zero, 48(t0)
  sd zero, 56(t0)
  addi t0, t0, 64
  j 1b

.Lenter:
  call kernel_main
  /* kernel_main does not return; fall into the parking loop if it did. */
.Lpark:
  csrw mie, zero
2:
  wfi
  j 2b
  .size _start, . - _start

/* Any trap before arch_cpu_init() installs rv64_trap_entry. */
  .balign 4
  .globl rv64_early_trap
  .type rv64_early_trap, @function
rv64_early_trap:
  li t0, KSIM_FINISHER_BASE
  li t1, (EARLY_TRAP_PANIC_CODE << 16) | KSIM_FINISHER_PANIC
  sw t1, 0(t0)
3:
  wfi
  j 3b
  .size rv64_early_trap, . - rv64_early_trap

/* int rv64_probe_word(unsigned long addr): 1 if a 32-bit load from addr
 * completes, 0 if it faults. Interrupts must be disabled. A fault jumps
 * straight to .Lprobe_fault through the temporary mtvec (no mret needed:
 * we are in M-mode already and MIE stays 0). */
  .globl rv64_probe_word
  .type rv64_probe_word, @function
rv64_probe_word:
  csrr t1, mtvec
  la t0, .Lprobe_fault
  csrw mtvec, t0
  lw t2, 0(a0)
  li a0, 1
  j .Lprobe_done
  .balign 4
.Lprobe_fault:
  li a0, 0
.Lprobe_done:
  csrw mtvec, t1
  ret
  .size rv64_probe_word, . - rv64_probe_word
