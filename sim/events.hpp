// The event stream: one observer interface for everything worth seeing in
// a run. Every event has a cycle, a CPU, a kind and a payload. Observers are
// the trace writer (--trace), the trace hasher (trace-hash), and later the
// debugger's timeline and the probe engine's statistics.
//
// Instruction-retired events are special: they are produced only when some
// observer asked for them (wants_insns), because the interpreter then runs
// a slower loop; nobody listening costs nothing.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sim/serial.hpp"

namespace ksim {

enum class EventKind : uint8_t {
  insn,       // a = pc, b = raw encoding, c = length in bytes (only when asked)
  trap,       // a = cause, b = tval, c = pc; text "delivered" or "hooked"
  interrupt,  // a = cause, c = pc
  console,    // text = one line of guest console output (without '\n')
  ipi_send,   // a = target cpu
  ipi_recv,   // a = source cpu (an interrupt raised by another CPU; not for self or host writes)
  idle,       // the CPU waits for an interrupt
  wake,       // the CPU left idle
  exit,       // a = status; text = how the run ended
  probe,      // kprobes engine state change: a = probe address, text = what (docs/KPROBES.md)
  probe_op,   // a probe operation of --probe-script performed: a = script line, b = 1 if it failed,
              // c = the cycle the script asked for; text = the operation as written
  // Code as CPUs see it (--code-model relaxed, docs/CODE_MODEL.md); only
  // when something stores into code:
  stale_fetch,  // the CPU executed the instruction at a from a stale view: it does not see the store
                // made at cycle b by CPU c yet (once per store and CPU)
  code_sync,    // the CPU serialised (x86) or ran fence.i (RV64) with a stale view: a = stores it now sees
  // Timing v2's caches (docs/TIMING.md), only with MachineConfig::trace_cache
  // (ksim run --trace-cache), stamped with the step the access belongs to:
  cache_miss,   // a = the line's address, b = the access (CacheAccess), c = where the line came from
                // (CacheSource: the L2, memory, or 2 + k for CPU k's modified copy, a transfer)
};

// cache_miss's b and c.
enum CacheAccess : uint8_t { kMissLoad = 0, kMissStore = 1, kMissFetch = 2, kMissUpgrade = 3 };
enum CacheSource : uint8_t { kFromL2 = 0, kFromMemory = 1, kFromCpu = 2 };

const char* event_kind_name(EventKind k);

struct Event {
  uint64_t cycle = 0;
  int cpu = 0;  // -1 for machine-wide events
  EventKind kind = EventKind::console;
  uint64_t a = 0, b = 0, c = 0;
  // Free text for people (trace files, the debugger). It is not hashed,
  // except for console lines (guest output) and probe events (a fixed
  // vocabulary of engine state names, docs/KPROBES.md), so rewording a
  // message or upgrading the disassembler never changes a trace hash.
  // Probe operations (probe_op) hash their text too: it is the input.
  std::string text;
  // A small structured qualifier: trap and interrupt events: 1 when a host
  // hook handled the trap (the guest never saw it), 0 when delivered; exit
  // events: how the run ended (RunResult::End).
  uint8_t sub = 0;
};

class EventObserver {
 public:
  virtual ~EventObserver() = default;
  virtual void on_event(const Event& e) = 0;
  virtual bool wants_insns() const { return false; }
};

// Observers see events in global (cycle, CPU) order, whatever order the
// CPUs produced them in. Producers stamp an event with the cycle at which
// it happened, which is never before the producing CPU's clock at the
// start of its current scheduling slot; the machine knows a low-water
// mark below which no CPU can produce anything any more (the smallest
// clock or wake-up time of all CPUs) and releases held events below it,
// sorted by (cycle, CPU, emission order). This holds for any scheduling
// quantum, and it is what lets a CPU run ahead of the others without its
// events overtaking theirs. Exit events come last. Outside ordered mode (no
// machine running it), events go straight to the observers.
//
// Ordered observers must be passive: they see an event some time after it
// happened, at a point that depends on how the run was sliced. An observer
// that acts on the machine at a precise moment (a test that unregisters a
// probe right after a CPU trapped on it) subscribes for immediate delivery
// instead: it sees each event as it is produced, in producer order.
class EventStream {
 public:
  enum class Delivery { ordered, immediate };
  void add(EventObserver* o, Delivery d = Delivery::ordered) {
    (d == Delivery::ordered ? observers_ : immediate_).push_back(o);
  }
  void remove(EventObserver* o);
  // A place in the emission order, taken now for an event that may be
  // emitted later (emit_at_seq): it sorts as if emitted now.
  uint64_t reserve_seq() { return seq_++; }
  void emit_at_seq(const Event& e, uint64_t seq) {
    if (!immediate_.empty()) [[unlikely]]
      for (auto* o : immediate_) o->on_event(e);
    if (observers_.empty()) return;
    if (!ordered_) {
      deliver(e);
      return;
    }
    held_.push_back(Held{e, seq});
    // Never below what was already released (a host action stamped with an
    // idle CPU's lagging clock): the order promise holds whatever happens.
    if (held_.back().e.cycle < released_below_) held_.back().e.cycle = released_below_;
    push_heap();
  }
  void emit(const Event& e) {
    if (observers_.empty() && immediate_.empty()) return;
    emit_at_seq(e, seq_++);
  }
  bool wants_insns() const;
  // No observer: producers may skip building events.
  bool empty() const { return observers_.empty() && immediate_.empty(); }
  // Someone receives events in order (so they may be held).
  bool has_ordered_observers() const { return !observers_.empty(); }

