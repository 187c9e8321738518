// stale-code-x86 and rv64-no-fence-i: a kprobe armed and later disarmed
// during the run, by CPU 0, on the kernel's hottest function, under the
// relaxed code model (docs/CODE_MODEL.md: a CPU may execute bytes it
// fetched before another CPU rewrote them until it serialises, on RV64
// until it executes fence.i).
//   correct: the ISA's protocol: x86 text_poke and its sync IPIs (every
//            other CPU runs sync_core before the caller goes on); RV64
//            patch_text (stop_machine, every hart runs fence.i).
//   broken:  x86: no sync IPIs; RV64: only the hart that patched runs
//            fence.i.
// Invariant: after a patch operation returns ("patch-done"), no CPU
// executes the bytes it replaced (the original instruction after the arm,
// the breakpoint after the disarm).
#include <cstdio>

#include "cpu/hex.hpp"
#include "kprobes/engine.hpp"
#include "kprobes/races/race.hpp"

namespace ksim::race {

namespace {

struct StaleChecker : EventObserver {
  Machine* m = nullptr;
  Outcome* out = nullptr;
  uint64_t addr = 0;
  uint64_t orig = 0, bp = 0, mask = 0;  // the replaced encodings, little-endian
  int state = 0;            // 0: nothing done yet, 1: armed, 2: disarmed
  uint64_t done_at = 0;     // when the last patch returned
  bool wants_insns() const override { return true; }
  void on_event(const Event& e) override {
    if (out->violated || e.a != addr) return;
    if (e.kind == EventKind::probe && e.text == "arm" && !mask) {
      // The probe's own bytes: the original and its breakpoint (x86 int3;
      // RV64 ebreak, or c.ebreak over a compressed instruction).
      orig = e.b;
      bp = e.c;
      const unsigned len = m->config().isa == Isa::x86_64 ? 1 : (bp & 3) == 3 ? 4 : 2;
      mask = (uint64_t{1} << (8 * len)) - 1;
      return;
    }
    if (e.kind == EventKind::probe && e.text == "patch-done") {
      state = e.b == 1 ? 1 : 2;
      done_at = e.cycle;
      return;
    }
    // While a patch is under way either version may run.
    if (e.kind == EventKind::probe && e.text == "patch-begin") state = 0;
    if (e.kind != EventKind::insn || state == 0) return;
    const uint64_t replaced = state == 1 ? orig : bp;
    if ((e.b & mask) != (replaced & mask)) return;
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "cycle %llu: cpu %d executed %s at %s, replaced by the %s that returned at cycle %llu (stale code)",
                  static_cast<unsigned long long>(e.cycle), e.cpu,
                  state == 1 ? "the original instruction" : "the removed breakpoint", m->describe(addr).c_str(),
                  state == 1 ? "arming" : "disarming", static_cast<unsigned long long>(done_at));
    violate(*out, *m, e.cycle, e.cpu, buf, addr, "stale: the bytes the patch replaced");
  }
};

}  // namespace

Setup stale_code_setup(const Machine&, const Options& o) {
  Setup s;  // the relaxed code model: the machine's default
  s.name = "stale-code";
  s.configure = [o](kprobes::Engine& eng) {
    eng.set_patching(kprobes::default_patching(o.isa));
    eng.set_omit_sync(o.broken);
  };
  const uint64_t start = 200'000 + (o.seed * 7'919) % 10'000;
  s.script = "@" + std::to_string(start) + " p:sc fib_recursive\n@" + std::to_string(start + 30'000) + " -:sc\n";
  s.until = start + 60'000;
  return s;
}

std::unique_ptr<EventObserver> stale_code_checker(Machine& m, const Options&, Outcome& out) {
  auto chk = std::make_unique<StaleChecker>();
  chk->m = &m;
  chk->out = &out;
  chk->addr = m.symbols().find("fib_recursive")->addr;
  return chk;
}

std::string stale_code_notes(const kprobes::Engine& eng, const Options& o, const Setup& s, uint64_t) {
  return std::string("kprobe on fib_recursive armed at cycle ") + std::to_string(s.until - 60'000) + " and removed at " +
         std::to_string(s.until - 30'000) + " by cpu 0 with " + kprobes::patching_name(eng.patching()) +
         (o.broken ? (o.isa == Isa::x86_64 ? " without its sync IPIs" : " without fence.i on the other harts") : "") +
         ", relaxed code model";
}

}  // namespace ksim::race
