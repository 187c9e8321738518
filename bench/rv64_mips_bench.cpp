// Host speed of the RV64 core: guest instructions per host second (MIPS)
// on a compute-bound guest, with cycle accounting on (it always is).
//
//   build/bench/ksim_bench --benchmark_filter=Rv64
//
// Counters: MIPS (guest instructions / host second), sim_cycles and
// guest_insns per run (the simulated work, identical on every run).
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <string>

#include "sim/elf/elf_image.hpp"
#include "guest_runs.hpp"
#include "sim/machine.hpp"
#include "sim/machine_profiles.hpp"

namespace {

const ksim::ElfImage& guest(const std::string& name, ksim::Isa isa = ksim::Isa::rv64) {
  static std::map<std::string, ksim::ElfImage> cache;
  auto it = cache.find(name);
  const char* dir = isa == ksim::Isa::rv64 ? "/workloads/rv64/" : "/workloads/x86/";
  if (it == cache.end())
    it = cache.emplace(name, ksim::load_elf_file(std::string(KSIM_BINARY_DIR) + dir + name, isa)).first;
  return it->second;
}

void run_guest(benchmark::State& state, const char* elf, int cpus = 1, uint64_t quantum = 1,
               ksim::Isa isa = ksim::Isa::rv64, bool v2 = false) {
  ksim::MachineConfig cfg;
  cfg.cpus = cpus;
  cfg.quantum = quantum;
  cfg.isa = isa;
  if (v2) {
    cfg.profile = ksim::load_machine_profile(ksim::default_machine_name(isa));
    cfg.memory_model = ksim::default_memory_model(isa);
  }
  ksim::bench::measure_runs(state, guest(elf, isa), cfg);
}

// CRC32, 64-bit matrix multiply, sort and hash: ~300 M instructions.
void BM_Rv64Compute(benchmark::State& state) { run_guest(state, "compute.elf"); }
BENCHMARK(BM_Rv64Compute)->Unit(benchmark::kMillisecond)->UseRealTime();

// The same kernel, ~19 M instructions (quick check).
void BM_Rv64ComputeSmall(benchmark::State& state) { run_guest(state, "compute_small.elf"); }
BENCHMARK(BM_Rv64ComputeSmall)->Unit(benchmark::kMillisecond)->UseRealTime();

// The guest kernel on 1 to 16 CPUs of either ISA: bench/smp_bench.cpp.

// The x86 core (its fast path, cpu/x86/fast.hpp) on compiled C: sorting
// and hashing at -O2.
void BM_X86SortO2(benchmark::State& state) { run_guest(state, "x86_sort_O2.elf", 1, 1, ksim::Isa::x86_64); }
BENCHMARK(BM_X86SortO2)->Unit(benchmark::kMillisecond)->UseRealTime();
void BM_X86HashO2(benchmark::State& state) { run_guest(state, "x86_hash_O2.elf", 1, 1, ksim::Isa::x86_64); }
BENCHMARK(BM_X86HashO2)->Unit(benchmark::kMillisecond)->UseRealTime();

// The same under timing model v2 (the ISA's machine profile: caches and
// coherence, docs/TIMING.md).
void BM_Rv64ComputeV2(benchmark::State& state) { run_guest(state, "compute.elf", 1, 1, ksim::Isa::rv64, true); }
BENCHMARK(BM_Rv64ComputeV2)->Unit(benchmark::kMillisecond)->UseRealTime();
void BM_X86SortO2V2(benchmark::State& state) { run_guest(state, "x86_sort_O2.elf", 1, 1, ksim::Isa::x86_64, true); }
BENCHMARK(BM_X86SortO2V2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
