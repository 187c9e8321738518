// The Timeline window's model: one lane per CPU on a shared cycle axis.
// Built incrementally from the event log: spans (idle, the probe states
// of a hit, a patching job on its caller, a CPU inside stop_machine; the
// rest of a lane is the CPU running guest code), grace periods as bands
// across the lanes,
// marks (traps, interrupts, IPIs received, console lines, and probe
// operations: register, arm, disarm, unregister) and IPI arrows between
// lanes.
//
// Drawing a million events at 30 frames/s: the view never walks the
// events in range. For each pixel column it asks the lane for that
// column's cycle range, which is two binary searches on sorted arrays
// (bin_lane()), so a frame costs O(width * lanes * log events).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ui/model/event_log.hpp"
#include "sim/elf/symbols.hpp"
#include "ui/model/fsm_view.hpp"

namespace ksim::ui {

enum class SpanKind : uint8_t {
  running, idle, trap, hit_active, hit_ss, hit_ssdone, reenter,
  patching,  // the caller CPU's patching job (patch-begin .. patch-done)
  stopper,   // inside multi_cpu_stop (its first state .. MULTI_STOP_EXIT)
  count
};
const char* span_kind_name(SpanKind k);

struct Span {
  uint64_t begin = 0, end = 0;  // [begin, end); end = kOpen while it lasts
  SpanKind kind = SpanKind::running;
  uint32_t event = 0;  // the event that began it
};
struct Mark {
  uint64_t cycle = 0;
  uint32_t event = 0;
  EventKind kind = EventKind::trap;
};
// A grace period, across every lane: RCU-sched (gp-start .. gp-end) or
// RCU-tasks (tasks-gp-start .. tasks-gp-end).
struct Band {
  uint64_t begin = 0, end = 0;  // end = kOpen while it lasts
  bool tasks = false;
  uint32_t event = 0;  // its start event
};
struct Arrow {
  uint64_t from_cycle = 0, to_cycle = 0;
  int from = 0, to = 0;
  uint32_t event = 0;  // the ipi_send
};

// One pixel column of a lane.
struct Cell {
  // What the CPU was doing at the column's middle cycle: a sample that is
  // right in proportion to time when a column holds many spans.
  SpanKind span = SpanKind::running;
  SpanKind strongest = SpanKind::running;  // the furthest-in state among the column's first spans
  uint32_t spans = 0;                 // spans overlapping it (>1: mixed)
  uint32_t marks = 0;                 // marks inside it
  EventKind mark_kind = EventKind::trap;
  bool valid = false;                 // the column is before "now"
};

class TimelineIndex {
 public:
  static constexpr uint64_t kOpen = ~uint64_t{0};
  // Takes in the log's new events (rebuilds when the log dropped history).
  void sync(const EventLog& log, int cpus);
  int lanes() const { return static_cast<int>(lanes_.size()); }
  const std::vector<Span>& spans(int cpu) const { return lanes_[static_cast<size_t>(cpu)].spans; }
  const std::vector<Mark>& marks(int cpu) const { return lanes_[static_cast<size_t>(cpu)].marks; }
  const std::vector<Arrow>& arrows() const { return arrows_; }
  const std::vector<Band>& bands() const { return bands_; }
  // The bands overlapping [c0, c1).
  void bands_in(uint64_t c0, uint64_t c1, std::vector<const Band*>& out) const;
  uint64_t last_cycle() const { return last_cycle_; }

  // Columns [0, width) of lane `cpu`, column x covering cycles
  // [c0 + x*cpp, c0 + (x+1)*cpp); columns at or after `now` are invalid.
  void bin_lane(int cpu, double c0, double cpp, int width, uint64_t now, std::vector<Cell>& out) const;
  // The arrows starting in [c0, c1), at most one per `min_gap` cycles
  // (sub-pixel arrows are binned too).
  void arrows_in(uint64_t c0, uint64_t c1, uint64_t min_gap, std::vector<const Arrow*>& out) const;
  // The event nearest `cycle` on lane `cpu` within `tolerance` cycles
  // (marks and span starts), or EventLog::npos.
  size_t hit_test(int cpu, uint64_t cycle, uint64_t tolerance) const;

 private:
  struct Lane {
    std::vector<Span> spans;
    std::vector<Mark> marks;
    FsmNode state = FsmNode::idle, saved = FsmNode::idle;
    bool idle = false;
    bool in_job = false, in_stop = false;  // patching work under way on this CPU
  };
  void add(const EventLog& log, uint32_t i);
  void patching_span(Lane& l, const EventRec& r, const std::string& what, uint32_t i);
  void band(const EventRec& r, const std::string& what, uint32_t i);
  void open(Lane& l, uint64_t c, SpanKind k, uint32_t ev);
  void close(Lane& l, uint64_t c);
  std::vector<Lane> lanes_;
  std::vector<Arrow> arrows_;
  std::vector<Band> bands_;
  std::vector<std::vector<uint32_t>> pending_ipis_;  // per target: unmatched sends (indices into arrows_)
  size_t seen_ = 0;
  uint64_t generation_ = ~uint64_t{0};
  uint64_t last_cycle_ = 0;
};

// One line for a person: "cycle 1234, CPU 1: probe KPROBE_HIT_SS at do_fork".
std::string describe_event(const EventLog& log, size_t i, const SymbolTable& syms);

// The visible cycle range and the gestures that change it.
struct TimelineRange {
  double c0 = 0, c1 = 100'000;
  // Wheel: zoom by `factor` (< 1 zooms in) keeping `anchor` (a cycle) in place.
  void zoom(double factor, double anchor);
  // Drag by `pixels` (positive: the content moves right, earlier cycles come in).
  void pan(double pixels, double width);
  void clamp(double lo, double hi);
  double cycles_per_pixel(double width) const { return (c1 - c0) / (width > 1 ? width : 1); }
  double cycle_at(double x, double width) const { return c0 + x * cycles_per_pixel(width); }
  double x_of(double cycle, double width) const { return (cycle - c0) / cycles_per_pixel(width); }
};

}  // namespace ksim::ui
