// Probe operations scheduled at simulated cycles (`ksim run --probe-script`):
// each one is performed on behalf of a caller CPU when the run reaches its
// cycle, inside the simulation, so a run with a script is as deterministic
// as one without (same result on every run and on the reference schedule).
//
// How: the queue runs the machine to the next operation's cycle with
// RunLimits::cycle, which bounds the running CPU's slot there (nothing is
// added to the per-instruction path). When the machine pauses, every
// instruction that starts before the cycle has run and none that starts at
// or after it; the operation is then performed on the caller CPU (an idle
// caller first lets idle time pass up to the cycle) through the engine's
// registration, enable/disable and knob calls, which charge that CPU, and
// the run resumes on the same schedule. Each operation emits one
// EventKind::probe_op event (line, the cycle asked for, the text, whether
// it failed) stamped with the caller's clock.
//
// The operation's bookkeeping (analysis, publishing, the probe's state) is
// done at once; the text is then patched by the caller CPU over simulated
// time through the engine's patching protocol (kprobes/patching.hpp),
// which perform() starts.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kprobes/events/probe_script.hpp"
#include "kprobes/session.hpp"
#include "sim/machine.hpp"

namespace ksim::kprobes {

class ProbeOpQueue {
 public:
  // How often an operation waiting for its caller CPU to come online looks
  // again (a polling step of the host, not a guest cost).
  static constexpr uint64_t kOfflineRetryCycles = 1000;
  // The same for a caller CPU inside a probe hit (Engine::caller_in_hit),
  // which lasts hundreds of cycles.
  static constexpr uint64_t kInHitRetryCycles = 50;

  // What became of one operation.
  struct Outcome {
    bool performed = false;
    bool failed = false;
    uint64_t at = 0;    // the caller's clock when it was performed
    std::string error;  // why it failed
  };

  // `ops` in any order: they are performed by cycle, equal cycles in
  // script order. `file` names the script in errors.
  ProbeOpQueue(ProbeSession& session, std::vector<events::ProbeOp> ops, int caller_cpu, std::string file);

  // Checks every operation before the run, in the order they will be
  // performed, against the session's events at that point and the guest:
  // a definition must name a new event and a location the engine accepts
  // (engine.check_location), a removal, enable or disable an event that
  // exists then. Throws events::ScriptError (FILE:LINE, caret).
  void check() const;

  // `--probe-action EVENT=ACTION` for an event the script defines: set
  // when the definition is performed. Throws SessionError when no
  // definition names EVENT or the action is malformed.
  void add_action(const std::string& event, const std::string& action);

  // Runs the machine to its end, performing each operation when the run
  // reaches its cycle. Operations past the end of the run are not
  // performed.
  RunResult run(Machine& m);
  // The same, pausing at `until` (operations after it are not performed).
  RunResult run_until(Machine& m, uint64_t until);

  // Performs `op` now on the caller CPU (the machine paused at op.cycle).
  void perform(const events::ProbeOp& op);

  const std::vector<events::ProbeOp>& ops() const { return ops_; }
  const std::vector<Outcome>& outcomes() const { return outcomes_; }
  size_t performed() const { return next_; }
  // The cycle of the next operation to perform (~0: none left).
  uint64_t next_cycle() const { return next_ < ops_.size() ? ops_[next_].cycle : ~uint64_t{0}; }
  int caller_cpu() const { return caller_; }

 private:
  RunResult finish(const RunResult& r);
  ProbeSession& session_;
  Engine& eng_;
  std::vector<events::ProbeOp> ops_;
  std::vector<Outcome> outcomes_;
  std::vector<std::pair<std::string, std::string>> actions_;  // [GRP/]EVENT, ACTION
  int caller_;
  std::string file_;
  size_t next_ = 0;
};

}  // namespace ksim::kprobes
