// rv64-split-jump (RV64): a jump-optimized kprobe on the kernel's hottest
// function (fib_recursive: its region is four compressed instructions,
// `addi sp; sd s0; sd s1; sd ra`), optimized and unoptimized again and
// again by turning the kprobes-optimization knob off and on. RISC-V's jump
// is two instructions, `auipc t0` then `jalr x0, lo(t0)`: a task
// interrupted or preempted between them resumes at the jalr's address.
//   correct: the jump comes out in two steps, the breakpoint over the
//            auipc first, the rest of the original bytes only after an
//            RCU-tasks grace period (Engine::unoptimize_in_two): a task
//            between the two still finds its jalr.
//   broken:  all the original bytes at once (one stop_machine), as x86's
//            single-instruction jmp allows.
// Invariant: a task interrupted at fib_recursive+4 while the jalr was
// there resumes there into the jalr (not into the original instruction,
// with the region's first instructions skipped and t0 clobbered).
//
// The checker follows the bytes at +4 through the engine's text-write
// events, and each CPU's interruptions at +4 and returns there (the first
// instruction at +4 after an mret): several contexts of one CPU may be
// interrupted there at once (preemption), so it counts the expectations
// of each kind and flags a return only when no context expected it.
#include <cstdio>

#include "cpu/hex.hpp"
#include "kprobes/engine.hpp"
#include "kprobes/races/race.hpp"

namespace ksim::race {

namespace {

constexpr uint32_t kMret = 0x30200073;
constexpr uint64_t kJalrOpcode = 0x67;

struct SplitChecker : EventObserver {
  Machine* m = nullptr;
  Outcome* out = nullptr;
  uint64_t fn = 0;
  bool jalr_in = false;  // the bytes at fn + 4 are the jump's jalr
  struct PerCpu {
    uint64_t last_raw = 0;
    uint64_t expect[2] = {0, 0};  // contexts interrupted at fn + 4: [0] original there, [1] the jalr
  };
  std::vector<PerCpu> cpus;
  bool wants_insns() const override { return true; }
  void on_event(const Event& e) override {
    if (out->violated || e.cpu < 0) return;
    PerCpu& c = cpus[static_cast<size_t>(e.cpu)];
    if (e.kind == EventKind::probe && e.text == "text-write" && e.a <= fn + 4 && fn + 4 < e.a + 8) {
      // b: the old bytes, c: the new (up to 8, little-endian); a write
      // that does not reach fn + 4 leaves its bytes there equal.
      const unsigned shift = static_cast<unsigned>(fn + 4 - e.a) * 8;
      const uint64_t old_w = (e.b >> shift) & 0xffffffff, new_w = (e.c >> shift) & 0xffffffff;
      if (old_w != new_w) jalr_in = (new_w & 0x7f) == kJalrOpcode;
      return;
    }
    if (e.kind == EventKind::interrupt && e.c == fn + 4) {
      ++c.expect[jalr_in ? 1 : 0];
      return;
    }
    if (e.kind != EventKind::insn) return;
    const uint64_t raw = c.last_raw;
    c.last_raw = e.b;
    if (e.a != fn + 4 || raw != kMret) return;  // not a return to fn + 4
    const bool jalr = (e.b & 0x7f) == kJalrOpcode;
    if (c.expect[jalr ? 1 : 0] > 0) {
      --c.expect[jalr ? 1 : 0];
      return;
    }
    if (jalr || c.expect[1] == 0) return;
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "cycle %llu: cpu %d returns to %s, where it was interrupted between the jump's auipc "
                  "and jalr, and runs the original instruction there (%s): the jump was taken out under it",
                  static_cast<unsigned long long>(e.cycle), e.cpu, m->describe(e.a).c_str(), hex(e.b).c_str());
    violate(*out, *m, e.cycle, e.cpu, buf, e.a, "resumed here without its jalr");
  }
};

}  // namespace

Setup rv64_split_jump_setup(const Machine&, const Options& o) {
  Setup s;
  s.name = "rv64-split-jump";
  s.optimize = true;
  s.configure = [two = !o.broken](kprobes::Engine& eng) { eng.set_unoptimize_in_two(two); };
  const uint64_t at = 200'000 + (o.seed * 7'919) % 40'000;
  s.script = "@" + std::to_string(at) + " p:hot fib_recursive\n";
  // Off and on again: each "off" takes the jump out while CPUs run through
  // it; each "on" puts it back after the optimizer's delay and grace period.
  constexpr int kRounds = 6;
  for (int i = 0; i < kRounds; ++i) {
    const uint64_t off = at + 400'000 + 500'000 * static_cast<uint64_t>(i);
    s.script += "@" + std::to_string(off) + " kprobes-optimization 0\n";
    s.script += "@" + std::to_string(off + 50'000) + " kprobes-optimization 1\n";
  }
  s.until = at + 400'000 + 500'000 * kRounds;
  return s;
}

std::unique_ptr<EventObserver> rv64_split_jump_checker(Machine& m, const Options&, Outcome& out) {
  auto chk = std::make_unique<SplitChecker>();
  chk->m = &m;
  chk->out = &out;
  chk->cpus.resize(static_cast<size_t>(m.cpu_count()));
  const Symbol* f = m.symbols().find("fib_recursive");
  chk->fn = f ? f->addr : 0;
  return chk;
}

std::string rv64_split_jump_notes(const kprobes::Engine& eng, const Options& o, const Setup&, uint64_t hits) {
  return std::string("a kprobe on fib_recursive optimized ") + std::to_string(eng.stats().optimized) +
         " times and unoptimized " + std::to_string(eng.stats().unoptimized) + " times, the jump taken out " +
         (o.broken ? "at once" : "in two steps") + "; " + std::to_string(hits) + " hits, " +
         std::to_string(eng.stats().optimized_hits) + " through the jump";
}

}  // namespace ksim::race
