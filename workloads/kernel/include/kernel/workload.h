/* The workload: functions named after classic kprobe targets, called by
 * worker threads on every CPU. Portable. */
#ifndef KERNEL_WORKLOAD_H
#define KERNEL_WORKLOAD_H

#include "kernel/types.h"

struct file {
  const char *name;
  const unsigned char *data;
  unsigned long size;
};

long do_fork(unsigned long clone_flags, unsigned long stack_start, unsigned long stack_size,
             int *parent_tidptr, int *child_tidptr);
long vfs_read(struct file *file, char *buf, unsigned long count, long long *pos);
long sys_open(const char *filename, int flags, int mode);
unsigned long fib_recursive(unsigned n);
long do_sleepy_work(int n);
void counter_add(long n);

/* Boot CPU: shared state. Each CPU: its worker threads. CPU 0 at the end:
 * check every result (panics on a mismatch) and print the summary. */
void workload_init(void);
void workload_start_cpu(void);
void workload_finish(void);

#endif
