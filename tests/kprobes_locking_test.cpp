// --kprobes-locking (docs/KPROBES.md "Locking"): Linux 2.6.9's one global
// kprobe_lock (spinlock) against the per-CPU state and lock-free lookup of
// later kernels (rcu), on the Figure 4 kernel and on the workload kernel.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

#include "cpu/timing.hpp"
#include "support/kprobe_rig.hpp"

using namespace ksim;
using namespace ksim::kprobes;
using ksim::test::fig4_image;
using ksim::test::kernel_image;
using ksim::test::KprobeRig;

namespace {

// Each CPU's handler path as the engine's state events show it: from
// KPROBE_HIT_ACTIVE (after the lookup) to KPROBE_HIT_SSDONE (after the
// step), [start, end] in cycles.
struct HandlerPaths : EventObserver {
  struct Span {
    uint64_t start, end;
    int cpu;
  };
  std::map<int, uint64_t> open;
  std::vector<Span> spans;
  uint64_t lock_events = 0, waited = 0, unmatched = 0;
  void on_event(const Event& e) override {
    if (e.kind != EventKind::probe) return;
    if (e.text == "KPROBE_HIT_ACTIVE") open[e.cpu] = e.cycle;
    if (e.text == "KPROBE_HIT_SSDONE") {
      if (!open.count(e.cpu)) {
        ++unmatched;
        return;
      }
      spans.push_back({open[e.cpu], e.cycle, e.cpu});
      open.erase(e.cpu);
    }
    if (e.text.rfind("kprobe_lock", 0) == 0) ++lock_events;
    if (e.text == "kprobe_lock-acquire") waited += e.b;
  }
  // Pairs of spans of different CPUs that overlap in time.
  size_t overlaps() const {
    std::vector<Span> v = spans;
    std::sort(v.begin(), v.end(), [](const Span& a, const Span& b) { return a.start < b.start; });
    size_t n = 0;
    uint64_t reach = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      if (i > 0 && v[i].start <= reach) ++n;
      reach = std::max(reach, v[i].end);
    }
    return n;
  }
};

struct Fig4Run {
  RunResult r;
  uint64_t hits = 0, hash = 0;
  EngineStats stats;
  HandlerPaths paths;
};

// The Figure 4 kernel on `cpus` CPUs with `calls` calls per CPU and a
// kprobe on fig4_target.
Fig4Run run_fig4(Isa isa, int cpus, uint64_t calls, Locking locking, bool reference = false) {
  Fig4Run out;
  KprobeRig rig(fig4_image(isa), cpus, 0, StepMode::modern, 1, reference);
  rig.m.bus().write_bytes(rig.sym("fig4_calls"), &calls, 8);
  rig.eng->set_locking(locking);
  Kprobe kp;
  kp.symbol_name = "fig4_target";
  kp.pre_handler = [](Kprobe&, Cpu&) { return 0; };
  REQUIRE(rig.eng->register_kprobe(kp) == 0);
  TraceHasher hasher;
  rig.m.events().add(&hasher);
  rig.m.events().add(&out.paths);
  out.r = rig.m.run();
  REQUIRE(out.r.end == RunResult::End::poweroff);
  REQUIRE(out.r.status == 0);
  REQUIRE(rig.m.console().find("fig4: " + std::to_string(cpus) + " cpus x " + std::to_string(calls) + " calls") !=
          std::string::npos);
  CHECK(out.paths.unmatched == 0);
  out.hits = kp.hits;
  out.stats = rig.eng->stats();
  out.hash = hasher.value();
  rig.eng->unregister_kprobe(kp);
  return out;
}

}  // namespace

