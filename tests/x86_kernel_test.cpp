// The guest kernel on x86-64 SMP (workloads/kernel/arch/x86): its own checks
// pass on 1, 4 and 16 CPUs for 10 seeds each, a repeated seed repeats the
// trace hash, and preemption happens only in the preempt image.
#include <catch2/catch.hpp>

#include <regex>
#include <set>
#include <string>

#include "sim/checkpoint.hpp"
#include "sim/machine.hpp"
#include "sim/timeline.hpp"

using namespace ksim;

namespace {

const ElfImage& image(bool preempt) {
  static const ElfImage pre = load_elf_file(std::string(KSIM_BINARY_DIR) + "/workloads/x86/kernel_x86_preempt.elf",
                                            Isa::x86_64);
  static const ElfImage nopre = load_elf_file(
      std::string(KSIM_BINARY_DIR) + "/workloads/x86/kernel_x86_nopreempt.elf", Isa::x86_64);
  return preempt ? pre : nopre;
}

struct Run {
  RunResult r;
  std::string console;
  uint64_t hash;
};

Run boot(bool preempt, int cpus, uint64_t seed) {
  MachineConfig cfg;
  cfg.isa = Isa::x86_64;
  cfg.cpus = cpus;
  cfg.seed = seed;
  cfg.quantum = cpus > 4 ? 100 : 1;  // 16 CPUs: a coarser (still deterministic) schedule keeps the suite quick
  Machine m(cfg);
  m.load(image(preempt));
  TraceHasher h;
  m.events().add(&h);
  Run k{m.run(), m.console(), 0};
  k.hash = h.value();
  return k;
}

uint64_t preemptions(const std::string& console) {
  std::regex re("\\] done: .*?([0-9]+) preemptions");
  uint64_t sum = 0;
  for (std::sregex_iterator it(console.begin(), console.end(), re), end; it != end; ++it)
    sum += std::stoull((*it)[1]);
  return sum;
}

}  // namespace

TEST_CASE("x86 kernel passes its own checks on 1, 4 and 16 CPUs for 10 seeds; a repeated seed repeats the hash",
          "[x86][kernel]") {
  for (int cpus : {1, 4, 16}) {
    std::set<uint64_t> hashes;
    for (uint64_t seed = 1; seed <= 10; ++seed) {
      Run a = boot(true, cpus, seed);
      INFO(cpus << " CPUs, seed " << seed << "\n" << a.console);
      REQUIRE(a.r.end == RunResult::End::poweroff);
      REQUIRE(a.r.status == 0);
      CHECK_THAT(a.console, Catch::Contains("all work done"));
      hashes.insert(a.hash);
      if (seed <= 2) {
        Run b = boot(true, cpus, seed);
        CHECK(b.hash == a.hash);
        CHECK(b.r.cycles == a.r.cycles);
      }
    }
    CHECK(hashes.size() == 10);
  }
}

TEST_CASE("x86 kernel: preemption only in the preempt image", "[x86][kernel]") {
  Run pre = boot(true, 4, 5), nopre = boot(false, 4, 5);
  REQUIRE(pre.r.status == 0);
  REQUIRE(nopre.r.status == 0);
  REQUIRE(pre.r.end == RunResult::End::poweroff);
  REQUIRE(nopre.r.end == RunResult::End::poweroff);
  CHECK(preemptions(pre.console) > 0);
  CHECK(preemptions(nopre.console) == 0);
}

TEST_CASE("x86 machine: checkpoint, restore and step back reproduce the run exactly", "[x86][kernel][checkpoint]") {
  MachineConfig cfg;
  cfg.isa = Isa::x86_64;
  cfg.cpus = 4;
  cfg.seed = 6;
  Machine m(cfg);
  m.load(image(true));
  RunLimits lim;
  lim.cycle = 800'000;
  REQUIRE(m.run(lim).end == RunResult::End::paused);
  const auto ckpt = save_checkpoint(m);
  TraceHasher h1;
  m.events().add(&h1);
  RunResult end1 = m.run();
  REQUIRE(end1.end == RunResult::End::poweroff);

  Machine r(read_checkpoint_header(ckpt).config);
  restore_checkpoint(r, ckpt);
  TraceHasher h2;
  r.events().add(&h2);
  RunResult end2 = r.run();
  CHECK(end2.cycles == end1.cycles);
  CHECK(h2.value() == h1.value());
  CHECK(r.console() == m.console());

  Machine s(cfg);
  s.load(image(true));
  Timeline tl(s, 10'000);
  REQUIRE(tl.forward(54'321).end == RunResult::End::paused);
  const auto before = save_checkpoint(s);
  REQUIRE(tl.forward(1).end == RunResult::End::paused);
  REQUIRE(tl.back(1));
  CHECK(save_checkpoint(s) == before);
}
