// `ksim fig4`: the 2006 paper's Figure 4 (docs/FIG4.md) as one command.
//
// For each CPU count, three runs of the fig4 image (every CPU calls
// fig4_target 65,535 times): no probe; a kprobe on fig4_target under
// Linux 2.6.9's one kprobe_lock (--kprobes-locking spinlock); the same
// probe with RCU and per-CPU state (rcu). The probe only counts its hits,
// as the paper's handler did nothing visible, and neither the booster nor
// jump optimization runs (2.6.9 had neither, and an optimized hit takes no
// lock): every hit takes both traps. `cycles:` of `ksim run` is each run's
// time; the table is the same as scripts/fig4.sh printed.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>

#include "apps/ksim/options.hpp"
#include "kprobes/engine.hpp"
#include "kprobes/session.hpp"
#include "sim/machine.hpp"

namespace ksim::cli {

namespace {

constexpr uint64_t kCallsPerCpu = 65535;  // workloads/kernel/kernel/fig4.c

enum class Series { none, spinlock, rcu };

struct Point {
  uint64_t cycles = 0, hits = 0;
};

// `base`: the ISA and the timing model (--timing, --machine, --memory-model).
Point run_point(const MachineConfig& base, int cpus, Series s) {
  MachineConfig cfg = base;
  cfg.cpus = cpus;
  Machine m(cfg);
  m.load(load_image("", "fig4", cfg.isa));
  std::unique_ptr<kprobes::Engine> engine;
  std::unique_ptr<kprobes::ProbeSession> session;
  if (s != Series::none) {
    engine = std::make_unique<kprobes::Engine>(m, kprobes::StepMode::modern);
    engine->set_locking(s == Series::spinlock ? kprobes::Locking::spinlock : kprobes::Locking::rcu);
    engine->set_boost(false);
    engine->set_optimization(false);
    session = std::make_unique<kprobes::ProbeSession>(*engine, [](const std::string&) {});
    session->add("p:fig4 fig4_target");
    session->set_action("fig4=count");
  }
  const RunResult r = m.run();
  if (r.end != RunResult::End::poweroff || r.status != 0)
    throw InputError("fig4 on " + std::to_string(cpus) + " CPUs did not power off with status 0 (" +
                     (r.end == RunResult::End::crash ? r.reason : "status " + std::to_string(r.status)) + ")");
  return Point{r.cycles, session ? session->total_hits() : 0};
}

std::vector<int> parse_cpu_list(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    const long n = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end || n < 1 || n > 64)
      throw UsageError{"--cpus wants a comma-separated list of CPU counts from 1 to 64, not '" + text + "'"};
    out.push_back(static_cast<int>(n));
  }
  if (out.empty()) throw UsageError{"--cpus wants at least one CPU count"};
  return out;
}

}  // namespace

int cmd_fig4(const std::vector<std::string>& args) {
  po::options_description opts("ksim fig4 options");
  std::vector<std::string> isas;
  std::string cpu_list = "1,2,4,8,16", dat, timing = "v2", machine, memory_model;
  opts.add_options()
      ("isa", po::value(&isas)->composing(), "rv64 or x86 (repeatable; default: both)")
      ("cpus", po::value(&cpu_list)->default_value(cpu_list), "the CPU counts, comma-separated")
      ("timing", po::value(&timing)->default_value("v2"),
       "v1 (a constant per instruction class) or v2 (each ISA's machine profile: caches, coherence, store "
       "buffers; docs/TIMING.md)")
      ("machine", po::value(&machine), "timing v2's machine profile, a name or a file (one --isa)")
      ("memory-model", po::value(&memory_model), "sc, tso or rvwmo (timing v2; default: the ISA's own)")
      ("dat", po::value(&dat),
       "also write the points to FILE (one ISA): lines 'cpus none spinlock rcu', for scripts/fig4-plot.sh");
  po::variables_map vm;
  if (!parse_options(args, "usage: ksim fig4 [options]\n\nThe 2006 paper's Figure 4 (docs/FIG4.md): simulated "
                           "cycles of the fig4 image with no probe, a kprobe under Linux 2.6.9's kprobe_lock, and "
                           "the same kprobe with RCU.",
                     opts, nullptr, vm))
    return kOk;
  if (isas.empty()) isas = {"rv64", "x86"};
  const std::vector<int> counts = parse_cpu_list(cpu_list);
  if (!dat.empty() && isas.size() != 1) throw UsageError{"--dat writes one ISA's points: give one --isa"};
  if (!machine.empty() && isas.size() != 1) throw UsageError{"--machine describes one ISA's machine: give one --isa"};
  std::vector<MachineConfig> bases;
  for (const std::string& name : isas) {
    MachineConfig cfg;
    cfg.isa = parse_isa(name);
    apply_timing_options(vm, cfg.isa, timing, machine, memory_model, cfg);
    bases.push_back(cfg);
  }
  std::ofstream out;
  if (!dat.empty()) {
    out.open(dat);
    if (!out) throw InputError(dat + ": cannot write the data file");
    out << "# cpus none spinlock rcu  (ksim fig4 --isa " << isas[0] << ", simulated cycles)\n";
  }
  for (size_t i = 0; i < isas.size(); ++i) {
    const MachineConfig& base = bases[i];
    if (base.profile)
      std::printf("### %s (timing v2: %s, memory model %s)\n\n", isas[i].c_str(), base.profile->name.c_str(),
                  base.memory_model == MemoryModel::sc ? "sc" : base.memory_model == MemoryModel::tso ? "tso" : "rvwmo");
    else
      std::printf("### %s\n\n", isas[i].c_str());
    std::printf("| CPUs | probe hits | no probe | spinlock | rcu | spinlock / rcu |\n");
    std::printf("| ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (int n : counts) {
      const Point none = run_point(base, n, Series::none), spin = run_point(base, n, Series::spinlock),
                  rcu = run_point(base, n, Series::rcu);
      // Every call hits: the probe's own count, for both locking modes.
      if (spin.hits != kCallsPerCpu * n || rcu.hits != kCallsPerCpu * n)
        throw InputError("fig4 on " + std::to_string(n) + " CPUs: the probe counted " + std::to_string(spin.hits) +
                         " and " + std::to_string(rcu.hits) + " hits, not " + std::to_string(kCallsPerCpu * n));
      std::printf("| %d | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " | %.2f |\n", n, spin.hits,
                  none.cycles, spin.cycles, rcu.cycles, static_cast<double>(spin.cycles) / rcu.cycles);
      std::fflush(stdout);
      if (out) out << n << ' ' << none.cycles << ' ' << spin.cycles << ' ' << rcu.cycles << '\n';
    }
    std::printf("\n");
  }
  return kOk;
}

}  // namespace ksim::cli
