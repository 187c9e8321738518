/* RV64 board support: CPU discovery, per-CPU setup, idle, the CLINT timer
 * and IPIs, console, power. The board is ksim's (QEMU virt compatible):
 * addresses from ksim_platform.h. */
#include "arch/arch.h"
#include "kernel/cache.h"
#include "kernel/kprobes.h"
#include "kernel/printk.h"
#include "ksim_platform.h"

/* The CLINT's mtime runs at 10 MHz on ksim (core cycles / 10) and on QEMU
 * virt. */
#define RV64_TIMEBASE_HZ 10000000UL

#define MMIO8(a) (*(volatile uint8_t *)(uintptr_t)(a))
#define MMIO32(a) (*(volatile uint32_t *)(uintptr_t)(a))
#define MMIO64(a) (*(volatile uint64_t *)(uintptr_t)(a))
#define CLINT_MSIP(h) (KSIM_CLINT_BASE + KSIM_CLINT_MSIP + 4UL * (h))
#define CLINT_MTIMECMP(h) (KSIM_CLINT_BASE + KSIM_CLINT_MTIMECMP + 8UL * (h))
#define CLINT_MTIME (KSIM_CLINT_BASE + KSIM_CLINT_MTIME)

/* Device accesses are not ordered by "fence rw,rw"; these are. */
#define io_fence_before_write() __asm__ __volatile__("fence rw, o" ::: "memory")
#define io_fence_after_write() __asm__ __volatile__("fence o, rw" ::: "memory")

int rv64_probe_word(unsigned long addr); /* head.S */
void rv64_trap_entry(void);              /* entry.S */
void rv64_thread_trampoline(void);       /* entry.S */
void rv64_timer_rearm(void);
void rv64_ipi_ack(void);

static unsigned long tick_period __read_mostly;      /* mtime units */
/* Each hart's next deadline, in a block of its own (kernel/cache.h). */
struct tick_deadline {
  unsigned long at;
} ____cacheline_aligned_in_smp;
static struct tick_deadline next_tick[CONFIG_MAX_CPUS];

static inline unsigned long hartid(void) { return csr_read(mhartid); }

/* The CLINT has one msip register per hart and faults beyond the last one
 * on ksim; count them. (QEMU's CLINT does not fault: there every hart up to
 * CONFIG_MAX_CPUS would be assumed.) */
unsigned arch_detect_cpus(void) {
  unsigned n = 1;
  while (n < CONFIG_MAX_CPUS && rv64_probe_word(CLINT_MSIP(n))) n++;
  return n;
}

void arch_cpu_init(unsigned cpu, void *percpu) {
  (void)cpu;
  __asm__ __volatile__("mv tp, %0" ::"r"(percpu));
  csr_write(mscratch, (unsigned long)percpu);
  csr_write(mtvec, (unsigned long)rv64_trap_entry); /* direct mode */
  csr_write(mie, MIP_MSIP);
}

void arch_cpu_wait_early(void) {
  csr_set(mie, MIP_MSIP); /* lets a pending IPI end the wfi (MIE stays 0) */
  __asm__ __volatile__("wfi" ::: "memory");
}

/* wfi wakes on any interrupt pending and enabled in mie, whatever
 * mstatus.MIE says; opening MIE for one instruction lets it be taken. */
void arch_cpu_idle(void) {
  __asm__ __volatile__("wfi" ::: "memory");
  csr_set(mstatus, MSTATUS_MIE);
  csr_clear(mstatus, MSTATUS_MIE);
}

void arch_timer_start(unsigned hz) {
  unsigned long h = hartid();
  tick_period = RV64_TIMEBASE_HZ / hz;
  next_tick[h].at = MMIO64(CLINT_MTIME) + tick_period;
  MMIO64(CLINT_MTIMECMP(h)) = next_tick[h].at;
  csr_set(mie, MIP_MTIP);
}

/* Next deadline = previous + period; ticks missed while interrupts were off
 * are skipped, not delivered in a burst. Writing mtimecmp clears MTIP. */
void rv64_timer_rearm(void) {
  unsigned long h = hartid();
  unsigned long now = MMIO64(CLINT_MTIME);
  unsigned long next = next_tick[h].at + tick_period;
  if (next <= now) next += ((now - next) / tick_period + 1) * tick_period;
  next_tick[h].at = next;
  MMIO64(CLINT_MTIMECMP(h)) = next;
}
NOKPROBE_SYMBOL(rv64_timer_rearm);

void arch_send_ipi(unsigned cpu) {
  io_fence_before_write(); /* the request in memory first, then the doorbell */
  MMIO32(CLINT_MSIP(cpu)) = 1;
}

void rv64_ipi_ack(void) {
  MMIO32(CLINT_MSIP(hartid())) = 0;
  io_fence_after_write(); /* clear first, then read the requests */
}
NOKPROBE_SYMBOL(rv64_ipi_ack);

void arch_thread_setup(struct arch_context *ctx, void *stack_base, size_t stack_size,
                       void (*entry)(void *), void *arg) {
  for (unsigned i = 0; i < ARRAY_SIZE(ctx->s); i++) ctx->s[i] = 0;
  ctx->ra = (unsigned long)rv64_thread_trampoline;
  ctx->sp = ((unsigned long)stack_base + stack_size) & ~15UL;
  ctx->s[0] = 0; /* fp: end of the frame chain */
  ctx->s[1] = (unsigned long)entry;
  ctx->s[2] = (unsigned long)arg;
}

void arch_console_putc(char c) {
  while ((MMIO8(KSIM_UART_BASE + KSIM_UART_LSR) & KSIM_UART_LSR_THRE) == 0) {
  }
  MMIO8(KSIM_UART_BASE + KSIM_UART_THR) = (uint8_t)c;
}
NOKPROBE_SYMBOL(arch_console_putc);

static __noreturn void finisher(uint32_t value) {
  io_fence_before_write();
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

void arch_halt(void) {
  csr_clear(mstatus, MSTATUS_MIE);
  csr_write(mie, 0);
  for (;;) __asm__ __volatile__("wfi");
}
NOKPROBE_SYMBOL(arch_halt);

#ifdef CONFIG_TEST_FAULT
void arch_test_fault(int kind) {
  switch (kind) {
    case 1: (void)*(volatile unsigned long *)0x40000000UL; break; /* no device there */
    case 3: __asm__ __volatile__("ecall"); break;
    case 4: __asm__ __volatile__("ebreak"); break;
    case 5: __asm__ __volatile__(".word 0"); break;
  }
}
#endif
