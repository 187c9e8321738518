/* The scheduler: per-CPU run queues, round robin with a one-tick time
 * slice, cooperative yield(), sleep_ticks(), blocking and cross-CPU wakeup
 * (with an IPI), and timer-driven preemption when built with
 * CONFIG_PREEMPT. Threads never migrate: a thread is created on, runs on
 * and is woken onto the CPU that created it.
 *
 * Locking: a run queue is protected by its lock, taken with interrupts
 * disabled (the tick and remote CPUs take it). __schedule() holds this CPU's
 * run-queue lock across the context switch; the thread switched to releases
 * it (finish_switch(), or thread_start() for a new thread), as in Linux.
 * Preemption rule: a thread is preempted only when this CPU's preempt_count
 * is 0 (no spinlock held), interrupts were enabled where it was interrupted,
 * and it is not the idle context. */
#include "kernel/sched.h"

#include "arch/arch.h"
#include "kernel/atomic.h"
#include "kernel/kprobes.h"
#include "kernel/ksim_abi.h"
#include "kernel/percpu.h"
#include "kernel/printk.h"
#include "kernel/string.h"

#define STACK_CANARY 0x57ac6e9d5eed1e55UL

static struct thread threads[CONFIG_MAX_CPUS][CONFIG_THREADS_PER_CPU];

/* Where the host finds every thread's RCU-tasks state (ksim_abi.h). */
const struct ksim_rcu_tasks_abi ksim_rcu_tasks_abi __used = {
    .threads = (unsigned long)threads,
    .thread_size = sizeof(struct thread),
    .threads_per_cpu = CONFIG_THREADS_PER_CPU,
    .thread_state = __builtin_offsetof(struct thread, state),
    .thread_rcu_tasks_qs = __builtin_offsetof(struct thread, rcu_tasks_qs),
    .percpu_threads_total = __builtin_offsetof(struct percpu, threads_total),
    .state_running = THREAD_RUNNING,
    .state_runnable = THREAD_RUNNABLE,
};
/* Whether a task can be preempted (CONFIG_PREEMPT): the host's kprobe
 * booster then frees boosted slots only after an RCU-tasks grace period,
 * since a task may be stopped inside one (ksim_abi.h). */
const unsigned long ksim_kernel_preempt __used = IS_ENABLED_PREEMPT;
static char thread_stacks[CONFIG_MAX_CPUS][CONFIG_THREADS_PER_CPU][CONFIG_THREAD_STACK_SIZE]
    __section(".bss.kstacks") __aligned(16);
/* Boot stacks, one per CPU: the arch boot code puts CPU n's sp at the top
 * of boot_stacks[n] (arch/arch.h). The idle context keeps using it. */
char boot_stacks[CONFIG_MAX_CPUS][CONFIG_BOOT_STACK_SIZE] __section(".bss.kstacks") __aligned(16);

static void set_canary(uintptr_t stack_lo) { *(volatile unsigned long *)stack_lo = STACK_CANARY; }

static void check_canary(const struct thread *t) {
  if (unlikely(*(volatile const unsigned long *)t->stack_lo != STACK_CANARY))
    panic("stack overflow in thread %s (stack %lx..%lx)", t->name, (unsigned long)t->stack_lo,
          (unsigned long)t->stack_hi);
}
NOKPROBE_SYMBOL(check_canary);

static void rq_enqueue(struct run_queue *rq, struct thread *t) {
  t->rq_next = NULL;
  if (rq->tail) rq->tail->rq_next = t;
  else rq->head = t;
  rq->tail = t;
  WRITE_ONCE(rq->nr_running, rq->nr_running + 1);
}
NOKPROBE_SYMBOL(rq_enqueue);

static struct thread *rq_dequeue(struct run_queue *rq) {
  struct thread *t = rq->head;
  if (!t) return NULL;
  rq->head = t->rq_next;
  if (!rq->head) rq->tail = NULL;
  t->rq_next = NULL;
  WRITE_ONCE(rq->nr_running, rq->nr_running - 1);
  return t;
}
NOKPROBE_SYMBOL(rq_dequeue);

