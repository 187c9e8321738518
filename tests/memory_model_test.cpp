// Memory models under timing v2 (issue 23 §3): the litmus guest's own
// counts of each outcome (workloads/litmus/litmus.c), against what each
// model allows. SB's r0 = r1 = 0 needs store buffering: never under sc or
// with fences, and seen under tso and rvwmo. MP's flag-without-data needs
// stores to different lines to become visible out of order: seen under
// rvwmo only, never under tso (a FIFO buffer) or with fences. And the exact
// schedules agree on every outcome and cycle under every model. (x86 runs
// under sc and tso: its code assumes TSO, and the machine refuses rvwmo.)
#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include "sim/machine.hpp"
#include "sim/machine_profiles.hpp"
#include "support/images.hpp"
#include "support/ksim_cli.hpp"

using namespace ksim;

namespace {

struct Litmus {
  std::array<uint64_t, 4> counts{};  // outcome (r0, r1) -> rounds, as the guest counted
  uint64_t cycles = 0;
};

enum Shape { kSB = 0, kMP = 1, kLB = 2, kR = 3, k2p2W = 4, kS = 5, kWRC = 6, kIRIW = 7, kMPFetch = 8 };
const char* const kShapeNames[] = {"SB", "MP", "LB", "R", "2+2W", "S", "WRC", "IRIW", "MP-fetch"};
const int kShapeCpus[] = {2, 2, 2, 2, 2, 2, 3, 4, 2};

Litmus run_litmus(Isa isa, MemoryModel model, Shape shape, bool fence, uint64_t seed, int schedule = 0,
                  uint64_t rounds = 400) {
  MachineConfig cfg;
  cfg.isa = isa;
  cfg.cpus = kShapeCpus[shape];
  cfg.seed = seed;
  cfg.profile = load_machine_profile(default_machine_name(isa));
  cfg.memory_model = model;
  cfg.reference_schedule = schedule == 1;
  cfg.run_ahead = schedule != 2;
  Machine m(cfg);
  m.load(test::guest_image(isa == Isa::rv64 ? "workloads/rv64/smp_litmus_rv64.elf" : "workloads/x86/smp_litmus_x86.elf", isa));
  auto poke = [&](const char* sym, uint64_t v) {
    const Symbol* s = m.symbols().find(sym);
    REQUIRE(s != nullptr);
    m.bus().write_bytes(s->addr, &v, 8);
  };
  poke("litmus_shape", static_cast<uint64_t>(shape));
  poke("litmus_fence", fence ? 1 : 0);
  poke("litmus_rounds", rounds);
  const RunResult r = m.run();
  REQUIRE(r.end == RunResult::End::poweroff);
  REQUIRE(r.status == 0);
  Litmus out;
  out.cycles = r.cycles;
  unsigned long long c[4] = {};
  char name[16] = {};
  unsigned f = 0;
  const size_t at = m.console().find("litmus: ");
  REQUIRE(at != std::string::npos);
  REQUIRE(std::sscanf(m.console().c_str() + at, "litmus: %15s fence %u: 00=%llu 01=%llu 10=%llu 11=%llu", name, &f, &c[0],
                      &c[1], &c[2], &c[3]) == 6);
  CHECK(std::string(name) == kShapeNames[shape]);
  CHECK(f == (fence ? 1u : 0u));
  for (int i = 0; i < 4; ++i) out.counts[static_cast<size_t>(i)] = c[i];
  CHECK(c[0] + c[1] + c[2] + c[3] == rounds);
  return out;
}

const char* name(MemoryModel m) { return m == MemoryModel::sc ? "sc" : m == MemoryModel::tso ? "tso" : "rvwmo"; }

std::vector<MemoryModel> models(Isa isa) {
  if (isa == Isa::x86_64) return {MemoryModel::sc, MemoryModel::tso};
  return {MemoryModel::sc, MemoryModel::tso, MemoryModel::rvwmo};
}

}  // namespace

TEST_CASE("SB: store buffering shows under tso and rvwmo, never under sc or with fences", "[memory][litmus]") {
  for (Isa isa : {Isa::rv64, Isa::x86_64}) {
    for (MemoryModel model : models(isa)) {
      uint64_t relaxed = 0;
      for (uint64_t seed : {0, 7, 42}) {
        INFO((isa == Isa::rv64 ? "rv64 " : "x86 ") << name(model) << " seed " << seed);
        relaxed += run_litmus(isa, model, kSB, false, seed).counts[0];
        CHECK(run_litmus(isa, model, kSB, true, seed).counts[0] == 0);  // forbidden with fences
      }
      INFO((isa == Isa::rv64 ? "rv64 " : "x86 ") << name(model));
      if (model == MemoryModel::sc) CHECK(relaxed == 0);
      else CHECK(relaxed > 0);
    }
  }
}

