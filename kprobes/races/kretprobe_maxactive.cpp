// kretprobe-maxactive: a kretprobe with a small pool (maxactive 4) on the
// kernel's recursive fib_recursive, which nests far deeper than 4 on every
// CPU while other tasks sleep and are preempted inside it, so the pool is
// empty most of the time.
//   correct: an entry that finds no free instance counts a miss in the
//            kretprobe's nmissed (Linux's rp->nmissed++).
//   broken:  the entry goes on without an instance and counts nothing.
// Invariant: every call of the function while the kretprobe is armed is
// accounted for: it took an instance (its return handler will run) or
// counted a miss. The calls are counted from the instructions the CPUs
// execute (the first instruction of fib_recursive), not by the engine:
// once the arming protocol is done (every CPU sees the breakpoint), each
// execution there must be followed, on that CPU, by a kretprobe-entry or a
// kretprobe-miss before its next one.
#include <cstdio>

#include "cpu/hex.hpp"
#include "kprobes/engine.hpp"
#include "kprobes/races/race.hpp"

namespace ksim::race {

namespace {

struct MaxactiveChecker : EventObserver {
  Machine* m = nullptr;
  Outcome* out = nullptr;
  uint64_t fn = 0;
  bool armed = false;          // the arming protocol is done
  std::vector<uint64_t> open;  // per CPU: cycle of a call not yet accounted for (0: none)
  uint64_t calls = 0, accounted = 0;
  bool wants_insns() const override { return true; }
  void on_event(const Event& e) override {
    if (out->violated || e.cpu < 0) return;
    const size_t c = static_cast<size_t>(e.cpu);
    if (e.kind == EventKind::probe) {
      if (e.text == "patch-done" && e.a == fn && e.b == 1) armed = true;
      if (e.text == "kretprobe-entry" || e.text == "kretprobe-miss") {
        if (open[c]) ++accounted;
        open[c] = 0;
      }
      return;
    }
    if (e.kind != EventKind::insn || e.a != fn || !armed) return;
    if (open[c]) {
      char buf[512];
      std::snprintf(buf, sizeof buf,
                    "cycle %llu: cpu %d called %s again; its call at cycle %llu neither took a kretprobe "
                    "instance nor counted a miss (%llu calls, %llu accounted for)",
                    static_cast<unsigned long long>(e.cycle), e.cpu, m->describe(fn).c_str(),
                    static_cast<unsigned long long>(open[c]),
                    static_cast<unsigned long long>(calls), static_cast<unsigned long long>(accounted));
      violate(*out, *m, e.cycle, e.cpu, buf, fn, "a call neither given an instance nor counted a miss");
      return;
    }
    ++calls;
    open[c] = e.cycle;
  }
};

}  // namespace

Setup kretprobe_maxactive_setup(const Machine&, const Options& o) {
  Setup s;
  s.name = "kretprobe-maxactive";
  s.configure = [broken = o.broken](kprobes::Engine& eng) { eng.set_count_kretprobe_misses(!broken); };
  const uint64_t at = 150'000 + (o.seed * 7'919) % 40'000;
  s.script = "@" + std::to_string(at) + " r4:fibret fib_recursive\n";
  s.until = at + 200'000;
  return s;
}

std::unique_ptr<EventObserver> kretprobe_maxactive_checker(Machine& m, const Options& o, Outcome& out) {
  auto chk = std::make_unique<MaxactiveChecker>();
  chk->m = &m;
  chk->out = &out;
  const Symbol* f = m.symbols().find("fib_recursive");
  chk->fn = f ? f->addr : 0;
  chk->open.assign(static_cast<size_t>(o.cpus), 0);
  return chk;
}

std::string kretprobe_maxactive_notes(const kprobes::Engine& eng, const Options& o, const Setup&, uint64_t hits) {
  return std::string("a kretprobe with maxactive 4 on fib_recursive, misses ") +
         (o.broken ? "not counted" : "counted") + "; " + std::to_string(hits) + " returns handled, " +
         std::to_string(eng.stats().misses) + " misses counted";
}

}  // namespace ksim::race