  // Ordered mode (the machine turns it on while it runs or is paused).
  void set_ordered(bool on);
  bool ordered() const { return ordered_; }
  // Delivers held events whose cycle is below `cycle`, in order.
  void release_below(uint64_t cycle) {
    if (cycle > released_below_) released_below_ = cycle;
    if (!held_.empty() && held_.front().e.cycle < cycle) release_below_slow(cycle);
  }
  // Delivers every held event, in order.
  void drain() { release_below_slow(~uint64_t{0}); }
  size_t held() const { return held_.size(); }
  // Visits the held events (not yet delivered), in no particular order,
  // with their emission numbers: the debugger shows them as pending.
  template <typename F>
  void for_each_held(F&& f) const {
    for (const Held& h : held_) f(h.e, h.seq);
  }
  // Held events are part of a paused machine's state (checkpoints).
  void save(Writer& w) const;
  void restore(Reader& r);
  // Takes over `from`'s held events (restoring a checkpoint after it was
  // read and validated), keeping this stream's observers.
  void adopt_held(EventStream&& from) {
    held_ = std::move(from.held_);
    seq_ = from.seq_;
    released_below_ = from.released_below_;
  }

 private:
  struct Held {
    Event e;
    uint64_t seq;
  };
  void deliver(const Event& e) const {
    for (auto* o : observers_) o->on_event(e);
  }
  void push_heap();
  void release_below_slow(uint64_t cycle);
  std::vector<EventObserver*> observers_, immediate_;
  std::vector<Held> held_;  // a min-heap on (exit last, cycle, cpu, seq)
  uint64_t seq_ = 0;
  uint64_t released_below_ = 0;  // everything below this cycle was delivered
  bool ordered_ = false;
};

// FNV-1a over the structured fields of every event except instruction
// events (so asking for an instruction trace does not change the hash):
// cycle, CPU, kind, a, b, c, sub, and the text of console, probe and
// probe_op events only (see Event::text).
class TraceHasher final : public EventObserver {
 public:
  void on_event(const Event& e) override;
  uint64_t value() const { return h_; }
  void set_value(uint64_t v) { h_ = v; }  // continue a hash saved in a checkpoint
  std::string hex() const;

 private:
  void mix(const void* p, size_t n);
  uint64_t h_ = 0xcbf29ce484222325ull;
};

}  // namespace ksim
