/* The kprobes engine's two fixed landing points in the guest (RV64). The
 * engine (host side) finds them by name in the ELF symbol table; both are
 * in .kprobes.text and blacklisted, so they can never be probed themselves.
 * Every breakpoint is a 32-bit ebreak (.option norvc), never c.ebreak, so
 * the engine can recognise and step over them with one fixed encoding.
 *
 * kretprobe_trampoline: a kretprobe replaces a function's return address
 * with this address. The function's `ret` lands here; the engine catches
 * the first ebreak, runs the return handler and resumes at the real return
 * address. The code is never meant to continue: the second ebreak catches
 * an engine that resumed at the wrong place.
 *
 * jprobe_return: a jprobe handler (same signature as the probed function,
 * entered by the engine at the probe) ends by calling this; the engine
 * catches the ebreak and restores the registers and stack it saved at the
 * probe, so the call never returns. The second ebreak again only catches a
 * wrong resume. */
#include <asm/asm.h>

  .section .kprobes.text, "ax", @progbits
  .option push
  .option norvc

  .balign 4
  .globl kretprobe_trampoline
  .type kretprobe_trampoline, @function
kretprobe_trampoline:
  ebreak
  ebreak
  .size kretprobe_trampoline, . - kretprobe_trampoline
  NOKPROBE kretprobe_trampoline

  /* rethook_trampoline: the trap-free kretprobe trampoline (the OLS 2006
   * paper's kretprobe-booster, Linux's arch_rethook_trampoline). The load
   * from the engine's rethook port (0x110000, mem/memory_map.hpp) runs the
   * return handlers and yields the real return address. t0 is a temporary
   * of the RISC-V ABI, dead at a function's return, and the handlers are
   * host code that clobbers nothing, so nothing is saved. */
  .balign 4
  .globl rethook_trampoline
  .type rethook_trampoline, @function
rethook_trampoline:
  lui t0, 0x110
  ld t0, 0(t0)
  jr t0
  .size rethook_trampoline, . - rethook_trampoline
  NOKPROBE rethook_trampoline

  .balign 4
  .globl jprobe_return
  .type jprobe_return, @function
jprobe_return:
  ebreak
  ebreak
  .size jprobe_return, . - jprobe_return
  NOKPROBE jprobe_return

  /* ksim_kprobes_ipi: the kernel's IPI handler calls it when a request
   * carries IPI_KPROBES (kernel/irq.c), which only the engine sets: the
   * engine catches the ebreak and does the work it asked this CPU for (a
   * text patching protocol's step: kprobes/patching.hpp), then resumes at
   * the `ret`. The IPI's whole guest path (entry, acknowledgement, request
   * bits, exit) is the kernel's own. */
  .balign 4
  .globl ksim_kprobes_ipi
  .type ksim_kprobes_ipi, @function
ksim_kprobes_ipi:
  ebreak
  ret
  .size ksim_kprobes_ipi, . - ksim_kprobes_ipi
  NOKPROBE ksim_kprobes_ipi

  .option pop
