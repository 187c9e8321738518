// slot-reuse: kprobes on two hot kernel functions are removed and defined
// again, one after the other, every 5,000 cycles, while every CPU hits them.
// A removed probe's instruction slot is freed and the next definition takes
// a slot.
//   correct: a freed slot waits until every CPU that was inside the engine
//            when it was freed has left it (the grace period of Linux's
//            kprobe_insn_slots garbage collection).
//   broken:  the slot is free at once, refilled and handed out again.
// Invariant: no CPU executes slot bytes that changed since it entered the
// slot: no slot is written while a CPU steps in it.
// Both variants patch the text with --kprobes-patching instant: the sync
// protocols' IPIs cannot be taken by a CPU inside a hit (its interrupts
// are off), so with them the removal itself waits for every stepping CPU
// and the slot could not be freed under it (docs/PATCHING.md).
#include <algorithm>
#include <cstdio>
#include <map>

#include "cpu/hex.hpp"
#include "kprobes/engine.hpp"
#include "kprobes/races/race.hpp"

namespace ksim::race {

namespace {

struct SlotChecker : EventObserver {
  Machine* m = nullptr;
  Outcome* out = nullptr;
  std::vector<uint64_t> in_slot;  // per CPU: the slot it steps in, or 0
  void on_event(const Event& e) override {
    if (out->violated || e.cpu < 0) return;
    const size_t c = static_cast<size_t>(e.cpu);
    // The step ends at its trap (the breakpoint after the copy, or the #DB):
    // from then on the CPU fetches nothing more from the slot.
    if (e.kind == EventKind::trap) in_slot[c] = 0;
    if (e.kind != EventKind::probe) return;
    if (e.text == "KPROBE_HIT_SS" || e.text == "KPROBE_REENTER") {
      in_slot[c] = e.b;
    } else if (e.text == "step-done" || e.text == "reenter-done" || e.text == "emulate") {
      in_slot[c] = 0;
    } else if (e.text == "slot-write" || e.text == "slot-free") {
      for (size_t k = 0; k < in_slot.size(); ++k) {
        if (!in_slot[k] || in_slot[k] != e.b) continue;
        char buf[200];
        std::snprintf(buf, sizeof buf, "cycle %llu: cpu %d %s slot %s while cpu %zu was stepping in it",
                      static_cast<unsigned long long>(e.cycle), e.cpu,
                      e.text == "slot-free" ? "refilled (freed)" : "wrote a new copy into", hex(e.b).c_str(), k);
        violate(*out, *m, e.cycle, buf);
        return;
      }
    }
  }
};

}  // namespace

Setup slot_reuse_setup(const Machine&, const Options& o) {
  Setup s;
  s.name = "slot-reuse";
  s.configure = [broken = o.broken](kprobes::Engine& eng) {
    eng.set_patching(kprobes::Patching::instant);
    eng.set_slot_grace(!broken);
  };
  // Two probes alive at a time, the older removed and a new one defined
  // every 5,000 cycles; the seed shifts the whole sequence.
  const uint64_t start = 180'000 + (o.seed * 7'919) % 5'000;
  const char* fns[] = {"fib_recursive", "counter_add"};
  s.script = "@" + std::to_string(start) + " p:s0 " + fns[0] + "\n@" + std::to_string(start) + " p:s1 " + fns[1] + "\n";
  for (int i = 2; i < 26; ++i) {
    const uint64_t at = start + static_cast<uint64_t>(i - 1) * 5'000;
    s.script += "@" + std::to_string(at) + " -:s" + std::to_string(i - 2) + "\n";
    s.script += "@" + std::to_string(at) + " p:s" + std::to_string(i) + " " + fns[i % 2] + "\n";
  }
  s.until = start + 26 * 5'000;
  return s;
}

std::unique_ptr<EventObserver> slot_reuse_checker(Machine& m, const Options& o, Outcome& out) {
  auto chk = std::make_unique<SlotChecker>();
  chk->m = &m;
  chk->out = &out;
  chk->in_slot.assign(static_cast<size_t>(o.cpus), 0);
  return chk;
}

std::string slot_reuse_notes(const kprobes::Engine&, const Options& o, const Setup& s, uint64_t hits) {
  return std::string("kprobes on fib_recursive and counter_add removed and defined every 5,000 cycles until ") +
         std::to_string(s.until) + ", slots freed " + (o.broken ? "at once" : "after their grace period") + "; " +
         std::to_string(hits) + " hits";
}

}  // namespace ksim::race
