// A probe script (`ksim run --probe-script FILE`): probe operations to
// perform at given cycles of a run, one a line:
//
//   @CYCLE OP
//
// where OP is one of
//   p... / r...              a kprobe_events definition (probe_spec.hpp)
//   -:[GRP/]EVENT            remove that event's probe (kprobe_events syntax)
//   enable [GRP/]EVENT       enable_kprobe() on it
//   disable [GRP/]EVENT      disable_kprobe() on it
//   kprobes-enabled 0|1      the debugfs kprobes/enabled knob
//   kprobes-optimization 0|1 the debug.kprobes-optimization sysctl (x86 jump
//                            optimization: unoptimize or optimize everything)
//
// CYCLE is decimal or 0x hex. A '#' starts a comment to the end of the
// line (as Linux's trace_parse_run_command reads a kprobe_events file);
// blank lines are ignored. Operations are performed in cycle order,
// lines of the same cycle in file order (kprobes/op_queue.hpp runs them).
//
// Parsing checks the syntax only; whether an event exists when it is
// named, and whether a probe location is acceptable, needs the guest and
// the engine (ProbeOpQueue::check). Every refusal is a ScriptError whose
// what() is three lines: FILE:LINE: the reason, the line, and a caret
// under the offending column:
//   churn.probes:3: bad probe spec: unknown register 'foo'
//     @2000 p:do_fork flags=%foo
//                           ^
#pragma once
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "kprobes/events/probe_spec.hpp"

namespace ksim::kprobes {
class Engine;
}

namespace ksim::kprobes::events {

class ScriptError : public std::runtime_error {
 public:
  ScriptError(const std::string& file, int line, std::string_view line_text, size_t column,
              const std::string& reason);
  int line() const { return line_; }
  size_t column() const { return column_; }  // 0-based, into the line

 private:
  int line_;
  size_t column_;
};

struct ProbeOp {
  // custom: no script line makes one; a program that schedules engine work
  // of its own beside a script's (a race scenario's text_poke_bp) gives
  // `run`, performed like the others, as an operation of the caller CPU.
  enum class Kind : uint8_t { define, remove, enable, disable, knob, optimization, custom };
  Kind kind = Kind::define;
  uint64_t cycle = 0;
  int line = 0;            // 1-based line in the script
  std::string line_text;   // the whole line, for errors
  size_t column = 0;       // where the operation starts in the line
  std::string text;        // the operation as written (after @CYCLE), trimmed
  ProbeSpec spec;          // define
  std::string group;       // remove/enable/disable: "" when not given
  std::string event;       // remove/enable/disable
  size_t event_column = 0; // where [GRP/]EVENT starts in the line
  bool on = false;         // knob, optimization
  std::function<void(Engine&)> run;  // custom (throws std::runtime_error to fail)
};

// Parses a whole script (register names come from `arch`); `file` names
// it in errors. Throws ScriptError for the first bad line.
std::vector<ProbeOp> parse_probe_script(std::string_view script, const std::string& file, const Arch& arch);

}  // namespace ksim::kprobes::events
