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
// into the slot for it: no slot is rewritten under a CPU about to run it.
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

// Watches, in the order things happen to memory (immediate delivery), the
// slots the engine writes. A CPU that hit a probe and was sent into its
// slot (KPROBE_HIT_SS, KPROBE_REENTER, boost) executes the instruction at
// the slot next. When a slot is written (refilled with breakpoints, or a
// new probe's copy) while such a CPU still stands at the slot's first
// byte, what that CPU will execute is what its view of the code shows
// there now (Cpu::fetch_view): it must be its own probe's copy, the bytes
// written into the slot for that probe.
struct SlotWatch : EventObserver {
  Machine* m = nullptr;
  Outcome* out = nullptr;
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> copy;  // (probe, slot) -> the first 8 bytes written for it
  std::vector<std::pair<uint64_t, uint64_t>> entering;     // per CPU: (probe, slot) it was sent into, or none
  void on_event(const Event& e) override {
    if (out->violated || e.cpu < 0 || e.kind != EventKind::probe) return;
    if (e.text == "KPROBE_HIT_SS" || e.text == "KPROBE_REENTER" || e.text == "boost") {
      entering[static_cast<size_t>(e.cpu)] = {e.a, e.b};
      return;
    }
    if (e.text != "slot-write" && e.text != "slot-free") return;
    const uint64_t slot = e.b;
    for (size_t k = 0; k < entering.size() && !out->violated; ++k) check(static_cast<int>(k), slot, e);
    if (e.text == "slot-write") {
      uint64_t v = 0;
      m->bus().read_bytes(slot, &v, 8);
      copy[{e.a, slot}] = v;
    }
  }
  void check(int k, uint64_t slot, const Event& w) {
    const auto [probe, at] = entering[static_cast<size_t>(k)];
    const Cpu& cpu = m->cpu(k);
    if (at != slot || cpu.pc() != slot) return;  // not this slot, or its copy has run already
    const auto it = copy.find({probe, slot});
    if (it == copy.end()) return;
    uint64_t sees = 0;
    if (cpu.fetch_view(slot, reinterpret_cast<uint8_t*>(&sees), 8) != 8 || sees == it->second) return;
    uint8_t now[8], want[8];
    std::memcpy(now, &sees, 8);
    std::memcpy(want, &it->second, 8);
    const Isa isa = m->config().isa;
    // RV64 as its parcel (the copied instruction's length from its low
    // bits); x86 in memory order, the eight bytes the CPU fetches from.
    const unsigned len = isa == Isa::rv64 ? ((now[0] & 3) == 3 ? 4 : 2) : 8;
    const unsigned want_len = isa == Isa::rv64 ? ((want[0] & 3) == 3 ? 4 : 2) : 8;
    violate(*out, *m, w.cycle, k,
            "cycle " + std::to_string(w.cycle) + ": cpu " + std::to_string(w.cpu) + " wrote slot " + hex(slot) +
                " (" + w.text + ") while cpu " + std::to_string(k) + ", sent there by the probe on " +
                m->describe(probe) + ", had yet to execute its copy " + insn_bytes(isa, want, want_len) +
                ": it executes " + insn_bytes(isa, now, len) + " instead",
            slot, "rewritten before the CPU sent here ran its copy");
  }
};

// The ordered observer the scenario runner adds; the watch itself is
// subscribed for immediate delivery.
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
