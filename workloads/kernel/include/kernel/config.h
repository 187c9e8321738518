/* Build-time configuration of the mini kernel. Portable: every number here
 * means the same on every architecture. CONFIG_PREEMPT comes from the build
 * (-DCONFIG_PREEMPT=1 for kernel_preempt.elf, absent for kernel_nopreempt.elf). */
#ifndef KERNEL_CONFIG_H
#define KERNEL_CONFIG_H

/* Largest CPU count supported (ksim allows 1..64). CPUs numbered at or above
 * this park at boot. Static per-CPU data and stacks are sized for it. */
#define CONFIG_MAX_CPUS 64

/* Timer ticks per second. 10000 Hz = one tick every 100 us; on ksim's RV64
 * board (10 MHz mtime, 100 MHz core) that is 1000 mtime ticks = 10,000 core
 * cycles. One tick is also the time slice of a runnable thread. */
#define CONFIG_HZ 10000

/* Worker threads per CPU (each CPU also has its idle/boot context). */
#define CONFIG_THREADS_PER_CPU 3

/* Stack sizes in bytes (multiples of 16). The idle context runs on the boot
 * stack. Traps taken by a thread are saved on that thread's stack. */
#define CONFIG_BOOT_STACK_SIZE (8 * 1024)
#define CONFIG_THREAD_STACK_SIZE (16 * 1024)

/* Workload size: iterations per worker thread are
 *   clamp(CONFIG_WORK_TOTAL / nr_cpus, CONFIG_WORK_MIN, CONFIG_WORK_MAX)
 * so the total work stays roughly constant from 4 CPUs up (1 and 2 CPUs do
 * CONFIG_WORK_MAX per thread). */
#ifndef CONFIG_WORK_TOTAL /* (kernel_long.elf: more, for long-run measurements) */
#define CONFIG_WORK_TOTAL 512
#endif
#define CONFIG_WORK_MIN 8
#ifndef CONFIG_WORK_MAX
#define CONFIG_WORK_MAX 128
#endif

/* Every CONFIG_PING_EVERY iterations, worker 1 of CPU c and worker 0 of
 * CPU (c + 1) % nr_cpus exchange a ping and a pong through two completions:
 * the one that arrives first blocks and is woken from the other CPU (IPI). */
#define CONFIG_PING_EVERY 4

#ifdef CONFIG_PREEMPT
#define IS_ENABLED_PREEMPT 1
#else
#define IS_ENABLED_PREEMPT 0
#endif

#endif
