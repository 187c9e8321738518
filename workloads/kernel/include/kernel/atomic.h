/* Atomics and SMP memory ordering on GCC's __atomic builtins (C11 model).
 * They compile to the ISA's atomic instructions (RV64: AMO and LR/SC with
 * aq/rl, fences for acquire loads / release stores; x86: lock-prefixed
 * instructions), so nothing here is architecture-specific.
 * Only 32- and 64-bit objects: sub-word atomics would need libatomic. */
#ifndef KERNEL_ATOMIC_H
#define KERNEL_ATOMIC_H

#include "kernel/types.h"

typedef struct {
  int counter;
} atomic_t;
typedef struct {
  long counter;
} atomic_long_t;

#define ATOMIC_INIT(v) {(v)}

/* Full barrier, and the acquire/release forms used for publication. */
#define smp_mb() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define smp_rmb() __atomic_thread_fence(__ATOMIC_ACQUIRE)
#define smp_wmb() __atomic_thread_fence(__ATOMIC_RELEASE)
#define smp_load_acquire(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define smp_store_release(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

static inline int atomic_read(const atomic_t *v) { return __atomic_load_n(&v->counter, __ATOMIC_RELAXED); }
static inline void atomic_set(atomic_t *v, int i) { __atomic_store_n(&v->counter, i, __ATOMIC_RELAXED); }
static inline int atomic_read_acquire(const atomic_t *v) {
  return __atomic_load_n(&v->counter, __ATOMIC_ACQUIRE);
}
static inline void atomic_add(atomic_t *v, int i) { __atomic_fetch_add(&v->counter, i, __ATOMIC_RELAXED); }
/* Returns the new value; fully ordered (like Linux's *_return). */
static inline int atomic_add_return(atomic_t *v, int i) {
  return __atomic_add_fetch(&v->counter, i, __ATOMIC_SEQ_CST);
}
static inline int atomic_inc_return(atomic_t *v) { return atomic_add_return(v, 1); }
static inline int atomic_fetch_or(atomic_t *v, int m) { return __atomic_fetch_or(&v->counter, m, __ATOMIC_SEQ_CST); }
static inline int atomic_xchg(atomic_t *v, int n) { return __atomic_exchange_n(&v->counter, n, __ATOMIC_SEQ_CST); }
static inline bool atomic_cmpxchg(atomic_t *v, int old, int n) {
  return __atomic_compare_exchange_n(&v->counter, &old, n, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
}

static inline long atomic_long_read(const atomic_long_t *v) {
  return __atomic_load_n(&v->counter, __ATOMIC_RELAXED);
}
static inline void atomic_long_set(atomic_long_t *v, long i) {
  __atomic_store_n(&v->counter, i, __ATOMIC_RELAXED);
}
static inline void atomic_long_add(atomic_long_t *v, long i) {
  __atomic_fetch_add(&v->counter, i, __ATOMIC_RELAXED);
}
static inline long atomic_long_add_return(atomic_long_t *v, long i) {
  return __atomic_add_fetch(&v->counter, i, __ATOMIC_SEQ_CST);
}
static inline long atomic_long_inc_return(atomic_long_t *v) { return atomic_long_add_return(v, 1); }

#endif
