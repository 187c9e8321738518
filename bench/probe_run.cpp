// One run of the probe_bench guest with the probes of one variant, for a
// host-instruction count per hit that other load on the machine does not
// change (docs/PERFORMANCE.md, "Probe hits"):
//
//   valgrind --tool=callgrind build/bench/ksim_probe_run x86 k optimize
//   valgrind --tool=callgrind build/bench/ksim_probe_run x86 - optimize
//
// The difference of the two totals over the 100,000 calls is a hit's. The
// arguments: the ISA (rv64, x86), the variant as in kprobes_bench.cpp (k,
// r, kr, j, rj; - for none), the engine's fast ways (none, boost,
// optimize) and, optionally, classic (x86 stepping with TF).
#include <cstdio>
#include <string>

#include "probe_run.hpp"

int main(int argc, char** argv) {
  using ksim::bench::Fast;
  if (argc < 4 || argc > 5) {
    std::fprintf(stderr, "usage: ksim_probe_run rv64|x86 VARIANT|- none|boost|optimize [classic]\n");
    return 2;
  }
  const std::string isa = argv[1], fast = argv[3];
  const std::string variant = std::string(argv[2]) == "-" ? "" : argv[2];
  if ((isa != "rv64" && isa != "x86") || (fast != "none" && fast != "boost" && fast != "optimize") ||
      (argc == 5 && std::string(argv[4]) != "classic")) {
    std::fprintf(stderr, "ksim_probe_run: bad arguments (see the usage)\n");
    return 2;
  }
  const ksim::bench::ProbeRun r = ksim::bench::run_probe_bench(
      isa == "x86" ? ksim::Isa::x86_64 : ksim::Isa::rv64, variant,
      argc == 5 ? ksim::kprobes::StepMode::classic : ksim::kprobes::StepMode::modern,
      fast == "boost" ? Fast::boost : fast == "optimize" ? Fast::optimize : Fast::none);
  std::printf("calls %llu, hits %llu, cycles %llu\n", static_cast<unsigned long long>(r.calls),
              static_cast<unsigned long long>(r.hits), static_cast<unsigned long long>(r.cycles));
  return r.ok && r.hits == r.calls ? 0 : 1;
}
