// The instruction slot: the copy of the probed instruction, re-encoded when
// it addresses memory relative to RIP (Linux's __copy_instruction), and
// how a step through it starts and ends.
//
//   modern:  [copy][int3]  the int3 at slot + len ends the step
//            [copy][jmp]   boosted (boostable was 0 when built): a jmp rel32
//                          back to addr + len, no step (Linux 5.13+'s
//                          prepare_singlestep)
//   classic: [copy]        RFLAGS.TF makes the CPU raise #DB after the copy;
//                          the engine appends the jmp after the first step
#include <cstdio>
#include <cstring>

#include "cpu/x86/x86_cpu.hpp"
#include "kprobes/x86/probe_class.hpp"

namespace ksim::kprobes::x86arch {

namespace {
constexpr uint8_t kInt3 = 0xcc;
constexpr uint64_t kVectorDB = ksim::x86::kDB, kVectorBP = ksim::x86::kBP;
}  // namespace

int build_slot_for(ProbeInsn& pi, uint64_t slot, StepMode mode, std::string& why) {
  Facts f = unpack(pi);
  f.classic = mode == StepMode::classic;
  std::memset(pi.slot_bytes, 0, sizeof pi.slot_bytes);
  std::memcpy(pi.slot_bytes, pi.orig, pi.len);
  if (f.riprel_off) {
    // The copy computes RIP + disp from the slot: move disp by addr - slot
    // so it still reaches the same byte.
    int32_t old_disp;
    std::memcpy(&old_disp, pi.orig + f.riprel_off, 4);
    const int64_t moved = static_cast<int64_t>(pi.addr - slot);
    const int64_t new_disp = static_cast<int64_t>(old_disp) + moved;
    if (new_disp < INT32_MIN || new_disp > INT32_MAX) {
      char b[40];
      std::snprintf(b, sizeof b, "%#llx", static_cast<unsigned long long>(slot));
      why = pi.text + ": its RIP-relative operand cannot be reached from a slot at " + b + " (displacement " +
            std::to_string(new_disp) + " does not fit in 32 bits)";
      return -kERANGE;
    }
    const int32_t d32 = static_cast<int32_t>(new_disp);
    std::memcpy(pi.slot_bytes + f.riprel_off, &d32, 4);
  }
  if (f.classic) {
    pi.slot_len = pi.len;
    pi.step_end = -1;
  } else if (unsigned n = 0;
             pi.boostable == 0 && encode_jmp(slot + pi.len, pi.addr + pi.len, pi.slot_bytes + pi.len, n)) {
    // (A jump back out of rel32 reach: not boosted, stepped as usual.)
    pi.boostable = 1;
    pi.slot_len = static_cast<uint8_t>(pi.len + n);
    pi.step_end = -1;  // never stepped: the engine gives it a new slot first
  } else {
    if (pi.boostable == 0) pi.boostable = -1;
    pi.slot_bytes[pi.len] = kInt3;
    pi.slot_len = static_cast<uint8_t>(pi.len + 1);
    pi.step_end = static_cast<int8_t>(pi.len);
  }
  pack(f, pi);
  return 0;
}

void begin_step_at(ksim::x86::X86Cpu& cpu, const ProbeInsn& pi, uint64_t slot) {
  cpu.s.rip = slot;
  if (unpack(pi).classic) cpu.s.rflags |= ksim::x86::kTF;
}

bool is_step_end_trap(const TrapInfo& t, const ProbeInsn& pi, uint64_t slot) {
  if (t.interrupt) return false;
  const Facts f = unpack(pi);
  const uint64_t next = slot + pi.len;
  // Modern: the int3 after the copy (this CPU reports an int3's own
  // address, not the one after it).
  if (!f.classic) return t.cause == kVectorBP && t.pc == next;
  // Classic: the #DB after the copy, with RIP wherever the copy went: the
  // next instruction, a relative branch's target as seen from the slot,
  // or anywhere for a ret or an indirect branch.
  if (t.cause != kVectorDB) return false;
  if (t.pc == next || flow_traits(f.flow).rip_is_absolute) return true;
  switch (f.flow) {
    case Flow::call_rel:
    case Flow::jmp_rel:
    case Flow::jcc:
    case Flow::loop: return t.pc == next + static_cast<uint64_t>(f.rel);
    default: return false;
  }
}

}  // namespace ksim::kprobes::x86arch
