// boost-preempted (x86, the preemptible kernel): a boosted kprobe on the
// kernel's hottest function (fib_recursive, whose first instruction, push
// %rbp, is boostable) is removed while every CPU runs through its slot. A
// task preempted between entering the boosted slot and the jump back is
// still "in" the slot although it passed RCU-sched quiescent states (it
// was switched out).
//   correct: a boosted slot some CPU entered is freed after an RCU-sched
//            and then an RCU-tasks grace period, which waits for every
//            task on a run queue at its start to switch voluntarily (the
//            preempted task resumes, leaves the slot, and later yields).
//   broken:  after the RCU-sched grace period only (the rule before
//            RCU-tasks, safe only without preemption).
// Invariant: no CPU executes an instruction in a boosted slot that was
// freed after it entered it. New probes defined after the removal take
// freed slots and rewrite them, as a later registration would.
#include <cstdio>
#include <map>

#include "cpu/hex.hpp"
#include "kprobes/engine.hpp"
#include "kprobes/races/race.hpp"

namespace ksim::race {

namespace {

struct BoostChecker : EventObserver {
  Machine* m = nullptr;
  Outcome* out = nullptr;
  uint64_t slots_begin = 0, slots_end = 0;
  unsigned slot_size = 16;
  struct Entry {
    uint64_t first = 0, second = 0;  // the slot, the cycle of the CPU's last boost
    uint64_t probe = 0;              // whose copy the slot holds
  };
  std::vector<Entry> entered;  // per CPU
  std::map<uint64_t, uint64_t> freed;                  // slot -> cycle of its last free
  bool tracing = false;  // insn events, from the first slot-free on (the next run segment)
  bool wants_insns() const override { return tracing; }
  void on_event(const Event& e) override {
    if (out->violated || e.cpu < 0) return;
    const size_t c = static_cast<size_t>(e.cpu);
    if (e.kind == EventKind::probe) {
      if (e.text == "boost") entered[c] = {e.b, e.cycle, e.a};
      if (e.text == "slot-free") {
        freed[e.b] = e.cycle;
        tracing = true;
      }
      return;
    }
    if (e.kind != EventKind::insn || e.a < slots_begin || e.a >= slots_end) return;
    const uint64_t slot = slots_begin + (e.a - slots_begin) / slot_size * slot_size;
    auto f = freed.find(slot);
    if (f == freed.end() || entered[c].first != slot || entered[c].second > f->second) return;
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "cycle %llu: cpu %d executes %s, in the boosted slot %s of the probe on %s, freed at cycle %llu after "
                  "it entered at cycle %llu (preempted there)",
                  static_cast<unsigned long long>(e.cycle), e.cpu, hex(e.a).c_str(), hex(slot).c_str(),
                  m->describe(entered[c].probe).c_str(),
                  static_cast<unsigned long long>(f->second), static_cast<unsigned long long>(entered[c].second));
    violate(*out, *m, e.cycle, e.cpu, buf, e.a, "run in a boosted slot already freed");
  }
};

}  // namespace

// How long the probe stays: long enough for many preemptions to land
// between a task's entry into the slot and its jump back.
constexpr uint64_t kHot = 600'000;

Setup boost_preempted_setup(const Machine&, const Options& o) {
  Setup s;
  s.name = "boost-preempted";
  s.boost = true;
  s.configure = [broken = o.broken](kprobes::Engine& eng) { eng.set_boost_tasks_grace(!broken); };
  const uint64_t start = 150'000 + (o.seed * 7'919) % 20'000;
  s.script = "@" + std::to_string(start) + " p:hot fib_recursive\n";
  s.script += "@" + std::to_string(start + kHot) + " -:hot\n";
  // Later definitions take freed slots (refilled, then rewritten).
  const char* fns[] = {"counter_add", "vfs_read", "sys_open", "do_fork"};
  for (int i = 0; i < 8; ++i) {
    const uint64_t at = start + kHot + 20'000 + static_cast<uint64_t>(i) * 20'000;
    s.script += "@" + std::to_string(at) + " p:n" + std::to_string(i) + " " + fns[i % 4] + "\n";
    s.script += "@" + std::to_string(at + 10'000) + " -:n" + std::to_string(i) + "\n";
  }
  s.until = start + kHot + 200'000;
  return s;
}

std::unique_ptr<EventObserver> boost_preempted_checker(Machine& m, const Options& o, Outcome& out) {
  auto chk = std::make_unique<BoostChecker>();
  chk->m = &m;
  chk->out = &out;
  const Symbol* b = m.symbols().find("__kprobe_slots_start");
  const Symbol* e = m.symbols().find("__kprobe_slots_end");
  chk->slots_begin = b ? b->addr : 0;
  chk->slots_end = e ? e->addr : 0;
  chk->entered.assign(static_cast<size_t>(o.cpus), {});
  return chk;
}

std::string boost_preempted_notes(const kprobes::Engine& eng, const Options& o, const Setup&, uint64_t hits) {
  return std::string("a boosted kprobe on fib_recursive removed while hot, its slot freed after RCU-sched") +
         (o.broken ? " only" : " and RCU-tasks") + "; " + std::to_string(hits) + " hits, " +
         std::to_string(eng.stats().boosted) + " boosted";
}

}  // namespace ksim::race
