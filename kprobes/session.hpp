// A probe session: kprobe_events definitions (kprobes/events/) turned into
// engine probes whose handlers are built-in actions, so the CLI and the
// debugger can probe without writing code.
//
// Actions (one per probe; `--probe-action EVENT=ACTION` on the CLI):
//   log            print one ftrace-style line per hit with the fetch args
//                  (the default)
//   count          count hits only
//   set:%REG=VAL   set a register at the hit (p: before the probed
//                  instruction; r: at the return), then log
//   override:VAL   fault injection: a p probe at a function's entry makes
//                  the function return VAL at once without running (as
//                  bpf_override_return does); an r probe replaces the
//                  value the function returned. Then log.
// Every action charges the CPU its guest cost (cpu/timing.hpp).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kprobes/engine.hpp"
#include "kprobes/events/probe_spec.hpp"

namespace ksim::kprobes {

// A probe the engine refused, or a bad action: one line, for exit status 2.
class SessionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Action {
  enum class Kind : uint8_t { log, count, set_reg, override_ret } kind = Kind::log;
  int reg = 0;         // set_reg: Cpu::gpr index (-2: the PC)
  uint64_t value = 0;  // set_reg / override_ret
  std::string text;    // as given
};
// Parses "log", "count", "set:%REG=VAL", "override:VAL"; throws SessionError.
Action parse_action(const std::string& text, const Arch& arch);

struct SessionProbe {
  events::ProbeSpec spec;
  Action action;
  std::unique_ptr<Kprobe> kp;      // p
  std::unique_ptr<Kretprobe> rp;   // r
  uint64_t lines = 0;              // lines printed
  bool removed = false;            // unregistered by remove() (kept for the summary)
  uint64_t hits() const { return rp ? rp->hits : kp->hits; }
  uint64_t nmissed() const { return rp ? rp->nmissed + rp->kp.nmissed : kp->nmissed; }
};

class ProbeSession {
 public:
  using Sink = std::function<void(const std::string& line)>;
  ProbeSession(Engine& engine, Sink sink);
  ~ProbeSession();  // unregisters everything
  // Sums of SessionProbe::hits() and nmissed() over the probes: what the
  // per-probe summary lines count (kprobes: hits; kretprobes: returns).
  uint64_t total_hits() const;
  uint64_t total_missed() const;
  ProbeSession(const ProbeSession&) = delete;
  ProbeSession& operator=(const ProbeSession&) = delete;

  // Parses the spec (events::SpecError on a bad one) and registers it
  // (SessionError with the engine's reason when refused).
  SessionProbe& add(const std::string& spec);
  SessionProbe& add(events::ProbeSpec spec);
  // The live probe (not removed) named EVENT, or GRP/EVENT with `group`
  // non-empty; null if none. SessionError when only GRP/EVENT would say
  // which of several.
  SessionProbe* find(const std::string& group, const std::string& event) const;
  // kprobe_events "-:EVENT": unregisters the probe; it stays in probes()
  // with `removed` set, so the summary keeps its counts.
  void remove(SessionProbe& p);
  // enable_kprobe / disable_kprobe on the probe (its kretprobe's entry
  // probe for r); SessionError with the engine's reason when refused.
  void set_enabled(SessionProbe& p, bool on);
  // Sets the action of the probe whose event name is `event` (EVENT, or
  // GRP/EVENT when the name alone is ambiguous).
  void set_action(const std::string& event, const std::string& action);
  // "EVENT=ACTION" as the CLI takes it.
  void set_action(const std::string& assignment);
  const std::vector<std::unique_ptr<SessionProbe>>& probes() const { return probes_; }
  Engine& engine() const { return eng_; }
  // One line per probe: its definition, hits and nmissed.
  std::string summary() const;
  // How the probes ran: the engine's modes (stepping, locking, patching,
  // booster, jump optimization, kretprobe return) on one line, then one
  // line per probe saying how its hits went (jump-optimized, boosted,
  // stepped out of line, emulated; removed).
  std::string how_summary() const;

 private:
  void on_hit(SessionProbe& p, Cpu& cpu, bool at_return, uint64_t ret_ip);
  Engine& eng_;
  Sink sink_;
  std::vector<std::unique_ptr<SessionProbe>> probes_;
};

}  // namespace ksim::kprobes
