// The kprobe-booster (the OLS 2006 paper, section 6; Linux's can_boost):
// which probed instructions may run from their slot with a jump back to
// the original text appended, so a hit with no post handler skips the
// second trap (the TF #DB in classic mode, the int3 after the copy in
// modern mode).
//
// An instruction can be boosted when running its copy in the slot, then
// jumping back, has the effect of running it in place: it must not refer
// to the instruction pointer in a way the slot cannot fix (relative
// branches and calls, which modern mode emulates anyway; RIP-relative data
// operands are re-encoded by build_slot and are fine), must not have a
// side effect that the simulated hardware ties to where it runs (software
// interrupts, system instructions), and the copy plus a 5-byte jmp must
// fit in the 16-byte slot. The tables below are ksim's reading of Linux's
// rules (arch/x86/kernel/kprobes/core.c), as data.
#include <Zydis/Zydis.h>

#include <cstring>

#include "cpu/x86/zydis.hpp"
#include "kprobes/x86/probe_class.hpp"

namespace ksim::kprobes::x86arch {

namespace {

constexpr unsigned kSlotSize = 16;
constexpr unsigned kJmp32Size = 5;

// One-byte opcodes that are never boosted, with Linux's reason.
struct Range {
  uint8_t lo, hi;
  const char* why;
};
constexpr Range kOneByteRefused[] = {
    {0x62, 0x62, "bound / EVEX"},
    {0x70, 0x7f, "conditional jump (relative to the IP)"},
    {0x9a, 0x9a, "far call"},
    {0xc0, 0xc1, "shift group (Linux leaves it out)"},
    {0xcc, 0xce, "software interrupt"},
    {0xd0, 0xd3, "shift group (Linux leaves it out)"},
    {0xd6, 0xd6, "undefined (salc)"},
    {0xd8, 0xdf, "x87"},
    {0xe0, 0xe3, "loop / jrcxz (relative to the IP)"},
    {0xe8, 0xe8, "call (relative to the IP)"},
    {0xe9, 0xe9, "jmp (relative to the IP)"},
    {0xeb, 0xeb, "jmp (relative to the IP)"},
    {0xf0, 0xf4, "lock / icebp / hlt"},
    {0xfe, 0xfe, "group 4"},
};

// Two-byte (0f xx) opcodes that are boosted: plain data instructions with
// no system effect. Everything else in the 0f map (syscall, ud2, rdtsc,
// cpuid, rdmsr/wrmsr, jcc rel32, descriptor-table and segment
// instructions) is not.
constexpr Range kTwoByteBoosted[] = {
    {0x1e, 0x1f, "nop / endbr64"},
    {0x40, 0x4f, "cmovcc"},
    {0x90, 0x9f, "setcc"},
    {0xa3, 0xa5, "bt / shld"},
    {0xab, 0xad, "bts / shrd"},
    {0xaf, 0xaf, "imul"},
    {0xb0, 0xb1, "cmpxchg"},
    {0xb3, 0xb3, "btr"},
    {0xb6, 0xb7, "movzx"},
    {0xba, 0xbf, "bt group / btc / bsf / bsr / movsx"},
    {0xc0, 0xc1, "xadd"},
    {0xc8, 0xcf, "bswap"},
};

bool in(const Range* b, const Range* e, uint8_t op) {
  for (const Range* r = b; r != e; ++r)
    if (op >= r->lo && op <= r->hi) return true;
  return false;
}

}  // namespace

bool can_boost(const uint8_t* bytes, unsigned len) {
  Decoded d;
  if (!decode_full(bytes, len, d)) return false;
  const ZydisDecodedInstruction& z = d.z;
  if (z.length + kJmp32Size > kSlotSize) return false;
  // A CS override or an address-size prefix: Linux does not boost them.
  for (unsigned i = 0; i < z.raw.prefix_count; ++i)
    if (z.raw.prefixes[i].value == 0x2e || z.raw.prefixes[i].value == 0x67) return false;
  switch (z.opcode_map) {
    case ZYDIS_OPCODE_MAP_DEFAULT:
      if (in(std::begin(kOneByteRefused), std::end(kOneByteRefused), z.opcode)) return false;
      // Of group 5 (ff), only the indirect jmp: its target is absolute.
      if (z.opcode == 0xff) return z.raw.modrm.reg == 4;
      // Group 3 (f6, f7): test, not, neg, mul and imul, but not div and
      // idiv, whose #DE would be raised in the slot. (Linux refuses the
      // whole group; ksim is finer, so that `test r/m, imm` at a function's
      // entry, common in compiled code, can be boosted and optimized.)
      if (z.opcode == 0xf6 || z.opcode == 0xf7) return z.raw.modrm.reg < 6;
      return true;
    case ZYDIS_OPCODE_MAP_0F: return in(std::begin(kTwoByteBoosted), std::end(kTwoByteBoosted), z.opcode);
    default: return false;
  }
}

// `jmp rel32` from `at` to `target`, encoded by Zydis's encoder.
bool encode_jmp(uint64_t at, uint64_t target, uint8_t* out, unsigned& len) {
  ZydisEncoderRequest req;
  std::memset(&req, 0, sizeof req);
  req.machine_mode = ZYDIS_MACHINE_MODE_LONG_64;
  req.mnemonic = ZYDIS_MNEMONIC_JMP;
  req.branch_type = ZYDIS_BRANCH_TYPE_NEAR;
  req.branch_width = ZYDIS_BRANCH_WIDTH_32;
  req.operand_count = 1;
  req.operands[0].type = ZYDIS_OPERAND_TYPE_IMMEDIATE;
  req.operands[0].imm.u = target;
  ZyanUSize n = ZYDIS_MAX_INSTRUCTION_LENGTH;
  if (!ZYAN_SUCCESS(ZydisEncoderEncodeInstructionAbsolute(&req, out, &n, at))) return false;
  len = static_cast<unsigned>(n);
  return len == kJmp32Size;
}

}  // namespace ksim::kprobes::x86arch
