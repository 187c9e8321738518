/* What the small SMP guests here (litmus.c, falseshare.c) share besides
 * their entry (start_<isa>.S): a sense-reversing barrier for CPUs 0 to
 * n-1 on one atomic counter. */
#ifndef TWO_CPU_H
#define TWO_CPU_H

static unsigned long two_cpu_bar_count, two_cpu_bar_sense;

/* The n CPUs pass together; `sense` is each CPU's own, starting at 0. */
static inline void cpu_barrier(unsigned long *sense, unsigned long n) {
  *sense = !*sense;
  if (__atomic_add_fetch(&two_cpu_bar_count, 1, __ATOMIC_ACQ_REL) == n) {
    __atomic_store_n(&two_cpu_bar_count, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&two_cpu_bar_sense, *sense, __ATOMIC_RELEASE);
  } else {
    while (__atomic_load_n(&two_cpu_bar_sense, __ATOMIC_ACQUIRE) != *sense) {
    }
  }
}

static inline void two_cpu_barrier(unsigned long *sense) { cpu_barrier(sense, 2); }

#endif
