// The x86-64 Arch: breakpoints, traps, the saved interrupt/trace flags,
// and the hit-processing entry points (the work is in analyse.cpp,
// slot.cpp, emulate.cpp and fixup.cpp). The engine only hands this Arch
// x86 CPUs, so the Cpu& it passes is an X86Cpu.
#include "kprobes/x86/arch_x86.hpp"

#include "cpu/x86/lapic.hpp"
#include "cpu/x86/x86_cpu.hpp"
#include "kprobes/x86/probe_class.hpp"

namespace ksim::kprobes {

namespace {
constexpr uint8_t kInt3 = 0xcc;
ksim::x86::X86Cpu& x86(Cpu& c) { return static_cast<ksim::x86::X86Cpu&>(c); }
}  // namespace

int X86Arch::analyse(const TextReader& text, uint64_t addr, const Symbol* func, StepMode mode, ProbeInsn& out,
                     std::string& why) const {
  return x86arch::analyse_insn(text, addr, func, mode, out, why);
}

int X86Arch::build_slot(ProbeInsn& pi, uint64_t slot, StepMode mode, std::string& why) const {
  return x86arch::build_slot_for(pi, slot, mode, why);
}

// int3, and `int 3` (cd 03), which also raises #BP: a guest's own one must
// go to the guest, not be mistaken for a probe removed meanwhile.
bool X86Arch::is_breakpoint(const uint8_t* bytes) const {
  return bytes[0] == kInt3 || (bytes[0] == 0xcd && bytes[1] == 0x03);
}

unsigned X86Arch::breakpoint_bytes(uint8_t* out) const {
  out[0] = kInt3;
  return 1;
}

bool X86Arch::is_breakpoint_trap(const TrapInfo& t) const { return !t.interrupt && t.cause == ksim::x86::kBP; }
bool X86Arch::is_single_step_trap(const TrapInfo& t) const { return !t.interrupt && t.cause == ksim::x86::kDB; }

// The mini kernel's one IPI vector (X86_IPI_VECTOR in workloads/kernel/
// arch/x86/include/asm/x86.h); Linux has several (call-function,
// reschedule), which share its entry path.
namespace {
constexpr uint64_t kGuestIpiVector = 0xfd;
constexpr uint64_t kIcrLow = 0x300, kIcrHigh = 0x310;
}  // namespace

bool X86Arch::is_ipi(const TrapInfo& t) const { return t.interrupt && t.cause == kGuestIpiVector; }

// Fixed delivery to one APIC id (= CPU number), as the kernel's
// arch_send_ipi: ICR high (destination), then ICR low (the doorbell).
void X86Arch::send_ipi(const DeviceStore& store, int to) const {
  store(ksim::x86::kLapicBase + kIcrHigh, 4, static_cast<uint64_t>(to) << 24);
  store(ksim::x86::kLapicBase + kIcrLow, 4, kGuestIpiVector);
}

// Linux's kprobe_old_flags: TF and IF as the guest had them; both clear
// while the engine works (no interrupt, no stray #DB in a handler).
SavedFlags X86Arch::save_and_mask(Cpu& cpu) const {
  auto& s = x86(cpu).s;
  SavedFlags saved{s.rflags & x86arch::saved_flag_bits()};
  s.rflags &= ~x86arch::saved_flag_bits();
  return saved;
}

void X86Arch::restore(Cpu& cpu, const SavedFlags& saved) const {
  auto& s = x86(cpu).s;
  s.rflags = (s.rflags & ~x86arch::saved_flag_bits()) | (saved.value & x86arch::saved_flag_bits());
  if (saved.value & x86arch::kStiShadowPending) x86arch::set_sti_shadow(x86(cpu), true);
  cpu.interrupts_changed();  // IF may be back on with an interrupt pending
}

bool X86Arch::emulate(Cpu& cpu, Bus& bus, const ProbeInsn& pi, SavedFlags& saved) const {
  // The emulated instruction retires like a stepped one would (instret).
  if (!x86arch::emulate_insn(x86(cpu), bus, pi, saved)) return false;
  ++x86(cpu).s.instret;
  return true;
}

void X86Arch::begin_step(Cpu& cpu, const ProbeInsn& pi, uint64_t slot) const {
  x86arch::begin_step_at(x86(cpu), pi, slot);
}

bool X86Arch::is_step_end(const Cpu&, const TrapInfo& t, const ProbeInsn& pi, uint64_t slot) const {
  return x86arch::is_step_end_trap(t, pi, slot);
}

void X86Arch::finish_step(Cpu& cpu, Bus& bus, const ProbeInsn& pi, uint64_t slot, SavedFlags& saved) const {
  x86arch::finish_step_for(x86(cpu), bus, pi, slot, saved);
}

std::unique_ptr<Arch> make_x86_arch() { return std::make_unique<X86Arch>(); }

}  // namespace ksim::kprobes
