// The x86 kprobe-booster (docs/KPROBES_X86.md, "Boosting"): which
// instructions are boostable (a golden table from Linux's can_boost rules),
// hits on the guest kernel counted exactly while boosted in both stepping
// modes, classic mode's lazy boosting (the first hit steps, the jump back is
// appended, the rest are boosted), a post handler or the knob turning
// boosting off, and boosted slots freed only after the grace periods that
// cover a CPU inside one (RCU-tasks on the preemptible kernel).
#include <catch2/catch.hpp>

#include <cstring>
#include <map>

#include "cpu/cpu.hpp"
#include "kprobes/arch.hpp"
#include "support/kprobe_rig.hpp"

using namespace ksim;
using namespace ksim::kprobes;
using ksim::test::KprobeRig;
using ksim::test::expected_forks;
using ksim::test::kernel_image;
using ksim::test::run_until;

namespace {

struct Counter : EventObserver {
  std::map<std::string, uint64_t> n;
  std::vector<std::string> order;  // the engine's events at one address, in order
  uint64_t addr = 0;
  void on_event(const Event& e) override {
    if (e.kind != EventKind::probe) return;
    ++n[e.text];
    if (e.a == addr || e.b == addr) order.push_back(e.text);
  }
};

}  // namespace

TEST_CASE("x86 booster: which instructions are boostable (Linux's can_boost rules)", "[kprobes][boost]") {
  struct Row {
    const char* what;
    std::vector<uint8_t> bytes;
    int8_t boostable;  // after analyse in classic mode (everything is stepped there)
  };
  const Row rows[] = {
      {"push rbp", {0x55}, 0},
      {"mov rbp, rsp", {0x48, 0x89, 0xe5}, 0},
      {"sub rsp, 0x20", {0x48, 0x83, 0xec, 0x20}, 0},
      {"mov rax, [rip+0x100] (re-encoded in the slot)", {0x48, 0x8b, 0x05, 0x00, 0x01, 0x00, 0x00}, 0},
      {"movabs rax, imm64 (10 bytes + jmp fits 16)", {0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8}, 0},
      {"mov qword [rsp+0x100], 1 (12 bytes + jmp does not fit)",
       {0x48, 0xc7, 0x84, 0x24, 0x00, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00},
       -1},
      {"imul eax, ecx", {0x0f, 0xaf, 0xc1}, 0},
      {"lock cmpxchg [rdi], rsi", {0xf0, 0x48, 0x0f, 0xb1, 0x37}, 0},
      {"cpuid", {0x0f, 0xa2}, -1},
      {"jne +5 (relative to the IP)", {0x75, 0x05}, -1},
      {"call rel32", {0xe8, 0, 0, 0, 0}, -1},
      {"div rcx (group 3: #DE in the slot)", {0x48, 0xf7, 0xf1}, -1},
      {"test rdi, imm32 (group 3, ksim: finer than Linux)", {0x48, 0xf7, 0xc7, 0x00, 0xf0, 0xee, 0xfe}, 0},
      {"shl eax, 3 (Linux leaves c0/c1 out)", {0xc1, 0xe0, 0x03}, -1},
      {"mov eax, [eax] (address-size prefix)", {0x67, 0x8b, 0x00}, -1},
      {"jmp rax (ff /4, absolute)", {0xff, 0xe0}, 0},
      {"call rax (ff /2)", {0xff, 0xd0}, -1},
  };
  auto arch = make_arch(Isa::x86_64);
  for (const Row& r : rows) {
    INFO(r.what);
    std::vector<uint8_t> text = r.bytes;
    text.resize(32, 0x90);
    TextReader reader = [&](uint64_t a, uint8_t* out, size_t n) {
      if (a < 0x1000 || a + n > 0x1000 + text.size()) return false;
      std::memcpy(out, text.data() + (a - 0x1000), n);
      return true;
    };
    ProbeInsn pi;
    std::string why;
    REQUIRE(arch->analyse(reader, 0x1000, nullptr, StepMode::classic, pi, why) == 0);
    CHECK(pi.boostable == r.boostable);
    // The jump back the booster appends after a copy in a slot at 0x2000:
    // jmp rel32 to addr + len.
    std::vector<uint8_t> jmp;
    if (r.boostable == 0) {
      REQUIRE(arch->encode_jump(0x2000 + pi.len, 0x1000 + pi.len, jmp));
      REQUIRE(jmp.size() == 5);
      CHECK(jmp[0] == 0xe9);
      int32_t rel;
      std::memcpy(&rel, jmp.data() + 1, 4);
      CHECK(0x2000 + pi.len + 5 + static_cast<int64_t>(rel) == 0x1000 + pi.len);
    }
  }
  // RV64 has no booster (as mainline Linux): no jump to append.
  auto rv = make_arch(Isa::rv64);
  std::vector<uint8_t> out;
  CHECK_FALSE(rv->encode_jump(0x2000, 0x1000, out));
}

