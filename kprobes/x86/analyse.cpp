// Registration-time analysis of a probed x86 instruction (Linux's
// can_probe, __copy_instruction and prepare_emulation): the instruction
// boundary walk from the function's start, the refusals, and the class
// that decides between emulating and stepping.
#include <Zydis/Zydis.h>

#include <array>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "cpu/hex.hpp"
#include "cpu/x86/zydis.hpp"
#include "cpu/x86/insn.hpp"
#include "cpu/x86/semantics.hpp"
#include "kprobes/x86/probe_class.hpp"
#include "sim/elf/symbols.hpp"

namespace ksim::kprobes::x86arch {

namespace {

constexpr unsigned kMaxInsn = 15;  // MAX_INSN_SIZE
constexpr uint8_t kInt3 = 0xcc;

// "do_fork+0x3" for an address inside `func`.
std::string where(const Symbol& func, uint64_t a) { return func.name + "+" + hex(a - func.addr); }

// Reads up to 15 bytes of original text at `a` (fewer at the end of RAM);
// returns how many.
unsigned read_text(const TextReader& text, uint64_t a, uint8_t* buf) {
  for (unsigned n = kMaxInsn; n > 0; --n)
    if (text(a, buf, n)) return n;
  return 0;
}


// An opcode pattern: map, opcode range, and optionally the ModRM reg field
// and the ModRM form (register operand or memory operand).
enum class Form : uint8_t { any, reg, mem };
struct Pattern {
  ZydisOpcodeMap map;
  uint8_t lo, hi;
  int8_t modrm_reg;  // -1: any
  Form form;
  bool matches(const ZydisDecodedInstruction& z) const {
    if (z.opcode_map != map || z.opcode < lo || z.opcode > hi) return false;
    if (modrm_reg >= 0 && (!(z.attributes & ZYDIS_ATTRIB_HAS_MODRM) || z.raw.modrm.reg != modrm_reg)) return false;
    if (form == Form::any) return true;
    const bool reg_form = (z.attributes & ZYDIS_ATTRIB_HAS_MODRM) && z.raw.modrm.mod == 3;
    return reg_form == (form == Form::reg);
  }
};
constexpr ZydisOpcodeMap kOne = ZYDIS_OPCODE_MAP_DEFAULT, kTwo = ZYDIS_OPCODE_MAP_0F;

// Instructions no mode probes. Linux's __copy_instruction refuses int3 and
// the exception-masking mov ss (-EINVAL); prepare_emulation refuses far
// transfers, iret and VMX (-EOPNOTSUPP). int n and hlt are ksim's own
// (see docs/KPROBES_X86.md). pop ss, far call/jmp ptr16:32 (9a, ea) and
// into do not exist in 64-bit mode: the decoder rejects them.
struct Refusal {
  Pattern p;
  int err;
  const char* why;
};
const Refusal kRefusals[] = {
    {{kOne, 0xcc, 0xcc, -1, Form::any}, kEINVAL, "a breakpoint cannot be probed (it may belong to another debugger)"},
    {{kOne, 0x8e, 0x8e, 2, Form::any}, kEINVAL, "mov ss masks the single-step trap of the next instruction"},
    {{kOne, 0xcd, 0xcd, -1, Form::any}, kEOPNOTSUPP, "a software interrupt's handler would return into the slot"},
    {{kOne, 0xcf, 0xcf, -1, Form::any}, kEOPNOTSUPP, "iret cannot run from a slot (Linux refuses in-kernel iret)"},
    {{kOne, 0xca, 0xcb, -1, Form::any}, kEOPNOTSUPP, "far return: segments are not supported"},
    {{kOne, 0xff, 0xff, 3, Form::any}, kEOPNOTSUPP, "far indirect call: segments are not supported"},
    {{kOne, 0xff, 0xff, 5, Form::any}, kEOPNOTSUPP, "far indirect jmp: segments are not supported"},
    {{kOne, 0xf4, 0xf4, -1, Form::any}, kEOPNOTSUPP, "hlt would wait in the slot with interrupts masked"},
    {{kTwo, 0x01, 0x01, 0, Form::reg}, kEOPNOTSUPP, "VMX instructions are not supported"},
};

// The control-flow and flag instructions (prepare_emulation's cases, which
// are also resume_execution's fixup cases). Anything else is Flow::plain.
struct FlowRule {
  Pattern p;
  Flow flow;
};
const FlowRule kFlowRules[] = {
    {{kOne, 0xe8, 0xe8, -1, Form::any}, Flow::call_rel},
    {{kOne, 0xe9, 0xe9, -1, Form::any}, Flow::jmp_rel},
    {{kOne, 0xeb, 0xeb, -1, Form::any}, Flow::jmp_rel},
    {{kOne, 0x70, 0x7f, -1, Form::any}, Flow::jcc},
    {{kTwo, 0x80, 0x8f, -1, Form::any}, Flow::jcc},
    {{kOne, 0xe0, 0xe3, -1, Form::any}, Flow::loop},
    {{kOne, 0xc2, 0xc3, -1, Form::any}, Flow::ret},
    {{kOne, 0xff, 0xff, 2, Form::reg}, Flow::call_reg},
    {{kOne, 0xff, 0xff, 4, Form::reg}, Flow::jmp_reg},
    {{kOne, 0xff, 0xff, 2, Form::mem}, Flow::call_mem},
    {{kOne, 0xff, 0xff, 4, Form::mem}, Flow::jmp_mem},
    {{kOne, 0x9c, 0x9c, -1, Form::any}, Flow::pushf},
    {{kOne, 0x9d, 0x9d, -1, Form::any}, Flow::popf},
    {{kOne, 0xfa, 0xfa, -1, Form::any}, Flow::cli},
    {{kOne, 0xfb, 0xfb, -1, Form::any}, Flow::sti},
};

Facts classify(const Decoded& d) {
  Facts f;
  const ZydisDecodedInstruction& z = d.z;
  for (const FlowRule& r : kFlowRules)
    if (r.p.matches(z)) {
      f.flow = r.flow;
      break;
    }
  switch (f.flow) {
    case Flow::jcc: f.cond = z.opcode & 0xf; break;
    case Flow::loop: f.cond = z.opcode & 0x3; break;
    case Flow::call_reg:
    case Flow::jmp_reg: f.reg = static_cast<uint8_t>(z.raw.modrm.rm | (z.raw.rex.B ? 8 : 0)); break;
    default: break;
  }
  f.addr32 = z.address_width == 32;
  // Relative branches carry their displacement, ret its imm16.
  if (d.ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE)
    f.rel = d.ops[0].imm.is_signed ? d.ops[0].imm.value.s : static_cast<int64_t>(d.ops[0].imm.value.u);
  for (unsigned k = 0; k < z.operand_count; ++k) {
    const ZydisDecodedOperand& o = d.ops[k];
    if (o.type == ZYDIS_OPERAND_TYPE_MEMORY &&
        (o.mem.base == ZYDIS_REGISTER_RIP || o.mem.base == ZYDIS_REGISTER_EIP) && z.raw.disp.size == 32)
      f.riprel_off = z.raw.disp.offset;
  }
  return f;
}

// Linux's can_probe: decode from the function's start; the probe address
// must be where an instruction begins.
int check_boundary(const TextReader& text, uint64_t addr, const Symbol& func, std::string& why) {
  if (addr < func.addr) {
    why = hex(addr) + " lies before " + func.name + " at " + hex(func.addr);
    return -kEINVAL;
  }
  uint64_t a = func.addr;
  while (a < addr) {
    uint8_t buf[kMaxInsn];
    Decoded d;
    const unsigned n = read_text(text, a, buf);
    if (n == 0 || !decode_full(buf, n, d)) {
      why = "cannot decode " + where(func, a) + " at " + hex(a) + ", so the instruction boundaries up to " +
            hex(addr) + " are unknown";
      return -kEILSEQ;
    }
    if (a + d.z.length > addr) {
      why = "not an instruction boundary of " + func.name + ": " + hex(addr) + " is inside `" +
            ksim::x86::disassemble(buf, n, a) + "` at " + hex(a) + " (" + where(func, a) + ")";
      return -kEILSEQ;
    }
    a += d.z.length;
  }
  return 0;
}

}  // namespace

bool decode_full(const uint8_t* bytes, unsigned n, Decoded& d) {
  return ZYAN_SUCCESS(ZydisDecoderDecodeFull(&ksim::x86::zydis_decoder(), bytes, n, &d.z, d.ops));
}

int analyse_insn(const TextReader& text, uint64_t addr, const Symbol* func, StepMode mode, ProbeInsn& out,
                 std::string& why) {
  if (func)
    if (int err = check_boundary(text, addr, *func, why)) return err;
  uint8_t buf[kMaxInsn] = {};
  const unsigned n = read_text(text, addr, buf);
  if (n == 0) {
    why = hex(addr) + ": outside RAM";
    return -kEINVAL;
  }
  Decoded d;
  if (!decode_full(buf, n, d)) {
    char b[8];
    std::snprintf(b, sizeof b, "%02x", buf[0]);
    why = std::string("(bad) byte ") + b + " at " + hex(addr) + ": not a valid x86-64 instruction";
    return -kEINVAL;
  }
  const std::string text_of = ksim::x86::disassemble(buf, d.z.length, addr);
  for (const Refusal& r : kRefusals)
    if (r.p.matches(d.z)) {
      why = text_of + ": " + r.why;
      return -r.err;
    }
  // Whatever the simulated CPU does not model raises #UD in place; a probe
  // must not change that into anything else.
  if (ksim::x86::decode(buf, d.z.length, addr).exec == ksim::x86::exec_ud) {
    why = text_of + ": not supported by the simulated CPU (it raises #UD)";
    return -kEOPNOTSUPP;
  }
  Facts f = classify(d);
  f.classic = mode == StepMode::classic;
  const FlowTraits& t = flow_traits(f.flow);
  if (mode == StepMode::modern && t.refused_in_modern) {
    why = text_of + ": memory-indirect " + (f.flow == Flow::call_mem ? "call" : "jmp") +
          " is not emulated (Linux refuses it since 5.13)";
    return -kEOPNOTSUPP;
  }
  if (mode == StepMode::modern && (f.flow == Flow::call_reg || f.flow == Flow::jmp_reg) && f.addr32) {
    why = text_of + ": indirect branch with a 32-bit address size is not emulated";
    return -kEOPNOTSUPP;
  }

  out = ProbeInsn{};
  out.addr = addr;
  out.len = d.z.length;
  std::memcpy(out.orig, buf, d.z.length);
  out.kind = mode == StepMode::modern && t.emulated_in_modern ? ProbeInsn::Kind::emulate : ProbeInsn::Kind::step;
  out.bp[0] = kInt3;
  out.bp_len = 1;
  out.step_end = mode == StepMode::modern ? static_cast<int8_t>(out.len) : -1;
  out.text = text_of;
  // Boostable (0) if stepped and can_boost says so; whether a slot gets the
  // jump back is decided when it is built (modern) or after the first
  // step (classic).
  out.boostable = out.kind == ProbeInsn::Kind::step && can_boost(buf, d.z.length) ? 0 : -1;
  pack(f, out);
  return 0;
}

}  // namespace ksim::kprobes::x86arch
