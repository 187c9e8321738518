/* x86-64 part of the architecture interface (see arch/arch.h): types and
 * inline functions. Included only through arch/arch.h. */
#ifndef ASM_ARCH_IMPL_H
#define ASM_ARCH_IMPL_H

#include <asm/x86.h>

#include "kernel/types.h"

/* Callee-saved state of a switched-out thread (layout: asm/x86.h): where
 * it resumes (the return address of its arch_context_switch() call), its
 * stack pointer after that return, and the System V callee-saved
 * registers. */
struct arch_context {
  unsigned long rip;
  unsigned long rsp;
  unsigned long rbx;
  unsigned long rbp; /* frame pointer */
  unsigned long r12, r13, r14, r15;
};
_Static_assert(sizeof(struct arch_context) == CTX_SIZE, "arch_context layout");

/* Every integer register of an interrupted context (layout: asm/x86.h).
 * `error` is always 0: ksim's x86 model pushes no error code for any vector
 * (entry.S pushes this placeholder so every vector has the same frame).
 * rip..ss are the CPU's interrupt frame; rsp is the interrupted stack
 * pointer. */
struct trap_frame {
  unsigned long r15, r14, r13, r12, r11, r10, r9, r8;
  unsigned long rbp, rdi, rsi, rdx, rcx, rbx, rax;
  unsigned long vector;
  unsigned long error;
  unsigned long rip, cs, rflags, rsp, ss;
};
_Static_assert(sizeof(struct trap_frame) == TF_SIZE, "trap_frame layout");

typedef unsigned long arch_irqflags_t; /* RFLAGS as it was (IF bit) */

static __always_inline void *arch_percpu_ptr(void) {
  void *p;
  /* GS points at this CPU's struct x86_cpu_local, whose first word is the
   * per-CPU pointer (setup.c). The kernel runs at CPL 0 only, so GS never
   * changes (no swapgs). Volatile: the pointer is set once by
   * arch_cpu_init() and must not be cached across it. */
  __asm__ __volatile__("movq %%gs:0, %0" : "=r"(p));
  return p;
}

static __always_inline arch_irqflags_t arch_local_irq_save(void) {
  unsigned long flags;
  __asm__ __volatile__("pushfq\n\tpopq %0\n\tcli" : "=r"(flags) : : "memory");
  return flags;
}
static __always_inline void arch_local_irq_restore(arch_irqflags_t flags) {
  if (flags & X86_RFLAGS_IF) __asm__ __volatile__("sti" ::: "memory");
}
static __always_inline void arch_local_irq_enable(void) { __asm__ __volatile__("sti" ::: "memory"); }
static __always_inline void arch_local_irq_disable(void) { __asm__ __volatile__("cli" ::: "memory"); }
static __always_inline bool arch_irqs_disabled(void) {
  unsigned long flags;
  __asm__ __volatile__("pushfq\n\tpopq %0" : "=r"(flags) : : "memory");
  return (flags & X86_RFLAGS_IF) == 0;
}

static __always_inline void arch_cpu_relax(void) { __asm__ __volatile__("pause" ::: "memory"); }

static __always_inline uint64_t arch_cycles(void) {
  uint32_t lo, hi;
  __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
  return ((uint64_t)hi << 32) | lo;
}

#endif
