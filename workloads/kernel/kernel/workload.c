/* The workload: probe targets named after classic kprobe examples, called
 * concurrently by CONFIG_THREADS_PER_CPU worker threads on every CPU. Each
 * caller checks its own results; CPU 0 checks the global totals at the end.
 * Any mismatch panics.
 *
 * The probe targets are real out-of-line functions with their own symbols
 * and unchanged signatures (__noinline_probe: noinline, noclone, used). */
#include "kernel/workload.h"

#include "arch/arch.h"
#include "kernel/atomic.h"
#include "kernel/cache.h"
#include "kernel/percpu.h"
#include "kernel/printk.h"
#include "kernel/sched.h"
#include "kernel/spinlock.h"
#include "kernel/string.h"

/* ---- do_fork --------------------------------------------------------------*/

#define CSIGNAL 0x000000ffUL
#define CLONE_VM 0x00000100UL
#define CLONE_FS 0x00000200UL
#define CLONE_FILES 0x00000400UL
#define CLONE_SIGHAND 0x00000800UL
#define CLONE_THREAD 0x00010000UL
#define CLONE_PARENT_SETTID 0x00100000UL
#define CLONE_CHILD_SETTID 0x01000000UL
#define CLONE_VALID                                                                    \
  (CSIGNAL | CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |       \
   CLONE_PARENT_SETTID | CLONE_CHILD_SETTID)
#define SIGCHLD 17
#define EAGAIN 11

#ifndef CONFIG_MAX_PIDS
#define MAX_PIDS 4096
#else
#define MAX_PIDS CONFIG_MAX_PIDS
#endif

struct fork_record {
  unsigned long clone_flags;
  unsigned long stack_start;
  unsigned long stack_size;
};

static atomic_long_t last_pid;
static struct fork_record fork_records[MAX_PIDS];

/* Allocates a pid (1, 2, 3, ... from a global atomic counter), records the
 * request under that pid and returns it; -EINVAL for unknown flags, -EAGAIN
 * when the pid table is full. */
__noinline_probe long do_fork(unsigned long clone_flags, unsigned long stack_start,
                              unsigned long stack_size, int *parent_tidptr, int *child_tidptr) {
  if (clone_flags & ~CLONE_VALID) return -EINVAL;
  long pid = atomic_long_inc_return(&last_pid);
  if (pid >= MAX_PIDS) return -EAGAIN;
  struct fork_record *r = &fork_records[pid];
  r->stack_start = stack_start;
  r->stack_size = stack_size;
  WRITE_ONCE(r->clone_flags, clone_flags);
  if ((clone_flags & CLONE_PARENT_SETTID) && parent_tidptr) *parent_tidptr = (int)pid;
  if ((clone_flags & CLONE_CHILD_SETTID) && child_tidptr) *child_tidptr = (int)pid;
  return pid;
}

/* ---- vfs_read -------------------------------------------------------------*/

#define FILE_SIZE 1024

static unsigned char motd_data[FILE_SIZE];
static struct file motd __read_mostly = {"/etc/motd", motd_data, FILE_SIZE};

static unsigned char file_byte(unsigned long i) { return (unsigned char)(i * 131 + (i >> 7) + 17); }

/* Copies up to `count` bytes from *pos of the in-memory file, advances *pos
 * and returns the number of bytes read (0 at or after the end). */
__noinline_probe long vfs_read(struct file *file, char *buf, unsigned long count, long long *pos) {
  if (!file || !buf || !pos) return -EINVAL;
  long long p = *pos;
  if (p < 0) return -EINVAL;
  if ((unsigned long long)p >= file->size) return 0;
  unsigned long avail = file->size - (unsigned long)p;
  if (count > avail) count = avail;
  memcpy(buf, file->data + p, count);
  *pos = p + (long long)count;
  return (long)count;
}

/* ---- sys_open -------------------------------------------------------------*/

#define O_ACCMODE 3
#define FIRST_FD 3

