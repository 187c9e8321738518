/* x86-64 board support: CPU discovery, per-CPU setup, idle, the local
 * APIC timer and IPIs, console, power. The board is ksim's x86 platform:
 * local APIC at 0xFEE0_0000 (asm/x86.h), UART and finisher as on RV64
 * (ksim_platform.h). */
#include "arch/arch.h"
#include "kernel/kprobes.h"
#include "kernel/printk.h"
#include "ksim_platform.h"

#define MMIO8(a) (*(volatile uint8_t *)(uintptr_t)(a))
#define MMIO32(a) (*(volatile uint32_t *)(uintptr_t)(a))

/* How long CPU 0 waits for the other CPUs to check in (core cycles). */
#define DETECT_WAIT_CYCLES 20000

/* What GS points at on each CPU (head.S sets the GS base at boot). The
 * first word is the per-CPU pointer read by arch_percpu_ptr(); it stays
 * NULL until arch_cpu_init(), which is how the trap code recognises the
 * early interrupts of boot (x86_handle_trap). In .data, not .bss: secondary
 * CPUs point GS here before CPU 0 has cleared .bss. */
struct x86_cpu_local {
  void *percpu;
  unsigned long cpu;
  unsigned long pad[2];
};
_Static_assert(sizeof(struct x86_cpu_local) == CPU_LOCAL_SIZE, "x86_cpu_local layout");
_Static_assert(__builtin_offsetof(struct x86_cpu_local, percpu) == CPU_LOCAL_PERCPU, "x86_cpu_local layout");

struct x86_cpu_local x86_cpu_local[CONFIG_MAX_CPUS] __section(".data.x86_cpu_local") __aligned(64);

extern unsigned x86_cpus_arrived;   /* head.S, one increment per CPU */
void x86_thread_trampoline(void);   /* entry.S */
void x86_lapic_eoi(void);

static inline uint32_t lapic_read(unsigned reg) { return MMIO32(LAPIC_BASE + reg); }
static inline void lapic_write(unsigned reg, uint32_t v) {
  __asm__ __volatile__("" ::: "memory");
  MMIO32(LAPIC_BASE + reg) = v;
}

/* There is no ACPI/MP table and no register that tells the CPU count, so
 * every CPU counts itself in x86_cpus_arrived at its first instructions
 * (head.S) and CPU 0 counts the arrivals after a fixed wait.
 * The wait is a hlt until a one-shot APIC timer DETECT_WAIT_CYCLES away,
 * not a spin: ksim's scheduler does not run an idle CPU again before every
 * other CPU has reached its wake-up cycle or gone idle itself, so when CPU 0
 * wakes, every CPU of the machine has run its first ~20,000 cycles (it
 * needs ~20 instructions to check in) or is already waiting in
 * arch_cpu_wait_early(), whatever --quantum is. Deterministic. The early
 * timer interrupt is only acknowledged (x86_handle_trap: no per-CPU area
 * yet). */
unsigned arch_detect_cpus(void) {
  uint64_t until = arch_cycles() + DETECT_WAIT_CYCLES;
  lapic_write(LAPIC_TIMER_DIVIDE, LAPIC_TIMER_DIVIDE_BY_1);
  lapic_write(LAPIC_LVT_TIMER, X86_TIMER_VECTOR); /* one-shot, unmasked */
  lapic_write(LAPIC_TIMER_INITIAL, DETECT_WAIT_CYCLES);
  while (arch_cycles() < until) __asm__ __volatile__("sti\n\thlt\n\tcli" ::: "memory");
  lapic_write(LAPIC_LVT_TIMER, LAPIC_LVT_MASKED | X86_TIMER_VECTOR);
  lapic_write(LAPIC_TIMER_INITIAL, 0);
  unsigned n = __atomic_load_n(&x86_cpus_arrived, __ATOMIC_ACQUIRE);
  if (n < 1) n = 1;
  if (n > CONFIG_MAX_CPUS) n = CONFIG_MAX_CPUS;
  return n;
}

/* GS already points at x86_cpu_local[cpu] and the IDT is loaded (head.S);
 * publishing the per-CPU pointer switches the trap code from its boot mode
 * (acknowledge and return) to the real handlers. The APIC is enabled since
 * boot, so the boot IPI could already end arch_cpu_wait_early(). */
void arch_cpu_init(unsigned cpu, void *percpu) {
  struct x86_cpu_local *l = &x86_cpu_local[cpu];
  l->cpu = cpu;
  WRITE_ONCE(l->percpu, percpu);
  if (arch_percpu_ptr() != percpu) panic("cpu %u: GS does not point at its x86_cpu_local", cpu);
  lapic_write(LAPIC_SVR, LAPIC_SVR_ENABLE | X86_SPURIOUS_VECTOR);
}

