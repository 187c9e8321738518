/* Threads and the scheduler: one run queue per CPU, round robin, threads
 * bound to the CPU that created them. Portable. */
#ifndef KERNEL_SCHED_H
#define KERNEL_SCHED_H

#include "arch/arch.h"
#include "kernel/cache.h"
#include "kernel/spinlock.h"
#include "kernel/types.h"

enum thread_state {
  THREAD_RUNNING,   /* on the CPU (rq.curr) */
  THREAD_RUNNABLE,  /* on the run queue */
  THREAD_SLEEPING,  /* in sleep_ticks(), on rq.sleepers */
  THREAD_BLOCKED,   /* waiting for wake_up_thread() */
  THREAD_DEAD,
};

struct thread {
  struct arch_context ctx; /* saved registers while switched out */
  char name[16];           /* like a Linux comm: "worker/<cpu>:<idx>", "swapper/<cpu>" */
  unsigned tid;            /* 0 for idle; workers 1 + cpu * CONFIG_THREADS_PER_CPU + idx */
  unsigned cpu;            /* the CPU it belongs to, for life */
  unsigned idx;            /* number among that CPU's threads */
  int state;               /* enum thread_state; changed under the rq lock */
  struct thread *rq_next;
  struct thread *sleep_next;
  unsigned long wake_tick;
  void (*fn)(void *);
  void *arg;
  uintptr_t stack_lo, stack_hi;
  /* accounting */
  unsigned long ticks_run;   /* ticks that hit while it ran */
  unsigned long switched_in;
  unsigned long preempted;
  /* Passes through __schedule() that were not preemptions (yield, sleep,
   * block, exit): each is an RCU-tasks quiescent state for this thread
   * (Linux's rcu_tasks_qs() in rcu_note_context_switch). Written only by
   * the thread's own CPU. */
  unsigned long rcu_tasks_qs;
} ____cacheline_aligned_in_smp; /* one block each: its CPU writes it, and no other CPU touches it */

struct completion {
  spinlock_t lock;
  unsigned done;           /* complete() calls not yet consumed */
  struct thread *waiter;   /* at most one waiting thread */
};

void sched_init_cpu(void);
struct thread *thread_create(void (*fn)(void *), void *arg, const char *name);
__noreturn void thread_exit(void);

void schedule(void);
void yield(void);
void sleep_ticks(unsigned long n);
/* Preemption points (CONFIG_PREEMPT): preempt_enable() calls
 * preempt_schedule(), irq_exit() calls preempt_schedule_irq(). Each switches
 * threads if a reschedule is due and preemption is allowed there. */
void preempt_schedule(void);
void preempt_schedule_irq(void);

/* Makes a BLOCKED thread runnable on its CPU. From another CPU the wakeup
 * is queued there and done by its IPI handler (sched_wake_queued). */
void wake_up_thread(struct thread *t);
/* Does the wakeups queued for this CPU (IPI_WAKE_THREAD bits of `mask`). */
void sched_wake_queued(unsigned mask);
/* Sends an IPI carrying `req` (IPI_* in percpu.h) to `cpu`; rings its
 * doorbell only if no request was pending there. */
void smp_send_ipi(unsigned cpu, int req);

void completion_init(struct completion *c);
void complete(struct completion *c);
void wait_for_completion(struct completion *c);

/* Timer-tick work of the scheduler (from timer_interrupt). */
void sched_tick(void);

#endif