void sched_init_cpu(void) {
  struct percpu *pc = this_cpu();
  struct thread *idle = &pc->idle_thread;
  spin_lock_init(&pc->rq.lock);
  /* Linux's names for the idle task: pid 0, comm "swapper/<cpu>". */
  snprintf(idle->name, sizeof idle->name, "swapper/%u", pc->cpu);
  idle->tid = 0;
  idle->cpu = pc->cpu;
  idle->idx = CONFIG_THREADS_PER_CPU;
  idle->state = THREAD_RUNNING;
  idle->stack_lo = (uintptr_t)boot_stacks[pc->cpu];
  idle->stack_hi = idle->stack_lo + CONFIG_BOOT_STACK_SIZE;
  set_canary(idle->stack_lo);
  pc->idle = idle;
  pc->curr = idle;
}

/* The rest of the switch, in the thread switched to. */
static void finish_switch(struct percpu *pc) { spin_unlock_no_resched(&pc->rq.lock); }
NOKPROBE_SYMBOL(finish_switch);

/* First code of every thread (arch_thread_setup's entry). */
static __noreturn void thread_start(void *arg) {
  struct thread *t = arg;
  finish_switch(this_cpu());
  arch_local_irq_enable();
  t->fn(t->arg);
  thread_exit();
}
NOKPROBE_SYMBOL(thread_start);

struct thread *thread_create(void (*fn)(void *), void *arg, const char *name) {
  struct percpu *pc = this_cpu();
  unsigned idx = pc->threads_total;
  if (idx >= CONFIG_THREADS_PER_CPU) panic("thread_create: too many threads on cpu %u", pc->cpu);
  struct thread *t = &threads[pc->cpu][idx];
  memset(t, 0, sizeof *t);
  strncpy_z(t->name, name, sizeof t->name);
  /* From the CPU and the slot, not a global counter: CPUs create their
   * threads concurrently, and ids must not depend on that interleaving. */
  t->tid = 1 + pc->cpu * CONFIG_THREADS_PER_CPU + idx;
  t->cpu = pc->cpu;
  t->idx = idx;
  t->fn = fn;
  t->arg = arg;
  t->stack_lo = (uintptr_t)thread_stacks[pc->cpu][idx];
  t->stack_hi = t->stack_lo + CONFIG_THREAD_STACK_SIZE;
  set_canary(t->stack_lo);
  arch_thread_setup(&t->ctx, thread_stacks[pc->cpu][idx], CONFIG_THREAD_STACK_SIZE, thread_start, t);

  arch_irqflags_t flags = spin_lock_irqsave(&pc->rq.lock);
  pc->threads_total++;
  pc->threads_alive++;
  t->state = THREAD_RUNNABLE;
  rq_enqueue(&pc->rq, t);
  spin_unlock_irqrestore(&pc->rq.lock, flags);
  return t;
}

/* Picks the next thread and switches to it. `preempt`: the current thread
 * did not ask to leave (counted as a preemption if a switch happens). A
 * current thread still RUNNING goes to the tail of the run queue; one that
 * is SLEEPING, BLOCKED or DEAD does not. */
static void __schedule(bool preempt) {
  arch_irqflags_t flags = arch_local_irq_save();
  struct percpu *pc = this_cpu();
  spin_lock(&pc->rq.lock);
  if (unlikely(pc->preempt_count != 1))
    panic("scheduling while atomic: preempt_count %d in %s", pc->preempt_count - 1, pc->curr->name);
  if (unlikely(pc->irq_depth != 0)) panic("scheduling inside an interrupt handler");

  struct thread *prev = pc->curr;
  if (!preempt) prev->rcu_tasks_qs++;
  if (prev->state == THREAD_RUNNING && prev != pc->idle) {
    prev->state = THREAD_RUNNABLE;
    rq_enqueue(&pc->rq, prev);
  }
  struct thread *next = rq_dequeue(&pc->rq);
  if (!next) next = pc->idle;
  pc->need_resched = 0;
  next->state = THREAD_RUNNING;

  if (next != prev) {
    check_canary(prev);
    pc->curr = next;
    pc->switches++;
    next->switched_in++;
    if (preempt) {
      pc->preemptions++;
      prev->preempted++;
    }
    arch_context_switch(&prev->ctx, &next->ctx);
    /* Back in prev, switched in by some later __schedule() on this CPU. */
    pc = this_cpu();
  }
  finish_switch(pc);
  arch_local_irq_restore(flags);
}
NOKPROBE_SYMBOL(__schedule);

