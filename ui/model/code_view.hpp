// What the Code window shows: disassembly around an address, with symbol
// headers, the CPUs whose PC is there, armed probes, the original
// instruction where memory holds a probe's breakpoint (and the breakpoint
// over it), and the probe each instruction slot belongs to.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ui/model/debugger.hpp"

namespace ksim::ui {

struct CodeLine {
  uint64_t addr = 0;
  std::string label;      // "do_fork" when a function starts here
  std::string bytes;      // hex of the original bytes
  std::string text;       // the original instruction (what the image has)
  std::vector<int> cpus;  // CPUs whose PC is here
  bool probed = false;      // a probe point is registered here
  bool breakpoint = false;  // memory holds the probe's breakpoint now (armed)
  std::string over;         // the instruction memory holds instead ("ebreak", "int3")
  std::string probes;       // event names of the probes here
  std::string slot_of;      // inside an instruction slot: "slot of do_fork (p_do_fork_0)", or a
                            // detour buffer: "detour of do_fork (f): copied region"
  // Under --code-model relaxed, when the viewing CPU has not yet seen a
  // store here (its stale view differs from memory): the instruction it
  // would execute here next (Cpu::fetch_view). "" otherwise.
  std::string cpu_sees;
  // The C (or assembler) lines this instruction starts, as objdump -S puts
  // them before it (SourceInterleaver); empty when it continues the line
  // of the instruction before it or the image has no line information.
  struct SourceRow {
    uint32_t line = 0;
    std::string text;  // "" when the file cannot be read
  };
  std::string source_file;  // short name ("kernel/workload.c") of `source`
  std::vector<SourceRow> source;
};

// Lines around `center`: up to `before` instructions before it (decoded
// from the start of its function, so boundaries are right) and `after`
// from it. `view_cpu` (>= 0): also what that CPU would execute, where its
// view of code differs from memory (CodeLine::cpu_sees).
std::vector<CodeLine> code_lines(Debugger& d, uint64_t center, int before, int after, int view_cpu = -1);

// "do_fork", "do_fork+0x8", "0x80001000" or a register-free number: the
// address, or nullopt.
std::optional<uint64_t> resolve_location(Debugger& d, const std::string& text);

}  // namespace ksim::ui
