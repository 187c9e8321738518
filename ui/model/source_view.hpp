// What the Source window shows: the C file the selected CPU is in, whole,
// with its current line marked and every CPU's line tagged, so a person
// stepping a probe hit, a stop_machine or a race sees which line of which
// function each CPU is in.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ui/model/debugger.hpp"

namespace ksim::ui {

struct SourceViewLine {
  uint32_t line = 0;      // 1-based
  std::string text;
  std::vector<int> cpus;  // CPUs whose PC is on this line
};

struct SourceView {
  std::string file;        // short name ("kernel/workload.c"); "" when there is no line
  uint32_t current = 0;    // the viewed CPU's line (0: none)
  std::string where;       // "do_fork+0x8 (kernel/workload.c:55)"
  std::string missing;     // why no text is shown, when none is
  std::vector<SourceViewLine> lines;  // the whole file
};

SourceView source_view(Debugger& d, int cpu);

}  // namespace ksim::ui
