// The debugger's event history: every event the machine delivered, in the
// event stream's global (cycle, CPU) order, kept compactly and indexed by
// kind and by CPU, plus the probe session's ftrace-style lines.
//
// The log outlives the machine it listens to. Going back in time rebuilds
// or restores the machine and replays it; the replayed run delivers the
// same events again (a run is a function of its inputs), so the log keeps
// a cursor: events it already holds are checked against what it has and
// skipped, new ones are appended. A change of the future (a probe added
// at some point) truncates the log at that point (truncate()).
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/events.hpp"

namespace ksim::ui {

// Every kind the stream has, the last one included (an index per kind).
inline constexpr int kEventKinds = static_cast<int>(EventKind::code_sync) + 1;

struct EventRec {
  uint64_t cycle = 0;
  uint64_t a = 0, b = 0, c = 0;
  int16_t cpu = 0;
  EventKind kind = EventKind::console;
  uint8_t sub = 0;
  uint32_t text = 0;  // index into EventLog::text(); 0 = none
};

// One ftrace-style line of the probe session, stamped with the clock of
// the CPU that hit.
struct ProbeLine {
  uint64_t cycle = 0;
  int cpu = 0;
  std::string text;
};

class EventLog final : public EventObserver {
 public:
  EventLog();
  void on_event(const Event& e) override;

  // --- replay -----------------------------------------------------------
  // A replayed run has delivered `delivered` events so far (a restored
  // checkpoint's count, or 0 for a fresh machine): what follows is compared
  // with the log from there.
  void rewind(size_t delivered, size_t lines);
  size_t cursor() const { return cursor_; }
  size_t line_cursor() const { return line_cursor_; }
  // Drops everything from event index `events` and line index `lines` on.
  void truncate(size_t events, size_t lines);
  // Events the replay delivered that differed from the log (a determinism
  // failure: tests require 0).
  uint64_t mismatches() const { return mismatches_; }
  // Bumped whenever recorded history is dropped (views rebuild from it).
  uint64_t generation() const { return generation_; }

  void add_line(uint64_t cycle, int cpu, const std::string& text);

  // --- reading ------------------------------------------------------------
  size_t size() const { return recs_.size(); }
  const EventRec& operator[](size_t i) const { return recs_[i]; }
  const std::vector<EventRec>& all() const { return recs_; }
  const std::string& text(uint32_t id) const { return texts_[id]; }
  const std::string& text(const EventRec& r) const { return texts_[r.text]; }
  // Indices of the events of one kind, in order.
  const std::vector<uint32_t>& of_kind(EventKind k) const { return by_kind_[static_cast<int>(k)]; }
  const std::vector<ProbeLine>& lines() const { return lines_; }
  // First event (index) of kind `k` with cycle >= c, or size() when none.
  size_t first_at_or_after(EventKind k, uint64_t c) const;
  // Last event of kind `k` with cycle < c, or npos.
  size_t last_before(EventKind k, uint64_t c) const;
  static constexpr size_t npos = ~size_t{0};
  // Bytes held (for the memory budget).
  size_t memory_bytes() const;

 private:
  uint32_t intern(const Event& e);
  void append(const Event& e);
  std::vector<EventRec> recs_;
  std::vector<uint32_t> by_kind_[kEventKinds];
  std::vector<std::string> texts_;
  std::unordered_map<std::string, uint32_t> interned_;  // probe state names
  std::vector<ProbeLine> lines_;
  size_t cursor_ = 0, line_cursor_ = 0;
  uint64_t mismatches_ = 0;
  uint64_t generation_ = 0;
};

}  // namespace ksim::ui
