/* The architecture interface: everything the portable kernel (kernel/,
 * lib/) needs from the ISA and the board, and nothing more. An architecture
 * port lives in arch/<name>/ and provides
 *
 *   arch/<name>/include/asm/arch_impl.h   types and static inline functions
 *                                         (on the include path as <asm/...>)
 *   arch/<name>/ C and .S sources         the out-of-line functions below,
 *                                         the boot entry and trap entry/exit
 *   arch/<name>/kernel.ld                 the linker script (section symbols
 *                                         listed in README.md)
 *
 * Portable code includes only this header for machine access. The RV64 port
 * is in arch/rv64/; README.md describes what an x86-64 port must provide.
 *
 * Conventions: "this CPU" is the CPU executing the call. Interrupts means
 * the maskable interrupts the kernel uses: the periodic timer tick and the
 * inter-processor interrupt (IPI). The kernel runs in the most privileged
 * mode (RV64: M-mode), without paging, on one shared address space. */
#ifndef ARCH_ARCH_H
#define ARCH_ARCH_H

#include "kernel/types.h"

/* <asm/arch_impl.h> must define:
 *
 *   struct arch_context   callee-saved state of a thread that is switched
 *                         out (stack pointer, return address, callee-saved
 *                         registers); portable code embeds it in struct
 *                         thread and never looks inside
 *   struct trap_frame     all registers of an interrupted context, saved by
 *                         the trap entry on the interrupted stack
 *   arch_irqflags_t       the saved interrupt-enable state
 *
 * and these static inline functions:
 *
 *   void *arch_percpu_ptr(void)       this CPU's per-CPU area (RV64: tp),
 *                                     as set by arch_cpu_init()
 *   arch_irqflags_t arch_local_irq_save(void)   disable, return old state
 *   void arch_local_irq_restore(arch_irqflags_t)
 *   void arch_local_irq_enable(void)
 *   void arch_local_irq_disable(void)
 *   bool arch_irqs_disabled(void)
 *   void arch_cpu_relax(void)         body of a spin-wait loop
 *   uint64_t arch_cycles(void)        this CPU's cycle counter
 */
#include <asm/arch_impl.h>

/* ---- Boot ------------------------------------------------------------------
 * Every CPU enters the image at the ELF entry point. The arch boot code gives
 * each one a stack of CONFIG_BOOT_STACK_SIZE bytes, leaves interrupts
 * disabled, clears .bss on the boot CPU (CPU 0) only, and calls the portable
 *
 *     __noreturn void kernel_main(unsigned cpu);
 *
 * on every CPU numbered below CONFIG_MAX_CPUS (others are parked forever).
 * Secondary CPUs may enter kernel_main() before CPU 0 has cleared .bss; until
 * CPU 0 releases them they only read the .data variable they wait on. */
__noreturn void kernel_main(unsigned cpu);

/* Boot CPU only, once: how many CPUs the machine has (1..CONFIG_MAX_CPUS). */
unsigned arch_detect_cpus(void);

/* Every CPU, once, before enabling interrupts: install the trap entry, make
 * arch_percpu_ptr() return `percpu` (also inside trap handlers), and make an
 * IPI able to end arch_cpu_wait_early(). Interrupts stay disabled. */
void arch_cpu_init(unsigned cpu, void *percpu);

/* Secondary CPUs waiting to be released by the boot CPU (interrupts
 * disabled, trap handling possibly not set up): wait a little, or until
 * another CPU calls arch_send_ipi() for this CPU. May return spuriously. */
void arch_cpu_wait_early(void);

/* ---- Interrupts and idle ---------------------------------------------------
 * arch_cpu_idle(): called with interrupts disabled. Waits until an interrupt
 * is pending (RV64: wfi; x86: sti; hlt), lets it be handled (its handler
 * runs before this returns) and returns with interrupts disabled again. No
 * wakeup is lost between the caller's last check and the wait: an interrupt
 * that became pending after the check ends the wait at once. */
void arch_cpu_idle(void);

/* ---- Timer -----------------------------------------------------------------
 * Start this CPU's periodic tick at `hz` ticks per second (first tick one
 * period from now) and enable the timer interrupt. Each tick calls the
 * portable timer_interrupt() inside irq_enter()/irq_exit(); the arch
 * re-arms the next tick itself (drift-free: next = previous deadline +
 * period, skipping missed ticks rather than bunching them). */
void arch_timer_start(unsigned hz);

/* ---- Inter-processor interrupts --------------------------------------------
 * Raise the IPI on `cpu` (may be this CPU). The target's trap code
 * acknowledges it and calls the portable ipi_interrupt() inside
 * irq_enter()/irq_exit(). Several IPIs may merge into one interrupt; the
 * request itself is carried in memory by portable code. */
void arch_send_ipi(unsigned cpu);

/* ---- Threads ---------------------------------------------------------------
 * Prepare `ctx` so that the first arch_context_switch() to it runs
 * entry(arg) on the stack [stack_base, stack_base + stack_size), with an
 * empty frame-pointer chain, interrupts in the state the switch left them.
 * entry must not return (the arch panics if it does). */
void arch_thread_setup(struct arch_context *ctx, void *stack_base, size_t stack_size,
                       void (*entry)(void *), void *arg);
/* Save this thread's callee-saved state into `prev` and resume `next`.
 * Returns when something switches back to `prev`. Never probeable. */
void arch_context_switch(struct arch_context *prev, struct arch_context *next);

/* ---- Console and power -----------------------------------------------------*/
void arch_console_putc(char c);         /* one byte, unlocked */
__noreturn void arch_poweroff(int status);      /* machine off; 0 = success */
__noreturn void arch_panic_poweroff(int code);  /* machine off, reporting a kernel panic */
__noreturn void arch_halt(void);                /* stop this CPU for good */

/* ---- Diagnostics (panic path) ----------------------------------------------
 * Print the trap cause, faulting PC, fault address and every register of
 * `tf` through panic_printk(). */
void arch_dump_trap_frame(const struct trap_frame *tf);
/* Print the frame-pointer chain starting at the caller, following frames
 * only while they lie inside [stack_lo, stack_hi). */
void arch_dump_backtrace(uintptr_t stack_lo, uintptr_t stack_hi);

#ifdef CONFIG_TEST_FAULT
/* Test builds only: fault on purpose to exercise the panic path.
 * kind 1: a load from an address with nothing behind it; 3: a system call
 * instruction; 4: a breakpoint; 5: an illegal instruction. */
void arch_test_fault(int kind);
#endif

/* ---- Called by the arch, implemented by portable code (kernel/irq.c) --------
 * The arch's trap code calls, with interrupts disabled:
 *   irq_enter(); timer_interrupt() or ipi_interrupt(); irq_exit();
 * irq_exit() may switch threads (preemption) before the trap returns.
 * Any exception (fault, illegal instruction, breakpoint, environment call)
 * and any unexpected interrupt ends in die_trap(), which panics. */
void irq_enter(void);
void irq_exit(void);
void timer_interrupt(void);
void ipi_interrupt(void);
__noreturn void die_trap(const struct trap_frame *tf, const char *what);

#endif
