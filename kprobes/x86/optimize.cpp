// Jump optimization on x86 (optprobes; the Linux documents' "How Does Jump
// Optimization Work?"): the safety check and the detour buffer.
//
// can_optimize (Linux's can_optimize and copy_optimized_instructions):
//   - the detoured region (DCR) is the whole instructions from the probe
//     point that cover the 5 bytes of a `jmp rel32`, inside the function;
//   - every instruction of the region can run from the detour buffer: it is
//     boostable (kprobes/x86/boost.cpp: no call, jump or other reference to
//     the IP) and, in ksim, not RIP-relative (its displacement is not
//     relocated into the buffer);
//   - the whole function decodes, and nothing in it could land strictly
//     inside the region: no indirect jump (a jump table may target any
//     byte) and no relative jump, jcc or loop whose target is inside it.
//
// The detour buffer (Linux's optprobe_template):
//   push %r11; mov 0x110008, %r11; pop %r11    the handler call
//   <the region's instructions, copied>
//   jmp rel32 addr + len                        back after the region
// Linux's template saves every register and calls optimized_callback();
// here the handlers are host code, reached by the load from the engine's
// optimizer port (mem/memory_map.hpp, kOptprobePort), which clobbers
// nothing: only the load's destination needs saving, on the stack (the
// kernel is built with -mno-red-zone, as Linux, so below %rsp is free).
// (r11, not rax: the accumulator would get the moffs form with an
// address-size prefix.)
// Encoded with Zydis's encoder.
#include <Zydis/Zydis.h>

#include <cstring>

#include "cpu/cpu.hpp"
#include "cpu/hex.hpp"
#include "cpu/x86/insn.hpp"
#include "mem/bus.hpp"
#include "cpu/x86/zydis.hpp"
#include "kprobes/x86/arch_x86.hpp"
#include "kprobes/x86/probe_class.hpp"
#include "mem/memory_map.hpp"
#include "sim/elf/symbols.hpp"

