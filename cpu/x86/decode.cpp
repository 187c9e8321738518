// x86-64 decoding with Zydis into the compact Insn form, and the table that
// binds each supported mnemonic to its semantics (semantics.cpp).
#include <Zydis/Zydis.h>

#include <array>
#include <cstring>

#include "cpu/timing.hpp"
#include "cpu/x86/insn.hpp"
#include "cpu/x86/semantics.hpp"
#include "cpu/x86/zydis.hpp"

namespace ksim::x86 {

const ZydisDecoder& zydis_decoder() {
  static const ZydisDecoder d = [] {
    ZydisDecoder dec;
    ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
    return dec;
  }();
  return d;
}

namespace {

// GPR number (hardware order) of a Zydis general-purpose register, with the
// legacy high-byte registers flagged.
bool gpr_of(ZydisRegister r, uint8_t& num, bool& high8) {
  high8 = false;
  if (r >= ZYDIS_REGISTER_AL && r <= ZYDIS_REGISTER_R15B) {
    int k = r - ZYDIS_REGISTER_AL;  // al cl dl bl ah ch dh bh spl bpl sil dil r8b..r15b
    if (k >= 4 && k <= 7) {
      num = static_cast<uint8_t>(k - 4);
      high8 = true;
    } else {
      num = static_cast<uint8_t>(k < 4 ? k : k - 4);
    }
    return true;
  }
  if (r >= ZYDIS_REGISTER_AX && r <= ZYDIS_REGISTER_R15W) { num = static_cast<uint8_t>(r - ZYDIS_REGISTER_AX); return true; }
  if (r >= ZYDIS_REGISTER_EAX && r <= ZYDIS_REGISTER_R15D) { num = static_cast<uint8_t>(r - ZYDIS_REGISTER_EAX); return true; }
  if (r >= ZYDIS_REGISTER_RAX && r <= ZYDIS_REGISTER_R15) { num = static_cast<uint8_t>(r - ZYDIS_REGISTER_RAX); return true; }
  return false;
}

bool convert(const ZydisDecodedOperand& z, Operand& o) {
  o.size = static_cast<uint8_t>(z.size / 8);
  switch (z.type) {
    case ZYDIS_OPERAND_TYPE_REGISTER:
      o.kind = OpKind::reg;
      return gpr_of(z.reg.value, o.reg, o.high8);
    case ZYDIS_OPERAND_TYPE_MEMORY: {
      o.kind = OpKind::mem;
      if (z.mem.type != ZYDIS_MEMOP_TYPE_MEM && z.mem.type != ZYDIS_MEMOP_TYPE_AGEN) return false;
      bool h;
      // 64-bit addressing, or 32-bit with the address-size prefix; 16-bit
      // registers cannot form addresses in 64-bit mode.
      auto addr_reg = [&](ZydisRegister r, uint8_t& num) {
        if (r >= ZYDIS_REGISTER_EAX && r <= ZYDIS_REGISTER_R15D) o.addr32 = true;
        else if (r < ZYDIS_REGISTER_RAX || r > ZYDIS_REGISTER_R15) return false;
        return gpr_of(r, num, h);
      };
      if (z.mem.base == ZYDIS_REGISTER_NONE) o.base = kNoReg;
      else if (z.mem.base == ZYDIS_REGISTER_RIP) o.base = kRip;
      else if (z.mem.base == ZYDIS_REGISTER_EIP) { o.base = kRip; o.addr32 = true; }
      else if (!addr_reg(z.mem.base, o.base)) return false;
      if (z.mem.index == ZYDIS_REGISTER_NONE) o.index = kNoReg;
      else if (!addr_reg(z.mem.index, o.index)) return false;
      o.scale = z.mem.scale;
      o.disp = z.mem.disp.value;
      o.seg = z.mem.segment == ZYDIS_REGISTER_FS ? kSegFs : z.mem.segment == ZYDIS_REGISTER_GS ? kSegGs : kSegNone;
      return true;
    }
    case ZYDIS_OPERAND_TYPE_IMMEDIATE:
      o.kind = OpKind::imm;
      o.disp = z.imm.is_signed ? z.imm.value.s : static_cast<int64_t>(z.imm.value.u);
      return true;
    default:
      return false;
  }
}

struct Binding {
  ExecFn exec;
  timing::Class timing;
};

// The supported subset: mnemonic -> semantics and timing class.
const std::array<Binding, ZYDIS_MNEMONIC_MAX_VALUE + 1>& table() {
  static const auto t = [] {
    std::array<Binding, ZYDIS_MNEMONIC_MAX_VALUE + 1> a{};
    using C = timing::Class;
    auto set = [&](ZydisMnemonic m, ExecFn f, C c) { a[m] = Binding{f, c}; };
    for (auto [m, f] : std::initializer_list<std::pair<ZydisMnemonic, ExecFn>>{
             {ZYDIS_MNEMONIC_ADD, exec_add}, {ZYDIS_MNEMONIC_ADC, exec_adc}, {ZYDIS_MNEMONIC_SUB, exec_sub},
             {ZYDIS_MNEMONIC_SBB, exec_sbb}, {ZYDIS_MNEMONIC_AND, exec_and}, {ZYDIS_MNEMONIC_OR, exec_or},
             {ZYDIS_MNEMONIC_XOR, exec_xor}, {ZYDIS_MNEMONIC_CMP, exec_cmp}, {ZYDIS_MNEMONIC_TEST, exec_test},
             {ZYDIS_MNEMONIC_INC, exec_inc}, {ZYDIS_MNEMONIC_DEC, exec_dec}, {ZYDIS_MNEMONIC_NEG, exec_neg},
             {ZYDIS_MNEMONIC_NOT, exec_not}, {ZYDIS_MNEMONIC_MOV, exec_mov}, {ZYDIS_MNEMONIC_MOVZX, exec_movzx},
             {ZYDIS_MNEMONIC_MOVSX, exec_movsx}, {ZYDIS_MNEMONIC_MOVSXD, exec_movsx}, {ZYDIS_MNEMONIC_LEA, exec_lea},
             {ZYDIS_MNEMONIC_XCHG, exec_xchg}, {ZYDIS_MNEMONIC_BSWAP, exec_bswap},
             {ZYDIS_MNEMONIC_CBW, exec_cbw}, {ZYDIS_MNEMONIC_CWDE, exec_cbw}, {ZYDIS_MNEMONIC_CDQE, exec_cbw},
             {ZYDIS_MNEMONIC_CWD, exec_cwd}, {ZYDIS_MNEMONIC_CDQ, exec_cwd}, {ZYDIS_MNEMONIC_CQO, exec_cwd},
             {ZYDIS_MNEMONIC_SETB, exec_setcc}, {ZYDIS_MNEMONIC_SETBE, exec_setcc}, {ZYDIS_MNEMONIC_SETL, exec_setcc},
             {ZYDIS_MNEMONIC_SETLE, exec_setcc}, {ZYDIS_MNEMONIC_SETNB, exec_setcc}, {ZYDIS_MNEMONIC_SETNBE, exec_setcc},
             {ZYDIS_MNEMONIC_SETNL, exec_setcc}, {ZYDIS_MNEMONIC_SETNLE, exec_setcc}, {ZYDIS_MNEMONIC_SETNO, exec_setcc},
             {ZYDIS_MNEMONIC_SETNP, exec_setcc}, {ZYDIS_MNEMONIC_SETNS, exec_setcc}, {ZYDIS_MNEMONIC_SETNZ, exec_setcc},
             {ZYDIS_MNEMONIC_SETO, exec_setcc}, {ZYDIS_MNEMONIC_SETP, exec_setcc}, {ZYDIS_MNEMONIC_SETS, exec_setcc},
             {ZYDIS_MNEMONIC_SETZ, exec_setcc},
             {ZYDIS_MNEMONIC_CMOVB, exec_cmovcc}, {ZYDIS_MNEMONIC_CMOVBE, exec_cmovcc}, {ZYDIS_MNEMONIC_CMOVL, exec_cmovcc},
             {ZYDIS_MNEMONIC_CMOVLE, exec_cmovcc}, {ZYDIS_MNEMONIC_CMOVNB, exec_cmovcc}, {ZYDIS_MNEMONIC_CMOVNBE, exec_cmovcc},
             {ZYDIS_MNEMONIC_CMOVNL, exec_cmovcc}, {ZYDIS_MNEMONIC_CMOVNLE, exec_cmovcc}, {ZYDIS_MNEMONIC_CMOVNO, exec_cmovcc},
             {ZYDIS_MNEMONIC_CMOVNP, exec_cmovcc}, {ZYDIS_MNEMONIC_CMOVNS, exec_cmovcc}, {ZYDIS_MNEMONIC_CMOVNZ, exec_cmovcc},
             {ZYDIS_MNEMONIC_CMOVO, exec_cmovcc}, {ZYDIS_MNEMONIC_CMOVP, exec_cmovcc}, {ZYDIS_MNEMONIC_CMOVS, exec_cmovcc},
             {ZYDIS_MNEMONIC_CMOVZ, exec_cmovcc},
             {ZYDIS_MNEMONIC_BT, exec_bt}, {ZYDIS_MNEMONIC_BTS, exec_bt}, {ZYDIS_MNEMONIC_BTR, exec_bt},
             {ZYDIS_MNEMONIC_BTC, exec_bt}, {ZYDIS_MNEMONIC_BSF, exec_bsf}, {ZYDIS_MNEMONIC_BSR, exec_bsr},
             {ZYDIS_MNEMONIC_TZCNT, exec_bsf},  // F3 0F BC: BSF on a CPU without BMI1 (our CPUID)
             {ZYDIS_MNEMONIC_CLC, exec_flagop}, {ZYDIS_MNEMONIC_STC, exec_flagop}, {ZYDIS_MNEMONIC_CMC, exec_flagop},
             {ZYDIS_MNEMONIC_CLD, exec_flagop}, {ZYDIS_MNEMONIC_STD, exec_flagop},
             {ZYDIS_MNEMONIC_NOP, exec_nop}, {ZYDIS_MNEMONIC_ENDBR64, exec_nop}, {ZYDIS_MNEMONIC_PAUSE, exec_nop},
             {ZYDIS_MNEMONIC_MFENCE, exec_mfence}, {ZYDIS_MNEMONIC_LFENCE, exec_nop}, {ZYDIS_MNEMONIC_SFENCE, exec_nop},
         })
      set(m, f, C::alu);
    for (auto m : {ZYDIS_MNEMONIC_SHL, ZYDIS_MNEMONIC_SHR, ZYDIS_MNEMONIC_SAR, ZYDIS_MNEMONIC_ROL, ZYDIS_MNEMONIC_ROR,
                   ZYDIS_MNEMONIC_RCL, ZYDIS_MNEMONIC_RCR})
      set(m, exec_shift, C::alu);
    set(ZYDIS_MNEMONIC_SHLD, exec_shld, C::alu);
    set(ZYDIS_MNEMONIC_SHRD, exec_shld, C::alu);
    set(ZYDIS_MNEMONIC_MUL, exec_mul, C::mul);
    set(ZYDIS_MNEMONIC_IMUL, exec_imul, C::mul);
    set(ZYDIS_MNEMONIC_DIV, exec_div, C::div);
    set(ZYDIS_MNEMONIC_IDIV, exec_div, C::div);
    set(ZYDIS_MNEMONIC_CMPXCHG, exec_cmpxchg, C::atomic);
    set(ZYDIS_MNEMONIC_XADD, exec_xadd, C::atomic);
    set(ZYDIS_MNEMONIC_PUSH, exec_push, C::store);
    set(ZYDIS_MNEMONIC_POP, exec_pop, C::load);
    set(ZYDIS_MNEMONIC_PUSHFQ, exec_pushfq, C::store);
    set(ZYDIS_MNEMONIC_POPFQ, exec_popfq, C::csr);
    set(ZYDIS_MNEMONIC_LEAVE, exec_leave, C::load);
    set(ZYDIS_MNEMONIC_JMP, exec_jmp, C::jump);
    set(ZYDIS_MNEMONIC_CALL, exec_call, C::jump);
    set(ZYDIS_MNEMONIC_RET, exec_ret, C::jump);
    for (auto m : {ZYDIS_MNEMONIC_JB, ZYDIS_MNEMONIC_JBE, ZYDIS_MNEMONIC_JL, ZYDIS_MNEMONIC_JLE, ZYDIS_MNEMONIC_JNB,
                   ZYDIS_MNEMONIC_JNBE, ZYDIS_MNEMONIC_JNL, ZYDIS_MNEMONIC_JNLE, ZYDIS_MNEMONIC_JNO, ZYDIS_MNEMONIC_JNP,
                   ZYDIS_MNEMONIC_JNS, ZYDIS_MNEMONIC_JNZ, ZYDIS_MNEMONIC_JO, ZYDIS_MNEMONIC_JP, ZYDIS_MNEMONIC_JS,
                   ZYDIS_MNEMONIC_JZ})
      set(m, exec_jcc, C::branch);
    for (auto m : {ZYDIS_MNEMONIC_MOVSB, ZYDIS_MNEMONIC_MOVSW, ZYDIS_MNEMONIC_MOVSD, ZYDIS_MNEMONIC_MOVSQ,
                   ZYDIS_MNEMONIC_STOSB, ZYDIS_MNEMONIC_STOSW, ZYDIS_MNEMONIC_STOSD, ZYDIS_MNEMONIC_STOSQ,
                   ZYDIS_MNEMONIC_LODSB, ZYDIS_MNEMONIC_LODSW, ZYDIS_MNEMONIC_LODSD, ZYDIS_MNEMONIC_LODSQ,
                   ZYDIS_MNEMONIC_CMPSB, ZYDIS_MNEMONIC_CMPSW, ZYDIS_MNEMONIC_CMPSD, ZYDIS_MNEMONIC_CMPSQ,
                   ZYDIS_MNEMONIC_SCASB, ZYDIS_MNEMONIC_SCASW, ZYDIS_MNEMONIC_SCASD, ZYDIS_MNEMONIC_SCASQ})
      set(m, exec_string, C::load);
    set(ZYDIS_MNEMONIC_INT3, exec_int3, C::system);
    set(ZYDIS_MNEMONIC_INT, exec_int, C::system);
    set(ZYDIS_MNEMONIC_IRETQ, exec_iretq, C::system);
    set(ZYDIS_MNEMONIC_LIDT, exec_lidt, C::csr);
    set(ZYDIS_MNEMONIC_CLI, exec_cli, C::csr);
    set(ZYDIS_MNEMONIC_STI, exec_sti, C::csr);
    set(ZYDIS_MNEMONIC_HLT, exec_hlt, C::system);
    set(ZYDIS_MNEMONIC_CPUID, exec_cpuid, C::csr);
    set(ZYDIS_MNEMONIC_RDTSC, exec_rdtsc, C::csr);
    set(ZYDIS_MNEMONIC_RDMSR, exec_rdmsr, C::csr);
    set(ZYDIS_MNEMONIC_WRMSR, exec_wrmsr, C::csr);
    set(ZYDIS_MNEMONIC_UD2, exec_ud, C::system);
    return a;
  }();
  return t;
}

// Condition code (SDM order: O NO B NB Z NZ BE NBE S NS P NP L NL LE NLE).
uint8_t condition(ZydisMnemonic m) {
  static const ZydisMnemonic groups[3][16] = {
      {ZYDIS_MNEMONIC_JO, ZYDIS_MNEMONIC_JNO, ZYDIS_MNEMONIC_JB, ZYDIS_MNEMONIC_JNB, ZYDIS_MNEMONIC_JZ,
       ZYDIS_MNEMONIC_JNZ, ZYDIS_MNEMONIC_JBE, ZYDIS_MNEMONIC_JNBE, ZYDIS_MNEMONIC_JS, ZYDIS_MNEMONIC_JNS,
       ZYDIS_MNEMONIC_JP, ZYDIS_MNEMONIC_JNP, ZYDIS_MNEMONIC_JL, ZYDIS_MNEMONIC_JNL, ZYDIS_MNEMONIC_JLE,
       ZYDIS_MNEMONIC_JNLE},
      {ZYDIS_MNEMONIC_SETO, ZYDIS_MNEMONIC_SETNO, ZYDIS_MNEMONIC_SETB, ZYDIS_MNEMONIC_SETNB, ZYDIS_MNEMONIC_SETZ,
       ZYDIS_MNEMONIC_SETNZ, ZYDIS_MNEMONIC_SETBE, ZYDIS_MNEMONIC_SETNBE, ZYDIS_MNEMONIC_SETS, ZYDIS_MNEMONIC_SETNS,
       ZYDIS_MNEMONIC_SETP, ZYDIS_MNEMONIC_SETNP, ZYDIS_MNEMONIC_SETL, ZYDIS_MNEMONIC_SETNL, ZYDIS_MNEMONIC_SETLE,
       ZYDIS_MNEMONIC_SETNLE},
      {ZYDIS_MNEMONIC_CMOVO, ZYDIS_MNEMONIC_CMOVNO, ZYDIS_MNEMONIC_CMOVB, ZYDIS_MNEMONIC_CMOVNB, ZYDIS_MNEMONIC_CMOVZ,
       ZYDIS_MNEMONIC_CMOVNZ, ZYDIS_MNEMONIC_CMOVBE, ZYDIS_MNEMONIC_CMOVNBE, ZYDIS_MNEMONIC_CMOVS,
       ZYDIS_MNEMONIC_CMOVNS, ZYDIS_MNEMONIC_CMOVP, ZYDIS_MNEMONIC_CMOVNP, ZYDIS_MNEMONIC_CMOVL,
       ZYDIS_MNEMONIC_CMOVNL, ZYDIS_MNEMONIC_CMOVLE, ZYDIS_MNEMONIC_CMOVNLE}};
  for (const auto& g : groups)
    for (uint8_t c = 0; c < 16; ++c)
      if (g[c] == m) return c;
  return 0;
}

}  // namespace

Insn decode(const uint8_t* bytes, size_t avail, uint64_t rip) {
  (void)rip;
  Insn in{};
  ZydisDecodedInstruction z;
  ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
  in.exec = exec_ud;
  in.cycles = timing::cycles(timing::Class::system);
  if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&zydis_decoder(), bytes, avail, &z, ops))) {
    in.len = 1;
    return in;
  }
  in.len = z.length;
  in.mnemonic = static_cast<uint16_t>(z.mnemonic);
  const Binding& b = table()[z.mnemonic];
  if (!b.exec) return in;  // not in the supported subset: #UD
  in.opsize = static_cast<uint8_t>(z.operand_width / 8);
  in.cond = condition(z.mnemonic);
  if (z.attributes & ZYDIS_ATTRIB_HAS_REPNE) in.rep = kRepne;
  else if (z.attributes & (ZYDIS_ATTRIB_HAS_REP | ZYDIS_ATTRIB_HAS_REPE)) in.rep = kRep;
  in.lock = (z.attributes & ZYDIS_ATTRIB_HAS_LOCK) != 0;
  in.nops = static_cast<uint8_t>(std::min<unsigned>(z.operand_count_visible, 3));
  for (unsigned k = 0; k < in.nops; ++k)
    if (!convert(ops[k], in.op[k])) return in;  // an operand we do not model: #UD
  // PUSH/POP with a 16-bit operand size (66 prefix) move RSP by 2; that
  // form is outside the subset (GCC does not emit it), so it is #UD rather
  // than silently moving RSP by 8.
  if ((b.exec == exec_push || b.exec == exec_pop) && in.opsize == 2) return in;
  in.exec = b.exec;
  in.cycles = timing::cycles(b.timing);
  for (unsigned k = 0; k < z.operand_count; ++k)
    if (ops[k].type == ZYDIS_OPERAND_TYPE_MEMORY && ops[k].mem.type == ZYDIS_MEMOP_TYPE_MEM &&
        (ops[k].actions & ZYDIS_OPERAND_ACTION_MASK_READ))
      ++in.mem_reads;
  return in;
}

