#include "ui/model/debugger.hpp"

#include <algorithm>

#include "sim/checkpoint.hpp"

namespace ksim::ui {

namespace {
// Checkpoints (taken only while no probe engine exists) stand at least
// this many cycles apart; each holds the RAM pages with data.
constexpr uint64_t kBaseInterval = 2'000'000;
constexpr size_t kMaxBases = 256;
constexpr size_t kMaxWaypoints = 4096;
}  // namespace

Debugger::Debugger(WorldSpec spec, const std::vector<ProbeOp>& initial) : spec_(std::move(spec)) {
  world_ = std::make_unique<World>(spec_, log_);
  pos_ = Position{Target::at_cycle(0), 0, 0, 0, false};
  for (const ProbeOp& op : initial) {
    std::string err = world_->apply(op);
    if (!err.empty()) throw std::runtime_error(err);
    ops_.push_back({op, pos_});
  }
  world_->check_script();  // against the session with the initial probes in it
  applied_ = ops_.size();
  note_position(pos_.target);
  maybe_checkpoint();
  before_ = snapshot();
}

Debugger::~Debugger() = default;

RegSnapshot Debugger::snapshot() const {
  RegSnapshot s;
  Machine& m = world_->machine();
  for (int c = 0; c < m.cpu_count(); ++c) {
    std::vector<uint64_t> r;
    Cpu& cpu = m.cpu(c);
    for (int i = 0; i < cpu.gpr_count(); ++i) r.push_back(cpu.gpr(i));
    r.push_back(cpu.pc());
    s.push_back(std::move(r));
  }
  return s;
}

bool Debugger::reg_changed(int cpu, int reg) const {
  Cpu& c = world_->machine().cpu(cpu);
  const auto& b = before_[static_cast<size_t>(cpu)];
  const uint64_t now = reg == c.gpr_count() ? c.pc() : c.gpr(reg);
  return static_cast<size_t>(reg) < b.size() && b[static_cast<size_t>(reg)] != now;
}

void Debugger::begin_move() {
  before_ = snapshot();
  landed_ = EventLog::npos;
}
void Debugger::end_move() {
  ++moves_;
  maybe_checkpoint();
}

bool Debugger::ahead(const Position& from, Target t) const {
  if (t.kind == Target::Kind::end) return true;
  if (from.ended) return false;
  // The machine as booted (cycle 0, nothing run) comes before everything.
  if (from.target.kind == Target::Kind::cycle && from.target.value == 0 && from.steps == 0) return true;
  switch (from.target.kind) {
    case Target::Kind::cycle:
      // A cycle pause may include host phases after its last step, so a
      // steps target with the same count is not ahead of it.
      return t.kind == Target::Kind::cycle ? t.value >= from.target.value : t.value > from.steps;
    case Target::Kind::steps:
      return t.kind == Target::Kind::steps ? t.value >= from.steps : t.value > from.high;
    case Target::Kind::end: return false;
  }
  return false;
}

void Debugger::note_position(Target t) {
  Machine& m = world_->machine();
  Position p;
  p.ended = world_->ended();
  p.target = p.ended ? Target::at_end() : t;
  p.steps = m.steps();
  p.low = ~uint64_t{0};
  p.high = 0;
  for (int c = 0; c < m.cpu_count(); ++c) {
    Cpu& cpu = m.cpu(c);
    p.low = std::min(p.low, cpu.idle() ? std::max(cpu.cycle(), cpu.wake_cycle()) : cpu.cycle());
    p.high = std::max(p.high, cpu.cycle());
  }
  if (p.low == ~uint64_t{0}) p.low = p.high;
  pos_ = p;
  if (!p.ended && p.target.kind == Target::Kind::cycle) {
    auto it = std::lower_bound(waypoints_.begin(), waypoints_.end(), p.target.value,
                               [](const Position& w, uint64_t c) { return w.target.value < c; });
    if (it == waypoints_.end() || it->target.value != p.target.value) waypoints_.insert(it, p);
    if (waypoints_.size() > kMaxWaypoints) {  // keep every other one
      std::vector<Position> kept;
      for (size_t i = 0; i < waypoints_.size(); i += 2) kept.push_back(waypoints_[i]);
      waypoints_ = std::move(kept);
    }
  }
}

void Debugger::maybe_checkpoint() {
  if (world_->engine() || pos_.ended || pos_.target.kind != Target::Kind::cycle) return;
  // Not within kBaseInterval of another checkpoint, either side.
  const uint64_t c = pos_.target.value;
  auto next = bases_.lower_bound(c);
  if (next != bases_.end() && next->first - c < kBaseInterval) return;
  if (next != bases_.begin() && c - std::prev(next)->first < kBaseInterval) return;
  Base b;
  b.pos = pos_;
  b.bytes = save_checkpoint(world_->machine(), world_->hasher().value());
  b.events = log_.cursor();
  b.lines = log_.line_cursor();
  bases_.emplace(pos_.target.value, std::move(b));
  if (bases_.size() > kMaxBases) {  // thin out: drop every other one but the first
    std::map<uint64_t, Base> kept;
    size_t i = 0;
    for (auto& [c, base] : bases_)
      if (i++ % 2 == 0) kept.emplace(c, std::move(base));
    bases_ = std::move(kept);
  }
}

void Debugger::rebuild_from(const Base* base) {
  world_.reset();  // its RAM first
  world_ = std::make_unique<World>(spec_, log_);
  if (base) {
    restore_checkpoint(world_->machine(), base->bytes, /*trusted=*/true);
    world_->hasher().set_value(read_checkpoint_header(base->bytes).trace_hash);
    log_.rewind(base->events, base->lines);
    pos_ = base->pos;
    ++restores_;
  } else {
    log_.rewind(0, 0);
    pos_ = Position{Target::at_cycle(0), 0, 0, 0, false};
    ++rebuilds_;
  }
  // Bases exist only before the first operation: every operation is ahead.
  applied_ = 0;
}

void Debugger::reach(Target t) {
  RunLimits lim;
  switch (t.kind) {
    case Target::Kind::cycle:
      if (pos_.target.kind == Target::Kind::cycle && pos_.target.value == t.value && !pos_.ended) return;
      lim.cycle = t.value;
      world_->run(lim);
      break;
    case Target::Kind::steps: {
      if (world_->machine().steps() >= t.value) {
        if (pos_.target.kind == Target::Kind::steps) return;
        break;  // a cycle pause with exactly these steps, reached with nothing to run: see ahead()
      }
      // Stepping runs the precise path; run the longest known prefix at
      // full speed first.
      const Position* best = nullptr;
      for (const Position& w : waypoints_) {
        if (w.steps >= t.value) break;
        if (ahead(pos_, w.target) && w.target.value > (best ? best->target.value : 0)) best = &w;
      }
      if (best && best->steps > world_->machine().steps()) {
        RunLimits fast;
        fast.cycle = best->target.value;
        world_->run(fast);
      }
      lim.steps = t.value;
      world_->run(lim);
      break;
    }
    case Target::Kind::end: world_->run(lim); break;
  }
  note_position(t);
}

void Debugger::go(Target t) {
  if (!ahead(pos_, t)) {
    const Base* best = nullptr;
    for (const auto& [c, b] : bases_)
      if (ahead(b.pos, t)) best = &b;
    rebuild_from(best);
  }
  while (applied_ < ops_.size()) {
    const RecordedOp& op = ops_[applied_];
    if (ahead(op.at, t)) {
      reach(op.at.target);
    } else if (!(op.at.target.kind == Target::Kind::steps && t.kind == Target::Kind::cycle) ||
               !reach_either(t.value, op.at.steps)) {
      break;  // the operation comes after t
    }
    std::string err = world_->apply(op.op);
    if (!err.empty()) error_ = "replaying '" + op.op.arg + "': " + err;  // not expected
    ++applied_;
  }
  reach(t);
}

// An operation made after S steps, and a target cycle C within the CPUs'
// clock spread at that point: which comes first is known only by running.
// Runs towards C but stops after S steps if that comes first (then the
// S-step state is a prefix of C's: nothing started at or after C).
bool Debugger::reach_either(uint64_t cycle, uint64_t steps) {
  Machine& m = world_->machine();
  if (m.steps() > steps) return false;
  if (m.steps() < steps) {
    const Position* best = nullptr;  // a fast prefix, as in reach()
    for (const Position& w : waypoints_) {
      if (w.steps >= steps || w.target.value > cycle) break;
      if (ahead(pos_, w.target)) best = &w;
    }
    if (best && best->steps > m.steps()) {
      RunLimits fast;
      fast.cycle = best->target.value;
      world_->run(fast);
    }
    RunLimits lim;
    lim.cycle = cycle;
    lim.steps = steps;
    world_->run(lim);
  }
  if (m.steps() != steps || world_->ended()) {
    note_position(Target::at_cycle(cycle));
    return false;
  }
  note_position(Target::at_steps(steps));
  return true;
}

void Debugger::step(uint64_t n) {
  if (pos_.ended) return;
  begin_move();
  go(Target::at_steps(pos_.steps + n));
  end_move();
}

bool Debugger::step_cpu(int cpu, uint64_t max_steps) {
  if (pos_.ended || cpu < 0 || cpu >= world_->machine().cpu_count()) return false;
  begin_move();
  const uint64_t mine = world_->machine().cpu(cpu).steps();
  bool ok = false;
  for (uint64_t i = 0; i < max_steps && !pos_.ended; ++i) {
    go(Target::at_steps(pos_.steps + 1));
    if (world_->machine().cpu(cpu).steps() != mine) {
      ok = true;
      break;
    }
  }
  end_move();
  return ok;
}

void Debugger::step_cycle() {
  if (pos_.ended) return;
  begin_move();
  go(Target::at_cycle(std::max(here(), pos_.low) + 1));
  end_move();
}

void Debugger::go_to_cycle(uint64_t c) {
  begin_move();
  go(Target::at_cycle(c));
  end_move();
}

void Debugger::go_to_steps(uint64_t s) {
  begin_move();
  go(Target::at_steps(s));
  end_move();
}

void Debugger::run_to_end() {
  begin_move();
  go(Target::at_end());
  end_move();
}

bool Debugger::step_back(uint64_t n) {
  if (pos_.steps < n || n == 0) return false;
  begin_move();
  go(Target::at_steps(pos_.steps - n));
  end_move();
  return true;
}

// Back to just before the selected CPU's latest step: the last machine
// position where that CPU had one step fewer. The CPU's steps only grow
// with the machine's, so an exponential search back, then a binary one.
bool Debugger::step_back_cpu(int cpu) {
  if (cpu < 0 || cpu >= world_->machine().cpu_count()) return false;
  const uint64_t mine = world_->machine().cpu(cpu).steps(), here_steps = pos_.steps;
  if (mine == 0 || here_steps == 0) return false;
  begin_move();
  auto steps_of_cpu_at = [&](uint64_t s) {
    go(Target::at_steps(s));
    return world_->machine().cpu(cpu).steps();
  };
  // lo: a position where the CPU has fewer than `mine` steps; hi: one with `mine`.
  uint64_t hi = here_steps, lo = here_steps, d = 1;
  for (;;) {
    lo = here_steps > d ? here_steps - d : 0;
    if (steps_of_cpu_at(lo) < mine) break;
    hi = lo;
    if (lo == 0) {  // (cannot happen: the CPU had no step at the start)
      end_move();
      return false;
    }
    d *= 2;
  }
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (steps_of_cpu_at(mid) < mine)
      lo = mid;
    else
      hi = mid;
  }
  go(Target::at_steps(lo));
  end_move();
  return true;
}

