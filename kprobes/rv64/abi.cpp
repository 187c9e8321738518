// The RV64 calling convention as kretprobes, jprobes and fetch args see it
// (RISC-V psABI, "Integer Calling Convention"): arguments in a0-a7 then on
// the stack from sp upward, the result in a0, the return address in ra.
// The call does not move sp, so a function returns with the sp it was
// entered with.
#include <charconv>

#include "cpu/cpu.hpp"
#include "cpu/rv64/disasm.hpp"
#include "kprobes/rv64/arch_rv64.hpp"
#include "mem/bus.hpp"

namespace ksim::kprobes::rv64arch {

namespace {

enum AbiReg : int { kRa = 1, kSp = 2, kS0 = 8, kA0 = 10 };
constexpr int kArgRegs = 8;  // a0..a7

}  // namespace

bool Rv64Arch::arg(const Cpu& cpu, const Bus& bus, int n, uint64_t& out) const {
  if (n < 1) return false;
  if (n <= kArgRegs) {
    out = cpu.gpr(kA0 + n - 1);
    return true;
  }
  // The ninth argument is at [sp], each later one 8 bytes above.
  const uint64_t at = cpu.gpr(kSp) + 8 * static_cast<uint64_t>(n - kArgRegs - 1);
  return bus.read_bytes(at, &out, 8);
}

uint64_t Rv64Arch::retval(const Cpu& cpu) const { return cpu.gpr(kA0); }
void Rv64Arch::set_retval(Cpu& cpu, uint64_t v) const { cpu.set_gpr(kA0, v); }
uint64_t Rv64Arch::stack_pointer(const Cpu& cpu) const { return cpu.gpr(kSp); }

bool Rv64Arch::return_address(const Cpu& cpu, const Bus&, uint64_t& out) const {
  out = cpu.gpr(kRa);
  return true;
}

bool Rv64Arch::set_return_address(Cpu& cpu, Bus&, uint64_t v) const {
  cpu.set_gpr(kRa, v);
  return true;
}

// ABI names (zero, ra, sp, ..., t6, and fp for s0) and x0..x31; "pc" and
// "ip" name the PC.
int Rv64Arch::reg_index(const std::string& name) const {
  if (name == "pc" || name == "ip") return -2;
  if (name == "fp") return kS0;
  for (int i = 0; i < 32; ++i)
    if (name == ksim::rv64::reg_name(static_cast<unsigned>(i))) return i;
  if (name.size() >= 2 && name.size() <= 3 && name[0] == 'x') {
    // x0..x31 in plain decimal: no sign, no leading zero ("x01" is not a register).
    if (name.size() == 3 && name[1] == '0') return -1;
    int i = -1;
    auto [end, ec] = std::from_chars(name.data() + 1, name.data() + name.size(), i);
    if (ec == std::errc{} && end == name.data() + name.size() && i >= 0 && i < 32) return i;
  }
  return -1;
}

}  // namespace ksim::kprobes::rv64arch
