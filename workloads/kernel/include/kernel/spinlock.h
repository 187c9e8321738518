/* Ticket spinlocks and the per-CPU preemption counter. Portable: built on
 * __atomic builtins and the arch interrupt-flag functions.
 *
 * spin_lock() disables preemption (increments this CPU's preempt_count)
 * before taking the lock; spin_unlock() re-enables it after releasing, and
 * with CONFIG_PREEMPT reschedules at once if a reschedule became due while
 * the lock was held. The _irqsave variants also disable local interrupts:
 * use them for any lock that an interrupt handler takes as well (run
 * queues, completions, the console). */
#ifndef KERNEL_SPINLOCK_H
#define KERNEL_SPINLOCK_H

#include "arch/arch.h"
#include "kernel/types.h"

typedef struct {
  uint32_t next;   /* next ticket to hand out (atomic fetch-add) */
  uint32_t owner;  /* ticket being served; written only by the holder */
  int32_t cpu;     /* holder's CPU, or -1 (diagnostics, panic bypass) */
} spinlock_t;

#define SPIN_LOCK_UNLOCKED {0, 0, -1}

void spin_lock_init(spinlock_t *lock);
void spin_lock(spinlock_t *lock);
void spin_unlock(spinlock_t *lock);
bool spin_trylock(spinlock_t *lock);
arch_irqflags_t spin_lock_irqsave(spinlock_t *lock);
void spin_unlock_irqrestore(spinlock_t *lock, arch_irqflags_t flags);
/* True if some CPU holds the lock (a snapshot). */
bool spin_is_locked(const spinlock_t *lock);
/* Release without the reschedule check (the scheduler's own unlock). */
void spin_unlock_no_resched(spinlock_t *lock);

void preempt_disable(void);
void preempt_enable(void);
void preempt_enable_no_resched(void);

/* Interrupt control for portable code. */
#define local_irq_save() arch_local_irq_save()
#define local_irq_restore(f) arch_local_irq_restore(f)
#define local_irq_enable() arch_local_irq_enable()
#define local_irq_disable() arch_local_irq_disable()
#define irqs_disabled() arch_irqs_disabled()

#endif
