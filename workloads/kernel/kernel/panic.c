/* panic() and fatal traps. Serialised: the first CPU to panic reports and
 * powers off; any other CPU that panics meanwhile halts. A panic inside the
 * panic path powers off at once. Blacklisted for kprobes. */
#include "arch/arch.h"
#include "kernel/atomic.h"
#include "kernel/kprobes.h"
#include "kernel/percpu.h"
#include "kernel/printk.h"

#define PANIC_CODE 1           /* finisher panic code of an ordinary panic */
#define PANIC_CODE_RECURSIVE 2 /* a panic while panicking */

static atomic_t panic_cpu = ATOMIC_INIT(-1);

static void panic_enter(void) {
  arch_local_irq_disable();
  struct percpu *pc = this_cpu();
  if (pc->panic_depth++ > 0) arch_panic_poweroff(PANIC_CODE_RECURSIVE);
  if (!atomic_cmpxchg(&panic_cpu, -1, (int)pc->cpu)) arch_halt();
}
NOKPROBE_SYMBOL(panic_enter);

static __noreturn void panic_finish(const char *msg) {
  struct percpu *pc = this_cpu();
  struct thread *t = pc->curr;
  panic_printk("Kernel panic - not syncing: %s", msg);
  if (t) {
    panic_printk("thread %s (state %d, preempt_count %d, irq_depth %u)", t->name, t->state,
                 pc->preempt_count, pc->irq_depth);
    arch_dump_backtrace(t->stack_lo, t->stack_hi);
  }
  panic_printk("---[ end Kernel panic - not syncing: %s ]---", msg);
  arch_panic_poweroff(PANIC_CODE);
}
NOKPROBE_SYMBOL(panic_finish);

void panic(const char *fmt, ...) {
  char msg[160];
  panic_enter();
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  panic_finish(msg);
}
NOKPROBE_SYMBOL(panic);

void die_trap(const struct trap_frame *tf, const char *what) {
  panic_enter();
  panic_printk("Oops: unexpected trap: %s", what);
  arch_dump_trap_frame(tf);
  panic_finish(what);
}
NOKPROBE_SYMBOL(die_trap);
