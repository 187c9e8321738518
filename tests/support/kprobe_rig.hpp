// A guest kernel (either ISA) on a machine with a kprobes engine attached,
// for the engine's tests: images, running, reading the kernel's totals, and
// checking that the guest text is back to what the image had.
#pragma once
#include <algorithm>
#include <cstring>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "kprobes/engine.hpp"
#include "sim/elf/elf_image.hpp"
#include "sim/machine.hpp"

namespace ksim::test {

inline const ElfImage& kernel_image(Isa isa, bool preempt = true) {
  auto path = [](Isa i, bool p) {
    std::string dir = std::string(KSIM_BINARY_DIR) + "/workloads/";
    if (i == Isa::rv64) return dir + "rv64/kernel_" + (p ? "preempt" : "nopreempt") + ".elf";
    return dir + "x86/kernel_x86_" + (p ? "preempt" : "nopreempt") + ".elf";
  };
  static const ElfImage rv_p = load_elf_file(path(Isa::rv64, true), Isa::rv64);
  static const ElfImage rv_n = load_elf_file(path(Isa::rv64, false), Isa::rv64);
  static const ElfImage x_p = load_elf_file(path(Isa::x86_64, true), Isa::x86_64);
  static const ElfImage x_n = load_elf_file(path(Isa::x86_64, false), Isa::x86_64);
  if (isa == Isa::rv64) return preempt ? rv_p : rv_n;
  return preempt ? x_p : x_n;
}

// The Figure 4 benchmark kernel (--image fig4; workloads/kernel/kernel/fig4.c).
inline const ElfImage& fig4_image(Isa isa) {
  static const ElfImage rv =
      load_elf_file(std::string(KSIM_BINARY_DIR) + "/workloads/rv64/kernel_fig4.elf", Isa::rv64);
  static const ElfImage x =
      load_elf_file(std::string(KSIM_BINARY_DIR) + "/workloads/x86/kernel_x86_fig4.elf", Isa::x86_64);
  return isa == Isa::rv64 ? rv : x;
}

inline const ElfImage& bench_image(Isa isa) {
  static const ElfImage rv =
      load_elf_file(std::string(KSIM_BINARY_DIR) + "/workloads/rv64/probe_bench_rv64.elf", Isa::rv64);
  static const ElfImage x =
      load_elf_file(std::string(KSIM_BINARY_DIR) + "/workloads/x86/probe_bench_x86.elf", Isa::x86_64);
  return isa == Isa::rv64 ? rv : x;
}

// Forks the guest kernel makes: 3 threads per CPU x clamp(512 / cpus, 8, 128).
inline long expected_forks(int cpus) {
  long iters = std::min(128, std::max(8, 512 / cpus));
  return 3L * cpus * iters;
}

struct KprobeRig {
  const ElfImage& image;
  Machine m;
  std::unique_ptr<kprobes::Engine> eng;

  static MachineConfig config(Isa isa, int cpus, uint64_t seed, uint64_t quantum) {
    MachineConfig c;
    c.isa = isa;
    c.cpus = cpus;
    c.seed = seed;
    c.quantum = quantum;
    c.max_cycles = 4'000'000'000ull;
    return c;
  }
  // `model`: tests of the engine's own accounting that assume every CPU
  // sees its text writes at once (the engine does not yet make other CPUs
  // synchronise after writing text, as Linux's sync_core and
  // flush_icache_all IPIs do) run under CodeModel::strict.
  KprobeRig(const ElfImage& img, int cpus = 4, uint64_t seed = 0,
            kprobes::StepMode mode = kprobes::StepMode::modern, uint64_t quantum = 1, bool reference = false,
            CodeModel model = CodeModel::relaxed)
      : image(img), m([&] {
          MachineConfig c = config(img.isa, cpus, seed, quantum);
          c.reference_schedule = reference;
          c.code_model = model;
          return c;
        }()) {
    m.load(image);
    eng = std::make_unique<kprobes::Engine>(m, mode);
    // The engine boosts and jump-optimizes by default (as Linux); most tests
    // here are about stepping out of line and its protocols, written before
    // both: they opt in (tests/kprobes_boost_test.cpp,
    // tests/kprobes_optimize_test.cpp).
    eng->set_boost(false);
    eng->set_optimization(false);
  }
  Isa isa() const { return image.isa; }
  uint64_t sym(const char* name) const {
    const Symbol* s = m.symbols().find(name);
    return s ? s->addr : 0;
  }
  const Symbol* symbol(const char* name) const { return m.symbols().find(name); }
  template <typename T>
  T read(uint64_t addr) {
    T v{};
    m.bus().read_bytes(addr, &v, sizeof v);
    return v;
  }
  // A number the kernel printed as "<n> <what>" in its final lines.
  long printed(const std::string& what) const {
    std::smatch mt;
    std::regex re("(\\d+) " + what);
    const std::string& c = m.console();
    return std::regex_search(c, mt, re) ? std::stol(mt[1]) : -1;
  }
  bool passed(const RunResult& r) const {
    return r.end == RunResult::End::poweroff && r.status == 0 &&
           m.console().find("all work done") != std::string::npos;
  }
  // Every loaded byte of the image (text, data, the slot area) that is
  // code: the executable segments must read back exactly as loaded.
  // With `slots` false the slot area is left out (probes still registered
  // own their slots there).
  std::string text_diff(bool slots = true) {
    std::string out;
    const Symbol* slot_sym = m.symbols().find("__kprobe_slots_start");
    for (const ElfSegment& s : image.segments) {
      if (!s.executable) continue;
      if (!slots && slot_sym && slot_sym->addr == s.paddr) continue;
      std::vector<uint8_t> now(s.bytes.size());
      m.bus().read_bytes(s.paddr, now.data(), now.size());
      for (size_t i = 0; i < now.size(); ++i)
        if (now[i] != s.bytes[i]) {
          out += m.symbols().format(s.paddr + i) + " ";
          if (out.size() > 400) return out;
        }
    }
    return out;
  }
};

// Runs in pauses of 50,000 cycles until `done()` holds (or the run ends).
template <typename F>
RunResult run_until(KprobeRig& rig, F done) {
  for (uint64_t c = 50'000;; c += 50'000) {
    RunResult r = rig.m.run(RunLimits{c});
    if (done() || r.end != RunResult::End::paused) return r;
  }
}

}  // namespace ksim::test
