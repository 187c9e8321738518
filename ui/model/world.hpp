// One simulated world as the debugger drives it: the machine, the kprobes
// engine and probe session (created at the first probe operation, as
// `ksim run` creates them only with --probe), the trace hasher `ksim run`
// prints, and the debugger's event log listening to it.
//
// A World is rebuilt from its WorldSpec whenever the debugger travels to a
// point it cannot restore from a checkpoint (checkpoints do not hold the
// engine's state), and replays the recorded probe operations.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kprobes/engine.hpp"
#include "kprobes/op_queue.hpp"
#include "kprobes/session.hpp"
#include "sim/machine.hpp"
#include "ui/model/event_log.hpp"

namespace ksim::ui {

struct WorldSpec {
  MachineConfig config;
  std::shared_ptr<const ElfImage> image;
  kprobes::StepMode mode = kprobes::StepMode::modern;
  kprobes::Locking locking = kprobes::Locking::rcu;
  std::optional<kprobes::Patching> patching;  // unset: the ISA's Linux protocol
  // --kprobes-boost, --kprobes-optimization, --kprobes-rethook (as ksim run).
  bool boost = true, optimize = true, rethook = true;
  // `--probe-script`: its text and name, and the caller CPU (--probe-cpu).
  // Parsed and checked when a World is built (the engine's ISA reads it);
  // a bad script throws events::ScriptError.
  std::string script, script_file;
  int script_cpu = 0;
  // `--probe-action EVENT=ACTION` for events the script defines.
  std::vector<std::string> script_actions;
  // A race scenario's (`--race`): the engine's settings, and operations of
  // its own (Kind::custom) performed with the script's.
  std::function<void(kprobes::Engine&)> configure;
  std::vector<kprobes::events::ProbeOp> extra_ops;
};

// What the Probes window (and --probe, --probe-action) can do.
struct ProbeOp {
  enum class Kind : uint8_t { add, remove, enable, disable, knob, action };
  Kind kind = Kind::add;
  // add: a kprobe_events line; remove/enable/disable: the event name;
  // knob: "1" or "0" (debugfs kprobes/enabled); action: "EVENT=ACTION".
  std::string arg;
  int caller = 0;  // the CPU whose clock pays for the registration work
};
const char* op_name(ProbeOp::Kind k);

class World {
 public:
  World(const WorldSpec& spec, EventLog& log);
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  Machine& machine() { return *m_; }
  const Machine& machine() const { return *m_; }
  kprobes::Engine* engine() { return engine_.get(); }
  kprobes::ProbeSession* session() { return session_.get(); }
  const kprobes::ProbeOpQueue* script() const { return queue_.get(); }
  // Checks the probe script against the probes registered so far, as
  // `ksim run` does after its --probe probes (throws events::ScriptError).
  void check_script() const {
    if (queue_) queue_->check();
  }
  TraceHasher& hasher() { return hasher_; }
  const WorldSpec& spec() const { return spec_; }

  // Applies a probe operation now. Returns "" or a one-line error (a bad
  // spec, a refused location, an unknown event); an error changes nothing.
  std::string apply(const ProbeOp& op);
  // The session probe whose event name is `event` (or GRP/EVENT), or null.
  kprobes::SessionProbe* find_probe(const std::string& event);

  // A hash of everything simulated: the machine's checkpoint bytes (which
  // include the trace hash so far and the events held for ordering), and
  // the engine's table, per-CPU control blocks and probe counters.
  uint64_t state_hash() const;

  RunResult run(const RunLimits& lim);
  bool ended() const { return ended_; }
  const RunResult& result() const { return result_; }

 private:
  void ensure_engine();
  RunResult run_script(const RunLimits& lim);
  WorldSpec spec_;
  EventLog& log_;
  std::unique_ptr<Machine> m_;
  TraceHasher hasher_;
  std::unique_ptr<kprobes::Engine> engine_;
  std::unique_ptr<kprobes::ProbeSession> session_;
  std::unique_ptr<kprobes::ProbeOpQueue> queue_;  // --probe-script
  bool ended_ = false;
  RunResult result_;
};

}  // namespace ksim::ui