std::string disassemble(const uint8_t* bytes, size_t avail, uint64_t rip, const Symbolizer& symbolize) {
  ZydisDecodedInstruction z;
  ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
  if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&zydis_decoder(), bytes, avail, &z, ops))) return "(bad)";
  static ZydisFormatter f = [] {
    ZydisFormatter fm;
    ZydisFormatterInit(&fm, ZYDIS_FORMATTER_STYLE_INTEL);
    return fm;
  }();
  char buf[256];
  if (!ZYAN_SUCCESS(ZydisFormatterFormatInstruction(&f, &z, ops, z.operand_count_visible, buf, sizeof buf, rip,
                                                    nullptr)))
    return "(bad)";
  std::string text = buf;
  // Relative branch targets (the formatter prints them as absolute
  // addresses): name the symbol they land in.
  if (symbolize && z.meta.branch_type != ZYDIS_BRANCH_TYPE_NONE) {
    for (unsigned k = 0; k < z.operand_count_visible; ++k) {
      const ZydisDecodedOperand& o = ops[k];
      if (o.type != ZYDIS_OPERAND_TYPE_IMMEDIATE || !o.imm.is_relative) continue;
      ZyanU64 target;
      if (!ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&z, &o, rip, &target))) continue;
      if (std::string name = symbolize(target); !name.empty()) text += " <" + name + ">";
    }
  }
  return text;
}

}  // namespace ksim::x86
