// What the Probes window shows: the session's probes (hits, nmissed,
// state), the engine's debugfs kprobes/list, and the kprobes/enabled knob.
// Changes go through Debugger::probe_op, so they are part of the timeline.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ui/model/debugger.hpp"

namespace ksim::ui {

struct ProbeRow {
  std::string event;       // GRP/EVENT
  std::string definition;  // canonical kprobe_events line
  char type = 'k';         // k or r (debugfs list letters)
  uint64_t addr = 0;
  std::string where;       // symbol+off
  bool disabled = false, removed = false;
  uint64_t hits = 0, nmissed = 0;
  std::string action;
};

std::vector<ProbeRow> probe_rows(Debugger& d);

// The --probe-script's operations: where each is performed, as written,
// and whether it has been (the Probes window lists the next ones, the
// timeline marks them all).
struct ScriptOpRow {
  uint64_t cycle = 0;
  std::string text;  // "disable myfork"
  int line = 0;      // in the script
  bool done = false;
};
std::vector<ScriptOpRow> script_ops(Debugger& d);
// debugfs kprobes/list ("" without an engine).
std::string kprobes_list(Debugger& d);
bool kprobes_enabled(Debugger& d);

}  // namespace ksim::ui
