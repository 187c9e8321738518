// Modern mode (Linux 5.13+): control-flow and interrupt-flag instructions
// are emulated on the host from the int3 handler, with no slot and no
// second trap (prepare_emulation's emulate_op functions). The effect must
// be exactly what executing the instruction at its address gives; the
// guest's TF and IF live in `saved` while the engine owns the CPU, so the
// flag instructions read and write them there.
#include "cpu/x86/x86_cpu.hpp"
#include "cpu/x86/flags.hpp"
#include "kprobes/x86/probe_class.hpp"

namespace ksim::kprobes::x86arch {

namespace {

using ksim::x86::X86Cpu;
constexpr int kRsp = 4, kRcx = 1;

// Stack accesses go through the bus so the decode cache sees the stores;
// outside RAM they fail and leave the CPU untouched.
bool push(X86Cpu& c, Bus& bus, uint64_t v) {
  const uint64_t sp = c.s.gpr[kRsp] - 8;
  if (!bus.write_bytes(sp, &v, 8)) return false;
  c.s.gpr[kRsp] = sp;
  return true;
}

bool pop(X86Cpu& c, Bus& bus, uint64_t& v) {
  if (!bus.read_bytes(c.s.gpr[kRsp], &v, 8)) return false;
  c.s.gpr[kRsp] += 8;
  return true;
}

// loopne, loope, loop (decrement the count, branch while non-zero) and
// jrcxz (branch if the count is zero); cond is opcode & 3. With a 67
// prefix the count is ECX. (Linux tests the count before decrementing it;
// the SDM, and this, after.)
bool loop_taken(X86Cpu& c, const Facts& f) {
  uint64_t& cx = c.s.gpr[kRcx];
  const uint64_t mask = f.addr32 ? 0xffffffffull : ~0ull;
  if (f.cond == 3) return (cx & mask) == 0;
  cx = (cx & ~mask) | ((cx - 1) & mask);
  bool taken = (cx & mask) != 0;
  const bool zf = c.s.rflags & ksim::x86::kZF;
  if (f.cond == 0) taken = taken && !zf;
  if (f.cond == 1) taken = taken && zf;
  return taken;
}

}  // namespace

// The interpreter's own condition table (cpu/x86/flags.hpp).
bool condition_holds(uint8_t cond, uint64_t f) { return ksim::x86::flags::condition(cond, f); }

void set_sti_shadow(X86Cpu& cpu, bool on) {
  X86Cpu::Control k = cpu.control();
  k.sti_shadow = on;
  cpu.set_control(k);
}

bool emulate_insn(X86Cpu& c, Bus& bus, const ProbeInsn& pi, SavedFlags& saved) {
  using namespace ksim::x86;
  const Facts f = unpack(pi);
  const uint64_t next = pi.addr + pi.len;
  const uint64_t target = next + static_cast<uint64_t>(f.rel);
  auto& s = c.s;
  switch (f.flow) {
    case Flow::call_rel:
      if (!push(c, bus, next)) return false;
      s.rip = target;
      return true;
    case Flow::jmp_rel: s.rip = target; return true;
    case Flow::jcc: s.rip = condition_holds(f.cond, s.rflags) ? target : next; return true;
    case Flow::loop: s.rip = loop_taken(c, f) ? target : next; return true;
    case Flow::ret: {
      uint64_t to;
      if (!pop(c, bus, to)) return false;
      s.gpr[kRsp] += static_cast<uint64_t>(f.rel) & 0xffff;  // ret imm16 releases the arguments
      s.rip = to;
      return true;
    }
    case Flow::call_reg: {
      const uint64_t to = s.gpr[f.reg];  // read before the push: `call rsp` jumps to the old rsp
      if (!push(c, bus, next)) return false;
      s.rip = to;
      return true;
    }
    case Flow::jmp_reg: s.rip = s.gpr[f.reg]; return true;
    case Flow::pushf: {
      // The image the guest would push: its own TF and IF, and RF reads 0.
      const uint64_t image = (s.rflags & ~(saved_flag_bits() | kRF)) | (saved.value & saved_flag_bits());
      if (!push(c, bus, image)) return false;
      s.rip = next;
      return true;
    }
    case Flow::popf: {
      uint64_t v;
      if (!pop(c, bus, v)) return false;
      const uint64_t keep_masked = kFlagsWritable & ~saved_flag_bits();
      s.rflags = (s.rflags & ~kFlagsWritable) | (v & keep_masked) | kFlagsFixed;
      saved.value = v & saved_flag_bits();  // restore() puts the popped TF and IF in place
      s.rip = next;
      return true;
    }
    case Flow::cli:
      saved.value &= ~kIF;
      s.rip = next;
      return true;
    case Flow::sti:
      // Interrupts stay blocked for one more instruction when STI sets IF
      // (SDM STI): `sti; hlt` must not lose a wake-up.
      if (!(saved.value & kIF)) saved.value |= kStiShadowPending;
      saved.value |= kIF;
      s.rip = next;
      return true;
    case Flow::plain:
    case Flow::call_mem:
    case Flow::jmp_mem: return false;  // never emulated (analyse steps or refuses them)
  }
  return false;
}

}  // namespace ksim::kprobes::x86arch
