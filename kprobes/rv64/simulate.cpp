// A probe hit on RV64 (Linux's kprobes.c and simulate-insn.c for RISC-V):
// masking interrupts while the engine owns the hart, simulating the
// PC-relative instructions on the host, stepping everything else in its
// slot, and whole-register snapshots for jprobes.
#include "cpu/rv64/hart.hpp"
#include "cpu/rv64/ops.hpp"
#include "kprobes/rv64/arch_rv64.hpp"

namespace ksim::kprobes::rv64arch {

namespace {

using ksim::rv64::Hart;
using ksim::rv64::Insn;
using ksim::rv64::kMstatusMIE;
using ksim::rv64::Op;

Hart& hart(Cpu& cpu) { return static_cast<Hart&>(cpu); }
const Hart& hart(const Cpu& cpu) { return static_cast<const Hart&>(cpu); }

// Writes to x0 are dropped, as the instructions themselves do.
void write_rd(Hart& h, const Insn& in, uint64_t v) {
  if (in.rd != 0) h.s.x[in.rd] = v;
}

}  // namespace

// Linux saves sstatus and clears SPIE so the step cannot be interrupted;
// this machine runs its kernel in M-mode, where mstatus.MIE is the switch.
SavedFlags Rv64Arch::save_and_mask(Cpu& cpu) const {
  Hart& h = hart(cpu);
  SavedFlags saved{h.s.mstatus & kMstatusMIE};
  h.s.mstatus &= ~kMstatusMIE;
  return saved;
}

void Rv64Arch::restore(Cpu& cpu, const SavedFlags& saved) const {
  Hart& h = hart(cpu);
  h.s.mstatus = (h.s.mstatus & ~kMstatusMIE) | (saved.value & kMstatusMIE);
  cpu.interrupts_changed();  // a pending interrupt may be deliverable again
}

// The simulated instructions, from the probe address. Compressed forms
// decode to the same rows with len 2, which is what their link value
// needs (c.jalr links pc + 2). None of them can fault: with the C
// extension every target is 2-byte aligned (jalr clears bit 0), and a
// target outside RAM faults at its fetch, as it would unprobed.
// The simulated instruction retires like a stepped one would (instret).
bool Rv64Arch::emulate(Cpu& cpu, Bus&, const ProbeInsn& pi, SavedFlags&) const {
  if (!simulate(cpu, pi)) return false;
  ++hart(cpu).s.instret;
  return true;
}

bool Rv64Arch::simulate(Cpu& cpu, const ProbeInsn& pi) const {
  if (cpu.isa() != Isa::rv64) return false;
  Hart& h = hart(cpu);
  const Insn in = decode_probed(pi);
  const uint64_t pc = pi.addr, next = pc + in.len;
  const uint64_t a = h.s.x[in.rs1], b = h.s.x[in.rs2];
  const int64_t imm = in.imm;
  namespace ops = ksim::rv64::ops;
  switch (in.op) {
    case Op::auipc:
      write_rd(h, in, pc + imm);
      h.s.pc = next;
      return true;
    case Op::jal:
      write_rd(h, in, next);
      h.s.pc = pc + imm;
      return true;
    case Op::jalr: {
      const uint64_t target = (a + imm) & ~uint64_t{1};  // read rs1 before rd: they may be equal
      write_rd(h, in, next);
      h.s.pc = target;
      return true;
    }
    case Op::beq: h.s.pc = ops::beq(a, b) ? pc + imm : next; return true;
    case Op::bne: h.s.pc = ops::bne(a, b) ? pc + imm : next; return true;
    case Op::blt: h.s.pc = ops::blt(a, b) ? pc + imm : next; return true;
    case Op::bge: h.s.pc = ops::bge(a, b) ? pc + imm : next; return true;
    case Op::bltu: h.s.pc = ops::bltu(a, b) ? pc + imm : next; return true;
    case Op::bgeu: h.s.pc = ops::bgeu(a, b) ? pc + imm : next; return true;
    default:
      return false;  // not a simulated instruction: analyse() never says so
  }
}

void Rv64Arch::begin_step(Cpu& cpu, const ProbeInsn&, uint64_t slot) const { cpu.set_pc(slot); }

// The ebreak after the copy: Linux's kprobe_single_step_handler matches
// epc == slot + len.
bool Rv64Arch::is_step_end(const Cpu&, const TrapInfo& t, const ProbeInsn& pi, uint64_t slot) const {
  return is_breakpoint_trap(t) && t.pc == slot + pi.len;
}

void Rv64Arch::finish_step(Cpu& cpu, Bus&, const ProbeInsn& pi, uint64_t, SavedFlags&) const {
  cpu.set_pc(pi.addr + pi.len);
}

RegSnapshot Rv64Arch::snapshot(const Cpu& cpu) const {
  const Hart& h = hart(cpu);
  RegSnapshot r;
  for (int i = 1; i < 32; ++i) r.gpr[i] = h.s.x[i];
  r.pc = h.s.pc;
  r.flags = h.s.mstatus;
  return r;
}

void Rv64Arch::restore_snapshot(Cpu& cpu, const RegSnapshot& r) const {
  Hart& h = hart(cpu);
  for (int i = 1; i < 32; ++i) h.s.x[i] = r.gpr[i];
  h.s.pc = r.pc;
  h.s.mstatus = r.flags;
  cpu.interrupts_changed();
}

}  // namespace ksim::kprobes::rv64arch
