/* probe_bench: a fixed, single-CPU loop over one small function, for
 * measuring what a probe on it costs (kprobe, kretprobe, jprobe) against
 * the unprobed run. Portable C (RV64 and x86-64 guests, see CMakeLists.txt).
 *
 * main() calls bench_target(i, acc) bench_calls times, adding each result
 * into acc (so no call can be optimised away and every call depends on the
 * one before), stores the sum in bench_result and powers off with status 0.
 * A probe that leaves bench_target's behaviour alone leaves bench_result
 * alone too, which lets a test check that probing changed nothing:
 *
 *   acc = 0; for i in 0 .. bench_calls-1: acc += bench_target(i, acc)
 *
 * The kprobes engine's guest-side pieces are the kernel's own files: the
 * 64 KiB .kprobe_slots area (arch/<isa>/slots.S) and kretprobe_trampoline /
 * jprobe_return (arch/<isa>/kprobes_stubs.S); jprobe_bench_target is the
 * jprobe handler for bench_target. */
#include "kernel/compiler.h"
#include "kernel/kprobes.h"
#include "libguest.h"

#ifndef BENCH_CALLS
#error "BENCH_CALLS (the loop count) comes from the build"
#endif

/* Read once by main(); the host may read it, or overwrite it before the
 * run to change the count. volatile: GCC must not fold the loop bound. */
volatile unsigned long bench_calls = BENCH_CALLS;
/* The loop's final sum (written once, after the loop). */
volatile unsigned long bench_result;

/* The probe target: a handful of ALU operations, a real out-of-line
 * function with its own symbol and signature (noinline, noclone, used). */
__noinline_probe unsigned long bench_target(unsigned long a, unsigned long b) {
  return ((a << 3) ^ (b >> 5)) + (a | 1) - (b & 0xff);
}

/* Jprobe handler for bench_target: same signature, records nothing, and
 * hands back to the engine at once. Nothing calls it (`used` keeps it). */
__noinline_probe unsigned long jprobe_bench_target(unsigned long a, unsigned long b) {
  (void)a;
  (void)b;
  jprobe_return();
}

int main(void) {
  const unsigned long n = bench_calls;
  unsigned long acc = 0;
  for (unsigned long i = 0; i < n; i++) acc += bench_target(i, acc);
  bench_result = acc;
  printf("probe_bench: %lu calls of bench_target, result %016lx\n", n, acc);
  return 0;
}
