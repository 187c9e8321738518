#include "sim/timeline.hpp"

#include "sim/checkpoint.hpp"

namespace ksim {

Timeline::Timeline(Machine& m, uint64_t interval_steps) : m_(m), interval_(interval_steps ? interval_steps : 1) {
  saved_[m_.steps()] = save_checkpoint(m_);
}

RunResult Timeline::forward(uint64_t n) {
  const uint64_t target = m_.steps() + n;
  RunResult r;
  r.end = RunResult::End::paused;
  // Run in interval-sized pieces so checkpoints land on interval multiples.
  while (m_.steps() < target) {
    uint64_t next_mark = (m_.steps() / interval_ + 1) * interval_;
    RunLimits lim;
    lim.steps = std::min(target, next_mark);
    r = m_.run(lim);
    if (r.end != RunResult::End::paused) break;
    if (m_.steps() % interval_ == 0 && !saved_.count(m_.steps())) saved_[m_.steps()] = save_checkpoint(m_);
  }
  return r;
}

bool Timeline::seek(uint64_t target) {
  auto it = saved_.upper_bound(target);
  if (it == saved_.begin()) return false;
  --it;
  if (target < m_.steps() || m_.steps() < it->first) restore_checkpoint(m_, it->second, /*trusted=*/true);
  if (m_.steps() < target) {
    RunLimits lim;
    lim.steps = target;
    m_.run(lim);
  }
  return m_.steps() == target;
}

}  // namespace ksim
