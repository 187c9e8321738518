/* Kprobes support on the kernel side: the blacklist and the section
 * symbols the probe engine relies on (see README.md, "Symbols for the
 * kprobes engine"). Portable. */
#ifndef KERNEL_KPROBES_H
#define KERNEL_KPROBES_H

#include "kernel/compiler.h"

/* NOKPROBE_SYMBOL(fn): fn must never be probed. As in Linux, the function's
 * start address goes into the section `_kprobe_blacklist`, an array of
 * unsigned long bounded by __start__kprobe_blacklist and
 * __stop__kprobe_blacklist (defined by the linker script). The engine takes
 * each function's extent from the ELF symbol table (st_size).
 * Assembly files use the NOKPROBE macro from <asm/asm.h> instead. */
#define NOKPROBE_SYMBOL(fname)                                             \
  static const unsigned long __used __aligned(sizeof(unsigned long))     \
      __section("_kprobe_blacklist") _kbl_addr_##fname = (unsigned long)(fname)

/* Functions placed in .kprobes.text are never probeable either (Linux's
 * __kprobes). The low-level trap entry/exit and the context switch are
 * there. */
#define __kprobes __section(".kprobes.text")

extern const unsigned long __start__kprobe_blacklist[];
extern const unsigned long __stop__kprobe_blacklist[];
extern char __kprobes_text_start[], __kprobes_text_end[];
extern char __kprobe_slots_start[], __kprobe_slots_end[];

/* The engine's landing points (arch/<isa>/kprobes_stubs.S, in
 * .kprobes.text): a breakpoint each, caught by the host-side engine.
 *
 * kretprobe_trampoline: what a kretprobe puts in place of a function's
 * return address. Never called from C; declared for address comparisons
 * (the panic backtrace names it).
 *
 * jprobe_return(): the last call of every jprobe handler. The engine
 * restores the registers and stack saved at the probe, so it never returns.
 * Being noreturn, GCC emits a plain call with nothing after it (no
 * epilogue, no return value): everything the handler did before the call
 * (its log stores, jprobe_helper()) stays. */
void kretprobe_trampoline(void);

/* Where the kprobes engine does work it asked this CPU for with an
 * IPI_KPROBES request (arch/<isa>/kprobes_stubs.S). */
void ksim_kprobes_ipi(void);
void jprobe_return(void) __noreturn;

#endif
