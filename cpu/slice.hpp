// The skeleton of every core's run() and step(), written once: a core runs
// in slices, each prepared (idle wake-up, seeded stalls, interrupts, the
// cycle of its next event) and then executed by the core's own loop, until
// `until`, a stop request, or (step) a number of steps. What differs per
// ISA stays in the core: prepare() (its interrupt model) and its loops.
//
// A core befriends Slice and provides:
//   void begin_slice();              forget the last stop request and reason
//   bool stop_requested() const;
//   bool prepare(uint64_t until);    false: it cannot run now (idle, stopped)
//   void run_pass();                 run until its stop cycle (fast path)
//   void step_pass(uint64_t budget); at most `budget` steps, precise path
//   void end_steps();                after step(): clear the step budget
#pragma once
#include <cstdint>

namespace ksim {

struct Slice {
  template <typename Core>
  static void run(Core& c, uint64_t until) {
    c.begin_slice();
    while (!c.stop_requested() && c.cycle() < until) {
      if (!c.prepare(until)) break;
      c.run_pass();
      // A CPU that went idle returns, even if an interrupt would wake it at
      // once: the scheduler sees every idle period (its events), however
      // the run is sliced.
      if (c.idle()) break;
    }
  }

  template <typename Core>
  static uint64_t step(Core& c, uint64_t until, uint64_t steps) {
    c.begin_slice();
    const uint64_t start = c.steps();
    while (!c.stop_requested() && c.cycle() < until && c.steps() - start < steps) {
      if (!c.prepare(until)) break;
      const uint64_t left = steps - (c.steps() - start);
      if (left == 0) break;  // prepare() took an interrupt: that was the step
      c.step_pass(left);
    }
    c.end_steps();
    return c.steps() - start;
  }
};

}  // namespace ksim
