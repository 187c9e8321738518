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

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "kprobes/engine.hpp"
#include "sim/elf/elf_image.hpp"
#include "sim/machine.hpp"

namespace {

using namespace ksim;
using namespace ksim::kprobes;

const ElfImage& bench_guest(Isa isa) {
  static const ElfImage rv =
      load_elf_file(std::string(KSIM_BINARY_DIR) + "/workloads/rv64/probe_bench_rv64.elf", Isa::rv64);
  static const ElfImage x86 =
      load_elf_file(std::string(KSIM_BINARY_DIR) + "/workloads/x86/probe_bench_x86.elf", Isa::x86_64);
  return isa == Isa::rv64 ? rv : x86;
}

struct Outcome {
  uint64_t cycles = 0, calls = 0, hits = 0;
  double seconds = 0;
  bool ok = false;
};

// One full run of probe_bench with the probes of `variant` ("" = none).
enum class Fast { none, boost, optimize };

Outcome run_once(Isa isa, const std::string& variant, StepMode mode, Fast fast) {
  MachineConfig cfg;
  cfg.isa = isa;
  Machine m(cfg);
  m.load(bench_guest(isa));
  Engine eng(m, mode);
  eng.set_boost(fast == Fast::boost);
  eng.set_optimization(fast == Fast::optimize);
  eng.set_rethook(fast != Fast::none);
  Kprobe k;
  Kretprobe r;
  Jprobe j;
  uint64_t k_hits = 0, r_hits = 0;
  k.symbol_name = "bench_target";
  k.pre_handler = [&](Kprobe&, Cpu&) { ++k_hits; return 0; };
  r.kp.symbol_name = "bench_target";
  r.handler = [&](KretprobeInstance&, Cpu&) { ++r_hits; return 0; };
  j.kp.symbol_name = "bench_target";
  j.entry_symbol = "jprobe_bench_target";
  bool ok = true;
  // Registration order: the kretprobe before the jprobe (its entry handler
  // must see the real return address, as in Linux's jprobe + kretprobe use).
  if (variant.find('k') != std::string::npos) ok &= eng.register_kprobe(k) == 0;
  if (variant.find('r') != std::string::npos) ok &= eng.register_kretprobe(r) == 0;
  if (variant.find('j') != std::string::npos) ok &= eng.register_jprobe(j) == 0;
  auto t0 = std::chrono::steady_clock::now();
  RunResult res = m.run();
  Outcome o;
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  o.cycles = res.cycles;
  uint64_t calls = 0;
  m.bus().read_bytes(m.symbols().find("bench_calls")->addr, &calls, 8);
  o.calls = calls;
  // Every probe of the variant must have seen every call.
  o.hits = calls;
  if (variant.find('k') != std::string::npos) o.hits = std::min(o.hits, k_hits);
  if (variant.find('r') != std::string::npos) o.hits = std::min(o.hits, r_hits);
  if (variant.find('j') != std::string::npos) o.hits = std::min(o.hits, j.kp.hits);
  // An optimized variant must really hit through the jump, every call.
  if (fast == Fast::optimize && !variant.empty()) ok &= eng.stats().optimized_hits == calls;
  o.ok = ok && res.end == RunResult::End::poweroff && res.status == 0;
  return o;
}

// Each iteration runs the unprobed guest and the probed one back to back;
// the host cost per hit is the difference of the fastest run of each
// (interleaving them keeps host frequency and cache effects out of it).
void probe_cost(benchmark::State& state, Isa isa, std::string variant, StepMode mode, Fast fast = Fast::none) {
  Outcome base, last;
  double best_base = 1e30, best_probed = 1e30;
  for (auto _ : state) {
    base = run_once(isa, "", mode, fast);
    last = run_once(isa, variant, mode, fast);
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
