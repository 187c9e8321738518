// The trap-free kretprobe trampoline (kprobes/rethook.hpp: the paper's
// kretprobe-booster, Linux's rethook) on both ISAs: every return of the
// kernel's sys_open reaches the handler with its return value and no trap
// at a trampoline, stacked kretprobes on one function, switching between
// it and the breakpoint trampoline during a run, and what it saves per hit
// on probe_bench, from cpu/timing.hpp.
#include <catch2/catch.hpp>

#include <map>

#include "cpu/cpu.hpp"
#include "cpu/timing.hpp"
#include "support/kprobe_rig.hpp"

using namespace ksim;
using namespace ksim::kprobes;
using ksim::test::bench_image;
using ksim::test::KprobeRig;
using ksim::test::kernel_image;

namespace {

struct Counter : EventObserver {
  std::map<std::string, uint64_t> n;
  uint64_t trampoline = 0, traps_at_trampoline = 0;
  void on_event(const Event& e) override {
    if (e.kind != EventKind::probe) return;
    ++n[e.text];
    if (e.text == "trap" && e.a == trampoline) ++traps_at_trampoline;
  }
};

// The kernel prints "<n> opens" and "<n> enoent" in its totals.
constexpr long kOpens = 1536, kEnoent = 384;

}  // namespace

TEST_CASE("rethook: every sys_open return reaches the handler with its value, with no trap", "[kprobes][rethook]") {
  const Isa isa = GENERATE(Isa::rv64, Isa::x86_64);
  for (uint64_t seed : {1, 2, 3}) {
    KprobeRig rig(kernel_image(isa), 4, seed);
    REQUIRE(rig.eng->layout().rethook != 0);
    REQUIRE(rig.eng->rethook());  // the default where the image has it
    Counter ev;
    ev.trampoline = rig.eng->layout().trampoline;
    rig.m.events().add(&ev);
    Kretprobe a, b;  // two on one function: stacked instances
    a.kp.symbol_name = b.kp.symbol_name = "sys_open";
    long enoent = 0, b_returns = 0;
    a.handler = [&](KretprobeInstance&, Cpu& cpu) {
      if (static_cast<int64_t>(rig.eng->arch().retval(cpu)) == -2) ++enoent;
      return 0;
    };
    b.handler = [&](KretprobeInstance&, Cpu&) { ++b_returns; return 0; };
    REQUIRE(rig.eng->register_kretprobe(a) == 0);
    REQUIRE(rig.eng->register_kretprobe(b) == 0);
    RunResult r = rig.m.run();
    INFO(isa_name(isa) << " seed " << seed << ": " << r.reason);
    REQUIRE(rig.passed(r));
    CHECK(rig.printed("opens") == kOpens);
    CHECK(rig.printed("enoent") == kEnoent);
    CHECK(static_cast<long>(a.hits) == kOpens);
    CHECK(b_returns == kOpens);
    CHECK(enoent == kEnoent);
    CHECK(a.nmissed == 0);
    // One rethook return per frame (both instances of the frame in it), no
    // breakpoint trampoline.
    CHECK(ev.n["rethook-return"] == static_cast<uint64_t>(kOpens));
    CHECK(ev.n["kretprobe-return"] == 0);
    CHECK(ev.traps_at_trampoline == 0);
    rig.m.events().remove(&ev);
    rig.eng->unregister_kretprobe(a);
    rig.eng->unregister_kretprobe(b);
    CHECK(rig.eng->live_instances() == 0);
  }
}

TEST_CASE("rethook: switching to the breakpoint trampoline during a run loses no return", "[kprobes][rethook]") {
  const Isa isa = GENERATE(Isa::rv64, Isa::x86_64);
  KprobeRig rig(kernel_image(isa), 4, 5);
  Counter ev;
  rig.m.events().add(&ev);
  Kretprobe rp;
  rp.kp.symbol_name = "sys_open";
  REQUIRE(rig.eng->register_kretprobe(rp) == 0);
  // Half the run with each; instances planted before a switch return
  // through the trampoline they were given.
  RunResult r;
  for (uint64_t c = 100'000;; c += 100'000) {
    r = rig.m.run(RunLimits{c});
    if (rp.hits >= 700 && rig.eng->rethook()) REQUIRE(rig.eng->set_rethook(false));
    if (r.end != RunResult::End::paused) break;
  }
  INFO(isa_name(isa) << ": " << r.reason);
  REQUIRE(rig.passed(r));
  CHECK(static_cast<long>(rp.hits) == kOpens);
  CHECK(ev.n["rethook-return"] >= 700);
  CHECK(ev.n["kretprobe-return"] > 0);
  CHECK(ev.n["rethook-return"] + ev.n["kretprobe-return"] == static_cast<uint64_t>(kOpens));
  rig.m.events().remove(&ev);
}

TEST_CASE("rethook: a return costs what the model says, without the trampoline's trap", "[kprobes][rethook]") {
  // probe_bench: one CPU, bench_calls calls of bench_target, no interrupts.
  // A kretprobe through each trampoline; the difference per call is the
  // breakpoint's trap (entry and the engine's trap handling) against the
  // trampoline's load from the rethook port (its two instructions and a
  // device access).
  const Isa isa = GENERATE(Isa::rv64, Isa::x86_64);
  auto run = [&](bool rethook) {
    KprobeRig rig(bench_image(isa), 1);
    REQUIRE(rig.eng->set_rethook(rethook));
    Kretprobe rp;
    rp.kp.symbol_name = "bench_target";
    REQUIRE(rig.eng->register_kretprobe(rp) == 0);
    RunResult r = rig.m.run();
    REQUIRE(r.end == RunResult::End::poweroff);
    REQUIRE(r.status == 0);
    uint64_t calls = 0;
    rig.m.bus().read_bytes(rig.sym("bench_calls"), &calls, 8);
    REQUIRE(rp.hits == calls);
    return std::pair<uint64_t, uint64_t>{r.cycles, calls};
  };
  const auto [trap_cycles, calls] = run(false);
  const auto [rethook_cycles, calls2] = run(true);
  REQUIRE(calls == calls2);
  INFO(isa_name(isa) << ": trap " << trap_cycles << ", rethook " << rethook_cycles << " cycles for " << calls);
  REQUIRE(rethook_cycles < trap_cycles);
  const double saved = static_cast<double>(trap_cycles - rethook_cycles) / static_cast<double>(calls);
  // At least the engine's trap handling is saved, and at most the whole
  // trap (its entry and handling) plus the breakpoint instruction.
  CHECK(saved >= static_cast<double>(timing::kKprobeTrapCycles));
  CHECK(saved <= static_cast<double>(timing::kTrapEntryCycles + timing::kKprobeTrapCycles + 2));
}
