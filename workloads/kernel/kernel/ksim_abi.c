/* The ksim_kernel_abi table (layout and use in include/kernel/ksim_abi.h).
 * Portable: every entry is computed by the compiler for the ISA at hand. */
#include "kernel/ksim_abi.h"

#include "kernel/compiler.h"
#include "kernel/percpu.h"
#include "kernel/sched.h"

_Static_assert(sizeof(struct ksim_kernel_abi) == 8 * 8, "the host reads eight 64-bit words");
_Static_assert(sizeof(((struct thread *)0)->tid) == 4, "the host reads the tid as 32 bits");
_Static_assert(sizeof(((struct percpu *)0)->curr) == 8, "the host reads curr as 64 bits");

/* Where each CPU counts its context switches: ksim's kprobes engine reads
 * it for RCU grace periods (a switch is a quiescent state; kprobes/rcu.hpp). */
const unsigned long ksim_percpu_switches_offset __used = __builtin_offsetof(struct percpu, switches);

const struct ksim_kernel_abi ksim_kernel_abi __used = {
    .magic = KSIM_ABI_MAGIC,
    .percpu_areas = (unsigned long)percpu_areas,
    .percpu_size = sizeof(struct percpu),
    .percpu_curr = __builtin_offsetof(struct percpu, curr),
    .thread_name = __builtin_offsetof(struct thread, name),
    .thread_tid = __builtin_offsetof(struct thread, tid),
    .thread_name_size = sizeof(((struct thread *)0)->name),
    .percpu_ipi_pending = __builtin_offsetof(struct percpu, ipi_pending),
};
