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

namespace ksim {

enum class EventKind : uint8_t {
  insn,       // a = pc, b = raw encoding                      (only when asked)
  trap,       // a = cause, b = tval, c = pc; text "delivered" or "hooked"
  interrupt,  // a = cause, c = pc
  console,    // text = one line of guest console output (without '\n')
  ipi_send,   // a = target cpu
  ipi_recv,   // a = source cpu
  idle,       // the CPU waits for an interrupt
  wake,       // the CPU left idle
  exit,       // a = status; text = how the run ended
  probe,      // kprobes engine state change: a = probe address, text = what (docs/KPROBES.md)
};

const char* event_kind_name(EventKind k);

struct Event {
  uint64_t cycle = 0;
  int cpu = 0;  // -1 for machine-wide events
  EventKind kind = EventKind::console;
  uint64_t a = 0, b = 0, c = 0;
  std::string text;
};

class EventObserver {
 public:
  virtual ~EventObserver() = default;
  virtual void on_event(const Event& e) = 0;
  virtual bool wants_insns() const { return false; }
};

class EventStream {
 public:
  void add(EventObserver* o) { observers_.push_back(o); }
  void remove(EventObserver* o);
  void emit(const Event& e) const {
    for (auto* o : observers_) o->on_event(e);
  }
  bool wants_insns() const;
  // No observer: producers may skip building events.
  bool empty() const { return observers_.empty(); }

 private:
  std::vector<EventObserver*> observers_;
};

// FNV-1a over every event except instruction events (so asking for an
// instruction trace does not change the hash).
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
