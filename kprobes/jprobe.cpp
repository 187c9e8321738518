// Jprobes (the 2006 paper, section "jprobes"): the probe's pre-handler saves
// the registers and the top of the stack and sends the CPU to a guest
// handler with the probed function's signature, so it sees the arguments
// where the function would. The handler ends in jprobe_return(), whose
// breakpoint brings the engine back to put registers and stack back and
// step the probed instruction as for any kprobe.
#include <algorithm>

#include "cpu/timing.hpp"
#include "kprobes/engine.hpp"
#include "sim/elf/symbols.hpp"

namespace ksim::kprobes {

namespace {
// Linux's MAX_STACK_SIZE: the bytes of stack a jprobe saves and restores
// (arguments passed on the stack, which the handler may clobber).
constexpr uint64_t kJprobeStackBytes = 64;
}  // namespace

int Engine::register_jprobe(Jprobe& jp) {
  error_.clear();
  if (!layout_.jprobe_return) return fail(kENOENT, "the guest image has no jprobe_return");
  uint64_t entry = jp.entry;
  if (!jp.entry_symbol.empty()) {
    const Symbol* s = m_.symbols().find(jp.entry_symbol);
    if (!s) return fail(kENOENT, "unknown jprobe handler '" + jp.entry_symbol + "'");
    entry = s->addr;
  }
  const Symbol* f = entry ? m_.symbols().containing(entry) : nullptr;
  if (!f || f->kind != Symbol::Kind::function || f->addr != entry)
    return fail(kEINVAL, "the jprobe handler must be a guest function");
  jp.entry = entry;
  auto rec = std::make_shared<ProbeRec>();
  rec->type = ProbeRec::Type::j;
  rec->jp = &jp;
  return add_probe(jp.kp, rec);
}

void Engine::unregister_jprobe(Jprobe& jp) {
  if (jp.kp.rec) remove_probe(*jp.kp.rec);
}

int Engine::register_jprobes(std::span<Jprobe* const> jps) {
  return register_batch(jps, [this](Jprobe& p) { return register_jprobe(p); }, [this](Jprobe& p) { unregister_jprobe(p); });
}

void Engine::unregister_jprobes(std::span<Jprobe* const> jps) {
  for (Jprobe* p : jps) unregister_jprobe(*p);
}

// setjmp_pre_handler.
int Engine::jprobe_entry(Cpu& cpu, CtlBlk& cb, ProbeRec& rec) {
  cb.jprobe_regs = arch_->snapshot(cpu);
  cb.jprobe_sp = arch_->stack_pointer(cpu);
  cb.jprobe_stack.assign(kJprobeStackBytes, 0);
  if (!bus_.read_bytes(cb.jprobe_sp, cb.jprobe_stack.data(), kJprobeStackBytes)) cb.jprobe_stack.clear();
  cb.jprobe_active = true;
  cpu.set_pc(rec.jp->entry);
  return 1;
}

// longjmp_break_handler, then "goto ss_probe".
HookResult Engine::do_jprobe_return(Cpu& cpu, CtlBlk& cb) {
  arch_->restore_snapshot(cpu, cb.jprobe_regs);
  if (!cb.jprobe_stack.empty())
    bus_.write_bytes(cb.jprobe_sp, cb.jprobe_stack.data(), cb.jprobe_stack.size(), Accessor{cpu.id(), cpu.cycle()});
  cb.jprobe_active = false;
  emit(cpu, cb.current->addr, "jprobe-return");
  cpu.add_cycles(timing::kJprobeRestoreCycles);
  step_or_boost(cpu, cb, *cb.current);
  return HookResult::handled;
}

}  // namespace ksim::kprobes
