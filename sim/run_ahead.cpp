// Running ahead under the exact schedule (docs/SCHEDULING.md, "Running
// ahead"): a CPU whose exact slot ends goes on, ahead of the others, over
// work no other CPU can observe (mem/ownership.hpp says what that is), and
// is put back and re-run when another CPU observes it after all.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "sim/machine.hpp"
#include "sim/platform.hpp"

namespace ksim {

namespace {
// How far past its exact bound a CPU may run ahead in one go. Work done
// ahead is undone and re-run when another CPU observes it earlier, so the
// window trades scheduling decisions against replays; it changes no
// result (the run-ahead tests compare with the per-step reference).
constexpr uint64_t kAheadWindow = 4096;
}  // namespace

bool Machine::ahead_allowed(const RunLimits& limits) const {
  // Only the exact schedule has an exact point to go back to; steps and
  // per-instruction observers want every instruction in order.
  return cfg_.run_ahead && cpus_.size() > 1 && cfg_.quantum == 1 && !cfg_.reference_schedule &&
         limits.steps == 0 && !events_.wants_insns();
}

void Machine::set_run_ahead(bool on) {
  if (on == owners_->enabled()) return;
  owners_->enable(on ? static_cast<Resolver*>(this) : nullptr);
  for (int i = 0; i < cpu_count(); ++i) platform_->set_access_mode(i, AccessMode::exact);
}

uint32_t Machine::run_ahead(int cur, const RunLimits& limits) {
  Cpu& c = *cpus_[static_cast<size_t>(cur)];
  const uint64_t from = c.cycle(), from_steps = c.steps();
  uint64_t end = std::min({limits.cycle, cfg_.max_cycles, from + kAheadWindow});
  // Nor past the cycle another CPU's buffered store becomes visible
  // (timing v2): the block it goes to may have changed hands since it was
  // buffered, and a step at or after that cycle must see it.
  if (memsys_) end = std::min(end, memsys_->next_visible_except(cur));
  // A CPU with a stale view of code stays in exact order: its view changes
  // as it runs (expiry, serialisation), and a put-back would have to take
  // that back too. Stale views are short and rare; they cost no run-ahead
  // anywhere else.
  // Nor does a CPU with stores in its buffer (timing v2): they become
  // visible at cycles other CPUs' slots are cut at.
  if (from >= end || c.code_view_stale() || (memsys_ && memsys_->buffered(cur))) return 0;
  owners_->begin_ahead(cur);
  platform_->save_ahead_point(cur);
  platform_->set_access_mode(cur, AccessMode::ahead);
  uint64_t ready = 0;
  const uint32_t st = platform_->run_slot(cur, end, 0, ready);
  platform_->set_access_mode(cur, AccessMode::exact);
  ready_[static_cast<size_t>(cur)] = ready;
  // Everything that could crash, idle or stop the run is a sync point.
  if (st & ~uint32_t{Platform::kSlotSync})
    throw std::logic_error("cpu " + std::to_string(cur) + " ended a run-ahead with status " + std::to_string(st));
  if (c.steps() == from_steps && c.cycle() == from) {
    owners_->commit(cur);  // stopped at once: nothing to undo
  } else {
    ++ahead_stats_.runs;
    ahead_stats_.cycles += c.cycle() - from;
  }
  return 0;
}

void Machine::resolve(int k, uint64_t cycle, int cpu) {
  Cpu& c = *cpus_[static_cast<size_t>(k)];
  const uint64_t was = c.cycle();
  platform_->restore_ahead_point(k);
  owners_->undo(k);
  ++ahead_stats_.put_backs;
  ahead_stats_.undone += was - c.cycle();
  // Re-run it to where the observer stands: every step that starts before
  // (cycle, cpu), as the exact schedule would have run it. It touched only
  // what it owns, so the re-run is the same work.
  // Never past where it had got to: the observer runs in exact order, so its
  // step began there or before, although the access that puts k back may
  // come later in that step (an x86 #DB pushed after the instruction it
  // follows, one step; a host phase's writes).
  const uint64_t until = std::min(cycle + (k < cpu ? 1 : 0), was);
  if (c.cycle() < until) {
    const uint64_t from = c.cycle();
    platform_->set_access_mode(k, AccessMode::replay);
    uint64_t ready = 0;
    const uint32_t st = platform_->run_slot(k, until, 0, ready);
    platform_->set_access_mode(k, AccessMode::exact);
    ahead_stats_.replayed += c.cycle() - from;
    if ((st & ~uint32_t{Platform::kSlotSync}) || c.cycle() < until || c.cycle() > was)
      throw std::logic_error("cpu " + std::to_string(k) + ": re-running its run-ahead to cycle " +
                             std::to_string(until) + " diverged (stopped at " + std::to_string(c.cycle()) +
                             ", had reached " + std::to_string(was) + ")");
  }
  if (static_cast<size_t>(k) >= ready_.size()) return;
  ready_[static_cast<size_t>(k)] = c.cycle();
  idle_[static_cast<size_t>(k)] = 0;
  // The running CPU's slot ends where k's turn now begins.
  if (running_ >= 0 && running_ != k && slot_cpu_ == running_) {
    const uint64_t b = bound_for(running_, k);
    if (b < slot_until_) {
      slot_until_ = b;
      if (run_until_ > b) run_until_ = b;
      cpus_[static_cast<size_t>(running_)]->request_stop();
    }
  }
}

void Machine::commit_all() {
  for (int k = 0; k < cpu_count(); ++k)
    if (owners_->ahead(k)) owners_->commit(k);
}

void Machine::resolve_all_to(uint64_t cycle, int cpu) {
  for (int k = 0; k < cpu_count(); ++k)
    if (k != cpu && owners_->ahead(k)) resolve(k, cycle, cpu);
  commit_all();
}

}  // namespace ksim
