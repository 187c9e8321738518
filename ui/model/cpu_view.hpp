// What the CPUs window shows for one CPU: PC as symbol+off, privilege,
// interrupt enable, clock, task, what the CPU is doing, and its registers
// with those changed by the last move marked.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ui/model/debugger.hpp"

namespace ksim::ui {

struct RegRow {
  std::string name;
  uint64_t value = 0;
  bool changed = false;  // differs from before the last move
};

struct CpuRow {
  int id = 0;
  uint64_t pc = 0;
  std::string pc_sym;
  std::string pc_line;    // "kernel/workload.c:55", "" without line information
  bool pc_changed = false;
  std::string priv;       // "M"/"U" (RV64), "ring 0".."ring 3" (x86)
  bool irq_enabled = false;  // mstatus.MIE / RFLAGS.IF
  uint64_t cycle = 0, instret = 0, steps = 0;
  std::string task;       // comm-tid from the guest's ksim_kernel_abi (needs the probe engine), else ""
  std::string doing;      // guest code / idle / a probe phase
  enum class Doing : uint8_t { guest, idle, probe, parked, ended } state = Doing::guest;
  std::vector<RegRow> regs;
  // Timing v2 (docs/TIMING.md): the CPU's memory counters and store
  // buffer, one line; "" under v1.
  std::string caches;
};

CpuRow cpu_row(Debugger& d, int cpu);
// Timing v2: which CPUs' L1s hold the line of `addr` and in which MESI
// state, and which L2s hold it: "line 80001000: cpu 0 M; L2 of cpus 0-3";
// "" under v1 or outside RAM.
std::string line_holders(Debugger& d, uint64_t addr);

}  // namespace ksim::ui
