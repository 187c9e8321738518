// The debugger's model of time: where the machine stands, how to move it
// forward and back exactly, and the probe operations made along the way.
//
// Positions. A paused machine has done a prefix of its run: every step
// (instruction or trap) and host phase up to some point of the schedule.
// The debugger reaches a position by one of three targets:
//   cycle C  - RunLimits{cycle = C}: no CPU starts anything at or after C
//   steps S  - RunLimits{steps = S}: exactly S machine steps
//   end      - the run's end
// Pausing never changes the schedule (docs/SCHEDULING.md), so a target
// names one machine state whatever path led there: that is what makes
// going back exact.
//
// Going back. Forward moves just run the machine. A move to a position
// that is not ahead of the current one starts again from the latest base
// at or before it, and runs forward: a base is a checkpoint taken while no
// probe engine existed (sim/checkpoint.*; checkpoints do not hold the
// engine's state yet), or else the machine as booted. On the way, the
// probe operations recorded in the timeline are applied again at the
// positions where they were made. A new operation changes the future: the
// operations, checkpoints and events recorded after it are dropped.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sim/elf/source_text.hpp"
#include "ui/model/event_log.hpp"
#include "ui/model/world.hpp"

namespace ksim::ui {

struct Target {
  enum class Kind : uint8_t { cycle, steps, end };
  Kind kind = Kind::cycle;
  uint64_t value = 0;
  static Target at_cycle(uint64_t c) { return {Kind::cycle, c}; }
  static Target at_steps(uint64_t s) { return {Kind::steps, s}; }
  static Target at_end() { return {Kind::end, 0}; }
};

// Where the machine stands after a move.
struct Position {
  Target target;        // how it was reached
  uint64_t steps = 0;   // machine steps done
  uint64_t low = 0;     // smallest ready time of the CPUs: nothing can start before it
  uint64_t high = 0;    // largest CPU clock
  bool ended = false;
};

// Which events "next event" / "previous event" stop at.
struct EventFilter {
  EventKind kind = EventKind::probe;
  int cpu = -1;      // -1: any CPU
  // Probe events: only those with one of these texts (a hit:
  // "KPROBE_HIT_ACTIVE" from the breakpoint, "optimized-hit" from a
  // detour buffer's jump); none: any.
  std::vector<std::string> texts;
  bool matches(const EventLog& log, const EventRec& r) const {
    if (r.kind != kind || (cpu >= 0 && r.cpu != cpu)) return false;
    if (texts.empty()) return true;
    const std::string& t = log.text(r);
    for (const std::string& want : texts)
      if (t == want) return true;
    return false;
  }
};

// Registers of every CPU, for "changed by the last move".
using RegSnapshot = std::vector<std::vector<uint64_t>>;

class Debugger {
 public:
  // `initial` are applied at cycle 0, before the first instruction (the
  // --probe options).
  Debugger(WorldSpec spec, const std::vector<ProbeOp>& initial);
  ~Debugger();

  // --- moves (each one is one entry in the view's undo-free history) --------
  void step(uint64_t n = 1);        // n machine steps, in schedule order
  // One step of `cpu` (the others run as the schedule says meanwhile).
  // False (and no move) when it takes more than `max_steps` machine steps.
  bool step_cpu(int cpu, uint64_t max_steps = 1'000'000);
  void step_cycle();                // everything that starts at the lowest ready cycle
  void go_to_cycle(uint64_t c);     // forward or back
  void go_to_steps(uint64_t s);     // forward or back
  void run_to_end();
  bool step_back(uint64_t n = 1);   // n machine steps back (false at step 0)
  bool step_back_cpu(int cpu);      // back to just before that CPU's latest step
  // Runs on for at most `cycles` cycles (the view's Run button, per frame).
  void run_for(uint64_t cycles);
  // The next / previous event of kind `k` (on `cpu`, or any CPU when -1):
  // the debugger lands just after it (target cycle = its cycle + 1). False
  // when there is none (the run ended first, or nothing before).
  bool next_event(const EventFilter& f, uint64_t max_cycles = 50'000'000'000ull);
  bool prev_event(const EventFilter& f);
  bool next_event(EventKind k) { return next_event(EventFilter{k, -1, {}}); }
  bool prev_event(EventKind k) { return prev_event(EventFilter{k, -1, {}}); }
  // Lands just after the event with index `i` in the log (a click in the
  // timeline or the state machine's transition list).
  void go_to_event(size_t i);
  // The event the last next/prev/go_to_event landed after (EventLog::npos: none).
  size_t landed_event() const { return landed_; }

  // --- probes -------------------------------------------------------------------
  // Applies `op` here; "" or the error (nothing changes on an error).
  std::string probe_op(ProbeOp op);
  size_t ops() const { return ops_.size(); }

  // --- reading ----------------------------------------------------------------
  World& world() { return *world_; }
  // The guest's source files, read once for the Code and Source views.
  SourceFiles& sources() { return sources_; }
  EventLog& log() { return log_; }
  const Position& position() const { return pos_; }
  // The cycle the views call "now": the target cycle when the machine was
  // run to a cycle, else the lowest ready time.
  uint64_t here() const { return pos_.target.kind == Target::Kind::cycle ? pos_.target.value : pos_.low; }
  uint64_t state_hash() const { return world_->state_hash(); }
  // Registers before the last move, and which changed.
  const RegSnapshot& regs_before() const { return before_; }
  bool reg_changed(int cpu, int reg) const;
  // Bumped by every move and every probe operation: views cache on it.
  uint64_t moves() const { return moves_; }
  // Counters for tests and the status line.
  uint64_t rebuilds() const { return rebuilds_; }
  uint64_t restores() const { return restores_; }
  size_t checkpoints() const { return bases_.size(); }
  const std::string& last_error() const { return error_; }

 private:
  SourceFiles sources_;
  struct Base {  // a checkpoint taken with no engine in the world
    Position pos;
    std::vector<uint8_t> bytes;
    size_t events = 0, lines = 0;
  };
  struct RecordedOp {
    ProbeOp op;
    Position at;
  };
  void go(Target t);
  void reach(Target t);  // runs the current world forward to t
  bool reach_either(uint64_t cycle, uint64_t steps);
  void rebuild_from(const Base* base);
  void note_position(Target t);
  void maybe_checkpoint();
  RegSnapshot snapshot() const;
  void begin_move();
  void end_move();
  // Whether running forward from `from` reaches t: from's state is a
  // prefix of t's (conservatively: false when unsure).
  bool ahead(const Position& from, Target t) const;

  WorldSpec spec_;
  EventLog log_;
  std::unique_ptr<World> world_;
  Position pos_;
  std::vector<RecordedOp> ops_;
  size_t applied_ = 0;            // ops_ applied in the current world
  std::map<uint64_t, Base> bases_;  // by target cycle
  std::vector<Position> waypoints_;  // cycle positions visited (fast prefixes for step targets)
  RegSnapshot before_, after_;
  uint64_t moves_ = 0, rebuilds_ = 0, restores_ = 0;
  std::string error_;
  size_t landed_ = EventLog::npos;
};

}  // namespace ksim::ui
