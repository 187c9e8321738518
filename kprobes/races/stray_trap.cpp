// stray-trap: a kprobe on the kernel's hottest function is removed and
// defined again every 5,000 cycles, patched as Linux 2.6.9 did (a plain
// write, no synchronisation: --kprobes-patching instant), so a CPU can take
// the breakpoint trap and find, when it looks the address up, that another
// CPU has just removed the probe and put the original instruction back.
//   correct: Linux's stray rule: no probe and no breakpoint there any more,
//            so re-execute the original instruction.
//   broken:  the trap is treated as not a kprobe's and handed to the kernel,
//            which has no business with it (its int3/ebreak handler panics).
// Invariant: no probe's breakpoint trap reaches the guest.
#include <cstdio>
#include <set>

#include "cpu/hex.hpp"
#include "kprobes/engine.hpp"
#include "kprobes/races/race.hpp"

namespace ksim::race {

namespace {

struct StrayChecker : EventObserver {
  Machine* m = nullptr;
  Outcome* out = nullptr;
  uint64_t addr = 0, cause = 0;
  void on_event(const Event& e) override {
    if (out->violated || e.kind != EventKind::trap || e.sub != 0) return;  // delivered to the guest
    if (e.a != cause || e.c != addr) return;
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "cycle %llu: cpu %d: the breakpoint trap at %s reached the guest: its probe had "
                  "just been removed and the original instruction put back",
                  static_cast<unsigned long long>(e.cycle), e.cpu, m->describe(addr).c_str());
    violate(*out, *m, e.cycle, e.cpu, buf, addr, "a probe's breakpoint trap reached the guest");
  }
};

}  // namespace

Setup stray_trap_setup(const Machine&, const Options& o) {
  Setup s;
  s.name = "stray-trap";
  s.configure = [broken = o.broken](kprobes::Engine& eng) {
    eng.set_patching(kprobes::Patching::instant);
    eng.set_stray_as_foreign(broken);
  };
  const uint64_t start = 180'000 + (o.seed * 7'919) % 5'000;
  s.script = "@" + std::to_string(start) + " p:t0 fib_recursive\n";
  for (int i = 1; i < 25; ++i) {
    const uint64_t at = start + static_cast<uint64_t>(i) * 5'000;
    s.script += "@" + std::to_string(at) + " -:t" + std::to_string(i - 1) + "\n";
    s.script += "@" + std::to_string(at + 1'000) + " p:t" + std::to_string(i) + " fib_recursive\n";
  }
  s.until = start + 26 * 5'000;
  return s;
}

std::unique_ptr<EventObserver> stray_trap_checker(Machine& m, const Options&, Outcome& out) {
  auto chk = std::make_unique<StrayChecker>();
  chk->m = &m;
  chk->out = &out;
  chk->addr = m.symbols().find("fib_recursive")->addr;
  chk->cause = 3;  // #BP (x86 vector 3) and RV64's breakpoint exception (cause 3) alike
  return chk;
}

std::string stray_trap_notes(const kprobes::Engine& eng, const Options& o, const Setup& s, uint64_t) {
  return std::string("kprobe on fib_recursive removed and defined again every 5,000 cycles until ") +
         std::to_string(s.until) + ", instant patching; " + std::to_string(eng.stats().strays) + " stray traps" +
         (o.broken ? " (handed to the guest)" : " (re-executed)");
}

}  // namespace ksim::race
