// slot-reuse: kprobes on three kernel functions (fib_recursive, the hot
// one, counter_add and do_fork) are removed and defined again, one after
// the other, every 5,000 cycles, while every CPU hits them. A removed
// probe's instruction slot is freed and the next definition, on another
// function, takes a slot: the freed one when it is free.
//   correct: a freed slot waits until every CPU that was inside the engine
//            when it was freed has left it (the grace period of Linux's
//            kprobe_insn_slots garbage collection).
//   broken:  the slot is free at once, refilled and handed out again.
// Invariant: a CPU that steps a probe's instruction in its slot (or runs
// its boosted copy there) executes that probe's copy, the bytes written
// into the slot for it, not another probe's.
// Both variants patch the text with --kprobes-patching instant: the sync
// protocols' IPIs cannot be taken by a CPU inside a hit (its interrupts
// are off), so with them the removal itself waits for every stepping CPU
// and the slot could not be freed under it (docs/PATCHING.md).
#include <algorithm>
#include <cstring>
#include <map>

#include "cpu/hex.hpp"
#include "kprobes/engine.hpp"
#include "kprobes/races/race.hpp"

namespace ksim::race {

namespace {

const char* const kFunctions[] = {"fib_recursive", "counter_add", "do_fork"};

// Watches, in the order things happen to memory (immediate delivery), what
// each CPU executes in the slot it enters: the first instruction it runs
// there must be the copy the engine wrote into the slot for the probe it
// hit. The bytes are read when the slot is written and compared with the
// instruction the CPU fetched and executed (its insn event).
struct SlotWatch : EventObserver {
  Machine* m = nullptr;
  Outcome* out = nullptr;
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> copy;  // (probe, slot) -> the first 8 bytes written for it
  std::vector<std::pair<uint64_t, uint64_t>> entering;     // per CPU: (probe, slot) it is about to run, or none
  void on_event(const Event& e) override {
    if (out->violated || e.cpu < 0) return;
    auto& in = entering[static_cast<size_t>(e.cpu)];
    if (e.kind == EventKind::probe) {
      if (e.text == "slot-write") {
        uint64_t v = 0;
        m->bus().read_bytes(e.b, &v, 8);
        copy[{e.a, e.b}] = v;
      } else if (e.text == "KPROBE_HIT_SS" || e.text == "KPROBE_REENTER" || e.text == "boost") {
        in = {e.a, e.b};
      }
      return;
    }
    if (e.kind == EventKind::trap) in = {};  // a step ends at its trap
    if (e.kind != EventKind::insn || !in.second || e.a != in.second) return;
    const auto [probe, slot] = in;
    in = {};
    const auto it = copy.find({probe, slot});
    if (it == copy.end()) return;
    const unsigned len = static_cast<unsigned>(std::min<uint64_t>(e.c, 8));
    const uint64_t mask = len >= 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * len)) - 1;
    if ((e.b & mask) == (it->second & mask)) return;
    uint8_t ran[8], want[8];
    std::memcpy(ran, &e.b, 8);
    std::memcpy(want, &it->second, 8);
    const Isa isa = m->config().isa;
    violate(*out, *m, e.cycle, e.cpu,
            "cycle " + std::to_string(e.cycle) + ": cpu " + std::to_string(e.cpu) + " hit the probe on " +
                m->symbols().format(probe) + " and executed " + insn_bytes(isa, ran, len) + " in its slot " +
                hex(slot) + ", not the probe's copy " + insn_bytes(isa, want, len) +
                ": the slot was given to another probe meanwhile");
  }
};

// The ordered observer the scenario runner adds: it asks for instruction
// events and keeps the watch subscribed for immediate delivery.
struct SlotChecker : EventObserver {
  SlotWatch watch;
  Machine& m;
  SlotChecker(Machine& mach, Outcome& out, int cpus) : m(mach) {
    watch.m = &m;
    watch.out = &out;
    watch.entering.assign(static_cast<size_t>(cpus), {0, 0});
    m.events().add(&watch, EventStream::Delivery::immediate);
  }
  ~SlotChecker() override { m.events().remove(&watch); }
  bool wants_insns() const override { return true; }
  void on_event(const Event&) override {}
};

}  // namespace

Setup slot_reuse_setup(const Machine&, const Options& o) {
  Setup s;
  s.name = "slot-reuse";
  s.configure = [broken = o.broken](kprobes::Engine& eng) {
    eng.set_patching(kprobes::Patching::instant);
    eng.set_slot_grace(!broken);
  };
  // Two probes alive at a time, the older removed and a new one, on the
  // next function, defined every 5,000 cycles; the seed shifts the whole
  // sequence.
  const uint64_t start = 180'000 + (o.seed * 7'919) % 5'000;
  s.script = "@" + std::to_string(start) + " p:s0 " + kFunctions[0] + "\n@" + std::to_string(start) + " p:s1 " +
             kFunctions[1] + "\n";
  for (int i = 2; i < 26; ++i) {
    const uint64_t at = start + static_cast<uint64_t>(i - 1) * 5'000;
    s.script += "@" + std::to_string(at) + " -:s" + std::to_string(i - 2) + "\n";
    s.script += "@" + std::to_string(at) + " p:s" + std::to_string(i) + " " + kFunctions[i % 3] + "\n";
  }
  s.until = start + 26 * 5'000;
  return s;
}

std::unique_ptr<EventObserver> slot_reuse_checker(Machine& m, const Options& o, Outcome& out) {
  return std::make_unique<SlotChecker>(m, out, o.cpus);
}

std::string slot_reuse_notes(const kprobes::Engine&, const Options& o, const Setup& s, uint64_t hits) {
  return std::string("kprobes on fib_recursive, counter_add and do_fork removed and defined every 5,000 cycles until ") +
         std::to_string(s.until) + ", slots freed " + (o.broken ? "at once" : "after their grace period") + "; " +
         std::to_string(hits) + " hits";
}

}  // namespace ksim::race
