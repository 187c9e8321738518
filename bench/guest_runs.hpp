// The measuring loop every MIPS benchmark shares: boot a fresh machine per
// iteration (outside the timed region), run the guest to its end, and
// report MIPS (guest instructions of all CPUs per host second),
// guest_insns and sim_cycles (simulated quantities: the same every run).
#pragma once
#include <benchmark/benchmark.h>

#include <memory>

#include "sim/elf/elf_image.hpp"
#include "sim/machine.hpp"

namespace ksim::bench {

inline void measure_runs(benchmark::State& state, const ElfImage& img, const MachineConfig& cfg) {
  uint64_t insns = 0, cycles = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto m = std::make_unique<Machine>(cfg);
    m->load(img);
    state.ResumeTiming();
    RunResult r = m->run();
    state.PauseTiming();
    if (r.end != RunResult::End::poweroff || r.status != 0) state.SkipWithError("guest did not pass");
    insns += r.instret;
    cycles = r.cycles;
    m.reset();
    state.ResumeTiming();
  }
  state.counters["MIPS"] = benchmark::Counter(static_cast<double>(insns) / 1e6, benchmark::Counter::kIsRate);
  state.counters["guest_insns"] = static_cast<double>(insns) / static_cast<double>(state.iterations());
  state.counters["sim_cycles"] = static_cast<double>(cycles);
}

}  // namespace ksim::bench