TEST_CASE("x86 booster: boosted hits equal the kernel's forks, no second trap, text byte-exact after (20 seeds)",
          "[kprobes][boost][seeds]") {
  const bool preempt = GENERATE(true, false);
  for (StepMode mode : {StepMode::modern, StepMode::classic}) {
    for (uint64_t seed = 1; seed <= (mode == StepMode::modern ? 20u : 8u); ++seed) {
      const int cpus = seed <= 3 ? 16 : 4;
      KprobeRig rig(kernel_image(Isa::x86_64, preempt), cpus, seed, mode, cpus > 4 ? 100 : 1);
      rig.eng->set_boost(true);
      Counter ev;
      ev.addr = rig.sym("do_fork");
      rig.m.events().add(&ev);
      Kprobe kp;
      kp.symbol_name = "do_fork";
      uint64_t pre = 0;
      kp.pre_handler = [&](Kprobe&, Cpu&) { ++pre; return 0; };
      REQUIRE(rig.eng->register_kprobe(kp) == 0);
      RunResult r = rig.m.run();
      INFO((preempt ? "preempt" : "nopreempt") << (mode == StepMode::classic ? " classic" : " modern") << " seed "
                                               << seed << ": " << r.reason);
      REQUIRE(rig.passed(r));
      const long forks = expected_forks(cpus);
      CHECK(rig.printed("forks") == forks);
      CHECK(static_cast<long>(pre) == forks);
      CHECK(kp.hits == pre);
      CHECK(ev.n["trap"] == pre);
      if (mode == StepMode::modern) {
        // Every hit boosted: no step, no step-done.
        CHECK(rig.eng->stats().boosted == pre);
        CHECK(ev.n["step-done"] == 0);
        CHECK(ev.n["boost-ready"] == 0);
      } else {
        // The first step appends the jump back once; hits already stepping
        // then (at most one per CPU) finish their step.
        CHECK(ev.n["boost-ready"] == 1);
        CHECK(ev.n["step-done"] >= 1);
        CHECK(ev.n["step-done"] <= static_cast<uint64_t>(cpus));
        CHECK(rig.eng->stats().boosted + ev.n["step-done"] == pre);
      }
      rig.m.events().remove(&ev);
      rig.eng->unregister_kprobe(kp);
      rig.eng->finish_patching();
      CHECK(rig.text_diff().empty());
    }
  }
}

TEST_CASE("x86 booster: a post handler means a step; one added to a boosted point moves it to a stepping slot",
          "[kprobes][boost]") {
  KprobeRig rig(kernel_image(Isa::x86_64), 4, 5);
  rig.eng->set_boost(true);
  Counter ev;
  const uint64_t fn = rig.sym("do_fork");
  ev.addr = fn;
  rig.m.events().add(&ev, EventStream::Delivery::immediate);
  Kprobe a, b;
  a.symbol_name = b.symbol_name = "do_fork";
  uint64_t pre_a = 0, pre_b = 0, post_b = 0;
  a.pre_handler = [&](Kprobe&, Cpu&) { ++pre_a; return 0; };
  b.pre_handler = [&](Kprobe&, Cpu&) { ++pre_b; return 0; };
  b.post_handler = [&](Kprobe&, Cpu&, unsigned long) { ++post_b; };
  REQUIRE(rig.eng->register_kprobe(a) == 0);
  const uint64_t boosted_slot = rig.eng->point_at(fn)->slot;
  CHECK(rig.eng->point_at(fn)->insn.boostable == 1);
  // After 100 boosted hits, a probe with a post handler joins the point.
  uint64_t boosts_before = 0;
  run_until(rig, [&] { return rig.eng->stats().boosted >= 100; });
  boosts_before = rig.eng->stats().boosted;
  REQUIRE(boosts_before >= 100);
  REQUIRE(rig.eng->register_kprobe(b) == 0);
  const ProbePoint* p = rig.eng->point_at(fn);
  CHECK(p->insn.boostable == -1);
  CHECK(p->slot != boosted_slot);
  CHECK(ev.n["unboost"] == 1);
  RunResult r = rig.m.run();
  REQUIRE(rig.passed(r));
  // Every later hit stepped (and ran b's post handler); a's hits are all the forks.
  CHECK(static_cast<long>(pre_a) == expected_forks(4));
  CHECK(rig.eng->stats().boosted == boosts_before);
  CHECK(post_b == pre_b);
  CHECK(pre_a == boosts_before + pre_b);
  rig.m.events().remove(&ev);
  rig.eng->unregister_kprobe(a);
  rig.eng->unregister_kprobe(b);
  rig.eng->finish_patching();
  CHECK(rig.text_diff().empty());
}

