// The x86-64 Arch (kprobes/arch.hpp). Its methods are defined in
// arch_x86.cpp (registration, traps, hit processing: thin wrappers over
// analyse/slot/emulate/fixup) and abi.cpp (the SysV ABI and snapshots).
#pragma once
#include "kprobes/arch.hpp"

namespace ksim::kprobes {

class X86Arch final : public Arch {
 public:
  Isa isa() const override { return Isa::x86_64; }

  int analyse(const TextReader& text, uint64_t addr, const Symbol* func, StepMode mode, ProbeInsn& out,
              std::string& why) const override;
  int build_slot(ProbeInsn& pi, uint64_t slot, StepMode mode, std::string& why) const override;
  unsigned slot_size() const override { return 16; }  // MAX_INSN_SIZE (15) + int3
  int can_optimize(const TextReader& text, uint64_t addr, const Symbol& func, OptRegion& out,
                   std::string& why) const override;
  bool encode_jump(uint64_t at, uint64_t target, std::vector<uint8_t>& out) const override;
  int build_detour(const OptRegion& r, uint64_t addr, uint64_t buf, std::vector<uint8_t>& out, unsigned& copy_at,
                   std::string& why) const override;
  void detour_enter(Cpu& cpu, const Bus& bus, uint64_t addr, const OptRegion& r, DetourRegs& d) const override;
  void detour_leave(Cpu& cpu, Bus& bus, const OptRegion& r, const DetourRegs& d, uint64_t& value) const override;
  bool is_breakpoint(const uint8_t* bytes) const override;
  unsigned breakpoint_bytes(uint8_t* out) const override;

  bool is_breakpoint_trap(const TrapInfo& t) const override;
  bool is_single_step_trap(const TrapInfo& t) const override;
  bool is_ipi(const TrapInfo& t) const override;
  void send_ipi(const DeviceStore& store, int to) const override;

  SavedFlags save_and_mask(Cpu& cpu) const override;
  void restore(Cpu& cpu, const SavedFlags& saved) const override;
  bool emulate(Cpu& cpu, Bus& bus, const ProbeInsn& pi, SavedFlags& saved) const override;
  void begin_step(Cpu& cpu, const ProbeInsn& pi, uint64_t slot) const override;
  bool is_step_end(const Cpu& cpu, const TrapInfo& t, const ProbeInsn& pi, uint64_t slot) const override;
  void finish_step(Cpu& cpu, Bus& bus, const ProbeInsn& pi, uint64_t slot, SavedFlags& saved) const override;

  RegSnapshot snapshot(const Cpu& cpu) const override;
  void restore_snapshot(Cpu& cpu, const RegSnapshot& r) const override;

  bool arg(const Cpu& cpu, const Bus& bus, int n, uint64_t& out) const override;
  uint64_t retval(const Cpu& cpu) const override;
  void set_retval(Cpu& cpu, uint64_t v) const override;
  uint64_t stack_pointer(const Cpu& cpu) const override;
  bool return_address(const Cpu& cpu, const Bus& bus, uint64_t& out) const override;
  bool set_return_address(Cpu& cpu, Bus& bus, uint64_t v) const override;
  uint64_t sp_after_return(uint64_t sp_at_entry) const override { return sp_at_entry + 8; }
  int reg_index(const std::string& name) const override;
};

}  // namespace ksim::kprobes
