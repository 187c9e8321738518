// sail-past: a kprobe on fib_recursive, the kernel's hottest function, hit
// on every CPU (x86, classic stepping).
//   correct: the probed instruction is single-stepped out of line, in its
//            slot; the breakpoint stays in the text the whole time.
//   broken:  stepped in place, as the first uniprocessor kprobes did: the
//            original byte goes back for the step and the int3 after it,
//            so another CPU can run the instruction meanwhile.
// Invariant: every execution of the probed instruction is a hit or counted
// in nmissed: no CPU executes its original bytes at the probed address
// unless it is that CPU's own step.
#include <cstdio>

#include "cpu/hex.hpp"
#include "kprobes/engine.hpp"
#include "kprobes/races/race.hpp"

namespace ksim::race {

namespace {

struct SailChecker : EventObserver {
  Machine* m = nullptr;
  uint64_t addr = 0;
  uint8_t bp = 0;
  bool tracing = false;             // insn events wanted (from the next run)
  std::vector<bool> stepping_here;  // per CPU: between its step-in-place and its step-done
  Outcome* out = nullptr;
  bool wants_insns() const override { return tracing; }
  void on_event(const Event& e) override {
    if (e.a != addr || out->violated) return;
    if (e.kind == EventKind::probe) {
      if (e.text == "step-in-place") stepping_here[static_cast<size_t>(e.cpu)] = true;
      if (e.text == "step-done" || e.text == "reenter-done") stepping_here[static_cast<size_t>(e.cpu)] = false;
      return;
    }
    if (e.kind != EventKind::insn || (e.b & 0xff) == bp || stepping_here[static_cast<size_t>(e.cpu)]) return;
    std::string steppers;
    for (size_t k = 0; k < stepping_here.size(); ++k)
      if (stepping_here[k]) steppers += (steppers.empty() ? "cpu " : ", cpu ") + std::to_string(k);
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "cycle %llu: cpu %d executed the probed instruction at %s while %s stepped it "
                  "in place: neither a hit nor counted in nmissed",
                  static_cast<unsigned long long>(e.cycle), e.cpu, m->describe(addr).c_str(),
                  steppers.empty() ? "another CPU" : steppers.c_str());
    violate(*out, *m, e.cycle, e.cpu, buf, addr, "run with no trap while stepped in place");
  }
};

}  // namespace

Setup sail_past_setup(const Machine&, const Options& o) {
  Setup s;
  s.name = "sail-past";
  s.mode = kprobes::StepMode::classic;
  s.configure = [broken = o.broken](kprobes::Engine& eng) {
    if (broken && !eng.set_step_in_place(true)) throw std::runtime_error("sail-past: in-place stepping is x86 classic");
  };
  // Every fetch is checked from the start; the seed's latencies and stalls
  // decide how the CPUs' hits interleave. The kernel's workers start
  // calling fib_recursive at about 150,000 cycles.
  s.probes = {"p:sp fib_recursive"};
  s.until = 300'000;
  return s;
}

std::unique_ptr<EventObserver> sail_past_checker(Machine& m, const Options& o, Outcome& out) {
  auto chk = std::make_unique<SailChecker>();
  chk->m = &m;
  chk->addr = m.symbols().find("fib_recursive")->addr;
  chk->out = &out;
  chk->stepping_here.assign(static_cast<size_t>(o.cpus), false);
  chk->bp = 0xcc;  // x86 only
  chk->tracing = true;
  return chk;
}

std::string sail_past_notes(const kprobes::Engine& eng, const Options& o, const Setup&, uint64_t hits) {
  return "kprobe on fib_recursive, stepped " + std::string(o.broken ? "in place" : "out of line") + ": " +
         std::to_string(hits) + " hits, " + std::to_string(eng.stats().misses) + " missed";
}

}  // namespace ksim::race
