// Stepping backwards, built on checkpoints: a Timeline records a checkpoint
// every `interval` steps while it moves a machine forward, and moves it
// back by restoring the nearest earlier checkpoint and replaying forward
// to the exact step. This is what the debugger's step-back uses.
#pragma once
#include <cstdint>
#include <map>
#include <vector>

#include "sim/machine.hpp"

namespace ksim {

class Timeline {
 public:
  // Takes the first checkpoint at the machine's current position.
  Timeline(Machine& m, uint64_t interval_steps = 100'000);

  // Moves forward by `n` steps (or until the run ends).
  RunResult forward(uint64_t n);
  // Moves to the position after exactly `target` machine steps, forward or
  // back. Going back before the first checkpoint is refused (returns false).
  bool seek(uint64_t target);
  bool back(uint64_t n) { return n <= m_.steps() && seek(m_.steps() - n); }

  size_t checkpoints() const { return saved_.size(); }

 private:
  Machine& m_;
  uint64_t interval_;
  std::map<uint64_t, std::vector<uint8_t>> saved_;  // by machine step count
};

}  // namespace ksim
