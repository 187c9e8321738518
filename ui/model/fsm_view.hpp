// The probe state machine of one CPU, as the Probe state machine window
// draws it: Linux's kprobe_status values (include/linux/kprobes.h) plus
// idle and the breakpoint trap, the arrows between them, the current
// state (from the engine's per-CPU control block), current_kprobe and the
// saved previous probe, and the recent transitions (from the event log,
// each with the index of its event, so a click can travel there).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ui/model/debugger.hpp"

namespace ksim::ui {

enum class FsmNode : uint8_t { idle, trap, hit_active, hit_ss, hit_ssdone, reenter };
inline constexpr int kFsmNodes = 6;
const char* fsm_node_name(FsmNode n);
// The name in a narrow diagram's box: without Linux's KPROBE_ prefix
// ("HIT_SS"), "bp trap" for the breakpoint trap.
const char* fsm_node_short_name(FsmNode n);

// The diagram: nodes on a unit square (x right, y down), arrows labelled
// by what takes them: break (the breakpoint traps), pre (lookup and pre
// handlers), stray (the probe was gone: re-execute the original), step (the
// copy in the slot, or emulation), redirect (a pre handler moved the PC),
// post (step done: post handlers), resume, reentry (a probe hit while
// handling one), restore (the reentered step is done).
struct FsmNodeLayout {
  FsmNode node;
  float x, y;
};
struct FsmEdge {
  FsmNode from, to;
  const char* label;
};
// Arrangements, widest first: two rows of three boxes; when a canvas is too
// narrow for three of Linux's long state names side by side, three rows
// (KPROBE_REENTER on a row of its own); narrower still, two rows with the
// short names.
struct FsmArrangement {
  std::vector<FsmNodeLayout> places;
  bool short_names = false;
};
const std::vector<FsmArrangement>& fsm_arrangements();
const std::vector<FsmEdge>& fsm_edges();

// The state a probe event leaves its CPU in, given the state before it;
// false when the event is not a state change of that CPU (arm, register...).
bool fsm_after(const std::string& what, FsmNode before, FsmNode prev_saved, FsmNode& after);

struct FsmTransition {
  size_t event = 0;  // index in the event log; EventLog::npos: still held for ordering (pending)
  uint64_t cycle = 0;
  FsmNode from = FsmNode::idle, to = FsmNode::idle;
  std::string what;  // the engine's event text
  std::string where; // the probe address as symbol+off
};

struct FsmView {
  FsmNode current = FsmNode::idle;
  std::string phase;           // the parked phase, "" when not parked
  std::string current_kprobe;  // symbol+off or ""
  std::string prev_kprobe;     // the saved previous probe (reentry), or ""
  std::string prev_status;
  std::vector<FsmTransition> recent;  // oldest first
};

// Recent transitions are those of the events delivered so far in this
// world (the log's replay cursor), then those the event stream still holds
// for ordering (a CPU ahead of the others produced them), at most
// `max_recent`.
FsmView fsm_view(Debugger& d, int cpu, size_t max_recent = 16);

// Every transition of `cpu` in the log's first `upto` events (timeline, tests).
std::vector<FsmTransition> fsm_transitions(const EventLog& log, const SymbolTable& syms, int cpu, size_t upto);

}  // namespace ksim::ui
