// Jump optimization on RV64, beyond mainline Linux: the approach of the
// unmerged 2022-2023 RISC-V optprobes series (docs/KPROBES_RV64.md, "Jump
// optimization").
//
// RISC-V has no jump that reaches a detour buffer without a register: the
// 8-byte `auipc rd, hi; jalr x0, lo(rd)` pair overwrites rd. So the
// safety check adds a *liveness analysis* of the probed function to the
// usual ones: rd must be a register no path from the probe point reads
// before writing it.
//
// can_optimize:
//   - the detoured region (DCR) is the whole instructions from the probe
//     point covering 8 bytes, inside the function; each can run from the
//     detour buffer: the instruction table steps it (nothing PC-relative:
//     no auipc, jal, jalr or branch; no system instruction, CSR or fence);
//   - the whole function decodes; no branch or jal lands strictly inside
//     the region; no indirect jump but `ret` and the `auipc`+`jalr x0` of
//     a far tail call (a jump table could land anywhere);
//   - a register among t0-t6, a0-a7 is dead after the region (liveness,
//     below) and not used by the region: the jump, the detour's port load
//     and its jump back all clobber it.
//
// Liveness is the textbook backward data-flow over the function's
// instructions, to a fixed point, under the calling convention (the
// kernel is C built by GCC): a call (jal/jalr with rd != x0) reads a0-a7
// and clobbers ra, t0-t6 and a0-a7; `ret` reads a0, a1, ra, sp, gp, tp
// and s0-s11; a tail call reads a0-a7 and those; falling off the end of
// the function, ecall, ebreak, mret and wfi read everything. A `jal x0`
// out of the function is taken for a tail call to a function that keeps
// the convention (the kernel has no GCC `.cold` partitions, whose jumps
// could carry temporaries); a branch out of the function is refused.
//
// The detour buffer:
//   lui rd, %hi(port); ld rd, %lo(port)(rd)     the handler call
//   <the region's instructions, copied>
//   auipc rd, hi; jalr x0, lo(rd)               back to addr + len
// The load from the optimizer's port (memmap::kOptprobePort) runs the
// handlers; rd is dead, so nothing needs saving.
#include <algorithm>
#include <cstring>

#include "cpu/cpu.hpp"
#include "cpu/hex.hpp"
#include "kprobes/rv64/arch_rv64.hpp"
#include "mem/memory_map.hpp"
#include "sim/elf/symbols.hpp"

