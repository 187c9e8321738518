// Two runs side by side (`ksim-ui --compare`): where their event streams
// first differ. Both runs are taken to their end once (their logs are
// then whole); each log's events are put in time order (cycle, then CPU)
// and compared one by one: cycle, CPU, kind, text and values. The first
// pair that differs is the first difference, at the earlier of the two
// cycles (or where one stream ends first).
#pragma once
#include <cstdint>
#include <string>

#include "ui/model/debugger.hpp"

namespace ksim::ui {

struct Difference {
  bool found = false;
  size_t index = 0;       // the position in both streams, in time order
  int cpu = -1;           // the CPU of the earlier of the two events
  uint64_t cycle = 0;     // the earlier of the two events' cycles
  std::string a, b;       // each run's event there, for a person ("(no more events)")
};

// Leaves both debuggers at their runs' ends.
Difference first_difference(Debugger& a, Debugger& b);

}  // namespace ksim::ui
