/* Boot, the idle loop and the end of the run. Portable.
 *
 * Boot: every CPU enters kernel_main(cpu) from the arch boot code. CPU 0
 * detects the CPU count and sets up the shared state while the others
 * wait; it then publishes boot_state with a release store and IPIs them;
 * they read it with an acquire load, so everything CPU 0 wrote before is
 * visible to them (RISC-V: fence rw,w before the store, fence r,rw after
 * the load). Then each CPU sets up its own per-CPU area, creates its
 * worker threads, starts its tick and becomes its idle loop.
 *
 * End: the last worker of a CPU to exit marks the CPU's work done; its
 * idle loop prints the CPU's summary and counts the CPU in cpus_done
 * (release); the CPU that completes the count pokes CPU 0 with an IPI.
 * CPU 0 (acquire) then checks all results and powers off. */
#include "arch/arch.h"
#include "kernel/atomic.h"
#include "kernel/cache.h"
#include "kernel/kprobes.h"
#include "kernel/percpu.h"
#include "kernel/printk.h"
#include "kernel/sched.h"
#include "kernel/workload.h"

#define BOOT_WAITING 0x600d600dU /* non-zero: boot_state lives in .data */
#define BOOT_RELEASED 0x5ca1ab1eU

struct percpu percpu_areas[CONFIG_MAX_CPUS];
unsigned nr_cpus __read_mostly;

/* Read by secondaries before CPU 0 has cleared .bss: must be in .data. */
static unsigned boot_state = BOOT_WAITING;
static atomic_t cpus_done;

static __noreturn void idle_loop(void);
#ifdef CONFIG_FIG4
__noreturn void fig4_run(unsigned cpu);
#endif

static void cpu_setup(unsigned cpu) {
  struct percpu *pc = per_cpu(cpu);
  pc->cpu = cpu;
  arch_cpu_init(cpu, pc);
  sched_init_cpu();
}

void kernel_main(unsigned cpu) {
  if (cpu == 0) {
    nr_cpus = arch_detect_cpus();
    cpu_setup(0);
    workload_init();
    printk("ksim mini kernel: %u cpus, %s, HZ=%u, %u threads per cpu", nr_cpus,
           IS_ENABLED_PREEMPT ? "preemptive" : "non-preemptive", CONFIG_HZ,
           CONFIG_THREADS_PER_CPU);
    smp_store_release(&boot_state, BOOT_RELEASED);
    for (unsigned c = 1; c < nr_cpus; c++) smp_send_ipi(c, IPI_WAKEUP);
  } else {
    while (smp_load_acquire(&boot_state) != BOOT_RELEASED) arch_cpu_wait_early();
    if (cpu >= nr_cpus) arch_halt(); /* not counted: should not happen */
    /* The release IPI's request: its interrupt came before this CPU was set
     * up, so no handler took it. Left pending, it would keep smp_send_ipi()
     * from ringing this CPU's doorbell again. */
    atomic_xchg(&per_cpu(cpu)->ipi_pending, 0);
    cpu_setup(cpu);
  }
  printk("online");
#ifdef CONFIG_FIG4
  fig4_run(cpu); /* the Figure 4 benchmark instead of the workload (fig4.c) */
#endif
  workload_start_cpu();
  arch_timer_start(CONFIG_HZ);
  idle_loop();
}

static void report_done(struct percpu *pc) {
  pc->report_switches = pc->switches;
  pc->report_preemptions = pc->preemptions;
  pc->report_ipis_sent = pc->ipis_sent;
  pc->report_ipis_received = pc->ipis_received;
  pc->reported = true;
  printk("done: %u threads, %lu switches, %lu preemptions, %lu ipis sent, %lu ipis received, %lu ticks",
         pc->threads_total, pc->report_switches, pc->report_preemptions, pc->report_ipis_sent,
         pc->report_ipis_received, pc->ticks);
  /* Release: this CPU's results and counters before the count. */
  int n = atomic_add_return(&cpus_done, 1);
  if (n == (int)nr_cpus && pc->cpu != 0) smp_send_ipi(0, IPI_WAKEUP);
}

static __noreturn void finish(void) {
  workload_finish(); /* panics on any mismatch */
  arch_poweroff(0);
}

/* The idle context: runs whenever nothing else is runnable on this CPU. The
 * checks happen with interrupts disabled, and arch_cpu_idle() ends at once
 * if an interrupt became pending after them, so no wakeup is lost. */
static void idle_loop(void) {
  struct percpu *pc = this_cpu();
  for (;;) {
    arch_local_irq_disable();
    if (READ_ONCE(pc->rq.nr_running) > 0 || pc->need_resched) {
      arch_local_irq_enable();
      schedule();
      continue;
    }
    if (pc->work_done && !pc->reported) {
      arch_local_irq_enable();
      report_done(pc);
      continue;
    }
    if (pc->cpu == 0 && pc->reported && atomic_read_acquire(&cpus_done) == (int)nr_cpus) {
      arch_local_irq_enable();
      finish();
    }
    arch_cpu_idle();
    arch_local_irq_enable();
  }
}
