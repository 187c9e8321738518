// The ISA-specific half of a machine: the interrupt controller and timer
// device, the CPUs, and how a CPU's trap is described in events.
#pragma once
#include <memory>
#include <vector>

#include "cpu/cpu.hpp"

namespace ksim {

class Machine;

class Platform {
 public:
  virtual ~Platform() = default;
  virtual std::vector<Cpu*> cpus() = 0;
  // Reason text for a CPU that stopped itself (e.g. a trap loop), or "".
  virtual std::string crash_reason(int cpu) = 0;
  virtual void set_trace_insns(bool on) = 0;
};

std::unique_ptr<Platform> make_rv64_platform(Machine& m);

}  // namespace ksim