static const char *const existing_files[] = {
    "/etc/motd", "/etc/passwd", "/etc/hostname", "/proc/cpuinfo", "/dev/null",
};
static const char *const missing_files[] = {
    "/etc/shadow.bak", "/nonexistent", "/proc/kprobes/none",
};

/* A small fd (FIRST_FD + index) for a known name, -ENOENT for others,
 * -EINVAL for an invalid access mode. */
__noinline_probe long sys_open(const char *filename, int flags, int mode) {
  (void)mode;
  if (!filename) return -EINVAL;
  if ((flags & O_ACCMODE) == O_ACCMODE) return -EINVAL;
  for (unsigned i = 0; i < ARRAY_SIZE(existing_files); i++)
    if (strcmp(filename, existing_files[i]) == 0) return FIRST_FD + (long)i;
  return -ENOENT;
}

/* ---- fib_recursive --------------------------------------------------------
 * Plain double recursion (sibling-call optimisation off, so GCC does not
 * turn one of the calls into a loop): fib_recursive(n) is n-1 frames deep
 * and makes 2*fib(n+1)-1 calls. */
__noinline_probe __attribute__((optimize("no-optimize-sibling-calls"))) unsigned long
fib_recursive(unsigned n) {
  if (n < 2) return n;
  return fib_recursive(n - 1) + fib_recursive(n - 2);
}

static const unsigned long fib_table[] = {0, 1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233};

/* ---- do_sleepy_work -------------------------------------------------------*/

static long sleepy_first_half(int n) {
  long acc = 0;
  for (int k = 1; k <= 16; k++) acc += (long)(n + k) * k;
  return acc;
}

static long sleepy_second_half(long acc, int n) {
  for (int k = 1; k <= 16; k++) acc ^= ((long)n * k) << (k & 7);
  return acc;
}

/* Works, leaves the CPU in the middle (sleep_ticks(1) when n % 4 == 0,
 * yield() otherwise), works again, returns the combined result. */
__noinline_probe long do_sleepy_work(int n) {
  long acc = sleepy_first_half(n);
  if (n % 4 == 0) sleep_ticks(1);
  else yield();
  return sleepy_second_half(acc, n);
}

/* ---- counter_add ----------------------------------------------------------*/

static spinlock_t counter_lock = SPIN_LOCK_UNLOCKED;
static long shared_counter;

/* Read, think, write under the lock: without mutual exclusion, updates
 * would get lost and the final total check would fail. */
__noinline_probe void counter_add(long n) {
  spin_lock(&counter_lock);
  long v = READ_ONCE(shared_counter);
  for (int i = 0; i < 4; i++) arch_cpu_relax();
  WRITE_ONCE(shared_counter, v + n);
  spin_unlock(&counter_lock);
}

/* ---- worker threads ---------------------------------------------------------*/

struct worker {
  unsigned cpu, idx;
  long last_pid;
  unsigned long forks, reads, read_bytes, eofs, opens, enoent, fibs, fib_calls, sleeps, yields;
  unsigned long pings_sent, pings_received;
  long counter_sum;
} ____cacheline_aligned_in_smp; /* written by its thread only: one block each */

static struct worker workers[CONFIG_MAX_CPUS][CONFIG_THREADS_PER_CPU];
static struct completion ping[CONFIG_MAX_CPUS]; /* waited for by worker 0 of that CPU */
static struct completion pong[CONFIG_MAX_CPUS]; /* waited for by worker 1 of that CPU */
static unsigned work_iters __read_mostly;

static unsigned long fork_flags_for(unsigned i) {
  unsigned long f = SIGCHLD | CLONE_PARENT_SETTID;
  if (i & 1) f |= CLONE_CHILD_SETTID;
  if (i & 2) f |= CLONE_VM | CLONE_FS | CLONE_FILES;
  if (i & 4) f |= CLONE_SIGHAND;
  return f;
}

