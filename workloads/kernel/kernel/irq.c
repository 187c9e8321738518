/* Portable interrupt handling, called by the arch trap code with
 * interrupts disabled: irq_enter(); timer_interrupt() | ipi_interrupt();
 * irq_exit(). Printing nothing per tick keeps the console small. */
#include "arch/arch.h"
#include "kernel/atomic.h"
#include "kernel/kprobes.h"
#include "kernel/percpu.h"
#include "kernel/printk.h"
#include "kernel/sched.h"

void irq_enter(void) { this_cpu()->irq_depth++; }
NOKPROBE_SYMBOL(irq_enter);

/* The preemption point of CONFIG_PREEMPT: an interrupt that made a
 * reschedule due switches threads here, on the interrupted thread's stack,
 * before the trap returns. The interrupted thread resumes (through the
 * arch's trap return) when it is next switched in. */
void irq_exit(void) {
  struct percpu *pc = this_cpu();
  if (unlikely(pc->irq_depth == 0)) panic("irq_exit without irq_enter");
  pc->irq_depth--;
  if (IS_ENABLED_PREEMPT && pc->irq_depth == 0 && pc->need_resched) preempt_schedule_irq();
}
NOKPROBE_SYMBOL(irq_exit);

/* A test hook, written only by the host (ksim's tests): the next timer
 * interrupt on CPU c first spins for irqoff_spin_cycles[c] cycles with
 * interrupts off, standing for a long irq-off section (a slow handler), so
 * a test can show a stop_machine or a sync IPI waiting for that CPU. */
unsigned long irqoff_spin_cycles[CONFIG_MAX_CPUS];
unsigned long irqoff_spin_began[CONFIG_MAX_CPUS]; /* when the last such spin began */

void timer_interrupt(void) {
  const unsigned cpu = this_cpu()->cpu;
  const unsigned long n = READ_ONCE(irqoff_spin_cycles[cpu]);
  if (unlikely(n)) {
    WRITE_ONCE(irqoff_spin_cycles[cpu], 0);
    const uint64_t t0 = arch_cycles();
    WRITE_ONCE(irqoff_spin_began[cpu], t0);
    while (arch_cycles() - t0 < n) arch_cpu_relax();
  }
  sched_tick();
}
NOKPROBE_SYMBOL(timer_interrupt);

void ipi_interrupt(void) {
  struct percpu *pc = this_cpu();
  pc->ipis_received++;
  int req = atomic_xchg(&pc->ipi_pending, 0);
  if (req & IPI_WAKE_THREADS) sched_wake_queued((unsigned)req);
  /* Set by ksim's kprobes engine (never by the kernel) when it needs this
   * CPU for a text patching step: the engine takes over at the call. */
  if (req & IPI_KPROBES) ksim_kprobes_ipi();
  /* IPI_WAKEUP needs nothing more: the idle loop looks around after every
   * interrupt. */
}
NOKPROBE_SYMBOL(ipi_interrupt);
