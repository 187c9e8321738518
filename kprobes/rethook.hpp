// The rethook port: the device behind the guest's trap-free kretprobe
// trampoline (`rethook_trampoline`, mem/memory_map.hpp's kRethookBase). A
// 64-bit load of its word at +0 by a CPU that has just returned into the
// trampoline runs that frame's kretprobe handlers (Engine::rethook_return)
// and yields the real return address; the trampoline jumps there. This is
// the OLS 2006 paper's kretprobe-booster (section 6.2) and Linux's rethook:
// no breakpoint, no trap entry or iret, just the handler path. The word at
// +8 is the jump optimizer's: a detour buffer's load from it runs the
// optimized probe's handlers (Engine::optprobe_hit). Any other access
// faults.
#pragma once
#include "mem/device.hpp"

namespace ksim::kprobes {

class Engine;

class RethookPort final : public Device {
 public:
  explicit RethookPort(Engine& e) : e_(e) {}
  std::string_view name() const override { return "kprobes-rethook"; }
  bool read(const Accessor& who, uint64_t offset, unsigned size, uint64_t& value) override;
  bool write(const Accessor&, uint64_t, unsigned, uint64_t) override { return false; }
  // (cpus_affected: all, the default: a handler may register or remove
  // probes, which other CPUs see.)

 private:
  Engine& e_;
};

}  // namespace ksim::kprobes
