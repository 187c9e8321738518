/* What a debugger on the host (ksim's kprobes engine) needs to know to find
 * a CPU's current thread, its name (Linux's comm) and its id (pid), without
 * DWARF: one constant table, symbol `ksim_kernel_abi`, eight unsigned longs
 * (64 bytes, little-endian on both ISAs). Portable.
 *
 * To read CPU c's current thread:
 *   pc   = percpu_areas + c * percpu_size
 *   t    = *(uint64_t *)(pc + percpu_curr)        (0: CPU not set up yet)
 *   comm = NUL-terminated string at t + thread_name, at most thread_name_size bytes
 *   tid  = *(uint32_t *)(t + thread_tid)
 * A CPU's idle context has tid 0 and name "swapper/<c>" (as in Linux);
 * worker j of CPU c has tid 1 + c * CONFIG_THREADS_PER_CPU + j and name
 * "worker/<c>:<j>". curr is NULL until the CPU's per-CPU area is set up
 * (early boot) and changes only under the CPU's run-queue lock, at context
 * switches. The eighth word (0 in older images: absent) is where the
 * engine sets IPI_KPROBES to ask a CPU for work (kprobes/patching.hpp):
 *   *(uint32_t *)(percpu_areas + c * percpu_size + percpu_ipi_pending) |= IPI_KPROBES
 * then rings CPU c's IPI doorbell. A new layout gets a new magic
 * (KSIMABI2, ...). */
#ifndef KERNEL_KSIM_ABI_H
#define KERNEL_KSIM_ABI_H

#define KSIM_ABI_MAGIC 0x314942414d49534bUL /* "KSIMABI1" in memory order */

struct ksim_kernel_abi {
  unsigned long magic;            /* KSIM_ABI_MAGIC */
  unsigned long percpu_areas;     /* address of struct percpu[CONFIG_MAX_CPUS] */
  unsigned long percpu_size;      /* sizeof(struct percpu): the array's stride */
  unsigned long percpu_curr;      /* offsetof(struct percpu, curr): struct thread * */
  unsigned long thread_name;      /* offsetof(struct thread, name): char[] */
  unsigned long thread_tid;       /* offsetof(struct thread, tid): unsigned (32-bit) */
  unsigned long thread_name_size; /* sizeof(struct thread::name), NUL included */
  unsigned long percpu_ipi_pending; /* offsetof(struct percpu, ipi_pending): 32-bit IPI_* bits */
};

extern const struct ksim_kernel_abi ksim_kernel_abi;

/* RCU-tasks (kprobes/rcu.hpp): a second table, symbol `ksim_rcu_tasks_abi`,
 * eight unsigned longs. CPU c's threads are
 *   t(c, j) = threads + (c * threads_per_cpu + j) * thread_size,  j < threads_total
 * where threads_total is the 32-bit word at percpu_areas + c * percpu_size +
 * percpu_threads_total. A thread is on its run queue (Linux's on_rq) while
 * the int at t + thread_state is state_running or state_runnable; the
 * unsigned long at t + thread_rcu_tasks_qs counts its voluntary passes
 * through the scheduler. Both are written only by CPU c (a wakeup from
 * another CPU is done by CPU c's IPI handler). The host reads them from
 * CPU c's own interrupts. */
struct ksim_rcu_tasks_abi {
  unsigned long threads;              /* address of struct thread[CONFIG_MAX_CPUS][threads_per_cpu] */
  unsigned long thread_size;          /* sizeof(struct thread) */
  unsigned long threads_per_cpu;      /* CONFIG_THREADS_PER_CPU */
  unsigned long thread_state;         /* offsetof(struct thread, state): int */
  unsigned long thread_rcu_tasks_qs;  /* offsetof(struct thread, rcu_tasks_qs): unsigned long */
  unsigned long percpu_threads_total; /* offsetof(struct percpu, threads_total): unsigned */
  unsigned long state_running, state_runnable; /* enum thread_state's on-run-queue values */
};

extern const struct ksim_rcu_tasks_abi ksim_rcu_tasks_abi;

/* 1 with CONFIG_PREEMPT, else 0 (symbol `ksim_kernel_preempt`): a task may
 * be preempted anywhere, inside a boosted kprobe slot too. An image
 * without it is taken as not preemptible. */
extern const unsigned long ksim_kernel_preempt;

#endif
