// The hit path: what Linux's kprobe_int3_handler / kprobe_breakpoint_handler,
// the single-step handlers, reenter_kprobe and kprobe_fault_handler do,
// split into phases with scheduling points between them (see engine.hpp).
#include <algorithm>
#include <cstring>

#include "cpu/timing.hpp"
#include "kprobes/engine.hpp"

namespace ksim::kprobes {

namespace {
bool stepping(KStatus s) { return s == KStatus::hit_ss || s == KStatus::reenter; }
}  // namespace

HookResult Engine::stop(const std::string& why) {
  m_.request_stop(why);
  return HookResult::stop;
}

HookResult Engine::on_trap(Cpu& cpu, const TrapInfo& t) {
  if (t.interrupt) {  // (never while a hit owns the CPU: masked)
    rcu_->on_interrupt(cpu, t.pc);
    if (optimizer_pending_ && cpu.id() == optimizer_cpu_ && cpu.cycle() >= optimizer_due_) run_optimizer(cpu);
    return HookResult::pass;
  }
  if (!graveyard_.empty()) graveyard_.clear();
  CtlBlk& cb = cpus_[static_cast<size_t>(cpu.id())];
  if (arch_->is_breakpoint_trap(t)) {
    if (t.pc == layout_.ipi_work && layout_.ipi_work) return patcher_->on_ipi_work(cpu);
    if (patcher_->poke_handler(cpu, t)) return HookResult::handled;
    if (stepping(cb.status) && cb.current && arch_->is_step_end(cpu, t, cb.current->insn, step_base(*cb.current)))
      return on_step_end(cpu, cb);
    return on_breakpoint(cpu, cb, t);
  }
  if (arch_->is_single_step_trap(t) && stepping(cb.status) && cb.current &&
      arch_->is_step_end(cpu, t, cb.current->insn, step_base(*cb.current)))
    return on_step_end(cpu, cb);
  if (cb.status != KStatus::idle) return on_fault(cpu, cb, t);
  return HookResult::pass;
}

// --- Phase plumbing -------------------------------------------------------------

// The CPU leaves its run loop with `next` pending; the scheduler calls
// resume() when its turn comes (after the other CPUs have caught up with
// the cycles charged here). The PC stays where the trap left it. When no
// other CPU could run before that turn anyway (the CPU is still inside its
// scheduling slot: one CPU, or a large --quantum), the next phase runs at
// once, with the same outcome and without a trip through the scheduler.
void Engine::park(Cpu& cpu, CtlBlk& cb, Phase next, uint64_t cycles) {
  cb.phase = next;
  cpu.add_cycles(cycles);
  if (m_.may_continue(cpu.id()))
    resume(cpu);
  else
    cpu.request_stop();
}

void Engine::enter(CtlBlk& cb) {
  if (cb.busy) return;
  cb.busy = true;
  cb.busy_seq = cb.completed;
}

// Back to guest code at `pc` with no kprobe running: the CPU's own flags
// come back and its busy spell (for grace periods) ends.
void Engine::leave(Cpu& cpu, CtlBlk& cb, uint64_t pc) {
  cpu.set_pc(pc);
  // x86: the handler returns with IRET, which serialises: text another CPU
  // wrote while this hit was handled (a detour or slot refilled) is
  // fetched as memory holds it. (RV64's return does not; see the detour.)
  if (arch_->isa() == Isa::x86_64) cpu.serialize_code();
  arch_->restore(cpu, cb.flags);
  cb.current.reset();
  cb.status = KStatus::idle;
  end_busy(cb);
}

// The end of a busy spell: a grace period may be over for freed slots, and
// under Locking::spinlock the CPU lets go of kprobe_lock.
void Engine::end_busy(CtlBlk& cb) {
  if (cb.status != KStatus::idle || cb.jprobe_active || !cb.busy) return;
  cb.busy = false;
  ++cb.completed;
  const int me = static_cast<int>(&cb - cpus_.data());
  if (lock_owner_ == me) release_kprobe_lock(m_.cpu(me), cb);
  if (slots_.garbage()) reclaim_slots(Accessor{me, m_.cpu(me).cycle()});
}

// --- Legacy locking: one kprobe_lock (Locking::spinlock) ----------------------
//
// Linux 2.6.9 serialised every hit on one spinlock, taken at the top of
// kprobe_handler (after the trap entry) and released when the hit is done,
// so the lookup, the pre handlers, the single step and the post handlers
// of two CPUs never overlap. Here a CPU takes it at the start of its first
// phase after the trap; a nested hit (reentry, a jprobe's return) already
// holds it. A CPU that finds it held spins: it stays parked and pays
// kKprobeLockSpinCycles per iteration of the spin loop, so waiting costs
// simulated time, interleaved with the holder by the scheduler.
//
// Exactness without stepping every iteration: a check can only succeed
// once the holder has released the lock, and the holder releases at or
// after its own clock (lock_free_at_ is stamped with it). So the checks
// before the holder's clock all fail, whatever else happens, and the
// spinner jumps straight to its first iteration boundary at or after it
// (the boundaries stay those of one iteration at a time from the first
// attempt). The CPU is then parked again; the scheduler runs it when its
// (clock, number) is the smallest, as for any step, on every schedule.
bool Engine::take_kprobe_lock(Cpu& cpu, CtlBlk& cb) {
  for (;;) {
    const uint64_t now = cpu.cycle();
    if (lock_owner_ < 0 && now >= lock_free_at_) {
      lock_owner_ = cpu.id();
      ++stats_.lock_acquires;
      const uint64_t waited = cb.lock_waiting ? now - cb.lock_wait_since : 0;
      cb.lock_waiting = false;
      emit(cpu, cb.trap_addr, "kprobe_lock-acquire", waited);
      cpu.add_cycles(timing::kKprobeLockAcquireCycles);
      return true;
    }
    if (!cb.lock_waiting) {
      cb.lock_waiting = true;
      cb.lock_wait_since = now;
      ++stats_.lock_contended;
      emit(cpu, cb.trap_addr, "kprobe_lock-spin", static_cast<uint64_t>(lock_owner_ < 0 ? cpu.id() : lock_owner_));
    }
    // No check before `ready` can see the lock free.
    if (lock_owner_ >= 0) m_.settle(lock_owner_);  // its clock, as of this step
    const uint64_t ready = lock_owner_ >= 0 ? m_.cpu(lock_owner_).cycle() : lock_free_at_;
    uint64_t n = ready > now ? (ready - now + timing::kKprobeLockSpinCycles - 1) / timing::kKprobeLockSpinCycles : 1;
    if (n == 0) n = 1;
    cpu.add_cycles(n * timing::kKprobeLockSpinCycles);
    stats_.lock_spin_cycles += n * timing::kKprobeLockSpinCycles;
    // Still this CPU's turn (no other CPU could run before the next
    // check): check again at once; otherwise stay parked.
    if (!m_.may_continue(cpu.id())) {
      cpu.request_stop();
      return false;
    }
  }
}

void Engine::release_kprobe_lock(Cpu& cpu, CtlBlk& cb) {
  cpu.add_cycles(timing::kKprobeLockReleaseCycles);
  lock_owner_ = -1;
  lock_free_at_ = cpu.cycle();
  emit(cpu, cb.trap_addr, "kprobe_lock-release");
}

void Engine::resume(Cpu& cpu) {
  if (!graveyard_.empty()) graveyard_.clear();
  CtlBlk& cb = cpus_[static_cast<size_t>(cpu.id())];
  if (cb.phase == Phase::none) {
    patcher_->resume(cpu);
    return;
  }
  // Legacy locking: the hit's handler path starts by taking kprobe_lock;
  // while it is held elsewhere the phase stays pending (spinning).
  if (locking_ == Locking::spinlock && lock_owner_ != cpu.id() && cb.phase != Phase::none &&
      !take_kprobe_lock(cpu, cb))
    return;
  Phase ph = cb.phase;
  cb.phase = Phase::none;
  switch (ph) {
    case Phase::lookup: do_lookup(cpu, cb); break;
    case Phase::ret: do_return(cpu, cb); break;
    case Phase::jret: do_jprobe_return(cpu, cb); break;
    case Phase::none: break;
  }
}

// --- Trap ---------------------------------------------------------------------------

HookResult Engine::on_breakpoint(Cpu& cpu, CtlBlk& cb, const TrapInfo& t) {
  const uint64_t addr = t.pc;
  if (cb.pass_once_at == addr) {  // a breakpoint that is not ours: the guest's
    cb.pass_once_at = ~uint64_t{0};
    return HookResult::pass;
  }
  if (step_in_place_ && stepping(cb.status) && cb.current && cb.current->addr == addr) {
    // Stepping in place, this CPU met the breakpoint another CPU put back
    // over the instruction it was about to step: a miss, and the step
    // again (the uniprocessor design has no better answer).
    for (auto& r : cb.current->probes)
      if (r->user) ++r->user->nmissed;
    ++stats_.misses;
    write_point(*cb.current, false, Accessor{cpu.id(), cpu.cycle()});
    arch_->begin_step(cpu, cb.current->insn, addr);
    emit(cpu, addr, "step-in-place");
    cpu.add_cycles(timing::kKprobeTrapCycles + timing::kKprobeStepSetupCycles);
    return HookResult::handled;
  }
  enter(cb);
  cb.trap_addr = addr;
  cb.trap_flags = arch_->save_and_mask(cpu);
  Phase next = Phase::lookup;
  if (addr == layout_.trampoline)
    next = Phase::ret;
  else if (cb.jprobe_active && addr >= layout_.jprobe_return && addr < layout_.jprobe_return_end)
    next = Phase::jret;
  emit(cpu, addr, "trap", static_cast<uint64_t>(next));
  park(cpu, cb, next, timing::kKprobeTrapCycles);
  return HookResult::handled;
}

// --- Lookup -----------------------------------------------------------------------

void Engine::do_lookup(Cpu& cpu, CtlBlk& cb) {
  const uint64_t addr = cb.trap_addr;
  auto it = table_.find(addr);
  if (it == table_.end()) {
    // No probe here. If the breakpoint is gone too, another CPU removed the
    // probe between our trap and this lookup: re-execute the original
    // instruction (Linux x86; RV64 Linux avoids the race with stop_machine,
    // which ksim's RV64 arming does not use yet, so it recovers the same
    // way). A breakpoint that is still there belongs to the guest.
    uint8_t bytes[4] = {};
    bool readable = bus_.read_bytes(addr, bytes, 4) || bus_.read_bytes(addr, bytes, 2);
    bool foreign = readable && arch_->is_breakpoint(bytes);
    cpu.set_pc(addr);
    arch_->restore(cpu, cb.trap_flags);
    if (!foreign && stray_as_foreign_) {
      // Broken on purpose (ksim race stray-trap), as kprobes before the
      // stray check: not ours, so the kernel's own int3 handling gets it.
      cb.pass_once_at = addr;
      emit(cpu, addr, "foreign");
      end_busy(cb);
      cpu.add_cycles(timing::kKprobeLookupCycles);
      cpu.raise_breakpoint();
      return;
    }
    if (foreign) {
      cb.pass_once_at = addr;
      emit(cpu, addr, "foreign");
    } else {
      ++cb.strays;
      ++stats_.strays;
      emit(cpu, addr, "stray");
    }
    end_busy(cb);
    cpu.add_cycles(timing::kKprobeLookupCycles + timing::kKprobeResumeCycles);
    return;
  }
  const std::shared_ptr<ProbePoint>& p = it->second;
  if (cb.status != KStatus::idle) {
    reenter(cpu, cb, p);
    return;
  }
  cb.current = p;
  cb.status = KStatus::hit_active;
  cb.flags = cb.trap_flags;
  ++cb.hits;
  emit(cpu, addr, status_name(cb.status));
  // Lookup and pre handlers run back to back (Linux runs them in one
  // handler with interrupts off; nothing another CPU does can be seen in
  // between except an unregister, which do_pre handles).
  cpu.add_cycles(timing::kKprobeLookupCycles);
  do_pre(cpu, cb);
}

// A probe hit while this CPU already runs one (a guest-side jprobe handler
// reaching another probe): no handlers, nmissed, step in REENTER state
// with the first probe saved (one level, as Linux).
void Engine::reenter(Cpu& cpu, CtlBlk& cb, const std::shared_ptr<ProbePoint>& p) {
  const bool x86 = arch_->isa() == Isa::x86_64;
  if (cb.status == KStatus::reenter || (!x86 && cb.status == KStatus::hit_ss)) {
    std::string what = x86 ? "Unrecoverable kprobe detected." : "Failed to recover from reentered kprobes.";
    stop(what + " Dumping kprobe: " + m_.symbols().format(p->addr) + " hit on cpu " + std::to_string(cpu.id()) +
         " while in " + status_name(cb.status) + " for " + m_.symbols().format(cb.current->addr));
    return;
  }
  // kp.nmissed only: a kretprobe's rp->nmissed counts exhausted instances
  // (Linux's kprobes_inc_nmissed_count).
  for (auto& r : p->probes)
    if (r->user) ++r->user->nmissed;
  ++stats_.misses;
  ++stats_.reentries;
  ++cb.reentries;
  cpu.add_cycles(timing::kKprobeLookupCycles);
  if (boost_now(*p)) {
    // A boosted probe reentered runs its slot in the interrupted probe's
    // context, which stays current (Linux's setup_singlestep).
    ++stats_.boosted;
    ++p->boosted_hits;
    emit(cpu, p->addr, "boost", p->slot);
    cpu.set_pc(p->slot);
    arch_->restore(cpu, cb.trap_flags);
    cpu.add_cycles(timing::kKprobeResumeCycles);
    return;
  }
  cb.prev = PrevKprobe{cb.current, cb.status, cb.flags};
  cb.current = p;
  cb.status = KStatus::reenter;
  cb.flags = cb.trap_flags;
  emit(cpu, p->addr, status_name(cb.status));
  start_step(cpu, cb, *p);
}

// --- Pre handlers -------------------------------------------------------------------

HookResult Engine::do_pre(Cpu& cpu, CtlBlk& cb) {
  ProbePoint* p = cb.current.get();  // cb.current keeps it alive until leave()
  uint64_t handlers = 0;
  bool redirected = false;
  if (p->probes.size() != 1 || !p->probes.front()->internal) ++stats_.hits;
  // Handlers see the PC at the probed instruction (RV64 Linux's epc; x86
  // Linux shows the byte after the int3, a detail ksim does not copy).
  cpu.set_pc(p->addr);
  // By index: a handler may register or unregister probes (the vector may
  // change under us). A removed record lives in graveyard_ until the
  // engine is next entered, so `rec` stays valid through its handler.
  for (size_t i = 0; i < p->probes.size(); ++i) {
    ProbeRec* rec = p->probes[i].get();
    if (rec->disabled || !rec->user) continue;  // disabled or unregistered meanwhile
    Kprobe& kp = *rec->user;
    ++kp.hits;
    ++handlers;
    int r = 0;
    switch (rec->type) {
      case ProbeRec::Type::k:
        if (kp.pre_handler) r = kp.pre_handler(kp, cpu);
        break;
      case ProbeRec::Type::r: r = kretprobe_entry(cpu, *rec); break;
      case ProbeRec::Type::j: r = jprobe_entry(cpu, cb, *rec); break;
    }
    if (r) {  // Linux's aggr_pre_handler stops at the first non-zero
      redirected = true;
      break;
    }
  }
  // A breakpoint still in memory while its point is being disarmed (every
  // probe there disabled or removed, the protocol not done): stepped with
  // no handler, as Linux does for a disabled kprobe still in its table.
  if (handlers == 0) ++stats_.unhandled;
  const uint64_t cost = handlers * timing::kKprobeHandlerCycles;
  if (!redirected) {
    cpu.add_cycles(cost);
    step_or_boost(cpu, cb, *p);
    return HookResult::handled;
  }
  if (cb.jprobe_active) {
    // The guest-side jprobe handler runs now, with this probe still
    // current (KPROBE_HIT_ACTIVE) and interrupts masked.
    emit(cpu, p->addr, "jprobe-handler", cpu.pc());
    cpu.add_cycles(cost + timing::kJprobeSaveCycles);
    return HookResult::handled;
  }
  // The handler moved the PC: no step, no post handler.
  if (cpu.pc() == p->addr) {
    // Linux would take the breakpoint again, forever; say so instead.
    std::string why = "kprobes: the pre_handler of the probe at " + m_.symbols().format(p->addr) +
                      " returned non-zero but left the PC at the probe (it would hit it again forever)";
    leave(cpu, cb, cpu.pc());
    return stop(why);
  }
  emit(cpu, p->addr, "redirect", cpu.pc());
  leave(cpu, cb, cpu.pc());
  cpu.add_cycles(cost + timing::kKprobeResumeCycles);
  return HookResult::handled;
}

// --- Step or emulate -----------------------------------------------------------------

// A boosted hit (the OLS 2006 paper, 6.1): the slot holds the copy and a
// jump back, the probe has no post handler, so the CPU leaves the engine
// straight into the slot with its own flags back; no second trap.
bool Engine::boost_now(const ProbePoint& p) const {
  if (p.insn.boostable != 1 || !p.slot || step_in_place_) return false;
  // Modern mode's boosted slot ends with the jump: it can only be boosted.
  if (mode_ == StepMode::modern) return true;
  // Classic mode steps a point being removed (its slot is freed as a
  // stepped one's) or when boosting is off.
  if (!boost_ || p.removed) return false;
  for (const auto& r : p.probes)
    if (!r->disabled && r->user && r->type == ProbeRec::Type::k && r->user->post_handler) return false;
  return true;
}

void Engine::step_or_boost(Cpu& cpu, CtlBlk& cb, ProbePoint& p) {
  if (p.detour && p.opt != ProbePoint::Opt::none && cb.status == KStatus::hit_active) {
    // A point queued for optimization, or whose jump is being written or
    // taken out: the handlers ran from the int3; the region runs from the
    // detour buffer's copy, after its handler call, with no step (Linux's
    // setup_detour_execution). Never a step: it would resume after the
    // first instruction, which may be inside the jump's bytes by then.
    ++stats_.detour_hits;
    emit(cpu, p.addr, "detour", p.detour);
    leave(cpu, cb, p.detour_copy);
    cpu.add_cycles(timing::kKprobeResumeCycles);
    // Into a buffer another CPU may just have written: x86's IRET
    // serialises (at the cycle the CPU resumes, after the cost above);
    // RV64's return from the trap does not synchronise instruction fetch,
    // so the handler runs fence.i. (The out-of-tree series flushes every
    // hart's icache when it writes the buffer; this is the one way into it
    // before the jump is in, and the jump goes in under stop_machine, whose
    // harts all run fence.i.)
    cpu.serialize_code();
    if (arch_->isa() == Isa::rv64) cpu.add_cycles(timing::kFenceICycles);
    return;
  }
  if (!boost_now(p)) {
    start_step(cpu, cb, p);
    return;
  }
  if (p.removed && !p.armed) {
    // Removed and its original bytes back: the slot may already wait for
    // reuse, and leaving for it would end this CPU's read-side section
    // before it is out of the slot. The original instruction runs in
    // place instead (as after a stray trap).
    emit(cpu, p.addr, "reexecute", p.addr);
    leave(cpu, cb, p.addr);
    cpu.add_cycles(timing::kKprobeResumeCycles);
    return;
  }
  ++stats_.boosted;
  ++p.boosted_hits;
  emit(cpu, p.addr, "boost", p.slot);
  leave(cpu, cb, p.slot);
  cpu.add_cycles(timing::kKprobeResumeCycles);
}

// Classic mode's lazy boosting: the first step showed where the copy ends
// (the CPU stopped right after it), so the jump back goes there.
void Engine::prepare_boost(Cpu& cpu, ProbePoint& p) {
  std::vector<uint8_t> jmp;
  if (!boosting() || !arch_->encode_jump(p.slot + p.insn.len, p.addr + p.insn.len, jmp) ||
      p.insn.len + jmp.size() > arch_->slot_size()) {
    p.insn.boostable = -1;
    return;
  }
  bus_.write_bytes(p.slot + p.insn.len, jmp.data(), jmp.size(), Accessor{cpu.id(), cpu.cycle()});
  std::memcpy(p.insn.slot_bytes + p.insn.len, jmp.data(), jmp.size());
  p.insn.slot_len = static_cast<uint8_t>(p.insn.len + jmp.size());
  p.insn.boostable = 1;
  emit(cpu, p.addr, "boost-ready", p.slot);
  cpu.add_cycles(timing::kTextPokeCycles);
}

void Engine::start_step(Cpu& cpu, CtlBlk& cb, ProbePoint& p) {
  if (cb.status != KStatus::reenter) cb.status = KStatus::hit_ss;
  if (p.insn.kind == ProbeInsn::Kind::emulate) {
    if (!arch_->emulate(cpu, bus_, p.insn, cb.flags)) {
      stop("kprobes: emulating '" + p.insn.text + "' at " + m_.symbols().format(p.addr) + " on cpu " +
           std::to_string(cpu.id()) + " would fault (a memory operand outside RAM); the run stops here");
      return;
    }
    cb.resume_pc = cpu.pc();
    emit(cpu, p.addr, "emulate", cb.resume_pc);
    cpu.add_cycles(timing::kKprobeEmulateCycles);
    do_post(cpu, cb);
    return;
  }
  if (step_in_place_) {
    // The broken way (ksim race sail-past): put the original instruction
    // back and step it where it is; another CPU may run it meanwhile.
    write_point(p, false, Accessor{cpu.id(), cpu.cycle()});
    emit(cpu, p.addr, "step-in-place");
  }
  arch_->begin_step(cpu, p.insn, step_base(p));
  emit(cpu, p.addr, status_name(cb.status), step_base(p));
  cpu.add_cycles(timing::kKprobeStepSetupCycles);
  // x86: the int3 handler returns into the slot with IRET, which
  // serialises: the CPU fetches the slot as memory holds it then.
  if (arch_->isa() == Isa::x86_64) cpu.serialize_code();
}

HookResult Engine::on_step_end(Cpu& cpu, CtlBlk& cb) {
  ProbePoint& p = *cb.current;
  const uint64_t stepped_to = cpu.pc();
  arch_->finish_step(cpu, bus_, p.insn, step_base(p), cb.flags);
  if (mode_ == StepMode::classic && p.insn.boostable == 0 && !step_in_place_) {
    if (stepped_to == p.slot + p.insn.len)
      prepare_boost(cpu, p);
    else
      p.insn.boostable = -1;  // the copy went elsewhere (a taken branch): never boosted
  }
  if (step_in_place_ && wants_breakpoint(p)) write_point(p, true, Accessor{cpu.id(), cpu.cycle()});  // re-arm
  cb.resume_pc = cpu.pc();
  emit(cpu, p.addr, "step-done", cb.resume_pc);
  cpu.add_cycles(timing::kKprobeStepEndCycles);
  return do_post(cpu, cb);
}

// --- Post handlers and resume ----------------------------------------------------------

HookResult Engine::do_post(Cpu& cpu, CtlBlk& cb) {
  ProbePoint* p = cb.current.get();  // alive until leave() (or the restore below)
  const uint64_t addr = p->addr;
  cpu.set_pc(cb.resume_pc);
  if (cb.status == KStatus::reenter) {
    // restore_previous_kprobe: back to the interrupted probe's state; the
    // CPU stays masked, it is still inside that probe's processing.
    cb.current = cb.prev.point;
    cb.status = cb.prev.status;
    cb.flags = cb.prev.flags;
    cb.prev = PrevKprobe{};
    emit(cpu, addr, "reenter-done", cb.resume_pc);
    cpu.add_cycles(timing::kKprobeResumeCycles);
    return HookResult::handled;
  }
  // SSDONE is set even with no post handler (Linux dec8784c9088).
  cb.status = KStatus::hit_ssdone;
  uint64_t handlers = 0;
  for (size_t i = 0; i < p->probes.size(); ++i) {
    ProbeRec* rec = p->probes[i].get();  // see do_pre
    if (rec->disabled || !rec->user || rec->type != ProbeRec::Type::k || !rec->user->post_handler) continue;
    ++handlers;
    rec->user->post_handler(*rec->user, cpu, 0);
  }
  emit(cpu, p->addr, status_name(cb.status), cpu.pc());
  leave(cpu, cb, cpu.pc());
  cpu.add_cycles(handlers * timing::kKprobeHandlerCycles + timing::kKprobeResumeCycles);
  return HookResult::handled;
}

// --- Faults ------------------------------------------------------------------------------

HookResult Engine::on_fault(Cpu& cpu, CtlBlk& cb, const TrapInfo& t) {
  std::shared_ptr<ProbePoint> p = cb.current;
  if (!p) return HookResult::pass;
  const int trapnr = static_cast<int>(t.cause);
  const bool in_slot = p->slot && t.pc >= p->slot && t.pc < p->slot + arch_->slot_size();
  // The probe whose handler is "running": a lone probe, or the jprobe whose
  // guest handler faulted. Aggregates have none during a step (Linux's
  // kprobe_instance is NULL then), so no fault handler runs for them.
  ProbeRec* owner = p->probes.size() == 1 ? p->probes.front().get() : nullptr;
  if (!owner && cb.jprobe_active)
    for (auto& r : p->probes)
      if (r->type == ProbeRec::Type::j) owner = r.get();
  Kprobe* kp = owner ? owner->user : nullptr;

  if (stepping(cb.status) && in_slot) {
    emit(cpu, p->addr, "step-fault", t.cause);
    if (kp && kp->fault_handler && kp->fault_handler(*kp, cpu, trapnr)) {
      // Handled. A PC left in the slot means the handler fixed the cause:
      // the copy runs again, still stepping (as Linux returns to the
      // faulting instruction). Anywhere else: continue there.
      uint64_t pc = cpu.pc();
      if (pc >= p->slot && pc < p->slot + arch_->slot_size()) {
        emit(cpu, p->addr, "step-retry", pc);
        cpu.add_cycles(timing::kKprobeStepSetupCycles);
        return HookResult::handled;
      }
      if (cb.status == KStatus::reenter) {
        cpu.set_pc(pc);
        cb.current = cb.prev.point;
        cb.status = cb.prev.status;
        cb.flags = cb.prev.flags;
        cb.prev = PrevKprobe{};
      } else {
        leave(cpu, cb, pc);
      }
      cpu.add_cycles(timing::kKprobeResumeCycles);
      return HookResult::handled;
    }
    // Not handled: the guest sees the fault at the probed address, with
    // its own flags back (Linux: regs->ip = p->addr, restore flags).
    if (cb.status == KStatus::reenter) {
      cpu.set_pc(p->addr);
      cb.current = cb.prev.point;
      cb.status = cb.prev.status;
      cb.flags = cb.prev.flags;
      cb.prev = PrevKprobe{};
    } else {
      leave(cpu, cb, p->addr);
    }
    return HookResult::pass;
  }
  if (cb.status == KStatus::hit_active || cb.status == KStatus::hit_ssdone) {
    // A fault in a handler (on ksim: a guest-side jprobe handler).
    for (auto& r : p->probes)
      if (r->user) ++r->user->nmissed;
    emit(cpu, p->addr, "handler-fault", t.cause);
    if (kp && kp->fault_handler && kp->fault_handler(*kp, cpu, trapnr)) return HookResult::handled;
  }
  return HookResult::pass;
}

}  // namespace ksim::kprobes