namespace ksim::kprobes::rv64arch {

namespace {

using ksim::rv64::Format;
using ksim::rv64::Insn;
using ksim::rv64::Op;
using ksim::rv64::Probe;
using Regs = uint32_t;  // bit k: register xk

constexpr unsigned kJumpBytes = 8;  // auipc + jalr
constexpr int kRa = 1, kSp = 2, kGp = 3, kTp = 4;

constexpr Regs bit(int r) { return r ? Regs{1} << r : 0; }
constexpr Regs range(int lo, int hi) {
  Regs m = 0;
  for (int r = lo; r <= hi; ++r) m |= bit(r);
  return m;
}
constexpr Regs kAll = ~Regs{1};  // x1-x31
constexpr Regs kArgs = range(10, 17);
constexpr Regs kTemps = range(5, 7) | range(28, 31);
constexpr Regs kCalleeSaved = range(8, 9) | range(18, 27) | bit(kSp) | bit(kGp) | bit(kTp);
constexpr Regs kCallClobbers = bit(kRa) | kTemps | kArgs;
constexpr Regs kLiveAtRet = kCalleeSaved | bit(kRa) | bit(10) | bit(11);
constexpr Regs kLiveAtTailCall = kCalleeSaved | bit(kRa) | kArgs;
// The candidates for the jump's register, in the order tried: the
// temporaries first (no argument or return value lives there).
constexpr int kCandidates[] = {5, 6, 7, 28, 29, 30, 31, 17, 16, 15, 14, 13, 12, 11, 10};

// One decoded instruction of the function and its data-flow facts.
struct Node {
  uint64_t pc = 0;
  Insn in{};
  Regs use = 0, def = 0;
  Regs exit_live = 0;          // live after it when it leaves the function
  bool falls_through = true;   // to the next instruction
  uint64_t target = 0;         // a branch's or jal's target inside the function (0: none)
  Regs live_in = 0;
};

// Reads and writes of an instruction, by its format (compressed forms are
// decoded to their 32-bit equivalents, so rd/rs1/rs2 are the real ones).
void uses_defs(Node& n) {
  const Insn& in = n.in;
  switch (ksim::rv64::op_info(in.op).format) {
    case Format::R:
    case Format::AMO: n.use = bit(in.rs1) | bit(in.rs2); n.def = bit(in.rd); break;
    case Format::I:
    case Format::SHIFT:
    case Format::LOAD:
    case Format::LR:
    case Format::JALR:
    case Format::CSR: n.use = bit(in.rs1); n.def = bit(in.rd); break;
    case Format::STORE:
    case Format::B: n.use = bit(in.rs1) | bit(in.rs2); break;
    case Format::U:
    case Format::J:
    case Format::CSRI: n.def = bit(in.rd); break;
    case Format::FENCE:
    case Format::NONE: break;
  }
}

bool is_branch(Op op) {
  return op == Op::beq || op == Op::bne || op == Op::blt || op == Op::bge || op == Op::bltu || op == Op::bgeu;
}

// I-type and U-type encodings for the detour's code.
uint32_t u_type(uint32_t opcode, int rd, uint32_t hi20) { return (hi20 << 12) | (uint32_t(rd) << 7) | opcode; }
uint32_t i_type(uint32_t opcode, uint32_t funct3, int rd, int rs1, int32_t imm12) {
  return (uint32_t(imm12 & 0xfff) << 20) | (uint32_t(rs1) << 15) | (funct3 << 12) | (uint32_t(rd) << 7) | opcode;
}
void put32(std::vector<uint8_t>& out, uint32_t w) {
  for (int k = 0; k < 4; ++k) out.push_back(static_cast<uint8_t>(w >> (8 * k)));
}
// `off` as %hi/%lo: hi20 << 12 plus the sign-extended lo12.
bool split(int64_t off, uint32_t& hi20, int32_t& lo12) {
  if (off < -(int64_t{1} << 31) || off >= (int64_t{1} << 31) - 0x800) return false;
  lo12 = static_cast<int32_t>(off << 52 >> 52);
  hi20 = static_cast<uint32_t>(((off - lo12) >> 12) & 0xfffff);
  return true;
}
// auipc rd, hi; jalr x0, lo(rd): from `at` to `target`.
bool far_jump(int rd, uint64_t at, uint64_t target, std::vector<uint8_t>& out) {
  uint32_t hi20;
  int32_t lo12;
  if (!split(static_cast<int64_t>(target - at), hi20, lo12)) return false;
  put32(out, u_type(0x17, rd, hi20));
  put32(out, i_type(0x67, 0, 0, rd, lo12));
  return true;
}

}  // namespace

int Rv64Arch::can_optimize(const TextReader& text, uint64_t addr, const Symbol& func, OptRegion& out,
                           std::string& why) const {
  const uint64_t end = func.addr + func.size;
  const std::string at = func.name + "+" + hex(addr - func.addr);
  if (!func.size || addr < func.addr || addr >= end || (addr & 1)) {
    why = at + ": not inside a function of known size";
    return -kEINVAL;
  }
  if (end - addr < kJumpBytes) {
    why = at + ": fewer than 8 bytes to the end of " + func.name + " (the auipc+jalr would leave the function)";
    return -kERANGE;
  }
  // The whole function, decoded.
  std::vector<Node> nodes;
  for (uint64_t pc = func.addr; pc < end;) {
    Node n;
    n.pc = pc;
    uint8_t bytes[4];
    if (!fetch_insn(text, pc, n.in, bytes) || n.in.op == Op::illegal || pc + n.in.len > end) {
      why = at + ": cannot decode " + func.name + " at " + hex(pc) + ", so its register use is unknown";
      return -kEILSEQ;
    }
    uses_defs(n);
    const Op op = n.in.op;
    const uint64_t target = pc + static_cast<uint64_t>(static_cast<int64_t>(n.in.imm));
    if (is_branch(op)) {
      if (target < func.addr || target >= end) {
        why = at + ": `" + one_line(n.in, pc) + "` at " + hex(pc) + " branches out of " + func.name +
              ", so what is live after it is unknown";
        return -kEOPNOTSUPP;
      }
      n.target = target;
    } else if (op == Op::jal) {
      if (n.in.rd != 0) {  // a call
        n.use |= kArgs;
        n.def |= kCallClobbers;
      } else {
        n.falls_through = false;
        if (target >= func.addr && target < end)
          n.target = target;
        else
          n.exit_live = kLiveAtTailCall;
      }
    } else if (op == Op::jalr) {
      const bool ret = n.in.rd == 0 && n.in.rs1 == kRa && n.in.imm == 0;
      if (n.in.rd != 0) {  // an indirect call
        n.use |= kArgs;
        n.def |= kCallClobbers;
      } else if (ret) {
        n.falls_through = false;
        n.exit_live = kLiveAtRet;
      } else if (!nodes.empty() && nodes.back().in.op == Op::auipc && nodes.back().in.rd == n.in.rs1) {
        n.falls_through = false;  // auipc t1, hi; jalr x0, lo(t1): a far tail call
        n.exit_live = kLiveAtTailCall;
      } else {
        why = at + ": " + func.name + " has an indirect jump (`" + one_line(n.in, pc) + "` at " + hex(pc) +
              "), which may land inside the region (a jump table)";
        return -kEOPNOTSUPP;
      }
    } else if (ksim::rv64::op_info(op).format == Format::NONE) {
      n.use = kAll;  // ecall, ebreak, mret, wfi: the handler may read anything
      if (op == Op::mret) n.falls_through = false, n.exit_live = kAll;
    }
    nodes.push_back(n);
    pc += n.in.len;
  }
  const auto index_of = [&](uint64_t pc) -> long {
    auto it = std::lower_bound(nodes.begin(), nodes.end(), pc, [](const Node& n, uint64_t v) { return n.pc < v; });
    return it != nodes.end() && it->pc == pc ? it - nodes.begin() : -1;
  };
  const long first = index_of(addr);
  if (first < 0) {
    why = at + ": not an instruction boundary";
    return -kEILSEQ;
  }
  // The region: whole instructions from addr covering 8 bytes.
  out = OptRegion{};
  Regs touched = 0;
  long after = first;
  for (; out.len < kJumpBytes; ++after) {
    if (after >= static_cast<long>(nodes.size())) {
      why = at + ": the region would run past the end of " + func.name;
      return -kERANGE;
    }
    const Node& n = nodes[static_cast<size_t>(after)];
    if (ksim::rv64::op_info(n.in.op).probe != Probe::step) {
      why = at + ": `" + one_line(n.in, n.pc) + "` at " + hex(n.pc) +
            " cannot run from the detour buffer (PC-relative, a jump or a system instruction)";
      return -kEOPNOTSUPP;
    }
    Insn again{};
    uint8_t bytes[4];
    (void)fetch_insn(text, n.pc, again, bytes);  // (read once already)
    std::memcpy(out.bytes + out.len, bytes, n.in.len);
    out.len = static_cast<uint8_t>(out.len + n.in.len);
    ++out.insns;
    touched |= n.use | n.def;
  }
  // Nothing may land strictly inside the region.
  for (const Node& n : nodes) {
    if (n.target > addr && n.target < addr + out.len) {
      why = at + ": `" + one_line(n.in, n.pc) + "` at " + hex(n.pc) + " jumps to " + hex(n.target) +
            ", inside the region [" + hex(addr) + ", " + hex(addr + out.len) + ")";
      return -kEOPNOTSUPP;
    }
    if (n.target && index_of(n.target) < 0) {
      why = at + ": `" + one_line(n.in, n.pc) + "` at " + hex(n.pc) + " jumps into the middle of an instruction";
      return -kEILSEQ;
    }
  }
  // Liveness, backward to a fixed point.
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t k = nodes.size(); k-- > 0;) {
      Node& n = nodes[k];
      Regs live_out = n.exit_live;
      if (n.falls_through) live_out |= k + 1 < nodes.size() ? nodes[k + 1].live_in : kAll;
      if (n.target) live_out |= nodes[static_cast<size_t>(index_of(n.target))].live_in;
      const Regs in = n.use | (live_out & ~n.def);
      if (in != n.live_in) {
        n.live_in = in;
        changed = true;
      }
    }
  }
  const Regs live_after = static_cast<size_t>(after) < nodes.size() ? nodes[static_cast<size_t>(after)].live_in : kAll;
  for (int r : kCandidates) {
    if ((live_after | touched) & bit(r)) continue;
    out.scratch = static_cast<int8_t>(r);
    return 0;
  }
  why = at + ": no register is free for the auipc+jalr: each of t0-t6 and a0-a7 is live after the region [" +
        hex(addr) + ", " + hex(addr + out.len) + ") or used in it";
  return -kEBUSY;
}