static void step_fork(struct worker *w, unsigned i) {
  unsigned long flags = fork_flags_for(i);
  unsigned long stack = 0x100000UL * (w->cpu + 1) + 0x1000UL * w->idx;
  int ptid = -1, ctid = -1;
  long pid = do_fork(flags, stack, 0x4000 + i, &ptid, &ctid);
  KCHECK(pid > 0 && pid < MAX_PIDS);
  KCHECK(pid > w->last_pid); /* pids increase per caller */
  KCHECK_EQ(ptid, pid);
  KCHECK_EQ(ctid, (flags & CLONE_CHILD_SETTID) ? pid : -1);
  const struct fork_record *r = &fork_records[pid];
  KCHECK_EQ(r->clone_flags, flags);
  KCHECK_EQ(r->stack_start, stack);
  KCHECK_EQ(r->stack_size, 0x4000 + i);
  w->last_pid = pid;
  w->forks++;
}

static void step_read(struct worker *w, unsigned i) {
  char buf[64 + 8];
  long long pos0 = (long long)((i * 37 + w->cpu * 13 + w->idx * 5) % (FILE_SIZE + 16));
  unsigned long count = 1 + (i * 11 + w->idx * 3 + w->cpu) % 64;
  long long pos = pos0;
  memset(buf, 0xa5, sizeof buf);
  long n = vfs_read(&motd, buf, count, &pos);
  long want = pos0 >= FILE_SIZE ? 0 : (long)(count < (unsigned long)(FILE_SIZE - pos0) ? count : (unsigned long)(FILE_SIZE - pos0));
  KCHECK_EQ(n, want);
  KCHECK_EQ(pos, pos0 + n);
  for (long k = 0; k < n; k++) KCHECK_EQ((unsigned char)buf[k], file_byte((unsigned long)(pos0 + k)));
  for (unsigned long k = (unsigned long)n; k < sizeof buf; k++) KCHECK_EQ((unsigned char)buf[k], 0xa5);
  w->reads++;
  w->read_bytes += (unsigned long)n;
  if (n == 0) w->eofs++;
}

static void step_open(struct worker *w, unsigned i) {
  long fd;
  if (i % 4 == 3) {
    fd = sys_open(missing_files[(i / 4 + w->idx) % ARRAY_SIZE(missing_files)], 0, 0);
    KCHECK(fd < 0);
    KCHECK_EQ(fd, -ENOENT);
    w->enoent++;
  } else {
    unsigned k = (i + w->cpu) % ARRAY_SIZE(existing_files);
    fd = sys_open(existing_files[k], 0, 0644);
    KCHECK(fd >= 0);
    KCHECK_EQ(fd, FIRST_FD + (long)k);
  }
  w->opens++;
}

static void step_fib(struct worker *w, unsigned i) {
  unsigned n = 8 + (i + w->idx) % 5; /* depth 7..11 frames, 67..465 calls */
  KCHECK_EQ(fib_recursive(n), fib_table[n]);
  w->fibs++;
  w->fib_calls += 2 * fib_table[n + 1] - 1;
}

static void step_sleepy(struct worker *w, unsigned i) {
  int n = (int)(i * 3 + w->idx);
  unsigned long t0 = READ_ONCE(this_cpu()->ticks);
  long r = do_sleepy_work(n);
  KCHECK_EQ(r, sleepy_second_half(sleepy_first_half(n), n));
  if (n % 4 == 0) {
    KCHECK(READ_ONCE(this_cpu()->ticks) > t0); /* it really slept a tick */
    w->sleeps++;
  } else {
    w->yields++;
  }
}

static long counter_step(unsigned i) { return (long)(i % 7) + 1; }

#ifdef CONFIG_TEST_FAULT
/* Manual test of the panic paths (never in the shipped images): build with
 * -DCONFIG_TEST_FAULT=k and the last worker of the last CPU does at its
 * iteration 3: 1 a load from an unmapped address, 2 panic(), 3 a system
 * call instruction, 4 a breakpoint, 5 an illegal instruction (1, 3-5 via
 * arch_test_fault()), 6 a failed KCHECK_EQ. */
