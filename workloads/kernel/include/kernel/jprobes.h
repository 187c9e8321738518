/* Jprobe handlers for the classic probe targets (kernel/jprobes.c). Nothing
 * in the kernel calls them: the kprobes engine enters one at the probed
 * function's first instruction, with the probed function's arguments, and
 * the handler ends in jprobe_return(). Each records its arguments in a log
 * the host reads from guest memory by symbol name. Portable. */
#ifndef KERNEL_JPROBES_H
#define KERNEL_JPROBES_H

#include "kernel/workload.h"

/* One per handler (symbols jprobe_log_do_fork, jprobe_log_vfs_read,
 * jprobe_log_sys_open). `calls` is exact: an atomic increment per handler
 * run. `last_args` holds the arguments as unsigned longs (pointers as
 * addresses, int as sign-extended long), unused slots 0. Handlers running
 * on several CPUs at once may interleave their stores, so last_args may mix
 * the arguments of racing calls: every value is one some call passed, and
 * each slot is written untorn, but they need not all be from the same call.
 * On one CPU, or when calls do not overlap, they are the last call's. */
struct jprobe_log {
  unsigned long calls;
  unsigned long last_args[6];
};

extern struct jprobe_log jprobe_log_do_fork;
extern struct jprobe_log jprobe_log_vfs_read;
extern struct jprobe_log jprobe_log_sys_open;

/* Every handler calls jprobe_helper(first argument) before jprobe_return():
 * a separate, probeable function (a probe may hit it from inside a jprobe
 * handler). It counts its calls in jprobe_helper_calls and keeps its last
 * argument in jprobe_helper_last_arg (an atomic add, an untorn store). */
extern unsigned long jprobe_helper_calls;
extern unsigned long jprobe_helper_last_arg;
unsigned long jprobe_helper(unsigned long arg);

/* Exactly the probed functions' signatures (workload.h). */
long jprobe_do_fork(unsigned long clone_flags, unsigned long stack_start, unsigned long stack_size,
                    int *parent_tidptr, int *child_tidptr);
long jprobe_vfs_read(struct file *file, char *buf, unsigned long count, long long *pos);
long jprobe_sys_open(const char *filename, int flags, int mode);

#endif
