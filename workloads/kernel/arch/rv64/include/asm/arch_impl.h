/* RV64 part of the architecture interface (see arch/arch.h): types and
 * inline functions. Included only through arch/arch.h. */
#ifndef ASM_ARCH_IMPL_H
#define ASM_ARCH_IMPL_H

#include <asm/csr.h>
#include <asm/trap_frame.h>

#include "kernel/types.h"

/* Callee-saved state of a switched-out thread (layout: asm/trap_frame.h). */
struct arch_context {
  unsigned long ra;
  unsigned long sp;
  unsigned long s[12]; /* s0 (frame pointer) .. s11 */
};
_Static_assert(sizeof(struct arch_context) == CTX_SIZE, "arch_context layout");

/* Every integer register of an interrupted context, plus the trap CSRs.
 * regs[n] is xn; regs[0] is unused; regs[2] is sp before the trap. */
struct trap_frame {
  unsigned long regs[32];
  unsigned long mepc;
  unsigned long mstatus;
  unsigned long mcause;
  unsigned long mtval;
};
_Static_assert(sizeof(struct trap_frame) == TF_SIZE, "trap_frame layout");

typedef unsigned long arch_irqflags_t; /* mstatus.MIE as it was */

static __always_inline void *arch_percpu_ptr(void) {
  void *p;
  /* tp holds the per-CPU pointer for the whole life of a CPU: threads never
   * migrate, and the compiler never allocates tp. */
  __asm__("mv %0, tp" : "=r"(p));
  return p;
}

static __always_inline arch_irqflags_t arch_local_irq_save(void) {
  return csr_read_clear(mstatus, MSTATUS_MIE) & MSTATUS_MIE;
}
static __always_inline void arch_local_irq_restore(arch_irqflags_t flags) {
  if (flags & MSTATUS_MIE) csr_set(mstatus, MSTATUS_MIE);
}
static __always_inline void arch_local_irq_enable(void) { csr_set(mstatus, MSTATUS_MIE); }
static __always_inline void arch_local_irq_disable(void) { csr_clear(mstatus, MSTATUS_MIE); }
static __always_inline bool arch_irqs_disabled(void) { return (csr_read(mstatus) & MSTATUS_MIE) == 0; }

/* RV64IMAC has no pause hint (Zihintpause); a compiler barrier keeps the
 * loop reloading. */
static __always_inline void arch_cpu_relax(void) { __asm__ __volatile__("nop" ::: "memory"); }

static __always_inline uint64_t arch_cycles(void) { return csr_read(mcycle); }

#endif