static void test_fault(struct worker *w, unsigned i) {
  if (w->cpu != nr_cpus - 1 || w->idx != CONFIG_THREADS_PER_CPU - 1 || i != 3) return;
  switch (CONFIG_TEST_FAULT) {
    case 2: panic("test panic from %s", "worker"); break;
    case 6: KCHECK_EQ(i, 4); break;
    default: arch_test_fault(CONFIG_TEST_FAULT); break;  /* the ISA-specific faults */
  }
}
#else
static void test_fault(struct worker *w, unsigned i) {
  (void)w;
  (void)i;
}
#endif

/* Test hook for RCU-tasks (tests/rcu_tasks_test.cpp): when the host sets
 * rcu_tasks_hog_cycles[c], worker 0 of CPU c, at its next iteration, runs
 * that many cycles of plain computation with interrupts on and no
 * voluntary pass through the scheduler, so it can be preempted (in the
 * preempt image) but passes no RCU-tasks quiescent state; it records when
 * it began and ended. */
unsigned long rcu_tasks_hog_cycles[CONFIG_MAX_CPUS];
unsigned long rcu_tasks_hog_began[CONFIG_MAX_CPUS], rcu_tasks_hog_ended[CONFIG_MAX_CPUS];

static void rcu_tasks_hog(struct worker *w) {
  const unsigned long n = READ_ONCE(rcu_tasks_hog_cycles[w->cpu]);
  if (likely(!n || w->idx != 0)) return;
  WRITE_ONCE(rcu_tasks_hog_cycles[w->cpu], 0);
  const uint64_t t0 = arch_cycles();
  WRITE_ONCE(rcu_tasks_hog_began[w->cpu], t0);
  while (arch_cycles() - t0 < n) arch_cpu_relax();
  WRITE_ONCE(rcu_tasks_hog_ended[w->cpu], arch_cycles());
}

static void worker_main(void *arg) {
  struct worker *w = arg;
  KCHECK_EQ(w->cpu, smp_processor_id());
  for (unsigned i = 0; i < work_iters; i++) {
    test_fault(w, i);
    rcu_tasks_hog(w);
    step_fork(w, i);
    step_read(w, i);
    step_open(w, i);
    step_fib(w, i);
    step_sleepy(w, i);
    counter_add(counter_step(i));
    w->counter_sum += counter_step(i);
    if (i % CONFIG_PING_EVERY == 0) {
      /* Ping-pong between worker 1 of CPU c and worker 0 of CPU c+1: whoever
       * arrives first blocks, so every exchange has a cross-CPU wakeup (an
       * IPI) whenever there is more than one CPU. */
      unsigned next = (w->cpu + 1) % nr_cpus;
      if (w->idx == 1) {
        complete(&ping[next]);
        wait_for_completion(&pong[w->cpu]);
        w->pings_sent++;
      } else if (w->idx == 0) {
        unsigned prev = (w->cpu + nr_cpus - 1) % nr_cpus;
        wait_for_completion(&ping[w->cpu]);
        complete(&pong[prev]);
        w->pings_received++;
      }
    }
  }
}

void workload_init(void) {
  for (unsigned long i = 0; i < FILE_SIZE; i++) motd_data[i] = file_byte(i);
  for (unsigned c = 0; c < nr_cpus; c++) {
    completion_init(&ping[c]);
    completion_init(&pong[c]);
  }
  unsigned iters = CONFIG_WORK_TOTAL / nr_cpus;
  if (iters < CONFIG_WORK_MIN) iters = CONFIG_WORK_MIN;
  if (iters > CONFIG_WORK_MAX) iters = CONFIG_WORK_MAX;
  work_iters = iters;
  KCHECK((unsigned long)nr_cpus * CONFIG_THREADS_PER_CPU * iters < MAX_PIDS);
}

void workload_start_cpu(void) {
  unsigned cpu = smp_processor_id();
  for (unsigned idx = 0; idx < CONFIG_THREADS_PER_CPU; idx++) {
    struct worker *w = &workers[cpu][idx];
    char name[16];
    w->cpu = cpu;
    w->idx = idx;
    snprintf(name, sizeof name, "worker/%u:%u", cpu, idx);
    thread_create(worker_main, w, name);
  }
}

