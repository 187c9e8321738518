// One run of the probe_bench guest (workloads/probe_bench: one CPU calling
// bench_target() 100,000 times) with the probes of one variant on
// bench_target: what each iteration of bench/kprobes_bench.cpp runs twice
// (without and with the probes), and what bench/probe_run.cpp runs once
// for a host-instruction count under callgrind.
#pragma once
#include <algorithm>
#include <chrono>
#include <string>

#include "kprobes/engine.hpp"
#include "sim/elf/elf_image.hpp"
#include "sim/machine.hpp"

namespace ksim::bench {

inline const ElfImage& probe_bench_guest(Isa isa) {
  static const ElfImage rv =
      load_elf_file(std::string(KSIM_BINARY_DIR) + "/workloads/rv64/probe_bench_rv64.elf", Isa::rv64);
  static const ElfImage x86 =
      load_elf_file(std::string(KSIM_BINARY_DIR) + "/workloads/x86/probe_bench_x86.elf", Isa::x86_64);
  return isa == Isa::rv64 ? rv : x86;
}

struct ProbeRun {
  uint64_t cycles = 0, calls = 0, hits = 0;
  double seconds = 0;
  bool ok = false;
};

// The engine's fast ways to a hit: none (every hit stepped, the breakpoint
// kretprobe trampoline), the boosters (and the rethook trampoline), jump
// optimization (and the rethook trampoline).
enum class Fast { none, boost, optimize };

// `variant`: the letters of the probes on bench_target, k (a kprobe with
// an empty pre_handler), r (a kretprobe), j (a jprobe); "" for none.
inline ProbeRun run_probe_bench(Isa isa, const std::string& variant, kprobes::StepMode mode, Fast fast) {
  using namespace kprobes;
  MachineConfig cfg;
  cfg.isa = isa;
  Machine m(cfg);
  m.load(probe_bench_guest(isa));
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
  ProbeRun o;
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

}  // namespace ksim::bench