bool Rv64Arch::encode_detour_jump(const OptRegion& r, uint64_t at, uint64_t target, std::vector<uint8_t>& out) const {
  out.clear();
  return r.scratch > 0 && far_jump(r.scratch, at, target, out);
}

int Rv64Arch::build_detour(const OptRegion& r, uint64_t addr, uint64_t buf, std::vector<uint8_t>& out,
                           unsigned& copy_at, std::string& why) const {
  out.clear();
  if (r.scratch <= 0) {
    why = "the region has no free register";
    return -kEINVAL;
  }
  uint32_t hi20;
  int32_t lo12;
  split(static_cast<int64_t>(memmap::kOptprobePort), hi20, lo12);
  put32(out, u_type(0x37, r.scratch, hi20));              // lui rd, %hi(port)
  put32(out, i_type(0x03, 3, r.scratch, r.scratch, lo12));  // ld rd, %lo(port)(rd)
  copy_at = static_cast<unsigned>(out.size());
  out.insert(out.end(), r.bytes, r.bytes + r.len);
  if (!far_jump(r.scratch, buf + out.size(), addr + r.len, out)) {
    why = "the jump back from " + hex(buf) + " to " + hex(addr + r.len) + " does not fit in 32 bits";
    return -kERANGE;
  }
  return 0;
}

// Only the PC differs from the probe point's registers (the scratch
// register is dead there: the handlers see whatever the detour left in it).
void Rv64Arch::detour_enter(Cpu& cpu, const Bus&, uint64_t addr, const OptRegion&, DetourRegs& d) const {
  d.pc = cpu.pc();
  cpu.set_pc(addr);
}

// A change of the PC is ignored (the Linux documents' note); the load
// gives the scratch register what the handlers left in it.
void Rv64Arch::detour_leave(Cpu& cpu, Bus&, const OptRegion& r, const DetourRegs& d, uint64_t& value) const {
  value = r.scratch > 0 ? cpu.gpr(r.scratch) : 0;
  cpu.set_pc(d.pc);
}

}  // namespace ksim::kprobes::rv64arch