TEST_CASE("MP: the flag before the data shows under rvwmo only, never with fences", "[memory][litmus]") {
  for (Isa isa : {Isa::rv64, Isa::x86_64}) {
    for (MemoryModel model : models(isa)) {
      uint64_t relaxed = 0;
      for (uint64_t seed : {0, 7, 42}) {
        INFO((isa == Isa::rv64 ? "rv64 " : "x86 ") << name(model) << " seed " << seed);
        const Litmus l = run_litmus(isa, model, kMP, false, seed);
        relaxed += l.counts[2];  // flag 1, data 0
        CHECK(run_litmus(isa, model, kMP, true, seed).counts[2] == 0);
      }
      INFO((isa == Isa::rv64 ? "rv64 " : "x86 ") << name(model));
      if (model == MemoryModel::rvwmo) CHECK(relaxed > 0);
      else CHECK(relaxed == 0);
    }
  }
}

// R: "y ended 2 and r1 = 0" is store buffering again (allowed by TSO and
// RVWMO, forbidden with fences); LB's "both loads saw the other's store"
// never happens on an in-order core with a store buffer (TSO forbids it);
// 2+2W's "both first stores came last" needs stores out of order, which
// TSO forbids.
TEST_CASE("R, LB and 2+2W: what each model allows and forbids", "[memory][litmus]") {
  for (Isa isa : {Isa::rv64, Isa::x86_64}) {
    for (MemoryModel model : models(isa)) {
      uint64_t r_relaxed = 0;
      for (uint64_t seed : {0, 7, 42}) {
        INFO((isa == Isa::rv64 ? "rv64 " : "x86 ") << name(model) << " seed " << seed);
        r_relaxed += run_litmus(isa, model, kR, false, seed).counts[2];
        CHECK(run_litmus(isa, model, kR, true, seed).counts[2] == 0);
        CHECK(run_litmus(isa, model, kLB, false, seed).counts[3] == 0);
        if (model != MemoryModel::rvwmo) CHECK(run_litmus(isa, model, k2p2W, false, seed).counts[3] == 0);
        CHECK(run_litmus(isa, model, k2p2W, true, seed).counts[3] == 0);
      }
      INFO((isa == Isa::rv64 ? "rv64 " : "x86 ") << name(model));
      if (model == MemoryModel::sc) CHECK(r_relaxed == 0);
      else CHECK(r_relaxed > 0);
    }
  }
}

TEST_CASE("rvwmo on x86 is refused: x86 code assumes TSO", "[memory][litmus]") {
  MachineConfig cfg;
  cfg.isa = Isa::x86_64;
  cfg.profile = load_machine_profile("xeon-e5410");
  cfg.memory_model = MemoryModel::rvwmo;
  CHECK_THROWS_AS(Machine(cfg), InputError);
}

TEST_CASE("Litmus runs: the exact schedules agree under every memory model", "[memory][litmus][schedule]") {
  for (Isa isa : {Isa::rv64, Isa::x86_64})
    for (MemoryModel model : models(isa))
      for (Shape shape : {kSB, kMP}) {
        INFO((isa == Isa::rv64 ? "rv64 " : "x86 ") << name(model) << (shape == kSB ? " SB" : " MP"));
        const Litmus ahead = run_litmus(isa, model, shape, false, 3, 0, 150);
        for (int schedule : {1, 2}) {
          const Litmus other = run_litmus(isa, model, shape, false, 3, schedule, 150);
          CHECK(other.counts == ahead.counts);
          CHECK(other.cycles == ahead.cycles);
        }
      }
}

// The command line under v2: the ISA's own model by default, named in the
// summary; a probed kernel gives the same run on both exact schedules; a
// bad model or combination is a usage error (exit status 2).
TEST_CASE("ksim run --timing v2: memory models on the command line, probes included", "[memory][cli]") {
  for (const char* isa : {"rv64", "x86"}) {
    INFO(isa);
    const std::vector<std::string> args = {"run", "--isa", isa, "--cpus", "4", "--timing", "v2", "-q",
                                           "--probe", "p:do_fork do_fork", "--probe-action", "do_fork=count"};
    const test::ProcessResult a = test::run_ksim(args);
    std::vector<std::string> ref = args;
    ref.push_back("--reference-schedule");
    const test::ProcessResult b = test::run_ksim(ref);
    CHECK(a.status == 0);
    CHECK(a.out.find(std::string("memory model ") + (std::string(isa) == "rv64" ? "rvwmo" : "tso")) !=
          std::string::npos);
    CHECK(a.out.find("probes: 1536 hits, 0 missed") != std::string::npos);
    auto tail = [](const std::string& out) { return out.substr(out.find("cycles: ")); };
    CHECK(tail(a.out) == tail(b.out));  // cycles and trace hash
  }
  const test::ProcessResult bad = test::run_ksim({"run", "--timing", "v2", "--memory-model", "pso"});
  CHECK(bad.status == 2);
  CHECK(bad.err.find("--memory-model must be sc, tso or rvwmo") != std::string::npos);
  const test::ProcessResult v1 = test::run_ksim({"run", "--timing", "v1", "--memory-model", "tso"});
  CHECK(v1.status == 2);
  CHECK(v1.err.find("needs --timing v2") != std::string::npos);
  const test::ProcessResult x86 = test::run_ksim({"run", "--isa", "x86", "--timing", "v2", "--memory-model", "rvwmo"});
  CHECK(x86.status == 2);
  CHECK(x86.err.find("rvwmo is weaker than x86 promises") != std::string::npos);
}

