/* Jprobe handlers for do_fork, vfs_read and sys_open (see
 * include/kernel/jprobes.h). The engine runs them with interrupts masked,
 * on the probed function's stack, so they take no lock, do not sleep and
 * touch only their log and jprobe_helper(). They are __noinline_probe
 * (noinline, noclone, used): real functions with the exact signature of the
 * function they shadow, kept although nothing calls them. Portable. */
#include "kernel/jprobes.h"

#include "kernel/compiler.h"
#include "kernel/kprobes.h"

struct jprobe_log jprobe_log_do_fork;
struct jprobe_log jprobe_log_vfs_read;
struct jprobe_log jprobe_log_sys_open;
unsigned long jprobe_helper_calls;
unsigned long jprobe_helper_last_arg;

/* The arguments first (single untorn stores), then the count with release:
 * a reader that sees the count (acquire) sees at least that call's
 * arguments, unless a racing call on another CPU overwrote some of them
 * (see kernel/jprobes.h). */
static __always_inline void log_args(struct jprobe_log *log, const unsigned long *args, unsigned n) {
  for (unsigned i = 0; i < n; i++) WRITE_ONCE(log->last_args[i], args[i]);
  __atomic_fetch_add(&log->calls, 1, __ATOMIC_RELEASE);
}

__noinline_probe unsigned long jprobe_helper(unsigned long arg) {
  WRITE_ONCE(jprobe_helper_last_arg, arg);
  return __atomic_add_fetch(&jprobe_helper_calls, 1, __ATOMIC_RELAXED);
}

__noinline_probe long jprobe_do_fork(unsigned long clone_flags, unsigned long stack_start,
                                     unsigned long stack_size, int *parent_tidptr, int *child_tidptr) {
  const unsigned long args[] = {clone_flags, stack_start, stack_size, (unsigned long)parent_tidptr,
                                (unsigned long)child_tidptr};
  log_args(&jprobe_log_do_fork, args, ARRAY_SIZE(args));
  jprobe_helper(clone_flags);
  jprobe_return();
}

__noinline_probe long jprobe_vfs_read(struct file *file, char *buf, unsigned long count, long long *pos) {
  const unsigned long args[] = {(unsigned long)file, (unsigned long)buf, count, (unsigned long)pos};
  log_args(&jprobe_log_vfs_read, args, ARRAY_SIZE(args));
  jprobe_helper((unsigned long)file);
  jprobe_return();
}

__noinline_probe long jprobe_sys_open(const char *filename, int flags, int mode) {
  const unsigned long args[] = {(unsigned long)filename, (unsigned long)(long)flags,
                                (unsigned long)(long)mode};
  log_args(&jprobe_log_sys_open, args, ARRAY_SIZE(args));
  jprobe_helper((unsigned long)filename);
  jprobe_return();
}
