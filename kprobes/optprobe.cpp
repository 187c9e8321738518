// Jump optimization (optprobes; the Linux documents' "How Does Jump
// Optimization Work?", kernel/kprobes.c's optimizer, arch/x86/kernel/
// kprobes/opt.c; on RV64 the out-of-tree series' auipc+jalr). The ISA
// halves are kprobes/x86/optimize.cpp and kprobes/rv64/optimize.cpp.
//
// A point whose probes have no post handler and no jprobe, in a region
// the arch's can_optimize accepts, gets a detour buffer
// (its own cells at the end of the slot area) and is *queued*: its int3
// stays in the text, and a hit on it runs the handlers from the int3 as
// usual, then continues in the detour's copy of the region instead of a
// single step. The optimizer then waits for an RCU-tasks grace period (no
// task may be preempted inside the region: it would resume in the middle
// of the jump) and installs the jump to the detour over the region
// through the patcher (x86: text_poke_bp; RV64: stop_machine), on the CPU
// whose interrupt ended the grace period: the
// point is *optimized*, and a hit is the detour's load from the
// optimizer's port (no trap). Unoptimizing (the point is removed or
// disabled, a post handler or a probe inside the region is added, the knob
// is turned off) puts the breakpoint and the original bytes back the same
// way (RV64: in two steps, unoptimize_in_two); the detour buffer is freed
// after RCU-sched and RCU-tasks
// grace periods (a CPU may still be running in it).
//
// During a run the optimizer is delayed work, as Linux's: the first point
// queued schedules it OPTIMIZE_DELAY (timing::kOptimizeDelayCycles) later
// on the caller CPU, and it takes every point queued by then through one
// RCU-tasks grace period. Differences from Linux: unoptimizing does not
// go through it (the breakpoint and bytes go back at once, through the
// patcher); a guest without RCU-tasks (bare-metal images, no scheduler)
// gets the jump at once when the probe is registered before the run, and
// never during one.
#include <algorithm>
#include <cstring>

#include "cpu/hex.hpp"
#include "cpu/timing.hpp"
#include "kprobes/engine.hpp"
#include "sim/elf/symbols.hpp"