void Debugger::run_for(uint64_t cycles) {
  if (pos_.ended) return;
  uint64_t c = here() + cycles;
  if (pos_.target.kind != Target::Kind::cycle) c = std::max(c, pos_.high + 1);
  begin_move();
  go(Target::at_cycle(c));
  end_move();
}

bool Debugger::next_event(const EventFilter& f, uint64_t max_cycles) {
  const EventKind k = f.kind;
  const uint64_t from = here();
  const Target start = pos_.target;
  auto find = [&]() -> size_t {
    const auto& v = log_.of_kind(k);
    auto it = std::lower_bound(v.begin(), v.end(), from,
                               [&](uint32_t i, uint64_t c) { return log_[i].cycle < c; });
    for (; it != v.end(); ++it)
      if (f.matches(log_, log_[*it])) return *it;
    return EventLog::npos;
  };
  begin_move();
  size_t i = find();
  uint64_t chunk = 1 << 16;
  while (i == EventLog::npos && !pos_.ended && here() - from < max_cycles) {
    go(Target::at_cycle(here() + chunk));
    chunk = std::min<uint64_t>(chunk * 2, 1 << 24);
    i = find();
  }
  if (i == EventLog::npos) {
    go(start);  // nothing: stay where we were
    end_move();
    return false;
  }
  landed_ = i;
  go(Target::at_cycle(log_[i].cycle + 1));
  end_move();
  return true;
}

