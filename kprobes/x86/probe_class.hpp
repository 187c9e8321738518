// What the x86 arch records about a probed instruction, and the pieces of
// the x86 Arch, one file each:
//   analyse.cpp   decoding, the boundary walk, refusals, classification
//   slot.cpp      slot contents (RIP-relative re-encoding) and stepping
//   emulate.cpp   modern mode: instructions run on the host, no slot
//   fixup.cpp     after a step: classic mode's fixups, modern's resume
//   abi.cpp       SysV arguments, return values, register names, snapshots
//   arch_x86.cpp  the Arch object, breakpoints, traps and saved flags
//
// The class of an instruction (Linux's opcode switch in prepare_emulation
// and resume_execution) decides both what modern mode does with it and
// which fixup classic mode applies after stepping it; kFlowRules in
// analyse.cpp lists them as data.
#pragma once
#include <Zydis/Zydis.h>

#include <cstdint>
#include <string>

#include "kprobes/arch.hpp"

namespace ksim::x86 {
class X86Cpu;
}

namespace ksim::kprobes::x86arch {

enum class Flow : uint8_t {
  plain,     // no control transfer, no flag trick: stepped, rip += addr - slot
  call_rel,  // e8
  jmp_rel,   // e9, eb
  jcc,       // 70-7f, 0f 80-8f
  loop,      // e0-e3: loopne, loope, loop, jrcxz
  ret,       // c3, c2 imm16
  call_reg,  // ff /2, mod = 3
  jmp_reg,   // ff /4, mod = 3
  call_mem,  // ff /2 with a memory operand (classic only)
  jmp_mem,   // ff /4 with a memory operand (classic only)
  pushf,     // 9c
  popf,      // 9d
  cli,       // fa
  sti,       // fb
};
const char* flow_name(Flow f);

// What each mode does with a class (one row per Flow, in flow_traits()).
struct FlowTraits {
  bool emulated_in_modern;  // prepare_emulation has an emulate_op for it
  bool refused_in_modern;   // prepare_emulation returns -EOPNOTSUPP
  // Classic fixups after the TF step (pre-5.13 resume_execution):
  bool fix_return_address;  // a stepped call pushed slot + len
  bool rip_is_absolute;     // ret / indirect target: rip is already right
  bool fix_pushed_flags;    // pushf pushed TF set and IF masked
  bool if_modifier;         // cli/sti/popf: the step's IF must survive restore
};
const FlowTraits& flow_traits(Flow f);

// The arch-private facts, packed into ProbeInsn::op and aux[] (opaque to
// the engine).
struct Facts {
  Flow flow = Flow::plain;
  uint8_t cond = 0;         // jcc: condition (SDM order O NO B NB ...); loop: opcode & 3
  uint8_t reg = 0;          // call_reg / jmp_reg: GPR number
  bool addr32 = false;      // loop: 67 prefix, ECX is the counter
  int64_t rel = 0;          // relative branches: displacement; ret: imm16
  uint8_t riprel_off = 0;   // offset of a RIP-relative disp32 in the instruction (0: none)
  bool classic = false;     // the step mode analyse/build_slot were asked for
};
void pack(const Facts& f, ProbeInsn& pi);
Facts unpack(const ProbeInsn& pi);

// RFLAGS bits the engine saves while it owns the CPU (Linux's
// kprobe_old_flags: TF and IF).
uint64_t saved_flag_bits();
// Not an RFLAGS bit (bit 63 is reserved there): set in SavedFlags::value
// when the probed instruction was an STI that set IF, so that restore()
// reopens the one-instruction interrupt shadow STI gives (SDM STI). The
// step's end trap comes between the instruction and the restore and would
// consume a shadow set any earlier.
inline constexpr uint64_t kStiShadowPending = 1ull << 63;

// One instruction fully decoded by Zydis (its operands too).
struct Decoded {
  ZydisDecodedInstruction z;
  ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
};
bool decode_full(const uint8_t* bytes, unsigned n, Decoded& d);

// --- Per-file entry points ---------------------------------------------------
// boost.cpp: Linux's can_boost (the copy plus a jmp back runs as the
// original would in place, and fits the slot), and a jmp rel32 from `at`
// to `target` by Zydis's encoder (5 bytes).
bool can_boost(const uint8_t* bytes, unsigned len);
bool encode_jmp(uint64_t at, uint64_t target, uint8_t* out, unsigned& len);
int analyse_insn(const TextReader& text, uint64_t addr, const Symbol* func, StepMode mode, ProbeInsn& out,
                 std::string& why);
int build_slot_for(ProbeInsn& pi, uint64_t slot, StepMode mode, std::string& why);
void begin_step_at(ksim::x86::X86Cpu& cpu, const ProbeInsn& pi, uint64_t slot);
// Sets or clears the CPU's STI interrupt shadow.
void set_sti_shadow(ksim::x86::X86Cpu& cpu, bool on);
bool emulate_insn(ksim::x86::X86Cpu& cpu, Bus& bus, const ProbeInsn& pi, SavedFlags& saved);
bool condition_holds(uint8_t cond, uint64_t rflags);
bool is_step_end_trap(const TrapInfo& t, const ProbeInsn& pi, uint64_t slot);
void finish_step_for(ksim::x86::X86Cpu& cpu, Bus& bus, const ProbeInsn& pi, uint64_t slot, SavedFlags& saved);

}  // namespace ksim::kprobes::x86arch