TEST_CASE("kprobes-locking spinlock: 4 CPUs hitting one probe never run their handler paths at once, and the run "
          "takes longer than with rcu, where they overlap",
          "[kprobes][locking]") {
  const Isa isa = GENERATE(Isa::rv64, Isa::x86_64);
  const uint64_t calls = 3000;
  Fig4Run spin = run_fig4(isa, 4, calls, Locking::spinlock);
  Fig4Run rcu = run_fig4(isa, 4, calls, Locking::rcu);
  INFO(isa_name(isa));
  CHECK(spin.hits == 4 * calls);
  CHECK(rcu.hits == 4 * calls);
  REQUIRE(spin.paths.spans.size() == 4 * calls);
  REQUIRE(rcu.paths.spans.size() == 4 * calls);
  // spinlock: one CPU at a time between KPROBE_HIT_ACTIVE and KPROBE_HIT_SSDONE.
  CHECK(spin.paths.overlaps() == 0);
  // rcu: CPUs are in there together (most hits overlap another CPU's).
  CHECK(rcu.paths.overlaps() > calls);
  // Every hit took the lock once; CPUs found it held and spun, which cost
  // simulated time: the run is longer.
  CHECK(spin.stats.lock_acquires == 4 * calls);
  CHECK(spin.stats.lock_contended > calls);
  CHECK(spin.stats.lock_spin_cycles > 0);
  CHECK(spin.stats.lock_spin_cycles % timing::kKprobeLockSpinCycles == 0);
  CHECK(spin.paths.waited > 0);
  CHECK(spin.r.cycles > rcu.r.cycles * 3 / 2);
  // rcu takes no lock and emits no lock events.
  CHECK(rcu.stats.lock_acquires == 0);
  CHECK(rcu.paths.lock_events == 0);
  CHECK(spin.paths.lock_events > 2 * 4 * calls);
}

TEST_CASE("kprobes-locking spinlock: one CPU never waits, and pays only the lock's own cost", "[kprobes][locking]") {
  const Isa isa = GENERATE(Isa::rv64, Isa::x86_64);
  const uint64_t calls = 2000;
  Fig4Run spin = run_fig4(isa, 1, calls, Locking::spinlock);
  Fig4Run rcu = run_fig4(isa, 1, calls, Locking::rcu);
  CHECK(spin.stats.lock_contended == 0);
  CHECK(spin.stats.lock_spin_cycles == 0);
  CHECK(spin.r.cycles - rcu.r.cycles ==
        calls * (timing::kKprobeLockAcquireCycles + timing::kKprobeLockReleaseCycles));
}

TEST_CASE("kprobes-locking spinlock: the reference schedule gives the same run (spinning is exact)",
          "[kprobes][locking]") {
  const Isa isa = GENERATE(Isa::rv64, Isa::x86_64);
  Fig4Run fast = run_fig4(isa, 4, 300, Locking::spinlock);
  Fig4Run ref = run_fig4(isa, 4, 300, Locking::spinlock, true);
  CHECK(fast.r.cycles == ref.r.cycles);
  CHECK(fast.r.instret == ref.r.instret);
  CHECK(fast.hash == ref.hash);
  CHECK(fast.stats.lock_spin_cycles == ref.stats.lock_spin_cycles);
}

TEST_CASE("kprobes-locking spinlock: the workload kernel passes its checks with kprobes, a kretprobe and a jprobe",
          "[kprobes][locking]") {
  const Isa isa = GENERATE(Isa::rv64, Isa::x86_64);
  KprobeRig rig(kernel_image(isa), 4, 3);
  rig.eng->set_locking(Locking::spinlock);
  Kprobe k_read, k_counter;
  k_read.symbol_name = "vfs_read";
  k_counter.symbol_name = "counter_add";
  Kretprobe r_open;
  r_open.kp.symbol_name = "sys_open";
  Jprobe j_fork;
  j_fork.kp.symbol_name = "do_fork";
  j_fork.entry_symbol = "jprobe_do_fork";
  REQUIRE(rig.eng->register_kprobe(k_read) == 0);
  REQUIRE(rig.eng->register_kprobe(k_counter) == 0);
  REQUIRE(rig.eng->register_kretprobe(r_open) == 0);
  REQUIRE(rig.eng->register_jprobe(j_fork) == 0);
  RunResult r = rig.m.run();
  INFO(isa_name(isa) << ": " << r.reason);
  REQUIRE(rig.passed(r));
  CHECK(k_read.hits == static_cast<uint64_t>(rig.printed("reads")));
  CHECK(j_fork.kp.hits == static_cast<uint64_t>(rig.printed("forks")));
  CHECK(rig.eng->stats().lock_contended > 0);
  CHECK(rig.eng->lock_owner() == -1);
}

TEST_CASE("kprobes-locking spinlock on 2 CPUs (docs/FIG4.md): after one wait at the start the two CPUs alternate, "
          "each one's hold fitting in the other's time outside the lock",
          "[kprobes][locking]") {
  const Isa isa = GENERATE(Isa::rv64, Isa::x86_64);
  Fig4Run spin = run_fig4(isa, 2, 3000, Locking::spinlock);
  INFO(isa_name(isa));
  CHECK(spin.stats.lock_acquires == 2 * 3000);
  CHECK(spin.stats.lock_contended == 1);
  CHECK(spin.paths.overlaps() == 0);
}
