// Registration on RV64 (Linux's arch_prepare_kprobe, arch_check_kprobe and
// decode-insn.c): the alignment and boundary checks, the choice between
// rejecting, simulating and stepping (the instruction table's Probe
// column), the breakpoint to write, and the [insn][ebreak] slot.
#include <cstdio>
#include <cstring>

#include "cpu/hex.hpp"
#include "cpu/rv64/disasm.hpp"
#include "kprobes/rv64/arch_rv64.hpp"
#include "sim/elf/symbols.hpp"

namespace ksim::kprobes::rv64arch {

namespace {

using ksim::rv64::Insn;
using ksim::rv64::Op;
using ksim::rv64::Probe;

// "func+0x6" when the function is known, else the bare address.
std::string where(uint64_t addr, const Symbol* func) {
  if (!func || addr < func->addr) return hex(addr);
  return addr == func->addr ? func->name : func->name + "+" + hex(addr - func->addr);
}

}  // namespace

// objdump's "mnemonic\toperands" with a space instead of the tab, for
// one-line messages.
std::string one_line(const Insn& in, uint64_t pc) {
  std::string s = ksim::rv64::disassemble(in, pc);
  for (char& c : s)
    if (c == '\t') c = ' ';
  return s;
}

// Reads and decodes the instruction at `addr` from the unprobed text: the
// low halfword gives the length, so a compressed instruction at the end of
// RAM is read without touching the two bytes after it.
bool fetch_insn(const TextReader& text, uint64_t addr, Insn& in, uint8_t* bytes) {
  uint16_t lo = 0, hi = 0;
  if (!text(addr, bytes, 2)) return false;
  std::memcpy(&lo, bytes, 2);
  if (!ksim::rv64::is_compressed(lo)) {
    if (!text(addr + 2, bytes + 2, 2)) return false;
    std::memcpy(&hi, bytes + 2, 2);
  }
  in = ksim::rv64::decode(lo, hi);
  return true;
}

namespace {

// Why a row the table marks `reject` may not be probed.
const char* reject_reason(Op op) {
  switch (op) {
    case Op::ebreak:
      return "a breakpoint cannot be probed";
    case Op::ecall:
    case Op::mret:
    case Op::wfi:
      return "system instructions cannot be probed: they trap or change privilege, out of the slot";
    case Op::csrrw:
    case Op::csrrs:
    case Op::csrrc:
    case Op::csrrwi:
    case Op::csrrsi:
    case Op::csrrci:
      return "CSR instructions cannot be probed: stepped with interrupts masked they would see the engine's mstatus";
    case Op::fence:
    case Op::fence_i:
      return "fences cannot be probed (Linux refuses them)";
    default:
      return "the instruction table marks it unsafe to probe";
  }
}

// Linux's arch_check_kprobe: walks instruction lengths from the function's
// start; `addr` must be where one of them starts. Lengths depend only on
// the low two bits, so data or illegal words in between do not stop the
// walk.
int check_boundary(const TextReader& text, uint64_t addr, const Symbol& func, std::string& why) {
  if (func.addr > addr || (func.addr & 1)) return 0;  // not a start we can walk from
  uint64_t pos = func.addr;
  while (pos < addr) {
    Insn in{};
    uint8_t bytes[4];
    if (!fetch_insn(text, pos, in, bytes)) {
      why = "cannot read guest text at " + where(pos, &func) + " while checking instruction boundaries";
      return -kEINVAL;
    }
    if (pos + in.len > addr) {
      why = "not an instruction boundary: it falls inside `" + one_line(in, pos) + "` at " + where(pos, &func) +
            " (" + mnemonic_of(in) + ", " + std::to_string(in.len) + " bytes)";
      return -kEILSEQ;
    }
    pos += in.len;
  }
  return 0;
}

}  // namespace

// Reasons name the instruction, not the probe address: the engine puts the
// address in front of them.
int Rv64Arch::analyse(const TextReader& text, uint64_t addr, const Symbol* func, StepMode, ProbeInsn& out,
                      std::string& why) const {
  if (addr & 1) {
    why = "not 2-byte aligned (RV64 instructions start on even addresses)";
    return -kEINVAL;
  }
  if (func)
    if (int err = check_boundary(text, addr, *func, why)) return err;

  Insn in{};
  uint8_t bytes[4] = {};
  if (!fetch_insn(text, addr, in, bytes)) {
    why = "cannot read the instruction (outside RAM)";
    return -kEINVAL;
  }
  if (in.op == Op::illegal) {
    why = one_line(in, addr) + ": not a valid RV64IMAC instruction, cannot be probed";
    return -kEINVAL;
  }
  const Probe probe = ksim::rv64::op_info(in.op).probe;
  if (probe == Probe::reject) {
    why = mnemonic_of(in) + ": " + reject_reason(in.op);
    return -kEINVAL;
  }

  out = ProbeInsn{};
  out.addr = addr;
  out.len = in.len;
  std::memcpy(out.orig, bytes, in.len);
  // PC-relative instructions would compute from the slot's address, so
  // they are simulated on the host instead (Linux's simulate-insn.c).
  out.kind = probe == Probe::simulate ? ProbeInsn::Kind::emulate : ProbeInsn::Kind::step;
  // The breakpoint has the size of the instruction it covers, so that no
  // other instruction is touched (c.ebreak needs the C extension, which
  // any compressed instruction there already implies).
  if (in.len == 4) {
    std::memcpy(out.bp, &kEbreak, 4);
    out.bp_len = 4;
  } else {
    std::memcpy(out.bp, &kCEbreak, 2);
    out.bp_len = 2;
  }
  out.text = ksim::rv64::disassemble(in, addr);
  out.op = static_cast<uint32_t>(in.op);
  out.aux[0] = in.raw;
  return 0;
}

// The slot: [the original instruction][ebreak]. The step ends at the
// ebreak, at slot + len; no fixup is needed afterwards because nothing
// PC-relative is ever stepped.
int Rv64Arch::build_slot(ProbeInsn& pi, uint64_t slot, StepMode, std::string& why) const {
  if (pi.kind != ProbeInsn::Kind::step) {
    why = pi.text + ": simulated instructions have no slot";
    return -kEINVAL;
  }
  if ((slot & 1) || (pi.len != 2 && pi.len != 4)) {
    why = hex(slot) + ": not a usable slot for a " + std::to_string(pi.len) + "-byte instruction";
    return -kEINVAL;
  }
  std::memset(pi.slot_bytes, 0, sizeof pi.slot_bytes);
  std::memcpy(pi.slot_bytes, pi.orig, pi.len);
  std::memcpy(pi.slot_bytes + pi.len, &kEbreak, 4);
  pi.slot_len = static_cast<uint8_t>(pi.len + 4);
  pi.step_end = static_cast<int8_t>(pi.len);
  return 0;
}

}  // namespace ksim::kprobes::rv64arch
