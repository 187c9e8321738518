// dcr-interrupted and dcr-preempted (x86): a jump-optimized kprobe on the
// kernel's hottest function (fib_recursive: its region is `push %rbp;
// mov %edi, %eax; mov %rsp, %rbp`, 6 bytes, run on every call). The
// optimizer replaces the region's first 5 bytes with a jmp, and a CPU
// that is inside the region then (between two of its instructions,
// because an interrupt came there, or its task was preempted there)
// resumes in the middle of the jump.
//   dcr-interrupted, correct: the jump goes in after an RCU-tasks grace
//            period (every task that may be in the region has switched
//            voluntarily since the int3 went in: none is left inside).
//   dcr-interrupted, broken: at once, with no grace period.
//   dcr-preempted, correct: the same RCU-tasks grace period.
//   dcr-preempted, broken: an RCU-sched grace period instead, which a task
//            preempted inside the region has passed (it was switched out).
// Invariant: once the optimizer starts writing the jump's tail, no CPU
// executes an instruction strictly inside the 5 bytes it covers.
// dcr-interrupted runs on the non-preemptible kernel (no task is switched
// out in the region: the CPU caught was interrupted there), dcr-preempted
// on the preemptible one.
#include <cstdio>
#include <vector>

#include "cpu/hex.hpp"
#include "kprobes/engine.hpp"
#include "kprobes/races/race.hpp"

namespace ksim::race {

namespace {

struct DcrChecker : EventObserver {
  Machine* m = nullptr;
  Outcome* out = nullptr;
  uint64_t fn = 0;
  uint64_t writing_since = 0;  // the tail's write (0: not yet)
  // Per CPU, the interrupt that stopped it strictly inside the 5 bytes
  // (the first one taken at that boundary: later ones nest on its way
  // back), until it runs there again: the violation says how the CPU got
  // stuck there.
  struct Stop {
    uint64_t pc = 0, cycle = 0, vector = 0;
  };
  std::vector<Stop> stopped;
  bool wants_insns() const override { return true; }
  bool inside(uint64_t pc) const { return pc > fn && pc < fn + 5; }
  void on_event(const Event& e) override {
    if (out->violated || e.cpu < 0) return;
    if (e.kind == EventKind::probe) {
      // text_poke_bp's second write: the jump's tail over fn + 1 .. fn + 4.
      if (e.text == "text-write" && e.a == fn + 1 && !writing_since) writing_since = e.cycle;
      return;
    }
    if (stopped.size() <= static_cast<size_t>(e.cpu)) stopped.resize(e.cpu + 1);
    Stop& stop = stopped[e.cpu];
    if (e.kind == EventKind::interrupt && inside(e.c) && !stop.pc) stop = Stop{e.c, e.cycle, e.a};
    if (e.kind != EventKind::insn || !inside(e.a)) return;
    const Stop how = stop.pc == e.a ? stop : Stop{};
    stop = Stop{};
    if (!writing_since) return;
    char buf[512];
    int n = std::snprintf(buf, sizeof buf,
                          "cycle %llu: cpu %d executes %s, inside the jump the optimizer writes over fib_recursive "
                          "(since cycle %llu)",
                          static_cast<unsigned long long>(e.cycle), e.cpu, m->describe(e.a).c_str(),
                          static_cast<unsigned long long>(writing_since));
    if (how.pc)
      std::snprintf(buf + n, sizeof buf - n, "; cpu %d was stopped there by an interrupt (vector %llu) at cycle %llu",
                    e.cpu, static_cast<unsigned long long>(how.vector), static_cast<unsigned long long>(how.cycle));
    violate(*out, *m, e.cycle, e.cpu, buf, e.a, "run inside the jump being written");
  }
};

Setup dcr_setup(const Options& o, const char* name, kprobes::OptimizerWait broken_wait) {
  Setup s;
  s.name = name;
  s.optimize = true;
  s.configure = [wait = o.broken ? broken_wait : kprobes::OptimizerWait::rcu_tasks](kprobes::Engine& eng) {
    eng.set_optimizer_wait(wait);
  };
  const uint64_t at = 200'000 + (o.seed * 7'919) % 40'000;
  s.script = "@" + std::to_string(at) + " p:hot fib_recursive\n";
  s.until = at + 300'000;
  return s;
}

}  // namespace

Setup dcr_interrupted_setup(const Machine&, const Options& o) {
  return dcr_setup(o, "dcr-interrupted", kprobes::OptimizerWait::none);
}
Setup dcr_preempted_setup(const Machine&, const Options& o) {
  return dcr_setup(o, "dcr-preempted", kprobes::OptimizerWait::rcu_sched);
}

std::unique_ptr<EventObserver> dcr_checker(Machine& m, const Options&, Outcome& out) {
  auto chk = std::make_unique<DcrChecker>();
  chk->m = &m;
  chk->out = &out;
  const Symbol* f = m.symbols().find("fib_recursive");
  chk->fn = f ? f->addr : 0;
  return chk;
}
std::unique_ptr<EventObserver> dcr_interrupted_checker(Machine& m, const Options& o, Outcome& out) {
  return dcr_checker(m, o, out);
}
std::unique_ptr<EventObserver> dcr_preempted_checker(Machine& m, const Options& o, Outcome& out) {
  return dcr_checker(m, o, out);
}

std::string dcr_notes(const kprobes::Engine& eng, const Options& o, uint64_t hits, const char* broken_wait) {
  return std::string("a kprobe on fib_recursive jump-optimized after ") +
         (o.broken ? broken_wait : "an RCU-tasks grace period") + "; " + std::to_string(hits) + " hits, " +
         std::to_string(eng.stats().optimized_hits) + " through the jump";
}
std::string dcr_interrupted_notes(const kprobes::Engine& eng, const Options& o, const Setup&, uint64_t hits) {
  return dcr_notes(eng, o, hits, "no grace period");
}
std::string dcr_preempted_notes(const kprobes::Engine& eng, const Options& o, const Setup&, uint64_t hits) {
  return dcr_notes(eng, o, hits, "an RCU-sched grace period");
}

}  // namespace ksim::race
