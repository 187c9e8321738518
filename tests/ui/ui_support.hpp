// Shared by the debugger's tests: world specs for the built guests.
#pragma once
#include <memory>
#include <string>

#include "ui/model/debugger.hpp"

namespace ksim::test {

inline std::shared_ptr<const ElfImage> ui_image(const std::string& rel, Isa isa = Isa::rv64) {
  return std::make_shared<const ElfImage>(load_elf_file(std::string(KSIM_BINARY_DIR) + "/workloads/" + rel, isa));
}

// Jump optimization is off unless a test asks for it: the debugger's tests
// follow hits through their traps and state machine.
inline ui::WorldSpec ui_kernel(int cpus, uint64_t seed = 0, Isa isa = Isa::rv64) {
  ui::WorldSpec s;
  s.optimize = false;
  s.config.isa = isa;
  s.config.cpus = cpus;
  s.config.seed = seed;
  static auto rv = ui_image("rv64/kernel_preempt.elf");
  static auto x86 = ui_image("x86/kernel_x86_preempt.elf", Isa::x86_64);
  s.image = isa == Isa::rv64 ? rv : x86;
  return s;
}

inline ui::ProbeOp ui_add(const std::string& spec) { return ui::ProbeOp{ui::ProbeOp::Kind::add, spec, 0}; }

}  // namespace ksim::test