TEST_CASE("x86 booster: turning it off steps every later hit", "[kprobes][boost]") {
  for (StepMode mode : {StepMode::modern, StepMode::classic}) {
    KprobeRig rig(kernel_image(Isa::x86_64), 4, 9, mode);
    rig.eng->set_boost(true);
    Kprobe kp;
    kp.symbol_name = "do_fork";
    REQUIRE(rig.eng->register_kprobe(kp) == 0);
    run_until(rig, [&] { return rig.eng->stats().boosted >= 50; });
    const uint64_t boosted = rig.eng->stats().boosted;
    REQUIRE(boosted >= 50);
    rig.eng->set_boost(false);
    RunResult r = rig.m.run();
    REQUIRE(rig.passed(r));
    CHECK(rig.eng->stats().boosted == boosted);
    CHECK(static_cast<long>(kp.hits) == expected_forks(4));
    rig.eng->unregister_kprobe(kp);
    rig.eng->finish_patching();
    CHECK(rig.text_diff().empty());
  }
}

TEST_CASE("x86 booster: a boosted slot is freed after RCU-sched, then RCU-tasks on the preemptible kernel",
          "[kprobes][boost][rcu]") {
  const bool preempt = GENERATE(true, false);
  KprobeRig rig(kernel_image(Isa::x86_64, preempt), 4, 3);
  rig.eng->set_boost(true);
  REQUIRE(rig.eng->layout().preemptible == preempt);
  Counter ev;
  const uint64_t fn = rig.sym("do_fork");
  ev.addr = fn;
  rig.m.events().add(&ev, EventStream::Delivery::immediate);
  Kprobe kp;
  kp.symbol_name = "do_fork";
  REQUIRE(rig.eng->register_kprobe(kp) == 0);
  const uint64_t slot = rig.eng->point_at(fn)->slot;
  ev.addr = slot;  // slot-free is reported at the slot
  run_until(rig, [&] { return rig.eng->stats().boosted >= 20; });
  // Removed from the host between steps (no operation): the slot some CPU
  // has run waits for grace periods the guest's interrupts complete.
  ev.addr = fn;
  rig.eng->unregister_kprobe(kp);
  CHECK(ev.n["synchronize_rcu"] == 1);
  CHECK(ev.n["slot-free"] == 0);
  RunResult r = rig.m.run();
  REQUIRE(rig.passed(r));
  CHECK(ev.n["synchronize_rcu_tasks"] == (preempt ? 1u : 0u));
  CHECK(rig.eng->rcu().completed() >= 1);
  if (preempt) CHECK(rig.eng->rcu().tasks_completed() >= 1);
  CHECK(ev.n["slot-free"] == 1);
  rig.eng->finish_patching();
  CHECK(rig.text_diff().empty());
}

TEST_CASE("x86 booster: in a guest with no RCU a boosted slot is kept until the run is over", "[kprobes][boost]") {
  // probe_bench: bare metal, no scheduler and no RCU to wait for.
  KprobeRig rig(ksim::test::bench_image(Isa::x86_64), 1);
  rig.eng->set_boost(true);
  REQUIRE_FALSE(rig.eng->rcu().available());
  Kprobe kp;
  kp.symbol_name = "bench_target";
  REQUIRE(rig.eng->register_kprobe(kp) == 0);
  const uint64_t slot = rig.eng->point_at(rig.sym("bench_target"))->slot;
  run_until(rig, [&] { return rig.eng->stats().boosted >= 1000; });
  rig.eng->unregister_kprobe(kp);
  CHECK(rig.eng->stats().boost_quarantined == 1);
  // The probed text is back; the slot still holds the copy and its jump.
  CHECK(rig.text_diff(false).empty());
  CHECK(rig.read<uint8_t>(slot) != 0xcc);
  RunResult r = rig.m.run();
  REQUIRE(r.end == RunResult::End::poweroff);
  rig.eng->finish_patching();  // the run is over: the slot is given back
  CHECK(rig.text_diff().empty());
}