namespace ksim::kprobes {

namespace {

constexpr unsigned kJmp32 = 5;
constexpr int kRsp = 4, kR11 = 11;  // GPR numbers (encoding order)
constexpr unsigned kMaxInsn = 15;

bool decode_at(const TextReader& text, uint64_t a, uint64_t end, x86arch::Decoded& d, uint8_t* buf) {
  unsigned n = static_cast<unsigned>(std::min<uint64_t>(kMaxInsn, end - a));
  while (n > 0 && !text(a, buf, n)) --n;
  return n > 0 && x86arch::decode_full(buf, n, d);
}

bool is_relative_branch(const x86arch::Decoded& d) {
  return (d.z.attributes & ZYDIS_ATTRIB_IS_RELATIVE) && d.z.meta.category != ZYDIS_CATEGORY_CALL &&
         d.ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE;
}

bool is_indirect_jump(const x86arch::Decoded& d) {
  return d.z.mnemonic == ZYDIS_MNEMONIC_JMP && d.ops[0].type != ZYDIS_OPERAND_TYPE_IMMEDIATE;
}

bool riprel(const x86arch::Decoded& d) {
  for (unsigned k = 0; k < d.z.operand_count; ++k)
    if (d.ops[k].type == ZYDIS_OPERAND_TYPE_MEMORY &&
        (d.ops[k].mem.base == ZYDIS_REGISTER_RIP || d.ops[k].mem.base == ZYDIS_REGISTER_EIP))
      return true;
  return false;
}

bool encode(ZydisEncoderRequest& req, uint64_t at, std::vector<uint8_t>& out) {
  uint8_t b[ZYDIS_MAX_INSTRUCTION_LENGTH];
  ZyanUSize n = sizeof b;
  if (!ZYAN_SUCCESS(ZydisEncoderEncodeInstructionAbsolute(&req, b, &n, at))) return false;
  out.insert(out.end(), b, b + n);
  return true;
}

ZydisEncoderRequest request(ZydisMnemonic m) {
  ZydisEncoderRequest req;
  std::memset(&req, 0, sizeof req);
  req.machine_mode = ZYDIS_MACHINE_MODE_LONG_64;
  req.mnemonic = m;
  return req;
}

}  // namespace

int X86Arch::can_optimize(const TextReader& text, uint64_t addr, const Symbol& func, OptRegion& out,
                          std::string& why) const {
  const uint64_t end = func.addr + func.size;
  const std::string at = func.name + "+" + hex(addr - func.addr);
  if (!func.size || addr < func.addr || addr >= end) {
    why = at + ": not inside a function of known size";
    return -kEINVAL;
  }
  if (end - addr < kJmp32) {
    why = at + ": fewer than 5 bytes to the end of " + func.name + " (the jump would leave the function)";
    return -kERANGE;
  }
  // The region: whole instructions from addr covering 5 bytes.
  out = OptRegion{};
  uint64_t a = addr;
  while (a - addr < kJmp32) {
    uint8_t buf[kMaxInsn];
    x86arch::Decoded d;
    if (!decode_at(text, a, end, d, buf)) {
      why = at + ": cannot decode " + hex(a) + " in the region";
      return -kEILSEQ;
    }
    const std::string insn = ksim::x86::disassemble(buf, d.z.length, a);
    if (a + d.z.length > end) {
      why = at + ": the region would run past the end of " + func.name;
      return -kERANGE;
    }
    if (!x86arch::can_boost(buf, d.z.length) || d.z.meta.category == ZYDIS_CATEGORY_CALL) {
      why = at + ": `" + insn + "` at " + hex(a) + " cannot run from the detour buffer (not boostable)";
      return -kEOPNOTSUPP;
    }
    if (riprel(d)) {
      why = at + ": `" + insn + "` at " + hex(a) + " is RIP-relative (ksim does not relocate it into the buffer)";
      return -kEOPNOTSUPP;
    }
    std::memcpy(out.bytes + out.len, buf, d.z.length);
    out.len = static_cast<uint8_t>(out.len + d.z.length);
    ++out.insns;
    a += d.z.length;
  }
  // The whole function: nothing may land strictly inside the region.
  for (uint64_t p = func.addr; p < end;) {
    uint8_t buf[kMaxInsn];
    x86arch::Decoded d;
    if (!decode_at(text, p, end, d, buf)) {
      why = at + ": cannot decode " + func.name + " at " + hex(p) + ", so what jumps into the region is unknown";
      return -kEILSEQ;
    }
    const std::string insn = ksim::x86::disassemble(buf, d.z.length, p);
    if (is_indirect_jump(d)) {
      why = at + ": " + func.name + " has an indirect jump (`" + insn + "` at " + hex(p) +
            "), which may land inside the region (a jump table)";
      return -kEOPNOTSUPP;
    }
    if (is_relative_branch(d)) {
      const uint64_t target = p + d.z.length + static_cast<uint64_t>(d.ops[0].imm.value.s);
      if (target > addr && target < addr + out.len) {
        why = at + ": `" + insn + "` at " + hex(p) + " jumps to " + hex(target) + ", inside the region [" +
              hex(addr) + ", " + hex(addr + out.len) + ")";
        return -kEOPNOTSUPP;
      }
    }
    p += d.z.length;
  }
  return 0;
}

bool X86Arch::encode_jump(uint64_t at, uint64_t target, std::vector<uint8_t>& out) const {
  uint8_t b[16];
  unsigned n = 0;
  if (!x86arch::encode_jmp(at, target, b, n)) return false;
  out.assign(b, b + n);
  return true;
}

int X86Arch::build_detour(const OptRegion& r, uint64_t addr, uint64_t buf, std::vector<uint8_t>& out,
                          unsigned& copy_at, std::string& why) const {
  out.clear();
  ZydisEncoderRequest push = request(ZYDIS_MNEMONIC_PUSH);
  push.operand_count = 1;
  push.operands[0].type = ZYDIS_OPERAND_TYPE_REGISTER;
  push.operands[0].reg.value = ZYDIS_REGISTER_R11;
  ZydisEncoderRequest load = request(ZYDIS_MNEMONIC_MOV);
  load.operand_count = 2;
  load.operands[0].type = ZYDIS_OPERAND_TYPE_REGISTER;
  load.operands[0].reg.value = ZYDIS_REGISTER_R11;
  load.operands[1].type = ZYDIS_OPERAND_TYPE_MEMORY;
  load.operands[1].mem.size = 8;
  load.operands[1].mem.displacement = static_cast<ZyanI64>(memmap::kOptprobePort);
  ZydisEncoderRequest pop = request(ZYDIS_MNEMONIC_POP);
  pop.operand_count = 1;
  pop.operands[0].type = ZYDIS_OPERAND_TYPE_REGISTER;
  pop.operands[0].reg.value = ZYDIS_REGISTER_R11;
  if (!encode(push, buf, out) || !encode(load, buf + out.size(), out) || !encode(pop, buf + out.size(), out)) {
    why = "cannot encode the detour's handler call";
    return -kEINVAL;
  }
  copy_at = static_cast<unsigned>(out.size());
  out.insert(out.end(), r.bytes, r.bytes + r.len);
  uint8_t jmp[16];
  unsigned n = 0;
  if (!x86arch::encode_jmp(buf + out.size(), addr + r.len, jmp, n)) {
    why = "the jump back from " + hex(buf) + " to " + hex(addr + r.len) + " does not fit in 32 bits";
    return -kERANGE;
  }
  out.insert(out.end(), jmp, jmp + n);
  return 0;
}

// The handlers see the probe point's registers: rsp without the push, r11
// as pushed, the PC at the probed address. The load is the instruction
// right after `push %r11` and has not written r11 yet, so r11 is what the
// slot at rsp holds (nothing in between writes either: an interrupt there
// saves its frame below rsp and gives r11 back): no read of the stack,
// which as a host access costs more than the rest of this.
void X86Arch::detour_enter(Cpu& cpu, const Bus&, uint64_t addr, const OptRegion&, DetourRegs& d) const {
  d.sp = cpu.gpr(kRsp);
  d.scratch = cpu.gpr(kR11);
  d.pc = cpu.pc();
  d.pushed = d.scratch;
  cpu.set_gpr(kRsp, d.sp + 8);
  cpu.set_pc(addr);
}

// A handler's change of r11 goes to the stack slot the detour pops it
// from; one of rsp or the PC is ignored (the Linux documents' note).
void X86Arch::detour_leave(Cpu& cpu, Bus& bus, const OptRegion&, const DetourRegs& d, uint64_t& value) const {
  const uint64_t r11 = cpu.gpr(kR11);
  if (r11 != d.pushed) bus.write_bytes(d.sp, &r11, 8, Accessor{cpu.id(), cpu.cycle()});
  cpu.set_gpr(kR11, d.scratch);
  cpu.set_gpr(kRsp, d.sp);
  cpu.set_pc(d.pc);
  value = 0;  // (popped over at once)
}

}  // namespace ksim::kprobes