// S, WRC and IRIW (issue 23 §3): S's "CPU 1 saw y = 1 and x ended 2" needs
// CPU 0's two stores to reach memory out of order, which sc, tso and the
// fence forbid; WRC's r0 = r1 = 1, r2 = 0 and IRIW's readers disagreeing
// on the order of two writes break multi-copy atomicity, which every model
// here keeps (x86-TSO, SDM vol. 3A §8.2.3.7; RVWMO with the fences). The
// other outcomes must show, or the test would not be testing anything.
TEST_CASE("S, WRC and IRIW: the forbidden outcomes never appear, the others do", "[memory][litmus]") {
  for (Isa isa : {Isa::rv64, Isa::x86_64})
    for (MemoryModel model : models(isa)) {
      INFO((isa == Isa::rv64 ? "rv64 " : "x86 ") << name(model));
      std::array<uint64_t, 4> wrc{}, iriw{};
      for (uint64_t seed : {1, 2}) {
        for (bool fence : {false, true}) {
          const bool forbidden = fence || model != MemoryModel::rvwmo;
          const Litmus s = run_litmus(isa, model, kS, fence, seed, 0, 200);
          if (forbidden) CHECK(s.counts[3] == 0);
          const Litmus w = run_litmus(isa, model, kWRC, fence, seed, 0, 200);
          if (forbidden) CHECK(w.counts[2] == 0);
          const Litmus i = run_litmus(isa, model, kIRIW, fence, seed, 0, 200);
          if (forbidden) CHECK(i.counts[3] == 0);
          for (size_t k = 0; k < 4; ++k) {
            wrc[k] += w.counts[k];
            iriw[k] += i.counts[k];
          }
        }
      }
      // WRC: CPU 1 saw x and CPU 2 saw y (and then x) in some rounds, not
      // in others; IRIW: each reader saw one write first in some rounds.
      CHECK(wrc[3] > 0);
      CHECK(wrc[0] + wrc[1] > 0);
      CHECK(iriw[2] + iriw[1] > 0);
      CHECK(iriw[0] > 0);
    }
}

// MP with a patched instruction (issue 23 §2, §3): CPU 0 rewrites a
// function's immediate each round, fences, and sets a flag; CPU 1 reads
// the flag and calls the function. "Flag seen, old code" is what a CPU
// that does not synchronise its fetch may run. On the U54 (timing v2) CPU
// 1's I-cache holds the function's line, which is not coherent with
// stores (FU540 §4.1): without fence.i it runs the old code every time it
// saw the flag; fence.i forbids it. On the Xeon the store takes the line
// from CPU 1's I-cache (SDM vol. 3A §11.6) and CPU 1 is never inside the
// function's fetch block when it is made, so it runs the new code even
// without cpuid (which the SDM requires, and which forbids the outcome).
TEST_CASE("MP-fetch: a patched instruction, with and without fence.i or cpuid", "[memory][litmus][icache]") {
  for (uint64_t seed : {1, 2}) {
    const Litmus rv = run_litmus(Isa::rv64, MemoryModel::rvwmo, kMPFetch, false, seed, 0, 200);
    CHECK(rv.counts[2] > 0);
    CHECK(rv.counts[3] == 0);  // the line never leaves CPU 1's I-cache: always the old code
    const Litmus rv_fenced = run_litmus(Isa::rv64, MemoryModel::rvwmo, kMPFetch, true, seed, 0, 200);
    CHECK(rv_fenced.counts[2] == 0);
    CHECK(rv_fenced.counts[3] > 0);
    for (bool fence : {false, true}) {
      const Litmus x = run_litmus(Isa::x86_64, MemoryModel::tso, kMPFetch, fence, seed, 0, 200);
      CHECK(x.counts[2] == 0);
      CHECK(x.counts[3] > 0);
    }
  }
}
