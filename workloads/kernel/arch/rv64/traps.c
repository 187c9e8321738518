/* RV64 trap dispatch (called by rv64_trap_entry in entry.S) and the panic
 * register dump. */
#include "arch/arch.h"
#include "kernel/kprobes.h"
#include "kernel/printk.h"
#include "ksim_platform.h"

void rv64_handle_trap(struct trap_frame *tf);
__noreturn void rv64_thread_returned(void);

static const char *const exception_names[] = {
    [EXC_INSN_MISALIGNED] = "instruction address misaligned",
    [EXC_INSN_ACCESS] = "instruction access fault",
    [EXC_ILLEGAL_INSN] = "illegal instruction",
    [EXC_BREAKPOINT] = "breakpoint",
    [EXC_LOAD_MISALIGNED] = "load address misaligned",
    [EXC_LOAD_ACCESS] = "load access fault",
    [EXC_STORE_MISALIGNED] = "store/AMO address misaligned",
    [EXC_STORE_ACCESS] = "store/AMO access fault",
    [EXC_ECALL_U] = "environment call from U-mode",
    [EXC_ECALL_S] = "environment call from S-mode",
    [10] = "reserved exception 10",
    [EXC_ECALL_M] = "environment call from M-mode (kernel threads make no system calls)",
    [12] = "instruction page fault",
    [13] = "load page fault",
    [15] = "store/AMO page fault",
};

static const char *cause_name(unsigned long mcause) {
  if ((long)mcause < 0) {
    switch (mcause & ~(1UL << MCAUSE_INTR_BIT)) {
      case IRQ_M_SOFT: return "machine software interrupt";
      case IRQ_M_TIMER: return "machine timer interrupt";
      case 11: return "unexpected machine external interrupt";
      default: return "unexpected interrupt";
    }
  }
  if (mcause < ARRAY_SIZE(exception_names) && exception_names[mcause]) return exception_names[mcause];
  return "unknown exception";
}

/* Timer and IPI helpers live in setup.c. */
void rv64_timer_rearm(void);
void rv64_ipi_ack(void);

void rv64_handle_trap(struct trap_frame *tf) {
  unsigned long cause = tf->mcause;
  if ((long)cause < 0) {
    unsigned long code = cause & ~(1UL << MCAUSE_INTR_BIT);
    if (code == IRQ_M_TIMER) {
      irq_enter();
      rv64_timer_rearm();
      timer_interrupt();
      irq_exit();
      return;
    }
    if (code == IRQ_M_SOFT) {
      irq_enter();
      rv64_ipi_ack();
      ipi_interrupt();
      irq_exit();
      return;
    }
  }
  die_trap(tf, cause_name(cause));
}
NOKPROBE_SYMBOL(rv64_handle_trap);

void rv64_thread_returned(void) { panic("thread entry function returned"); }
NOKPROBE_SYMBOL(rv64_thread_returned);

static const char *const reg_names[32] = {
    "zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0",
    "a1",   "a2", "a3", "a4", "a5", "a6", "a7", "s2", "s3", "s4", "s5",
    "s6",   "s7", "s8", "s9", "s10", "s11", "t3", "t4", "t5", "t6",
};

void arch_dump_trap_frame(const struct trap_frame *tf) {
  panic_printk("trap: %s", cause_name(tf->mcause));
  panic_printk("mcause %016lx mepc %016lx mtval %016lx mstatus %016lx", tf->mcause, tf->mepc,
               tf->mtval, tf->mstatus);
  for (int r = 1; r < 32; r += 4) {
    /* Four per line: x1..x4, x5..x8, ..., x29..x31 (the last has three). */
    if (r + 3 < 32)
      panic_printk("%-4s %016lx %-4s %016lx %-4s %016lx %-4s %016lx", reg_names[r], tf->regs[r],
                   reg_names[r + 1], tf->regs[r + 1], reg_names[r + 2], tf->regs[r + 2],
                   reg_names[r + 3], tf->regs[r + 3]);
    else
      panic_printk("%-4s %016lx %-4s %016lx %-4s %016lx", reg_names[r], tf->regs[r], reg_names[r + 1],
                   tf->regs[r + 1], reg_names[r + 2], tf->regs[r + 2]);
  }
}
NOKPROBE_SYMBOL(arch_dump_trap_frame);

/* RISC-V frame records with -fno-omit-frame-pointer: s0 is the frame's
 * canonical frame address; the return address is at s0 - 8 and the caller's
 * s0 at s0 - 16. */
void arch_dump_backtrace(uintptr_t stack_lo, uintptr_t stack_hi) {
  uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
  panic_printk("backtrace:");
  for (int depth = 0; depth < 32; depth++) {
    if (fp < stack_lo + 16 || fp > stack_hi || (fp & 7) != 0) break;
    uintptr_t ra = ((const uintptr_t *)fp)[-1];
    uintptr_t next = ((const uintptr_t *)fp)[-2];
    /* A kretprobe's stand-in return address: named, because the usual
     * "symbolise ra - 1" would land in whatever precedes the trampoline. */
    if (ra == (uintptr_t)kretprobe_trampoline)
      panic_printk("  [<%016lx>] kretprobe_trampoline", (unsigned long)ra);
    else
      panic_printk("  [<%016lx>]", (unsigned long)ra);
    if (next <= fp) break; /* callers' frames are higher up */
    fp = next;
  }
}
NOKPROBE_SYMBOL(arch_dump_backtrace);