bool Debugger::prev_event(const EventFilter& f) {
  const EventKind k = f.kind;
  const uint64_t h = here();
  const auto& v = log_.of_kind(k);
  auto it = std::lower_bound(v.begin(), v.end(), h, [&](uint32_t i, uint64_t c) { return log_[i].cycle + 1 < c; });
  while (it != v.begin()) {
    --it;
    if (f.matches(log_, log_[*it])) {
      go_to_event(*it);
      return true;
    }
  }
  return false;
}

void Debugger::go_to_event(size_t i) {
  if (i >= log_.size()) return;
  go_to_cycle(log_[i].cycle + 1);
  landed_ = i;
}

std::string Debugger::probe_op(ProbeOp op) {
  error_.clear();
  if (pos_.ended) return error_ = "the run has ended: go back in time to change probes";
  // Whatever happened after this point in a previous pass is no longer
  // known to happen.
  log_.truncate(log_.cursor(), log_.line_cursor());
  std::string err = world_->apply(op);
  if (!err.empty()) return error_ = err;
  ops_.resize(applied_);
  ops_.push_back({op, pos_});
  applied_ = ops_.size();
  for (auto it = bases_.begin(); it != bases_.end();)
    it = ahead(it->second.pos, pos_.target) ? std::next(it) : bases_.erase(it);
  std::erase_if(waypoints_, [&](const Position& w) { return !ahead(w, pos_.target); });
  ++moves_;  // memory and the probe views changed
  return "";
}

}  // namespace ksim::ui
