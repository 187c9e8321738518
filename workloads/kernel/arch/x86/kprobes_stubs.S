/* The kprobes engine's two fixed landing points in the guest (x86-64). The
 * engine (host side) finds them by name in the ELF symbol table; both are
 * in .kprobes.text and blacklisted, so they can never be probed themselves.
 * Every breakpoint is the one-byte int3 (0xcc), never `int $3` (cd 03).
 *
 * kretprobe_trampoline: a kretprobe replaces a function's return address
 * with this address. The function's `ret` lands here; the engine catches
 * the first int3, runs the return handler and resumes at the real return
 * address. The code is never meant to continue: the second int3 catches an
 * engine that resumed at the wrong place.
 *
 * jprobe_return: a jprobe handler (same signature as the probed function,
 * entered by the engine at the probe) ends by calling this; the engine
 * catches the int3 and restores the registers and stack it saved at the
 * probe, so the call never returns. The second int3 again only catches a
 * wrong resume. */
#include <asm/asm.h>

  .section .kprobes.text, "ax", @progbits
  .code64

  .balign 16, 0xcc
  .globl kretprobe_trampoline
  .type kretprobe_trampoline, @function
kretprobe_trampoline:
  int3
  int3
  .size kretprobe_trampoline, . - kretprobe_trampoline
  NOKPROBE kretprobe_trampoline

  /* rethook_trampoline: the trap-free kretprobe trampoline (the OLS 2006
   * paper's kretprobe-booster, Linux's arch_rethook_trampoline). The load
   * from the engine's rethook port (0x110000, mem/memory_map.hpp) runs the
   * return handlers and yields the real return address. r11 is a scratch
   * register of the SysV ABI, dead at a function's return, and the
   * handlers are host code that clobbers nothing, so nothing is saved. */
  .balign 16, 0xcc
  .globl rethook_trampoline
  .type rethook_trampoline, @function
rethook_trampoline:
  movq 0x110000, %r11
  jmp *%r11
  .size rethook_trampoline, . - rethook_trampoline
  NOKPROBE rethook_trampoline

  .balign 16, 0xcc
  .globl jprobe_return
  .type jprobe_return, @function
jprobe_return:
  int3
  int3
  .size jprobe_return, . - jprobe_return
  NOKPROBE jprobe_return

  /* ksim_kprobes_ipi: the kernel's IPI handler calls it when a request
   * carries IPI_KPROBES (kernel/irq.c), which only the engine sets: the
   * engine catches the int3 and does the work it asked this CPU for (a
   * text patching protocol's step: kprobes/patching.hpp), then resumes at
   * the `ret`. The IPI's whole guest path (entry, EOI, request bits, exit)
   * is the kernel's own. */
  .balign 16, 0xcc
  .globl ksim_kprobes_ipi
  .type ksim_kprobes_ipi, @function
ksim_kprobes_ipi:
  int3
  ret
  .size ksim_kprobes_ipi, . - ksim_kprobes_ipi
  NOKPROBE ksim_kprobes_ipi

  .section .note.GNU-stack, "", @progbits
