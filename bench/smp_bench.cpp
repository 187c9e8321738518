// Host speed of exact SMP: the guest kernel (no preemption) on 1, 2, 4 and
// 16 CPUs of each ISA, under the exact schedule (the default), the
// per-step reference schedule, the exact schedule without run-ahead
// (docs/SCHEDULING.md) and --quantum 1000 for comparison.
//
//   build/bench/ksim_bench --benchmark_filter=Smp
//
// Counters: MIPS (guest instructions of all CPUs per host second),
// guest_insns and sim_cycles per run (identical on every run). The brief's
// target is exact 4 CPUs at >= 0.5x and 16 CPUs at >= 0.3x the 1-CPU MIPS
// of the same ISA (docs/PERFORMANCE.md has the latest figures).
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <string>

#include "sim/elf/elf_image.hpp"
#include "guest_runs.hpp"
#include "sim/machine.hpp"
#include "sim/machine_profiles.hpp"

namespace {

using ksim::Isa;

const ksim::ElfImage& kernel(Isa isa) {
  static const ksim::ElfImage rv = ksim::load_elf_file(
      std::string(KSIM_BINARY_DIR) + "/workloads/rv64/kernel_nopreempt.elf", Isa::rv64);
  static const ksim::ElfImage x86 = ksim::load_elf_file(
      std::string(KSIM_BINARY_DIR) + "/workloads/x86/kernel_x86_nopreempt.elf", Isa::x86_64);
  return isa == Isa::rv64 ? rv : x86;
}

enum Mode { kExact = 0, kReference = 1, kQuantum1000 = 2, kNoRunAhead = 3, kExactV2 = 4 };

// state.range(0): CPUs; range(1): 0 rv64, 1 x86; range(2): Mode.
void BM_Smp(benchmark::State& state) {
  const int cpus = static_cast<int>(state.range(0));
  const Isa isa = state.range(1) ? Isa::x86_64 : Isa::rv64;
  const Mode mode = static_cast<Mode>(state.range(2));
  ksim::MachineConfig cfg;
  cfg.isa = isa;
  cfg.cpus = cpus;
  cfg.quantum = mode == kQuantum1000 ? 1000 : 1;
  cfg.reference_schedule = mode == kReference;
  cfg.run_ahead = mode != kNoRunAhead;
  if (mode == kExactV2) {
    cfg.profile = ksim::load_machine_profile(ksim::default_machine_name(isa));
    cfg.memory_model = ksim::default_memory_model(isa);
  }
  ksim::bench::measure_runs(state, kernel(isa), cfg);
  state.SetLabel(std::string(isa == Isa::rv64 ? "rv64" : "x86") + " " + std::to_string(cpus) + " cpus " +
                 (mode == kExact         ? "exact"
                  : mode == kReference   ? "reference"
                  : mode == kNoRunAhead  ? "exact, no run-ahead"
                  : mode == kExactV2     ? "exact, timing v2"
                                         : "quantum 1000"));
}
BENCHMARK(BM_Smp)
    ->ArgsProduct({{1, 2, 4, 16}, {0, 1}, {kExact}})
    ->ArgsProduct({{4}, {0, 1}, {kReference, kQuantum1000, kNoRunAhead}})
    ->ArgsProduct({{1, 4}, {0, 1}, {kExactV2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
