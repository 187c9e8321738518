/* Ticket spinlocks and preemption control. Every function here is
 * blacklisted for kprobes: a probe handler path may take these locks. */
#include "kernel/spinlock.h"

#include "kernel/atomic.h"
#include "kernel/kprobes.h"
#include "kernel/percpu.h"
#include "kernel/sched.h"

void preempt_disable(void) {
  this_cpu()->preempt_count++;
  barrier();
}
NOKPROBE_SYMBOL(preempt_disable);

void preempt_enable_no_resched(void) {
  barrier();
  this_cpu()->preempt_count--;
}
NOKPROBE_SYMBOL(preempt_enable_no_resched);

/* With CONFIG_PREEMPT, leaving the last critical section is a preemption
 * point: a tick or wakeup that asked for a reschedule meanwhile is served
 * now (unless interrupts are off or we are in an interrupt handler:
 * preempt_schedule() checks). */
void preempt_enable(void) {
  struct percpu *pc = this_cpu();
  barrier();
  if (--pc->preempt_count == 0 && IS_ENABLED_PREEMPT && unlikely(READ_ONCE(pc->need_resched)))
    preempt_schedule();
}
NOKPROBE_SYMBOL(preempt_enable);

void spin_lock_init(spinlock_t *lock) {
  lock->next = 0;
  lock->owner = 0;
  lock->cpu = -1;
}
NOKPROBE_SYMBOL(spin_lock_init);

static __always_inline void lock_acquire_ticket(spinlock_t *lock) {
  uint32_t ticket = __atomic_fetch_add(&lock->next, 1, __ATOMIC_RELAXED);
  /* The acquire load pairs with the releasing store in unlock: the previous
   * holder's writes are visible once our ticket is served. */
  while (__atomic_load_n(&lock->owner, __ATOMIC_ACQUIRE) != ticket) arch_cpu_relax();
  WRITE_ONCE(lock->cpu, (int32_t)smp_processor_id());
}

static __always_inline void lock_release(spinlock_t *lock) {
  WRITE_ONCE(lock->cpu, -1);
  /* Only the holder writes owner, so a plain read-modify-write is enough;
   * release orders the critical section before the hand-over. */
  __atomic_store_n(&lock->owner, lock->owner + 1, __ATOMIC_RELEASE);
}

void spin_lock(spinlock_t *lock) {
  preempt_disable();
  lock_acquire_ticket(lock);
}
NOKPROBE_SYMBOL(spin_lock);

bool spin_trylock(spinlock_t *lock) {
  preempt_disable();
  uint32_t owner = __atomic_load_n(&lock->owner, __ATOMIC_ACQUIRE);
  uint32_t expect = owner;
  /* Free iff next == owner; taking ticket `owner` then makes us the holder. */
  if (__atomic_compare_exchange_n(&lock->next, &expect, owner + 1, false, __ATOMIC_ACQUIRE,
                                  __ATOMIC_RELAXED)) {
    WRITE_ONCE(lock->cpu, (int32_t)smp_processor_id());
    return true;
  }
  preempt_enable_no_resched();
  return false;
}
NOKPROBE_SYMBOL(spin_trylock);

void spin_unlock(spinlock_t *lock) {
  lock_release(lock);
  preempt_enable();
}
NOKPROBE_SYMBOL(spin_unlock);

void spin_unlock_no_resched(spinlock_t *lock) {
  lock_release(lock);
  preempt_enable_no_resched();
}
NOKPROBE_SYMBOL(spin_unlock_no_resched);

arch_irqflags_t spin_lock_irqsave(spinlock_t *lock) {
  arch_irqflags_t flags = arch_local_irq_save();
  spin_lock(lock);
  return flags;
}
NOKPROBE_SYMBOL(spin_lock_irqsave);

void spin_unlock_irqrestore(spinlock_t *lock, arch_irqflags_t flags) {
  lock_release(lock);
  arch_local_irq_restore(flags);
  preempt_enable();
}
NOKPROBE_SYMBOL(spin_unlock_irqrestore);

bool spin_is_locked(const spinlock_t *lock) {
  return __atomic_load_n(&lock->owner, __ATOMIC_RELAXED) != __atomic_load_n(&lock->next, __ATOMIC_RELAXED);
}
NOKPROBE_SYMBOL(spin_is_locked);
