/* Per-CPU data. Each CPU's area is reached through the arch's per-CPU
 * pointer (RV64: tp), set once at boot; threads never migrate between CPUs,
 * so a thread may keep the pointer. Portable. */
#ifndef KERNEL_PERCPU_H
#define KERNEL_PERCPU_H

#include "arch/arch.h"
#include "kernel/atomic.h"
#include "kernel/cache.h"
#include "kernel/sched.h"
#include "kernel/spinlock.h"
#include "kernel/types.h"

/* Requests carried by an IPI (bits of percpu.ipi_pending). */
#define IPI_WAKEUP 0x2     /* just leave the idle wait and look around */
#define IPI_KPROBES 0x4    /* work for ksim's kprobes engine: set only by the host */
/* Wake the target CPU's thread number `idx` (a wakeup queued by another CPU:
 * sched.c, wake_up_thread). */
#define IPI_WAKE_THREAD(idx) (0x100u << (idx))
#define IPI_WAKE_THREADS (IPI_WAKE_THREAD(CONFIG_THREADS_PER_CPU) - IPI_WAKE_THREAD(0))
_Static_assert(CONFIG_THREADS_PER_CPU <= 23, "IPI_WAKE_THREAD bits must fit the 32-bit ipi_pending below its sign bit");

struct run_queue {
  spinlock_t lock;          /* irqsave: the tick and queued wakeups (IPI handler) take it */
  struct thread *head, *tail; /* runnable threads, FIFO */
  struct thread *sleepers;  /* threads in sleep_ticks(), unordered */
  unsigned nr_running;      /* threads on head..tail */
};

/* Laid out like Linux's per-CPU data (kernel/cache.h): what only this CPU
 * touches comes first; the IPI request bits, which other CPUs write, start a
 * block of their own; so do the run queue and the idle thread (which the
 * host's RCU-tasks scan reads). */
struct percpu {
  unsigned cpu;
  int preempt_count;      /* spinlocks held (and explicit preempt_disable) */
  unsigned irq_depth;     /* > 0 inside an interrupt handler */
  int need_resched;       /* this CPU only, with interrupts disabled */
  struct thread *curr;    /* running thread; changed under rq.lock */
  struct thread *idle;    /* this CPU's idle context (its boot stack) */
  unsigned long ticks;    /* timer ticks taken by this CPU */

  /* Statistics: written by this CPU with interrupts disabled. */
  unsigned long switches;     /* context switches (any thread, idle included) */
  unsigned long preemptions;  /* involuntary switches (timer / wakeup) */
  unsigned long ipis_sent;
  unsigned long ipis_received;
  unsigned long idle_ticks;

  /* End of run. */
  unsigned threads_total, threads_alive;
  bool work_done;   /* last worker exited */
  bool reported;    /* summary line printed */
  unsigned long report_switches, report_preemptions, report_ipis_sent, report_ipis_received;

  int panic_depth;

  /* Written by other CPUs. */
  atomic_t ipi_pending ____cacheline_aligned_in_smp; /* IPI_* bits, set by senders, taken by the handler */

  /* Written by this CPU only: other CPUs queue their wakeups (IPI_WAKE_THREAD). */
  struct run_queue rq ____cacheline_aligned_in_smp;

  struct thread idle_thread ____cacheline_aligned_in_smp;
} ____cacheline_aligned_in_smp;

extern struct percpu percpu_areas[CONFIG_MAX_CPUS];
extern unsigned nr_cpus;

static __always_inline struct percpu *this_cpu(void) { return (struct percpu *)arch_percpu_ptr(); }
static __always_inline struct percpu *per_cpu(unsigned cpu) { return &percpu_areas[cpu]; }
static __always_inline unsigned smp_processor_id(void) { return this_cpu()->cpu; }
#define current (this_cpu()->curr)

#endif