/* CPU 0, after every CPU has reported (acquire on the count in main.c). */
void workload_finish(void) {
  unsigned long threads = (unsigned long)nr_cpus * CONFIG_THREADS_PER_CPU;
  unsigned long forks = 0, reads = 0, bytes = 0, eofs = 0, opens = 0, enoent = 0, fibs = 0;
  unsigned long fib_calls = 0, sleeps = 0, yields = 0, pings_sent = 0, pings_received = 0;
  unsigned long switches = 0, preemptions = 0, ipis = 0, ipis_received = 0;
  long counter_expected = 0;
  unsigned long enoent_per_thread = 0;
  for (unsigned i = 0; i < work_iters; i++) {
    counter_expected += counter_step(i);
    if (i % 4 == 3) enoent_per_thread++;
  }
  counter_expected *= (long)threads;

  for (unsigned c = 0; c < nr_cpus; c++) {
    struct percpu *pc = per_cpu(c);
    KCHECK(pc->reported);
    KCHECK_EQ(pc->threads_total, CONFIG_THREADS_PER_CPU);
    KCHECK_EQ(pc->threads_alive, 0);
    if (!IS_ENABLED_PREEMPT) KCHECK_EQ(pc->report_preemptions, 0);
    switches += pc->report_switches;
    preemptions += pc->report_preemptions;
    ipis += pc->report_ipis_sent;
    ipis_received += pc->report_ipis_received;
    for (unsigned t = 0; t < CONFIG_THREADS_PER_CPU; t++) {
      const struct worker *w = &workers[c][t];
      KCHECK_EQ(w->forks, work_iters);
      KCHECK_EQ(w->reads, work_iters);
      KCHECK_EQ(w->opens, work_iters);
      KCHECK_EQ(w->enoent, enoent_per_thread);
      KCHECK_EQ(w->fibs, work_iters);
      KCHECK_EQ(w->sleeps + w->yields, work_iters);
      forks += w->forks;
      reads += w->reads;
      bytes += w->read_bytes;
      eofs += w->eofs;
      opens += w->opens;
      enoent += w->enoent;
      fibs += w->fibs;
      fib_calls += w->fib_calls;
      sleeps += w->sleeps;
      yields += w->yields;
      pings_sent += w->pings_sent;
      pings_received += w->pings_received;
    }
  }
  /* Every pid handed out exactly once, each with its record. */
  KCHECK_EQ(atomic_long_read(&last_pid), (long)forks);
  KCHECK_EQ(forks, threads * work_iters);
  for (long pid = 1; pid <= (long)forks; pid++) KCHECK(fork_records[pid].clone_flags & CLONE_PARENT_SETTID);
  KCHECK_EQ(shared_counter, counter_expected);
  KCHECK_EQ(pings_sent, pings_received);
  for (unsigned c = 0; c < nr_cpus; c++) {
    KCHECK_EQ(ping[c].done, 0);
    KCHECK_EQ(pong[c].done, 0);
    KCHECK(ping[c].waiter == NULL && pong[c].waiter == NULL);
  }
  if (nr_cpus > 1) KCHECK(ipis > 0);
  (void)ipis_received; /* IPIs merge and the last poke lands after the reports: no equality */

  printk("totals: %lu reads (%lu bytes, %lu at eof), %lu opens, %lu fib calls, %lu sleeps, %lu yields, "
         "%lu pings, %lu ipis received",
         reads, bytes, eofs, opens, fib_calls, sleeps, yields, pings_sent, ipis_received);
  printk("all work done: %u cpus, %lu threads x %u iterations, %lu forks, %lu enoent, counter %ld, "
         "%lu switches, %lu preemptions, %lu ipis",
         nr_cpus, threads, work_iters, forks, enoent, shared_counter, switches, preemptions, ipis);
}