void schedule(void) { __schedule(false); }

void yield(void) { __schedule(false); }

/* From preempt_enable(): a preemption point in thread context. Only with
 * CONFIG_PREEMPT, no lock held, interrupts enabled, not in an interrupt
 * handler, not the idle context. */
void preempt_schedule(void) {
  struct percpu *pc = this_cpu();
  if (!IS_ENABLED_PREEMPT || pc->preempt_count != 0 || pc->irq_depth != 0 || pc->curr == pc->idle ||
      arch_irqs_disabled())
    return;
  if (!READ_ONCE(pc->need_resched)) return;
  __schedule(true);
}

/* From irq_exit(), on the way out of an interrupt that hit a thread with
 * interrupts enabled (interrupts are disabled here, in the trap path). */
void preempt_schedule_irq(void) {
  struct percpu *pc = this_cpu();
  if (!IS_ENABLED_PREEMPT || pc->preempt_count != 0 || pc->irq_depth != 0 || pc->curr == pc->idle)
    return;
  if (!pc->need_resched) return;
  __schedule(true);
}
NOKPROBE_SYMBOL(preempt_schedule_irq);

void thread_exit(void) {
  arch_local_irq_disable();
  struct percpu *pc = this_cpu();
  struct thread *t = pc->curr;
  if (t == pc->idle) panic("the idle context cannot exit");
  t->state = THREAD_DEAD;
  if (--pc->threads_alive == 0) pc->work_done = true;
  __schedule(false);
  panic("dead thread %s was scheduled", t->name);
}

void sleep_ticks(unsigned long n) {
  arch_irqflags_t flags = arch_local_irq_save();
  struct percpu *pc = this_cpu();
  struct thread *t = pc->curr;
  if (t == pc->idle) panic("the idle context cannot sleep");
  spin_lock(&pc->rq.lock);
  t->wake_tick = pc->ticks + n;
  t->state = THREAD_SLEEPING;
  t->sleep_next = pc->rq.sleepers;
  pc->rq.sleepers = t;
  spin_unlock_no_resched(&pc->rq.lock);
  /* Interrupts stay off until __schedule() has switched away, so the tick
   * cannot wake us before we have left the CPU. */
  __schedule(false);
  arch_local_irq_restore(flags);
}

void smp_send_ipi(unsigned cpu, int req) {
  /* The doorbell rings only when no request was pending (fully ordered
   * before it): otherwise one is on its way, and its handler takes every
   * bit, ours too. Linux rings only when its call-single queue was empty
   * (llist_add's result). */
  if (atomic_fetch_or(&per_cpu(cpu)->ipi_pending, req) != 0) return;
  arch_send_ipi(cpu);
  arch_irqflags_t flags = arch_local_irq_save();
  this_cpu()->ipis_sent++;
  arch_local_irq_restore(flags);
}

/* A wakeup on the thread's own CPU (also from the IPI handler, so not
 * probeable, like the rest of the interrupt path). */
static bool wake_up_local(struct thread *t) {
  struct percpu *pc = this_cpu();
  bool woke = false;
  arch_irqflags_t flags = spin_lock_irqsave(&pc->rq.lock);
  if (t->state == THREAD_BLOCKED) {
    woke = true;
    if (pc->curr == t) {
      /* It has not switched out yet: it will see RUNNING in __schedule()
       * and stay runnable. */
      t->state = THREAD_RUNNING;
    } else {
      t->state = THREAD_RUNNABLE;
      rq_enqueue(&pc->rq, t);
    }
  }
  if (woke) pc->need_resched = 1;
  spin_unlock_irqrestore(&pc->rq.lock, flags);
  return woke;
}
NOKPROBE_SYMBOL(wake_up_local);

