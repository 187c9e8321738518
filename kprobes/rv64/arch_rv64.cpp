// RV64 breakpoints and trap classification, and the factory.
#include "kprobes/rv64/arch_rv64.hpp"

#include <cstring>

#include "cpu/rv64/csr_numbers.hpp"
#include "mem/memory_map.hpp"

namespace ksim::kprobes {

std::unique_ptr<Arch> make_rv64_arch() { return std::make_unique<rv64arch::Rv64Arch>(); }

namespace rv64arch {

using ksim::rv64::Insn;
using ksim::rv64::Op;

Insn decode_probed(const ProbeInsn& pi) {
  uint16_t lo = 0, hi = 0;
  std::memcpy(&lo, pi.orig, 2);
  if (pi.len == 4) std::memcpy(&hi, pi.orig + 2, 2);
  return ksim::rv64::decode(lo, hi);
}

std::string mnemonic_of(const Insn& in) {
  if (in.len == 2) {
    // RV64 has no c.jal (that encoding is c.addiw here), so a compressed
    // jal is always c.j; c.jr and c.jalr differ by their link register.
    switch (in.op) {
      case Op::ebreak: return "c.ebreak";
      case Op::jal: return "c.j";
      case Op::jalr: return in.rd == 0 ? "c.jr" : "c.jalr";
      case Op::beq: return "c.beqz";
      case Op::bne: return "c.bnez";
      default: break;
    }
  }
  return ksim::rv64::op_info(in.op).mnemonic;
}

// ebreak, or c.ebreak in the low halfword (the halfword after it may be
// anything: the next instruction).
bool Rv64Arch::is_breakpoint(const uint8_t* bytes) const {
  uint16_t lo;
  uint32_t word;
  std::memcpy(&lo, bytes, 2);
  std::memcpy(&word, bytes, 4);
  return lo == kCEbreak || word == kEbreak;
}

unsigned Rv64Arch::breakpoint_bytes(uint8_t* out) const {
  std::memcpy(out, &kEbreak, 4);
  return 4;
}

bool Rv64Arch::is_breakpoint_trap(const TrapInfo& t) const {
  return !t.interrupt && t.cause == ksim::rv64::kBreakpoint;
}

// Machine software interrupt: the CLINT's msip, the kernel's IPI.
bool Rv64Arch::is_ipi(const TrapInfo& t) const { return t.interrupt && t.cause == 3; }

void Rv64Arch::send_ipi(const DeviceStore& store, int to) const {
  store(memmap::kClintBase + memmap::kClintMsip + 4 * static_cast<uint64_t>(to), 4, 1);
}

}  // namespace rv64arch
}  // namespace ksim::kprobes
