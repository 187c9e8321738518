/* x86-64 IDT, trap dispatch (called by x86_trap_common in entry.S) and the
 * panic register dump. */
#include "arch/arch.h"
#include "kernel/kprobes.h"
#include "kernel/printk.h"

/* Finisher panic code for a trap before this CPU's arch_cpu_init(). */
#define EARLY_TRAP_PANIC_CODE 3

struct idt_gate {
  uint64_t lo, hi;
};

/* The one IDT of the machine, filled by CPU 0 at boot (head.S), loaded by
 * every CPU (x86_idt_desc in head.S). */
struct idt_gate x86_idt[X86_NR_VECTORS] __aligned(16);

extern const char x86_vector_stubs[]; /* entry.S: 16 bytes per vector */

void x86_idt_init(void);
void x86_handle_trap(struct trap_frame *tf);
__noreturn void x86_thread_returned(void);
void x86_lapic_eoi(void); /* setup.c */
void ksim_patch_site(void); /* patch_site.S: live-patched by tests */
void arch_panic_poweroff(int code);

/* 64-bit interrupt gate (type 0xE: IF cleared on entry), present, DPL 0.
 * The selector is ignored by ksim (CS is fixed); 0x08 as is customary. */
void x86_idt_init(void) {
  for (unsigned v = 0; v < X86_NR_VECTORS; v++) {
    uint64_t off = (uint64_t)(uintptr_t)(x86_vector_stubs + (uintptr_t)v * X86_STUB_SIZE);
    x86_idt[v].lo = (off & 0xffffUL) | (0x08UL << 16) | (0xeUL << 40) | (1UL << 47) |
                    ((off & 0xffff0000UL) << 32);
    x86_idt[v].hi = off >> 32;
  }
}
NOKPROBE_SYMBOL(x86_idt_init);

static const char *const exception_names[32] = {
    [0] = "#DE divide error",
    [1] = "#DB debug",
    [2] = "NMI",
    [3] = "#BP breakpoint",
    [4] = "#OF overflow",
    [5] = "#BR bound range exceeded",
    [6] = "#UD invalid opcode",
    [7] = "#NM device not available",
    [8] = "#DF double fault",
    [10] = "#TS invalid TSS",
    [11] = "#NP segment not present",
    [12] = "#SS stack-segment fault",
    [13] = "#GP general protection (ksim: access to an unmapped address, or an unmodelled MSR)",
    [14] = "#PF page fault",
    [16] = "#MF x87 floating-point error",
    [17] = "#AC alignment check",
    [18] = "#MC machine check",
    [19] = "#XM SIMD floating-point exception",
    [20] = "#VE virtualization exception",
    [21] = "#CP control protection",
};

static const char *vector_name(unsigned long v) {
  if (v < 32) return exception_names[v] ? exception_names[v] : "reserved exception";
  if (v == X86_TIMER_VECTOR) return "local APIC timer interrupt";
  if (v == X86_IPI_VECTOR) return "IPI";
  if (v == X86_SPURIOUS_VECTOR) return "spurious APIC interrupt";
  return "unexpected interrupt vector";
}

void x86_handle_trap(struct trap_frame *tf) {
  unsigned long v = tf->vector;
  bool booted = arch_percpu_ptr() != NULL;
  if (v == X86_TIMER_VECTOR || v == X86_IPI_VECTOR) {
    if (!booted) {
      /* Boot: CPU 0's one-shot wait in arch_detect_cpus(), or the IPI
       * that releases a secondary CPU from arch_cpu_wait_early(). */
      x86_lapic_eoi();
      return;
    }
    /* EOI first (the RV64 port clears msip first too): irq_exit() may
     * switch threads, and the vector must not stay in service meanwhile.
     * IF stays 0 until the return, so nothing nests. A new IPI after the
     * EOI raises a new interrupt, and ipi_interrupt() reads the requests
     * after the EOI, so none is lost. */
    irq_enter();
    x86_lapic_eoi();
    if (v == X86_TIMER_VECTOR) {
      ksim_patch_site();
      timer_interrupt();
    } else {
      ipi_interrupt();
    }
    irq_exit();
    return;
  }
  if (v == X86_SPURIOUS_VECTOR) return; /* no EOI for the spurious vector */
  if (!booted) arch_panic_poweroff(EARLY_TRAP_PANIC_CODE);
  die_trap(tf, vector_name(v));
}
NOKPROBE_SYMBOL(x86_handle_trap);

void x86_thread_returned(void) { panic("thread entry function returned"); }
NOKPROBE_SYMBOL(x86_thread_returned);

void arch_dump_trap_frame(const struct trap_frame *tf) {
  panic_printk("trap: vector %lu: %s", tf->vector, vector_name(tf->vector));
  panic_printk("rip %016lx rsp %016lx rflags %016lx cs %04lx ss %04lx error %lx",
               tf->rip, tf->rsp, tf->rflags, tf->cs, tf->ss, tf->error);
  panic_printk("rax %016lx rbx %016lx rcx %016lx rdx %016lx", tf->rax, tf->rbx, tf->rcx, tf->rdx);
  panic_printk("rsi %016lx rdi %016lx rbp %016lx r8  %016lx", tf->rsi, tf->rdi, tf->rbp, tf->r8);
  panic_printk("r9  %016lx r10 %016lx r11 %016lx r12 %016lx", tf->r9, tf->r10, tf->r11, tf->r12);
  panic_printk("r13 %016lx r14 %016lx r15 %016lx", tf->r13, tf->r14, tf->r15);
}
NOKPROBE_SYMBOL(arch_dump_trap_frame);

/* x86-64 frame records with -fno-omit-frame-pointer: rbp points at the
 * saved caller rbp, the return address is at rbp + 8. A trap adds a record
 * {interrupted rbp, interrupted rip} below its trap frame (entry.S), so the
 * walk continues into the interrupted code. */
void arch_dump_backtrace(uintptr_t stack_lo, uintptr_t stack_hi) {
  uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
  panic_printk("backtrace:");
  for (int depth = 0; depth < 32; depth++) {
    if (fp < stack_lo || fp > stack_hi - 16 || (fp & 7) != 0) break;
    uintptr_t next = ((const uintptr_t *)fp)[0];
    uintptr_t ra = ((const uintptr_t *)fp)[1];
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