/* IF = 0 on entry. sti's one-instruction shadow covers hlt, so an IPI that
 * arrived after the caller's check ends the hlt at once; its early handler
 * only sends the EOI. hlt with IF = 0 would never wake in ksim. */
void arch_cpu_wait_early(void) { __asm__ __volatile__("sti\n\thlt\n\tcli" ::: "memory"); }

/* The same, for the idle loop: the interrupt's handler runs between hlt and
 * cli, before this returns with IF = 0. */
void arch_cpu_idle(void) { __asm__ __volatile__("sti\n\thlt\n\tcli" ::: "memory"); }

/* The APIC timer in periodic mode counting core cycles (divide by 1). Its
 * reload is drift-free (next deadline = previous + period) and ticks missed
 * while interrupts were off merge into one pending interrupt, as arch.h
 * asks; nothing to re-arm per tick. */
void arch_timer_start(unsigned hz) {
  uint32_t period = X86_CORE_HZ / hz;
  lapic_write(LAPIC_TIMER_DIVIDE, LAPIC_TIMER_DIVIDE_BY_1);
  lapic_write(LAPIC_LVT_TIMER, LAPIC_LVT_PERIODIC | X86_TIMER_VECTOR);
  lapic_write(LAPIC_TIMER_INITIAL, period);
}

/* Fixed delivery to one APIC id (= CPU number on ksim). ICR high is this
 * CPU's own register, so the pair is written with interrupts off. The
 * request bits were set before with a locked instruction (smp_send_ipi),
 * which orders them before this doorbell store. */
void arch_send_ipi(unsigned cpu) {
  arch_irqflags_t flags = arch_local_irq_save();
  lapic_write(LAPIC_ICR_HIGH, (uint32_t)cpu << 24);
  lapic_write(LAPIC_ICR_LOW, X86_IPI_VECTOR);
  arch_local_irq_restore(flags);
}

void x86_lapic_eoi(void) { lapic_write(LAPIC_EOI, 0); }
NOKPROBE_SYMBOL(x86_lapic_eoi);

void arch_thread_setup(struct arch_context *ctx, void *stack_base, size_t stack_size,
                       void (*entry)(void *), void *arg) {
  ctx->rip = (unsigned long)x86_thread_trampoline;
  ctx->rsp = ((unsigned long)stack_base + stack_size) & ~15UL;
  ctx->rbp = 0; /* end of the frame chain */
  ctx->rbx = (unsigned long)entry;
  ctx->r12 = (unsigned long)arg;
  ctx->r13 = ctx->r14 = ctx->r15 = 0;
}

void arch_console_putc(char c) {
  while ((MMIO8(KSIM_UART_BASE + KSIM_UART_LSR) & KSIM_UART_LSR_THRE) == 0) {
  }
  MMIO8(KSIM_UART_BASE + KSIM_UART_THR) = (uint8_t)c;
}
NOKPROBE_SYMBOL(arch_console_putc);

static __noreturn void finisher(uint32_t value) {
  __asm__ __volatile__("mfence" ::: "memory");
  MMIO32(KSIM_FINISHER_BASE) = value;
  arch_halt(); /* the store ends the run */
}

void arch_poweroff(int status) {
  uint32_t code = (uint32_t)status & 0xffff;
  if (status == 0) finisher(KSIM_FINISHER_PASS);
  finisher(((code ? code : 1) << 16) | KSIM_FINISHER_FAIL);
}

void arch_panic_poweroff(int code) {
  uint32_t c = (uint32_t)code & 0xffff;
  finisher(((c ? c : 1) << 16) | KSIM_FINISHER_PANIC);
}
NOKPROBE_SYMBOL(arch_panic_poweroff);

/* cli; hlt never wakes (no NMI on ksim); the loop covers one that would. */
void arch_halt(void) {
  for (;;) __asm__ __volatile__("cli\n\thlt" ::: "memory");
}
NOKPROBE_SYMBOL(arch_halt);

#ifdef CONFIG_TEST_FAULT
void arch_test_fault(int kind) {
  switch (kind) {
    case 1: (void)*(volatile unsigned long *)0x20000000UL; break; /* below RAM: #GP */
    case 3: __asm__ __volatile__("int $0x80"); break;
    case 4: __asm__ __volatile__("int3"); break;
    case 5: __asm__ __volatile__("ud2"); break;
  }
}
#endif