/* A wakeup from another CPU is queued on the thread's CPU, which does it
 * from the IPI (Linux's ttwu_queue_wakelist): a run queue and its threads
 * are written by their own CPU only, so the run queue's lock never moves
 * between CPUs. */
void wake_up_thread(struct thread *t) {
  /* The thread's CPU and number from its place in threads[][], not from its
   * fields: a waker on another CPU reads nothing of it either. */
  const unsigned long n = (unsigned long)(t - &threads[0][0]);
  if (n >= CONFIG_MAX_CPUS * CONFIG_THREADS_PER_CPU)
    panic("wake_up_thread: %lx is not a worker thread", (unsigned long)t);
  const unsigned cpu = n / CONFIG_THREADS_PER_CPU, idx = n % CONFIG_THREADS_PER_CPU;
  if (cpu != smp_processor_id()) {
    smp_send_ipi(cpu, IPI_WAKE_THREAD(idx));
    return;
  }
  if (wake_up_local(t)) {
    preempt_disable();
    preempt_enable(); /* a preemption point (CONFIG_PREEMPT) */
  }
}

/* The wakeups other CPUs queued for this one (from ipi_interrupt). */
void sched_wake_queued(unsigned mask) {
  struct percpu *pc = this_cpu();
  for (unsigned idx = 0; idx < CONFIG_THREADS_PER_CPU; idx++)
    if (mask & IPI_WAKE_THREAD(idx)) wake_up_local(&threads[pc->cpu][idx]);
}
NOKPROBE_SYMBOL(sched_wake_queued);

void completion_init(struct completion *c) {
  spin_lock_init(&c->lock);
  c->done = 0;
  c->waiter = NULL;
}

void complete(struct completion *c) {
  arch_irqflags_t flags = spin_lock_irqsave(&c->lock);
  c->done++;
  struct thread *w = c->waiter;
  c->waiter = NULL;
  spin_unlock_irqrestore(&c->lock, flags);
  if (w) wake_up_thread(w);
}

void wait_for_completion(struct completion *c) {
  arch_irqflags_t flags = arch_local_irq_save();
  struct percpu *pc = this_cpu();
  for (;;) {
    spin_lock(&c->lock);
    if (c->done > 0) {
      c->done--;
      spin_unlock_no_resched(&c->lock);
      break;
    }
    if (c->waiter && c->waiter != pc->curr) panic("completion: two waiters");
    c->waiter = pc->curr;
    /* BLOCKED is set under c->lock, before any complete() can see us as the
     * waiter, so its wake_up_thread() finds BLOCKED (or a later state). */
    WRITE_ONCE(pc->curr->state, THREAD_BLOCKED);
    spin_unlock_no_resched(&c->lock);
    __schedule(false);
  }
  arch_local_irq_restore(flags);
  preempt_disable();
  preempt_enable(); /* a preemption point (CONFIG_PREEMPT) */
}

/* Timer tick (interrupts disabled): account, wake sleepers that are due,
 * and ask for a reschedule when the time slice (one tick) of the current
 * thread is over and someone else is runnable. */
void sched_tick(void) {
  struct percpu *pc = this_cpu();
  pc->ticks++;
  if (pc->curr == pc->idle) pc->idle_ticks++;
  else pc->curr->ticks_run++;

  spin_lock(&pc->rq.lock);
  struct thread **link = &pc->rq.sleepers;
  while (*link) {
    struct thread *t = *link;
    if (t->wake_tick <= pc->ticks) {
      *link = t->sleep_next;
      t->sleep_next = NULL;
      t->state = THREAD_RUNNABLE;
      rq_enqueue(&pc->rq, t);
    } else {
      link = &t->sleep_next;
    }
  }
  if (pc->rq.nr_running > 0) pc->need_resched = 1;
  spin_unlock_no_resched(&pc->rq.lock);
}
NOKPROBE_SYMBOL(sched_tick);
