// RCU-tasks (kprobes/rcu.*): a grace period waits until every task that
// was on a run queue has passed a voluntary context switch; a task that is
// only preempted holds it. The bound comes from the guest itself: the
// kernel's test hook (kernel/workload.c, rcu_tasks_hog) makes worker 0 of a
// CPU compute for a given number of cycles without yielding, preemptible
// in the preempt image, and records when it began and ended.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "support/kprobe_rig.hpp"

using namespace ksim;
using namespace ksim::kprobes;
using ksim::test::KprobeRig;
using ksim::test::kernel_image;

namespace {

struct Counter : EventObserver {
  std::vector<Event> ev;
  void on_event(const Event& e) override {
    if (e.kind != EventKind::probe) return;
    const std::string w = e.text;
    if (w.rfind("tasks-", 0) == 0 || w == "gp-start" || w == "gp-end" || w == "rcu-qs") ev.push_back(e);
  }
  size_t count(const std::string& what, int cpu = -1) const {
    size_t n = 0;
    for (const Event& e : ev) n += what == e.text && (cpu < 0 || e.cpu == cpu);
    return n;
  }
};

uint64_t read64(KprobeRig& r, const char* sym, int cpu) {
  uint64_t v = 0;
  r.m.bus().read_bytes(r.sym(sym) + 8 * static_cast<uint64_t>(cpu), &v, 8);
  return v;
}

void run_to(KprobeRig& r, uint64_t cycle) {
  RunLimits lim;
  lim.cycle = cycle;
  REQUIRE(r.m.run(lim).end == RunResult::End::paused);
}

}  // namespace

TEST_CASE("RCU-tasks waits for a preempted task to pass a voluntary switch; RCU-sched started at the same time does "
          "not",
          "[kprobes][rcu][rcu-tasks]") {
  for (Isa isa : {Isa::rv64, Isa::x86_64}) {
    INFO(isa_name(isa));
    KprobeRig r(kernel_image(isa, /*preempt=*/true), 4, 1);
    Counter ev;
    r.m.events().add(&ev);
    REQUIRE(r.eng->rcu().available());
    REQUIRE(r.eng->rcu().tasks_available());
    const int hog_cpu = 2;
    const uint64_t hog = 150'000;
    run_to(r, 200'000);
    const uint64_t v = hog;
    REQUIRE(r.m.bus().write_bytes(r.sym("rcu_tasks_hog_cycles") + 8 * hog_cpu, &v, 8,
                                  Accessor{hog_cpu, r.m.cpu(hog_cpu).cycle()}));
    // Step until the hog has begun, then start both grace periods from CPU 0.
    uint64_t at = 200'000;
    while (read64(r, "rcu_tasks_hog_began", hog_cpu) == 0) {
      at += 1'000;
      REQUIRE(at < 2'000'000);
      run_to(r, at);
    }
    const uint64_t began = read64(r, "rcu_tasks_hog_began", hog_cpu);
    uint64_t sched_done = 0, tasks_done = 0;
    Cpu& caller = r.m.cpu(0);
    const uint64_t start = caller.cycle();
    r.eng->rcu().call_rcu(caller, [&](Cpu*, uint64_t) { sched_done = r.m.now(); });
    r.eng->rcu().call_rcu_tasks(caller, [&](Cpu*, uint64_t) { tasks_done = r.m.now(); });
    const RunResult res = r.m.run();
    REQUIRE(r.passed(res));
    const uint64_t ended = read64(r, "rcu_tasks_hog_ended", hog_cpu);
    INFO("hog " << began << ".." << ended << ", grace periods from " << start << ": sched " << sched_done << ", tasks "
                << tasks_done);
    REQUIRE(ended >= began + hog);
    REQUIRE(sched_done > 0);
    REQUIRE(tasks_done > 0);
    // The hog was preempted (the preempt image lets its CPU's other
    // workers run): those switches are RCU-sched quiescent states, so that
    // grace period ends while the hog still computes.
    CHECK(sched_done < ended);
    // RCU-tasks: the hog was on its run queue at the start and passes no
    // voluntary switch before it ends.
    CHECK(tasks_done >= ended);
    CHECK(r.eng->rcu().tasks_completed() == 1);
    CHECK(ev.count("tasks-gp-start") == 1);
    CHECK(ev.count("tasks-gp-end") == 1);
    for (int k = 0; k < 4; ++k) CHECK(ev.count("tasks-qs", k) == 1);
  }
}

TEST_CASE("RCU-tasks with no task holding it out ends: each CPU lists its tasks once and reports once, on both kernels",
          "[kprobes][rcu][rcu-tasks]") {
  for (Isa isa : {Isa::rv64, Isa::x86_64})
    for (bool preempt : {false, true}) {
      INFO(isa_name(isa) << (preempt ? " preempt" : " nopreempt"));
      KprobeRig r(kernel_image(isa, preempt), 4, 3);
      Counter ev;
      r.m.events().add(&ev);
      run_to(r, 300'000);
      uint64_t done = 0;
      const uint64_t start = r.m.cpu(1).cycle();
      r.eng->rcu().call_rcu_tasks(r.m.cpu(1), [&](Cpu*, uint64_t) { done = r.m.now(); });
      REQUIRE(r.passed(r.m.run()));
      REQUIRE(done > start);
      // Each CPU lists its tasks at one interrupt and sees them pass at
      // later ones (the workers yield or sleep every iteration).
      for (int k = 0; k < 4; ++k) {
        CHECK(ev.count("tasks-holdouts", k) == 1);
        CHECK(ev.count("tasks-qs", k) == 1);
      }
      CHECK(ev.count("tasks-gp-end") == 1);
      CHECK(r.eng->rcu().tasks_pending() == 0);
    }
}

TEST_CASE("RCU-tasks grace periods are the same on the default and the reference schedule", "[kprobes][rcu][rcu-tasks]") {
  for (Isa isa : {Isa::rv64, Isa::x86_64})
    for (uint64_t seed : {3, 8}) {
      INFO(isa_name(isa) << " seed " << seed);
      std::vector<std::vector<std::pair<uint64_t, int>>> got;
      std::vector<uint64_t> done_at;
      for (bool reference : {false, true}) {
        KprobeRig r(kernel_image(isa, true), 4, seed, kprobes::StepMode::modern, 1, reference);
        Counter ev;
        r.m.events().add(&ev);
        uint64_t d1 = 0, d2 = 0;
        run_to(r, 250'000);
        r.eng->rcu().call_rcu_tasks(r.m.cpu(1), [&](Cpu*, uint64_t c) { d1 = c; });
        run_to(r, 262'000);  // possibly while the first is under way
        r.eng->rcu().call_rcu_tasks(r.m.cpu(2), [&](Cpu*, uint64_t c) { d2 = c; });
        REQUIRE(r.passed(r.m.run()));
        std::vector<std::pair<uint64_t, int>> seq;
        for (const Event& e : ev.ev)
          if (std::string(e.text).rfind("tasks-", 0) == 0) seq.push_back({e.cycle, e.cpu});
        got.push_back(seq);
        done_at.push_back(d1);
        done_at.push_back(d2);
        CHECK(d1 > 0);
        CHECK(d2 >= d1);
      }
      CHECK(got[0] == got[1]);
      CHECK(done_at[0] == done_at[2]);
      CHECK(done_at[1] == done_at[3]);
    }
}