namespace ksim::kprobes {

// The jmp from `p`'s address to its detour buffer, as text_poke_bp's int3
// handler emulates it for a CPU that reaches the temporary int3.
std::shared_ptr<ProbeInsn> Engine::jump_to_detour(const ProbePoint& p, std::vector<uint8_t>& bytes) const {
  if (!arch_->encode_detour_jump(p.region, p.addr, p.detour, bytes)) return nullptr;
  TextReader text = [&](uint64_t a, uint8_t* out, size_t len) {
    for (size_t i = 0; i < len; ++i)
      out[i] = a + i >= p.addr && a + i < p.addr + bytes.size() ? bytes[a + i - p.addr] : 0x90;
    return true;
  };
  auto insn = std::make_shared<ProbeInsn>();
  std::string why;
  if (arch_->analyse(text, p.addr, nullptr, StepMode::modern, *insn, why) < 0) return nullptr;
  return insn;
}

bool Engine::can_stay_optimized(const ProbePoint& p) const {
  if (!optimize_ || p.removed || !wants_breakpoint(p)) return false;
  for (const auto& r : p.probes) {
    if (!r->user || r->disabled) continue;
    if (r->type == ProbeRec::Type::j) return false;  // its pre handler moves the PC
    if (r->type == ProbeRec::Type::k && r->user->post_handler) return false;
    if (r->user->moves_pc) return false;
  }
  return true;
}

void Engine::try_optimize(ProbePoint& p) {
  if (p.opt != ProbePoint::Opt::none || p.detour || p.cannot_optimize || !opt_slots_.ready() ||
      !can_stay_optimized(p))
    return;
  const Symbol* func = m_.symbols().containing(p.addr);
  if (!func) return;
  // No other probe inside the region, and this point not inside another's.
  TextReader text = [this](uint64_t a, uint8_t* out, size_t n) { return read_original(a, out, n); };
  OptRegion region;
  std::string why;
  if (arch_->can_optimize(text, p.addr, *func, region, why) < 0) {
    p.cannot_optimize = true;
    emit(m_.cpu(caller_cpu_), p.addr, "optimize-refused");
    return;
  }
  for (const auto& [a, q] : table_) {
    if (q.get() == &p) continue;
    if (a > p.addr && a < p.addr + region.len) return;
    // Nor inside another point's region or jump while that is in (being
    // taken out included: RV64's comes out in two steps).
    if (q->opt != ProbePoint::Opt::none && p.addr > a && p.addr < a + std::max(q->region.len, q->jump_len)) return;
  }
  unoptimize_around(p.addr);
  refill_slots(as_caller());
  const uint64_t cell = opt_slots_.alloc(cpus_);
  if (!cell) return;
  std::vector<uint8_t> code;
  unsigned copy_at = 0;
  if (arch_->build_detour(region, p.addr, cell, code, copy_at, why) < 0) {
    opt_slots_.free(cell, cpus_);
    return;
  }
  bus_.write_bytes(cell, code.data(), code.size(), as_caller());
  if (!patcher_->deferring()) see_text_now();
  p.region = region;
  p.detour = cell;
  p.detour_copy = cell + copy_at;
  p.opt = ProbePoint::Opt::queued;
  const uint64_t gen = ++p.opt_gen;
  auto keep = table_.at(p.addr);
  if (auto* e = detour_entry(cell)) *e = keep;
  emit(m_.cpu(caller_cpu_), p.addr, "optimize-queued", cell, region.len);
  if (!rcu_->tasks_available()) {
    // No scheduler to wait for: before any CPU runs, the jump goes in now.
    if (!patcher_->deferring() && m_.cpu(caller_cpu_).instret() == 0) install_jump(keep, nullptr);
    return;
  }
  auto optimizer = [this, keep, gen](Cpu* at, uint64_t) {
    if (at && keep->opt == ProbePoint::Opt::queued && keep->opt_gen == gen && can_stay_optimized(*keep))
      install_jump(keep, at);
  };
  switch (optimizer_wait_) {
    case OptimizerWait::rcu_tasks:
      if (patcher_->deferring()) {  // during a run: the delayed optimizer
        kick_optimizer(keep, gen);
        break;
      }
      emit(m_.cpu(caller_cpu_), p.addr, "synchronize_rcu_tasks");
      rcu_->call_rcu_tasks(m_.cpu(caller_cpu_), optimizer);
      break;
    case OptimizerWait::rcu_sched:  // (broken on purpose: ksim race dcr-preempted)
      emit(m_.cpu(caller_cpu_), p.addr, "synchronize_rcu");
      rcu_->call_rcu(m_.cpu(caller_cpu_), optimizer);
      break;
    case OptimizerWait::none:  // (broken on purpose: ksim race dcr-interrupted)
      install_jump(keep, &m_.cpu(caller_cpu_));
      break;
  }
}

// Linux's kick_kprobe_optimizer: the point joins the optimizer's batch;
// the first one since it last ran schedules it OPTIMIZE_DELAY later on the
// caller CPU.
void Engine::kick_optimizer(const std::shared_ptr<ProbePoint>& p, uint64_t gen) {
  optimizer_batch_.emplace_back(p, gen);
  if (optimizer_pending_) return;
  optimizer_pending_ = true;
  optimizer_cpu_ = caller_cpu_;
  optimizer_due_ = m_.cpu(caller_cpu_).cycle() + timing::kOptimizeDelayCycles;
}

// Linux's kprobe_optimizer, from the CPU's interrupt: one RCU-tasks grace
// period for the whole batch (no task may be preempted inside any of the
// regions), then each point still queued gets its jump, on the CPU whose
// interrupt ended the grace period.
void Engine::run_optimizer(Cpu& cpu) {
  optimizer_pending_ = false;
  auto batch = std::move(optimizer_batch_);
  optimizer_batch_.clear();
  emit(cpu, batch.empty() ? 0 : batch.front().first->addr, "optimizer", batch.size());
  emit(cpu, batch.empty() ? 0 : batch.front().first->addr, "synchronize_rcu_tasks");
  rcu_->call_rcu_tasks(cpu, [this, batch](Cpu* at, uint64_t) {
    if (!at) return;
    for (const auto& [p, gen] : batch)
      if (p->opt == ProbePoint::Opt::queued && p->opt_gen == gen && can_stay_optimized(*p)) install_jump(p, at);
  });
}

// text_poke_bp of `jmp detour` over the region's first bytes, on `at`
// (null: at once, nothing runs).
void Engine::install_jump(const std::shared_ptr<ProbePoint>& p, Cpu* at) {
  std::vector<uint8_t> bytes;
  std::shared_ptr<ProbeInsn> emulate = jump_to_detour(*p, bytes);
  if (!emulate || bytes.size() > p->region.len) return;
  p->jump_len = static_cast<uint8_t>(bytes.size());
  auto done = [this, p, gen = p->opt_gen](Cpu* cpu) {
    if (p->opt != ProbePoint::Opt::optimizing || p->opt_gen != gen) return;
    p->opt = ProbePoint::Opt::optimized;
    ++stats_.optimized;
    for (auto& r : p->probes)
      if (r->user) r->user->flags |= kFlagOptimized;
    if (cpu) emit(*cpu, p->addr, "optimized", p->detour);
  };
  p->opt = ProbePoint::Opt::optimizing;
  if (!at) {
    bus_.write_bytes(p->addr, bytes.data(), bytes.size(), as_caller());
    see_text_now();
    done(nullptr);
    return;
  }
  const int caller = caller_cpu_;
  begin_op(at->id());
  emit(*at, p->addr, "optimize", p->detour);
  if (patcher_->deferring()) {
    patcher_->queue_bytes(p->addr, bytes, true, emulate, done);
  } else {  // instant patching, or the caller is not online yet
    bus_.write_bytes(p->addr, bytes.data(), bytes.size(), Accessor{at->id(), at->cycle()});
    see_text_now();
    done(at);
  }
  end_op();
  caller_cpu_ = caller;
}

// The int3 and the original bytes back (Linux's unoptimize_kprobe); the
// detour buffer is freed after the grace periods.
void Engine::unoptimize(ProbePoint& p) {
  using Opt = ProbePoint::Opt;
  if (p.opt == Opt::none || p.opt == Opt::unoptimizing) return;
  const bool jump_in = p.opt == Opt::optimizing || p.opt == Opt::optimized;
  for (auto& r : p.probes)
    if (r->user) r->user->flags &= ~kFlagOptimized;
  ++stats_.unoptimized;
  emit(m_.cpu(caller_cpu_), p.addr, "unoptimize", p.detour);
  if (!jump_in) {
    p.opt = Opt::none;
    free_detour(p);
    return;
  }
  // The region's first 5 bytes as they were, with the probe's int3 on the
  // first (the point stays armed; disarming, if wanted, follows).
  std::vector<uint8_t> bytes(p.region.bytes, p.region.bytes + p.jump_len);
  std::memcpy(bytes.data(), p.insn.bp, std::min<size_t>(p.insn.bp_len, bytes.size()));
  auto keep = table_.count(p.addr) ? table_.at(p.addr) : nullptr;
  p.opt = Opt::unoptimizing;
  auto done = [this, keep, gen = p.opt_gen](Cpu* cpu) {
    if (!keep || keep->opt != Opt::unoptimizing || keep->opt_gen != gen) return;
    keep->opt = Opt::none;
    const uint64_t from = keep->addr, to = keep->addr + keep->jump_len;
    free_detour(*keep);
    // The breakpoint was kept for the jump's sake (keeps_breakpoint): a
    // removal or disable meanwhile disarms now; a point registered inside
    // the jump's bytes meanwhile (arming_blocked) is armed now.
    std::vector<std::shared_ptr<ProbePoint>> todo;
    for (auto& [a, q] : table_)
      if (a >= from && a < to && keeps_breakpoint(*q) != q->armed) todo.push_back(q);
    std::sort(todo.begin(), todo.end(), [](const auto& x, const auto& y) { return x->addr < y->addr; });
    // Wanted again meanwhile (the knob turned on again, the probe enabled
    // again): queued for the optimizer anew, as Linux's optimizer does.
    const bool again = cpu && can_stay_optimized(*keep);
    if (todo.empty() && !again) return;
    const int caller = caller_cpu_;
    if (cpu) begin_op(cpu->id());
    if (again) try_optimize(*keep);
    for (auto& q : todo) {
      if (cpu && patcher_->deferring()) {
        patcher_->queue(q);
      } else {
        write_point(*q, keeps_breakpoint(*q), cpu ? Accessor{cpu->id(), cpu->cycle()} : as_caller());
        see_text_now();
        point_patched(*q);
      }
    }
    if (cpu) end_op();
    caller_cpu_ = caller;
  };
  if (arch_->detour_jump_insns() > 1 && rcu_->tasks_available() && unoptimize_in_two_ &&
      (patcher_->deferring() || m_.cpu(caller_cpu_).instret() > 0)) {
    unoptimize_in_two(p, keep, std::move(done));
    return;
  }
  if (patcher_->deferring()) {
    // Meanwhile a CPU at the temporary int3 goes on to the detour, which is
    // what the old text did.
    std::vector<uint8_t> jmp;
    patcher_->queue_bytes(p.addr, bytes, true, jump_to_detour(p, jmp), done);
    return;
  }
  bus_.write_bytes(p.addr, bytes.data(), bytes.size(), as_caller());
  see_text_now();
  charge_caller(timing::kTextPokeCycles);
  done(nullptr);
}

// A jump of two instructions (RV64's auipc+jalr) cannot be taken out at
// once: a task interrupted or preempted between them would resume at the
// second with the original bytes back, in the middle of the region with
// its first instructions skipped. So the breakpoint goes over the first
// (a CPU between the two still jumps to the detour, which is kept), and
// the rest of the original bytes only after an RCU-tasks grace period, when
// no task can be between them any more.
void Engine::unoptimize_in_two(ProbePoint& p, const std::shared_ptr<ProbePoint>& keep,
                               std::function<void(Cpu*)> done) {
  using Opt = ProbePoint::Opt;
  const unsigned bp = p.insn.bp_len;
  std::vector<uint8_t> first(p.insn.bp, p.insn.bp + bp);
  std::vector<uint8_t> rest(p.region.bytes + bp, p.region.bytes + p.jump_len);
  // Breakpoints of points inside the jump's bytes (registered while it
  // was in) stay over what goes back.
  for (auto& [a, q] : table_)
    if (q->armed && a >= p.addr + bp && a < p.addr + p.jump_len)
      for (unsigned k = 0; k < q->insn.bp_len && a - p.addr - bp + k < rest.size(); ++k)
        rest[a - p.addr - bp + k] = q->insn.bp[k];
  const uint64_t addr = p.addr, gen = p.opt_gen;
  auto valid = [keep, gen] { return keep && keep->opt == Opt::unoptimizing && keep->opt_gen == gen; };
  // Writes `bytes` at `at_addr` as `cpu` (null: the run is over, at once):
  // through the patcher during a run with a protocol, else at once.
  auto write = [this](Cpu* cpu, uint64_t at_addr, const std::vector<uint8_t>& bytes, std::function<void(Cpu*)> then) {
    if (!cpu) {
      bus_.write_bytes(at_addr, bytes.data(), bytes.size(), as_caller());
      then(nullptr);
      return;
    }
    const int caller = caller_cpu_;
    begin_op(cpu->id());
    if (patcher_->deferring()) {
      patcher_->queue_bytes(at_addr, bytes, true, nullptr, std::move(then));
    } else {  // instant patching: every CPU sees it at once
      bus_.write_bytes(at_addr, bytes.data(), bytes.size(), Accessor{cpu->id(), cpu->cycle()});
      see_text_now();
      charge_caller(timing::kTextPokeCycles);
      then(cpu);
    }
    end_op();
    caller_cpu_ = caller;
  };
  auto second = [this, valid, addr, bp, rest, done, write](Cpu* at, uint64_t) {
    if (!valid()) return;
    if (at) emit(*at, addr, "unoptimize-rest");
    write(at, addr + bp, rest, done);
  };
  auto wait = [this, valid, addr, second](Cpu* cpu) {
    if (!valid()) return;
    if (!cpu) return second(nullptr, 0);
    emit(*cpu, addr, "synchronize_rcu_tasks");
    rcu_->call_rcu_tasks(*cpu, second);
  };
  // (The first step in the caller's own operation: queued if it is one
  // with a protocol, else at once.)
  if (patcher_->deferring()) {
    patcher_->queue_bytes(addr, first, true, nullptr, wait);
  } else {
    bus_.write_bytes(addr, first.data(), first.size(), as_caller());
    see_text_now();
    charge_caller(timing::kTextPokeCycles);
    wait(&m_.cpu(caller_cpu_));
  }
}

// A point inside the bytes of another's two-instruction jump being taken
// out is armed only once the jump is gone (unoptimize's `done`): its
// breakpoint over the jump's second instruction would catch a task
// between the two, which must run that instruction.
bool Engine::arming_blocked(const ProbePoint& p) const {
  for (const auto& [a, q] : table_)
    if (q.get() != &p && q->opt == ProbePoint::Opt::unoptimizing && p.addr > a && p.addr < a + q->jump_len)
      return true;
  return false;
}

void Engine::unoptimize_around(uint64_t addr) {
  for (auto& [a, q] : table_)
    if (q->opt != ProbePoint::Opt::none && addr > a && addr < a + q->region.len) unoptimize(*q);
}

void Engine::free_detour(ProbePoint& p) {
  const uint64_t cell = p.detour;
  if (!cell) return;
  p.detour = 0;
  // After the grace periods the cell waits, like a slot, for the next
  // registration (or the end of the run) to be refilled and reused: a
  // point every schedule reaches in the same order (refill_slots).
  auto release = [this, cell](Cpu* at, uint64_t cycle) {
    if (auto* e = detour_entry(cell)) e->reset();
    unfilled_detours_.push_back(cell);
    if (at) emit_at(cycle, at->id(), cell, "detour-free", cell);
  };
  if (!rcu_->available()) {
    // No grace periods in this guest: kept until the run is over.
    if (m_.cpu(caller_cpu_).instret() == 0)
      release(nullptr, 0);
    else
      quarantined_detours_.push_back(cell);
    return;
  }
  const uint64_t addr = p.addr;
  rcu_->call_rcu(m_.cpu(caller_cpu_), [this, release, addr](Cpu* at, uint64_t cycle) {
    then_tasks_gp(at, cycle, addr, true, release);
  });
}

void Engine::set_optimization(bool on) {
  if (optimize_ == on) return;
  optimize_ = on;
  std::vector<uint64_t> addrs;
  for (auto& [a, p] : table_) addrs.push_back(a);
  std::sort(addrs.begin(), addrs.end());
  for (uint64_t a : addrs) {
    if (on)
      try_optimize(*table_[a]);
    else
      unoptimize(*table_[a]);
  }
}

// The detour's load (kprobes/rethook.hpp's port, +8): Linux's
// optimized_callback. The registers are the probe point's but for the
// pushed r11 (on the stack) and the PC (in the detour): the handlers see
// rsp + 8 and the probed address, and a change they make to r11 goes to
// the stack slot the detour pops it from. A change of the PC is ignored
// (the Linux documents' note on optimized probes), as is one of rsp.
bool Engine::optprobe_hit(int cpu_id, uint64_t& value) {
  if (!graveyard_.empty()) graveyard_.clear();
  Cpu& cpu = m_.cpu(cpu_id);
  value = 0;
  std::shared_ptr<ProbePoint>* entry = detour_entry(cpu.pc());
  if (!entry || !*entry) {
    m_.request_stop("kprobes: a load from the optimizer port at " + m_.symbols().format(cpu.pc()) +
                    ", outside any detour buffer");
    return true;
  }
  ProbePoint& p = **entry;
  CtlBlk& cb = cpus_[static_cast<size_t>(cpu_id)];
  if (cb.status != KStatus::idle) {  // inside another probe's handling: kprobe_running()
    for (auto& r : p.probes)
      if (r->user) ++r->user->nmissed;
    ++stats_.misses;
    emit(cpu, p.addr, "optimized-miss");
    cpu.add_cycles(timing::kOptimizedCallbackCycles);
    return true;
  }
  // The probe point's registers for the handlers (no full snapshot: only
  // the PC and the detour's scratch registers differ).
  DetourRegs saved;
  arch_->detour_enter(cpu, bus_, p.addr, p.region, saved);
  cb.status = KStatus::hit_active;
  uint64_t handlers = 0;
  if (p.probes.size() != 1 || !p.probes.front()->internal) {
    ++stats_.hits;
    ++stats_.optimized_hits;
  }
  for (size_t i = 0; i < p.probes.size(); ++i) {
    ProbeRec* rec = p.probes[i].get();
    if (rec->disabled || !rec->user) continue;
    ++rec->user->hits;
    ++handlers;
    if (rec->type == ProbeRec::Type::k && rec->user->pre_handler)
      rec->user->pre_handler(*rec->user, cpu);  // its return value does not matter here
    else if (rec->type == ProbeRec::Type::r)
      kretprobe_entry(cpu, *rec);
  }
  cb.status = KStatus::idle;
  arch_->detour_leave(cpu, bus_, p.region, saved, value);
  // (No handler: every probe there disabled or removed while the jump is
  // still in, as Linux's optimized_callback skips a disabled probe.)
  if (handlers == 0) ++stats_.unhandled;
  emit(cpu, p.addr, handlers ? "optimized-hit" : "optimized-unhandled", p.detour);
  cpu.add_cycles(timing::kOptimizedCallbackCycles + handlers * timing::kKprobeHandlerCycles);
  return true;
}

}  // namespace ksim::kprobes
