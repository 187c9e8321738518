#include "kprobes/op_queue.hpp"

#include <algorithm>

#include "sim/elf/symbols.hpp"

namespace ksim::kprobes {

using events::ProbeOp;
using events::ScriptError;

ProbeOpQueue::ProbeOpQueue(ProbeSession& session, std::vector<ProbeOp> ops, int caller_cpu, std::string file)
    : session_(session), eng_(session.engine()), ops_(std::move(ops)), caller_(caller_cpu), file_(std::move(file)) {
  std::stable_sort(ops_.begin(), ops_.end(), [](const ProbeOp& a, const ProbeOp& b) { return a.cycle < b.cycle; });
  outcomes_.resize(ops_.size());
}

void ProbeOpQueue::check() const {
  struct Name {
    std::string group, event;
  };
  std::vector<Name> live;
  for (const auto& p : session_.probes())
    if (!p->removed) live.push_back({p->spec.group, p->spec.event});
  for (const ProbeOp& op : ops_) {
    auto fail = [&](size_t column, const std::string& why) {
      throw ScriptError(file_, op.line, op.line_text, column, why);
    };
    if (op.kind == ProbeOp::Kind::knob || op.kind == ProbeOp::Kind::optimization || op.kind == ProbeOp::Kind::custom)
      continue;
    if (op.kind == ProbeOp::Kind::define) {
      const events::ProbeSpec& spec = op.spec;
      for (const Name& n : live)
        if (n.group == spec.group && n.event == spec.event)
          fail(op.column, "event '" + spec.group + "/" + spec.event + "' already exists at cycle " +
                              std::to_string(op.cycle));
      try {
        events::check_fetch_symbols(spec, eng_.machine().symbols());
      } catch (const events::SpecError& e) {
        fail(op.column + e.column(), "bad probe spec: " + e.reason());
      }
      Kprobe kp;
      if (spec.has_addr)
        kp.addr = spec.addr;
      else {
        kp.symbol_name = spec.symbol;
        kp.offset = spec.offset;
      }
      if (eng_.check_location(kp, spec.is_return()) < 0)
        fail(op.column + spec.target_column, "cannot probe: " + eng_.last_error());
      live.push_back({spec.group, spec.event});
      continue;
    }
    // remove, enable, disable: [GRP/]EVENT must name exactly one live event.
    size_t found = live.size(), matches = 0;
    for (size_t i = 0; i < live.size(); ++i)
      if (live[i].event == op.event && (op.group.empty() || live[i].group == op.group)) {
        found = i;
        ++matches;
      }
    const std::string name = op.group.empty() ? op.event : op.group + "/" + op.event;
    if (matches == 0)
      fail(op.event_column, "no probe event named '" + name + "' at cycle " + std::to_string(op.cycle));
    if (matches > 1) fail(op.event_column, "several probe events are named '" + name + "': give GROUP/EVENT");
    if (op.kind == ProbeOp::Kind::remove) live.erase(live.begin() + static_cast<std::ptrdiff_t>(found));
  }
}

void ProbeOpQueue::add_action(const std::string& event, const std::string& action) {
  const size_t slash = event.find('/');
  const std::string group = slash == std::string::npos ? "" : event.substr(0, slash);
  const std::string name = slash == std::string::npos ? event : event.substr(slash + 1);
  bool defined = false;
  for (const ProbeOp& op : ops_)
    defined |= op.kind == ProbeOp::Kind::define && op.spec.event == name && (group.empty() || op.spec.group == group);
  if (!defined) throw SessionError("--probe-action: no probe event named '" + event + "'");
  parse_action(action, eng_.arch());  // malformed: refused now
  actions_.emplace_back(event, action);
}

RunResult ProbeOpQueue::run(Machine& m) { return run_until(m, ~uint64_t{0}); }

RunResult ProbeOpQueue::run_until(Machine& m, uint64_t until) {
  // Nothing runs past `until` (a debugger's target may come before an
  // operation can be performed): what is left waits for the next call.
  auto reach = [&](uint64_t cycle, RunResult& r) {
    RunLimits lim;
    lim.cycle = std::min(cycle, until);
    r = m.run(lim);
    return r.end == RunResult::End::paused && cycle < until;
  };
  RunResult r;
  while (next_ < ops_.size() && ops_[next_].cycle < until) {
    uint64_t at = ops_[next_].cycle;
    if (!reach(at, r)) return finish(r);
    // Operations due now, in order; each one once the machine has reached
    // the caller's clock (the previous one's work moved it on), so what an
    // operation changes is seen from its own cycle on, not earlier.
    while (next_ < ops_.size() && ops_[next_].cycle <= at) {
      const uint64_t caller_at = m.cpu(caller_).cycle();
      if (caller_at > at && !m.cpu(caller_).idle()) {
        at = caller_at;
        if (!reach(at, r)) return finish(r);
      }
      // A caller CPU still in early boot cannot make the call (in Linux no
      // task runs on a CPU that is not online), nor one inside a probe
      // hit: the operation waits for it.
      while (!eng_.caller_online(caller_) || eng_.caller_in_hit(caller_)) {
        at += eng_.caller_online(caller_) ? kInHitRetryCycles : kOfflineRetryCycles;
        if (!reach(at, r)) return finish(r);
      }
      perform(ops_[next_]);
      ++next_;
    }
  }
  RunLimits end;
  end.cycle = until;
  return finish(r = m.run(end));
}

// Patching still under way when the run ended is finished at once: the
// text ends as the probes' states say.
RunResult ProbeOpQueue::finish(const RunResult& r) {
  if (r.end != RunResult::End::paused) eng_.finish_patching();
  return r;
}

void ProbeOpQueue::perform(const ProbeOp& op) {
  Machine& m = eng_.machine();
  Cpu& caller = m.cpu(caller_);
  // A caller asleep in wfi/hlt has a clock that lags: idle time passes up
  // to the operation's cycle first, so the work starts there.
  if (caller.idle()) caller.advance_idle(op.cycle);
  const uint64_t at = caller.cycle();
  eng_.begin_op(caller_);
  Outcome& out = outcomes_[static_cast<size_t>(&op - ops_.data())];
  try {
    switch (op.kind) {
      case ProbeOp::Kind::define: {
        SessionProbe& p = session_.add(op.spec);
        for (const auto& [event, action] : actions_) {
          const size_t slash = event.find('/');
          const std::string name = slash == std::string::npos ? event : event.substr(slash + 1);
          if (name == p.spec.event && (slash == std::string::npos || event.substr(0, slash) == p.spec.group))
            session_.set_action(event, action);
        }
        break;
      }
      case ProbeOp::Kind::knob: eng_.set_enabled(op.on); break;
      case ProbeOp::Kind::optimization: eng_.set_optimization(op.on); break;
      case ProbeOp::Kind::custom: op.run(eng_); break;
      case ProbeOp::Kind::remove:
      case ProbeOp::Kind::enable:
      case ProbeOp::Kind::disable: {
        SessionProbe* p = session_.find(op.group, op.event);
        if (!p) throw SessionError("no probe event named '" + op.event + "'");
        if (op.kind == ProbeOp::Kind::remove)
          session_.remove(*p);
        else
          session_.set_enabled(*p, op.kind == ProbeOp::Kind::enable);
        break;
      }
    }
  } catch (const std::runtime_error& e) {  // SessionError, SpecError: refused at run time
    out.failed = true;
    out.error = e.what();
  }
  eng_.end_op();  // the caller CPU patches the text from here (kprobes/patching.hpp)
  out.performed = true;
  out.at = at;
  m.events().emit(Event{at, caller_, EventKind::probe_op, static_cast<uint64_t>(op.line), out.failed ? 1u : 0u,
                        op.cycle, op.text});
}

}  // namespace ksim::kprobes
