// What a probe hit costs: simulated cycles per hit and host nanoseconds per
// hit, for each kind of probe, on both ISAs (and both x86 stepping modes).
//
//   build/bench/ksim_bench --benchmark_filter=Kprobe
//
// The guest is probe_bench (workloads/probe_bench): one CPU calling
// bench_target() 100,000 times. Each benchmark runs it with the probes of
// one variant on bench_target and compares with the unprobed run:
//   k   a kprobe (empty pre_handler)      r   a kretprobe (empty handler)
//   kr  both (an aggregate at the entry)   j   a jprobe (guest handler)
//   jr  a kretprobe and a jprobe
// and with the boosters, which are off in the others (the breakpoint
// kretprobe trampoline, every hit stepped):
//   b   a boosted kprobe (x86)             rb  a kretprobe with a boosted entry
//                                              (x86) and the trap-free
//                                              rethook trampoline (both)
//   o   a jump-optimized kprobe (both)     ro  a kretprobe with an optimized
//                                              entry and the rethook trampoline
// Counters:
//   sim_cycles_per_hit  (probed cycles - unprobed cycles) / calls: the
//                       guest time a hit costs under cpu/timing.hpp
//   host_ns_per_hit     (fastest probed run - fastest unprobed run) / calls,
//                       the two run alternately in every iteration
//   hits                calls seen by the probes (must equal the calls)
#include <benchmark/benchmark.h>

#include <string>

#include "probe_run.hpp"

namespace {

using namespace ksim;
using namespace ksim::kprobes;
using ksim::bench::Fast;

// Each iteration runs the unprobed guest and the probed one back to back;
// the host cost per hit is the difference of the fastest run of each
// (interleaving them keeps host frequency and cache effects out of it).
void probe_cost(benchmark::State& state, Isa isa, std::string variant, StepMode mode, Fast fast = Fast::none) {
  bench::ProbeRun base, last;
  double best_base = 1e30, best_probed = 1e30;
  for (auto _ : state) {
    base = bench::run_probe_bench(isa, "", mode, fast);
    last = bench::run_probe_bench(isa, variant, mode, fast);
    if (!base.ok || !last.ok || last.hits != last.calls) {
      state.SkipWithError("probed guest failed, or hits != calls");
      return;
    }
    best_base = std::min(best_base, base.seconds);
    best_probed = std::min(best_probed, last.seconds);
  }
  const double calls = static_cast<double>(last.calls);
  state.counters["sim_cycles_per_hit"] = static_cast<double>(last.cycles - base.cycles) / calls;
  state.counters["host_ns_per_hit"] = (best_probed - best_base) * 1e9 / calls;
  state.counters["hits"] = static_cast<double>(last.hits);
}

#define BOOSTED_BENCH(name, isa, variant, mode)                                                   \
  void BM_Kprobe_##name(benchmark::State& s) { probe_cost(s, isa, variant, mode, Fast::boost); } \
  BENCHMARK(BM_Kprobe_##name)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0)

#define KPROBE_BENCH(name, isa, variant, mode)                                                \
  void BM_Kprobe_##name(benchmark::State& s) { probe_cost(s, isa, variant, mode); }          \
  BENCHMARK(BM_Kprobe_##name)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0)

KPROBE_BENCH(Rv64_k, Isa::rv64, "k", StepMode::modern);
KPROBE_BENCH(Rv64_r, Isa::rv64, "r", StepMode::modern);
KPROBE_BENCH(Rv64_kr, Isa::rv64, "kr", StepMode::modern);
KPROBE_BENCH(Rv64_j, Isa::rv64, "j", StepMode::modern);
KPROBE_BENCH(Rv64_jr, Isa::rv64, "rj", StepMode::modern);
KPROBE_BENCH(X86_k, Isa::x86_64, "k", StepMode::modern);
KPROBE_BENCH(X86_r, Isa::x86_64, "r", StepMode::modern);
KPROBE_BENCH(X86_kr, Isa::x86_64, "kr", StepMode::modern);
KPROBE_BENCH(X86_j, Isa::x86_64, "j", StepMode::modern);
KPROBE_BENCH(X86_jr, Isa::x86_64, "rj", StepMode::modern);
KPROBE_BENCH(X86_k_classic, Isa::x86_64, "k", StepMode::classic);
KPROBE_BENCH(X86_kr_classic, Isa::x86_64, "kr", StepMode::classic);
KPROBE_BENCH(X86_j_classic, Isa::x86_64, "j", StepMode::classic);
BOOSTED_BENCH(Rv64_rb, Isa::rv64, "r", StepMode::modern);
BOOSTED_BENCH(X86_b, Isa::x86_64, "k", StepMode::modern);
BOOSTED_BENCH(X86_rb, Isa::x86_64, "r", StepMode::modern);
BOOSTED_BENCH(X86_b_classic, Isa::x86_64, "k", StepMode::classic);

#define OPTIMIZED_BENCH(name, isa, variant)                                                              \
  void BM_Kprobe_##name(benchmark::State& s) { probe_cost(s, isa, variant, StepMode::modern, Fast::optimize); } \
  BENCHMARK(BM_Kprobe_##name)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0)
OPTIMIZED_BENCH(X86_o, Isa::x86_64, "k");
OPTIMIZED_BENCH(X86_ro, Isa::x86_64, "r");
OPTIMIZED_BENCH(Rv64_o, Isa::rv64, "k");
OPTIMIZED_BENCH(Rv64_ro, Isa::rv64, "r");

}  // namespace
