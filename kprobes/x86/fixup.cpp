// After a step through the slot: where execution resumes, and in classic
// mode the fixups of the 2006 paper (Linux's resume_execution before
// 5.13): the copy ran at the slot address, so anything it derived from
// RIP points into the slot and is moved back by addr - slot.
#include "cpu/x86/x86_cpu.hpp"
#include "kprobes/x86/probe_class.hpp"

namespace ksim::kprobes::x86arch {

namespace {

using ksim::x86::X86Cpu;
constexpr int kRsp = 4;

// Rewrites the 8 bytes at the top of the stack (through the bus, so the
// decode cache sees it).
template <typename Fn>
void edit_top_of_stack(X86Cpu& c, Bus& bus, Fn fn) {
  const uint64_t sp = c.s.gpr[kRsp];
  uint64_t v;
  if (!bus.read_bytes(sp, &v, 8)) return;  // the step just wrote it: cannot fail
  v = fn(v);
  bus.write_bytes(sp, &v, 8);
}

}  // namespace

void finish_step_for(X86Cpu& c, Bus& bus, const ProbeInsn& pi, uint64_t slot, SavedFlags& saved) {
  using namespace ksim::x86;
  const Facts f = unpack(pi);
  // Modern: the int3 after the copy stopped the step; carry on after the
  // probed instruction (control flow never reaches here: it is emulated).
  if (!f.classic) {
    c.s.rip = pi.addr + pi.len;
    return;
  }
  const FlowTraits& t = flow_traits(f.flow);
  const uint64_t stepped_flags = c.s.rflags;
  c.s.rflags &= ~kTF;
  // A stepped call pushed slot + len: the caller must return after the
  // probed call instead.
  if (t.fix_return_address)
    edit_top_of_stack(c, bus, [&](uint64_t ret) { return pi.addr + (ret - slot); });
  // A stepped pushf pushed TF set and IF masked: push the guest's own.
  if (t.fix_pushed_flags)
    edit_top_of_stack(c, bus, [&](uint64_t image) {
      return (image & ~saved_flag_bits()) | (saved.value & saved_flag_bits());
    });
  // cli/sti/popf decided IF (popf also TF): that survives restore()
  // (Linux's is_IF_modifier). The stepped sti ran with IF masked, so it
  // always opened an interrupt shadow, here in the engine's time; the
  // guest's sti opens one only when IF was clear, and restore() opens it.
  if (t.if_modifier) {
    const bool guest_if = saved.value & kIF;
    const uint64_t decided = f.flow == Flow::popf ? saved_flag_bits() : kIF;
    saved.value = (saved.value & ~decided) | (stepped_flags & decided);
    if (f.flow == Flow::sti) {
      set_sti_shadow(c, false);
      if (!guest_if) saved.value |= kStiShadowPending;
    }
  }
  // ret and indirect branches left RIP at their absolute target; anything
  // else (including relative jmp/jcc/call) went to slot-relative places.
  if (!t.rip_is_absolute) c.s.rip += pi.addr - slot;
}

}  // namespace ksim::kprobes::x86arch
