#include "ui/model/world.hpp"

#include <algorithm>

#include "sim/checkpoint.hpp"

namespace ksim::ui {

namespace {

uint64_t fnv(uint64_t h, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}
uint64_t fnv_u64(uint64_t h, uint64_t v) { return fnv(h, &v, sizeof v); }

// The CPU column of an ftrace line: "... [003] ...".
int line_cpu(const std::string& line) {
  for (size_t i = line.find(" ["); i != std::string::npos; i = line.find(" [", i + 1))
    if (i + 6 <= line.size() && line[i + 5] == ']') {
      int v = 0;
      bool ok = true;
      for (size_t k = i + 2; k < i + 5; ++k) {
        if (line[k] < '0' || line[k] > '9') ok = false;
        v = v * 10 + (line[k] - '0');
      }
      if (ok) return v;
    }
  return -1;
}

}  // namespace

const char* op_name(ProbeOp::Kind k) {
  switch (k) {
    case ProbeOp::Kind::add: return "add";
    case ProbeOp::Kind::remove: return "remove";
    case ProbeOp::Kind::enable: return "enable";
    case ProbeOp::Kind::disable: return "disable";
    case ProbeOp::Kind::knob: return "kprobes/enabled";
    case ProbeOp::Kind::action: return "action";
  }
  return "?";
}

World::World(const WorldSpec& spec, EventLog& log) : spec_(spec), log_(log) {
  m_ = std::make_unique<Machine>(spec_.config);
  m_->load(*spec_.image);
  m_->events().add(&hasher_);
  m_->events().add(&log_);
  log_.rewind(0, 0);
  if (spec_.configure) ensure_engine();  // the settings from the start, as `ksim race run`
  if (!spec_.script.empty() || !spec_.extra_ops.empty()) {
    ensure_engine();
    std::vector<kprobes::events::ProbeOp> ops =
        kprobes::events::parse_probe_script(spec_.script, spec_.script_file, engine_->arch());
    ops.insert(ops.end(), spec_.extra_ops.begin(), spec_.extra_ops.end());
    queue_ = std::make_unique<kprobes::ProbeOpQueue>(*session_, std::move(ops), spec_.script_cpu, spec_.script_file);
    // (checked by the Debugger once the --probe probes exist: check_script())
    for (const std::string& a : spec_.script_actions) {
      const size_t eq = a.find('=');
      if (eq == std::string::npos || eq == 0)
        throw kprobes::SessionError("--probe-action wants EVENT=ACTION, not '" + a + "'");
      queue_->add_action(a.substr(0, eq), a.substr(eq + 1));
    }
  }
}

World::~World() {
  // Unregistering at teardown emits events: they belong to no run.
  m_->events().remove(&log_);
  m_->events().remove(&hasher_);
  session_.reset();
  engine_.reset();
}

void World::ensure_engine() {
  if (engine_) return;
  engine_ = std::make_unique<kprobes::Engine>(*m_, spec_.mode);
  engine_->set_locking(spec_.locking);
  engine_->set_boost(spec_.boost);
  engine_->set_optimization(spec_.optimize);
  if (!spec_.rethook) engine_->set_rethook(false);
  if (spec_.patching) engine_->set_patching(*spec_.patching);
  if (spec_.configure) spec_.configure(*engine_);
  session_ = std::make_unique<kprobes::ProbeSession>(*engine_, [this](const std::string& line) {
    log_.add_line(m_->now(), line_cpu(line), line);
  });
}

kprobes::SessionProbe* World::find_probe(const std::string& event) {
  if (!session_) return nullptr;
  for (const auto& p : session_->probes())
    if (p->spec.event == event || p->spec.group + "/" + p->spec.event == event) return p.get();
  return nullptr;
}

std::string World::apply(const ProbeOp& op) {
  if (ended_) return "the run has ended: go back in time to change probes";
  ensure_engine();
  // As a --probe-script operation: the caller CPU patches through the
  // protocol (kprobes/patching.hpp) from here.
  engine_->begin_op(op.caller);
  struct EndOp {
    kprobes::Engine& e;
    ~EndOp() { e.end_op(); }
  } end_op{*engine_};
  try {
    switch (op.kind) {
      case ProbeOp::Kind::add: session_->add(op.arg); return "";
      case ProbeOp::Kind::action: session_->set_action(op.arg); return "";
      case ProbeOp::Kind::knob:
        if (op.arg != "0" && op.arg != "1") return "kprobes/enabled takes 0 or 1";
        engine_->set_enabled(op.arg == "1");
        return "";
      case ProbeOp::Kind::remove:
      case ProbeOp::Kind::enable:
      case ProbeOp::Kind::disable: {
        kprobes::SessionProbe* p = find_probe(op.arg);
        if (!p) return "no probe named '" + op.arg + "'";
        kprobes::Kprobe& kp = p->rp ? p->rp->kp : *p->kp;
        if (!kp.rec) return "probe '" + op.arg + "' was removed";
        if (op.kind == ProbeOp::Kind::remove) {
          if (p->rp)
            engine_->unregister_kretprobe(*p->rp);
          else
            engine_->unregister_kprobe(*p->kp);
          return "";
        }
        int e = op.kind == ProbeOp::Kind::enable ? engine_->enable_kprobe(kp) : engine_->disable_kprobe(kp);
        return e < 0 ? engine_->last_error() : "";
      }
    }
  } catch (const std::exception& e) {  // events::SpecError, SessionError
    return e.what();
  }
  return "unknown operation";
}

RunResult World::run(const RunLimits& lim) {
  if (ended_) return result_;
  result_ = queue_ && queue_->next_cycle() != ~uint64_t{0} ? run_script(lim) : m_->run(lim);
  ended_ = result_.end != RunResult::End::paused;
  // A run with a script that ended with patching under way finishes it at
  // once, as `ksim run --probe-script` does (ProbeOpQueue::run_until).
  if (ended_ && queue_) engine_->finish_patching();
  return result_;
}

// With a probe script: each operation is performed where `ksim run
// --probe-script` performs it (the machine paused at its cycle), whatever
// the target. A cycle target runs through ProbeOpQueue::run_until; a step
// target stops at each operation's cycle on the way, and past it goes on
// stepping (the operation's own run may go some cycles past the step
// target: up to the caller's clock, or a look at an offline caller).
RunResult World::run_script(const RunLimits& lim) {
  if (lim.steps == 0) return queue_->run_until(*m_, lim.cycle ? lim.cycle : ~uint64_t{0});
  uint64_t reached = 0;  // the last pass's target: each pass goes further
  for (;;) {
    const uint64_t next = queue_->next_cycle();
    RunLimits l = lim;
    if (next != ~uint64_t{0} && (l.cycle == 0 || next < l.cycle)) l.cycle = next;
    RunResult r = m_->run(l);
    if (r.end != RunResult::End::paused || m_->steps() >= lim.steps || next == ~uint64_t{0} ||
        (lim.cycle != 0 && l.cycle == lim.cycle))
      return r;
    // Performs what is due at `next`: far enough for the caller's clock to
    // be reached, or for one more look when it is not online yet. Each pass
    // aims past the last one's target, so the machine moves on and the loop
    // ends even while the caller stays offline (its clock standing still).
    const uint64_t caller_at = m_->cpu(queue_->caller_cpu()).cycle();
    reached = std::max({next, caller_at, reached}) + kprobes::ProbeOpQueue::kOfflineRetryCycles + 1;
    r = queue_->run_until(*m_, reached);
    if (r.end != RunResult::End::paused || m_->steps() >= lim.steps) return r;
  }
}

uint64_t World::state_hash() const {
  std::vector<uint8_t> bytes = save_checkpoint(*m_, hasher_.value());
  uint64_t h = fnv(0xcbf29ce484222325ull, bytes.data(), bytes.size());
  if (engine_) {
    const std::string list = engine_->list();
    h = fnv(h, list.data(), list.size());
    for (const kprobes::CtlBlk& cb : engine_->ctlblks()) {
      h = fnv_u64(h, static_cast<uint64_t>(cb.status));
      h = fnv_u64(h, static_cast<uint64_t>(cb.phase));
      h = fnv_u64(h, cb.current ? cb.current->addr : 0);
      h = fnv_u64(h, cb.prev.point ? cb.prev.point->addr : 0);
      h = fnv_u64(h, cb.hits);
    }
    for (const auto& p : session_->probes()) {
      h = fnv_u64(h, p->hits());
      h = fnv_u64(h, p->nmissed());
    }
  }
  return h;
}

}  // namespace ksim::ui
