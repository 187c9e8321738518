/* Data layout against false sharing, after Linux's <linux/cache.h>.
 * Portable.
 *
 * ksim's exact SMP schedule lets a CPU run ahead of the others while it
 * touches only blocks no other CPU uses, and makes it wait at every access
 * to a block two CPUs share (docs/SCHEDULING.md). Its block is 256 bytes
 * (mem/ownership.hpp, kBlockShift), the largest cache line in common use, so
 * a kernel laid out the way Linux lays itself out for real caches also runs
 * fast here: data one CPU writes sits in its own block, and data every CPU
 * reads but seldom writes sits apart from data that is written. */
#ifndef KERNEL_CACHE_H
#define KERNEL_CACHE_H

#include "kernel/compiler.h"

#define SMP_CACHE_BYTES 256

/* Starts a new block and pads the object to whole blocks (an array of such
 * objects gives each element its own). */
#define ____cacheline_aligned_in_smp __aligned(SMP_CACHE_BYTES)

/* Written at boot, read by every CPU afterwards: kept in its own section,
 * which the linker scripts pad to whole blocks, away from written data. */
#define __read_mostly __section(".data..read_mostly")

#endif
