// The RV64 half of the kprobes engine (Linux's arch/riscv/kernel/probes):
// the declaration shared by the files of this folder. Each group of
// methods lives in its own file:
//   analyse.cpp   registration: boundary check, reject/simulate/step, slots
//   simulate.cpp  a hit: interrupt masking, the simulated instructions,
//                 stepping the copy out of line, register snapshots
//   abi.cpp       the calling convention (arguments, return value and
//                 address) and register names for fetch args
//   arch_rv64.cpp breakpoint encodings and trap classification
//   optimize.cpp  jump optimization: the liveness check, the detour buffer
// See docs/KPROBES_RV64.md for the slot layout and the instruction table.
#pragma once
#include <cstdint>
#include <string>

#include "cpu/rv64/insn.hpp"
#include "kprobes/arch.hpp"

namespace ksim::kprobes::rv64arch {

// The two breakpoint encodings (Unprivileged ISA, EBREAK and C.EBREAK).
inline constexpr uint32_t kEbreak = 0x00100073;
inline constexpr uint16_t kCEbreak = 0x9002;

// A slot holds the copy (at most 4 bytes) and the 4-byte ebreak that ends
// the step: 8 bytes, rounded up to a power of two the allocator can use.
inline constexpr unsigned kSlotSize = 16;

// Decodes the (unprobed) instruction bytes of `pi` again: the ProbeInsn
// keeps the original bytes, and decoding four bytes once per hit is cheaper
// than keeping a second copy of the operands in sync.
ksim::rv64::Insn decode_probed(const ProbeInsn& pi);

// Reads and decodes the instruction at `addr` from the unprobed text into
// `in` (its bytes, up to 4, into `bytes`); false outside RAM.
bool fetch_insn(const TextReader& text, uint64_t addr, ksim::rv64::Insn& in, uint8_t* bytes);
// objdump's text of an instruction on one line ("addi sp, sp, -16").
std::string one_line(const ksim::rv64::Insn& in, uint64_t pc);

// The name an instruction is written with in refusals: compressed control
// transfers and c.ebreak keep their own mnemonics ("c.beqz", not "beq").
std::string mnemonic_of(const ksim::rv64::Insn& in);

class Rv64Arch final : public Arch {
 public:
  Isa isa() const override { return Isa::rv64; }

  int analyse(const TextReader& text, uint64_t addr, const Symbol* func, StepMode mode, ProbeInsn& out,
              std::string& why) const override;
  int build_slot(ProbeInsn& pi, uint64_t slot, StepMode mode, std::string& why) const override;
  unsigned slot_size() const override { return kSlotSize; }
  bool is_breakpoint(const uint8_t* bytes) const override;
  // Jump optimization (optimize.cpp): the out-of-tree RISC-V optprobes
  // series' auipc+jalr through a register the function's liveness shows dead.
  int can_optimize(const TextReader& text, uint64_t addr, const Symbol& func, OptRegion& out,
                   std::string& why) const override;
  bool encode_detour_jump(const OptRegion& r, uint64_t at, uint64_t target, std::vector<uint8_t>& out) const override;
  unsigned detour_jump_insns() const override { return 2; }
  int build_detour(const OptRegion& r, uint64_t addr, uint64_t buf, std::vector<uint8_t>& out, unsigned& copy_at,
                   std::string& why) const override;
  void detour_enter(Cpu& cpu, const Bus& bus, uint64_t addr, const OptRegion& r, DetourRegs& d) const override;
  void detour_leave(Cpu& cpu, Bus& bus, const OptRegion& r, const DetourRegs& d, uint64_t& value) const override;
  unsigned breakpoint_bytes(uint8_t* out) const override;

  bool is_breakpoint_trap(const TrapInfo& t) const override;
  bool is_single_step_trap(const TrapInfo&) const override { return false; }
  bool is_ipi(const TrapInfo& t) const override;
  void send_ipi(const DeviceStore& store, int to) const override;

  SavedFlags save_and_mask(Cpu& cpu) const override;
  void restore(Cpu& cpu, const SavedFlags& saved) const override;
  bool emulate(Cpu& cpu, Bus& bus, const ProbeInsn& pi, SavedFlags& saved) const override;

 private:
  // The instruction's effect on registers and pc (emulate() also retires it).
  bool simulate(Cpu& cpu, const ProbeInsn& pi) const;

 public:
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
  uint64_t sp_after_return(uint64_t sp_at_entry) const override { return sp_at_entry; }
  int reg_index(const std::string& name) const override;
};

}  // namespace ksim::kprobes::rv64arch
