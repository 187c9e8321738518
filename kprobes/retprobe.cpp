// Kretprobes: the entry probe plants the trampoline's address as the return
// address; the trampoline's breakpoint runs the return handler and resumes
// at the real return address. Instances come from a pool of maxactive per
// kretprobe and live on a per-task stack until their return.
#include <algorithm>

#include "cpu/hex.hpp"
#include "cpu/timing.hpp"
#include "kprobes/engine.hpp"

namespace ksim::kprobes {

int Engine::register_kretprobe(Kretprobe& rp) {
  error_.clear();
  if (rp.data_size > Kretprobe::kMaxDataSize)
    return fail(kE2BIG, "data_size " + std::to_string(rp.data_size) + " is over " +
                            std::to_string(Kretprobe::kMaxDataSize));
  if (rp.maxactive < 0) return fail(kEINVAL, "maxactive must not be negative");
  if (!layout_.trampoline) return fail(kENOENT, "the guest image has no kretprobe trampoline");
  const int n = rp.maxactive > 0 ? rp.maxactive : std::max(10, 2 * m_.cpu_count());
  auto rec = std::make_shared<ProbeRec>();
  rec->type = ProbeRec::Type::r;
  rec->rp = &rp;
  for (int i = 0; i < n; ++i) {
    auto inst = std::make_unique<KretprobeInstance>();
    inst->data.resize(rp.data_size);
    rec->pool.push_back(std::move(inst));
  }
  if (int e = add_probe(rp.kp, rec); e < 0) return e;
  ++kretprobes_;
  update_flush_probe();
  rp.nmissed = 0;
  rp.hits = 0;
  return 0;
}

void Engine::unregister_kretprobe(Kretprobe& rp) {
  if (!rp.kp.rec) return;
  ProbeRec& rec = *rp.kp.rec;
  remove_probe(rec);
  --kretprobes_;
  // Instances still in flight keep restoring their return address when the
  // function returns, but run no handler (Linux: ri->rp = NULL); each is
  // freed by call_rcu after its return. The free ones go the same way now.
  for (auto& [task, list] : tasks_)
    for (auto& inst : list)
      if (inst->rp == &rp) inst->rp = nullptr;
  // On behalf of the CPU making the call: a handler's CPU when one
  // unregisters during a run, else the operation's caller.
  Cpu& by = m_.running_cpu() >= 0 ? m_.cpu(m_.running_cpu()) : m_.cpu(caller_cpu_);
  for (auto& inst : rec.pool) free_instance_rcu(std::move(inst), by);
  rec.pool.clear();
  update_flush_probe();
}

// Linux frees a kretprobe's instances with call_rcu (free_rp_inst_rcu; the
// rethook's too): a CPU may still hold one in a read-side section. During
// a run with the kernel's grace periods: after one; otherwise at once.
void Engine::free_instance_rcu(std::unique_ptr<KretprobeInstance> inst, Cpu& cpu) {
  if (!rcu_->available() || !patcher_->protocol() || !patcher_->online(cpu.id())) {
    ++stats_.instances_freed;
    return;
  }
  ++stats_.instances_pending;
  std::shared_ptr<KretprobeInstance> held(std::move(inst));
  rcu_->call_rcu(cpu, [this, held](Cpu* at, uint64_t cycle) mutable {
    held.reset();
    --stats_.instances_pending;
    ++stats_.instances_freed;
    if (at) emit_at(cycle, at->id(), layout_.trampoline, "kretprobe-inst-free");
  });
}

// Linux recycles a dead task's instances in kprobe_flush_task(); here the
// engine probes the guest kernel's thread_exit() (when it has one) while
// any kretprobe is registered, and recycles the exiting task's instances:
// the functions they belong to will never return.
void Engine::update_flush_probe() {
  const bool want = kretprobes_ > 0 && m_.symbols().find("thread_exit");
  if (want == (flush_probe_ != nullptr)) return;
  const std::string saved_error = error_;
  if (want) {
    auto kp = std::make_unique<Kprobe>();
    kp->symbol_name = "thread_exit";
    kp->pre_handler = [this](Kprobe&, Cpu& cpu) {
      flush_task(current_task_key(cpu.id()), cpu);
      return 0;
    };
    auto rec = std::make_shared<ProbeRec>();
    rec->internal = true;
    if (add_probe(*kp, rec) == 0) flush_probe_ = std::move(kp);  // refused (blacklisted): no flush
  } else {
    if (flush_probe_->rec) remove_probe(*flush_probe_->rec);
    flush_probe_.reset();
  }
  error_ = saved_error;
}

void Engine::flush_task(uint64_t key, Cpu& cpu) {
  auto it = tasks_.find(key);
  if (it == tasks_.end()) return;
  for (auto& inst : it->second) {
    if (inst->rp && inst->rp->kp.rec)
      inst->rp->kp.rec->pool.push_back(std::move(inst));
    else
      free_instance_rcu(std::move(inst), cpu);
  }
  it->second.clear();
}

int Engine::register_kretprobes(std::span<Kretprobe* const> rps) {
  return register_batch(rps, [this](Kretprobe& p) { return register_kretprobe(p); }, [this](Kretprobe& p) { unregister_kretprobe(p); });
}

void Engine::unregister_kretprobes(std::span<Kretprobe* const> rps) {
  for (Kretprobe* p : rps) unregister_kretprobe(*p);
}

// pre_handler_kretprobe.
int Engine::kretprobe_entry(Cpu& cpu, ProbeRec& rec) {
  Kretprobe& rp = *rec.rp;
  auto& pool = rec.pool;
  cpu.add_cycles(timing::kKretprobeEntryCycles);
  if (pool.empty()) {  // maxactive instances all in flight
    if (!count_kretprobe_misses_) return 0;  // (broken on purpose: lost silently)
    ++rp.nmissed;
    ++stats_.misses;
    emit(cpu, rec.point->addr, "kretprobe-miss", rec.id);
    return 0;
  }
  std::unique_ptr<KretprobeInstance> inst = std::move(pool.back());
  pool.pop_back();
  inst->rp = &rp;
  inst->cpu = cpu.id();
  inst->entry_cycle = cpu.cycle();
  inst->sp = arch_->stack_pointer(cpu);
  inst->task = current_task_key(cpu.id());
  std::fill(inst->data.begin(), inst->data.end(), 0);
  const bool vetoed = rp.entry_handler && rp.entry_handler(*inst, cpu);
  if (!rec.user) return 0;  // the entry handler unregistered it: drop the instance
  if (vetoed) {
    pool.push_back(std::move(inst));  // no return handler for this call
    return 0;
  }
  if (!arch_->return_address(cpu, bus_, inst->ret_addr) || !arch_->set_return_address(cpu, bus_, return_trampoline())) {
    pool.push_back(std::move(inst));
    ++rp.nmissed;
    return 0;
  }
  const uint64_t ret = inst->ret_addr;
  tasks_[inst->task].push_back(std::move(inst));  // before the event: an observer may unregister
  emit(cpu, rec.point->addr, "kretprobe-entry", ret);
  return 0;
}

// The trampoline: the task's most recent instance must be the frame that is
// returning (its stack pointer tells); several kretprobes on one function
// stack instances whose saved return address is the trampoline itself.
bool Engine::run_return_handlers(Cpu& cpu, uint64_t& ret, uint64_t& handlers, std::string& why) {
  const uint64_t sp = arch_->stack_pointer(cpu);
  // The task's list; a function that ran while the CPU had no current
  // task yet (early boot: sched_init_cpu sets it) filed its instance under
  // the CPU's own key.
  auto it = tasks_.find(current_task_key(cpu.id()));
  auto matches = [&](decltype(it) i) {
    return i != tasks_.end() && !i->second.empty() && arch_->sp_after_return(i->second.back()->sp) == sp;
  };
  if (!matches(it)) {
    auto cpu_list = tasks_.find(cpu_task_key(cpu.id()));
    if (matches(cpu_list)) it = cpu_list;
  }
  auto bug = [&](const std::string& detail) {
    const Task task = current_task(cpu.id());
    const bool rethook = layout_.rethook && cpu.pc() - layout_.rethook < 16;
    why = "kretprobe BUG!: Processing kretprobe trampoline @ " + hex(rethook ? layout_.rethook : layout_.trampoline) +
          " on cpu " +
          std::to_string(cpu.id()) + " (task " + task.comm + "-" + std::to_string(task.tid) + ", sp " + hex(sp) +
          "): " + detail;
    return false;
  };
  if (it == tasks_.end() || it->second.empty()) return bug("no saved return address for this task");
  auto& list = it->second;
  handlers = 0;
  ret = 0;
  do {
    if (list.empty()) return bug("the instances of this frame ran out before a real return address");
    KretprobeInstance& top = *list.back();
    if (arch_->sp_after_return(top.sp) != sp)
      return bug("the most recent instance was entered at sp " + hex(top.sp) + " on cpu " + std::to_string(top.cpu) +
                 " (return to " + m_.symbols().format(top.ret_addr) + "), not this frame");
    std::unique_ptr<KretprobeInstance> inst = std::move(list.back());
    list.pop_back();
    ret = inst->ret_addr;
    // The handler sees the PC at the real return address (Linux sets it
    // before calling the handlers, so they can unwind from there).
    cpu.set_pc(ret);
    if (Kretprobe* rp = inst->rp) {
      // Linux runs the handler with current_kprobe = &rp->kp, HIT_ACTIVE.
      ++handlers;
      ++rp->hits;
      ++stats_.returns;
      if (rp->handler) rp->handler(*inst, cpu);
      // The handler may have unregistered its kretprobe: then the instance
      // is freed instead of going back to a pool that is gone.
      if (rp->kp.rec) rp->kp.rec->pool.push_back(std::move(inst));
    }
    if (inst) free_instance_rcu(std::move(inst), cpu);  // its kretprobe is gone
  } while (is_trampoline(ret));
  // An empty list stays: tasks are few and live long, and erasing would
  // free and reallocate its node on every call.
  return true;
}

// The trampoline's breakpoint: the task's most recent instance must be the
// frame that is returning (its stack pointer tells); several kretprobes on
// one function stack instances whose saved return address is a trampoline.
HookResult Engine::do_return(Cpu& cpu, CtlBlk& cb) {
  uint64_t ret = 0, handlers = 0;
  std::string why;
  if (!run_return_handlers(cpu, ret, handlers, why)) return stop(why);
  emit(cpu, layout_.trampoline, "kretprobe-return", ret);
  cpu.set_pc(ret);
  arch_->restore(cpu, cb.trap_flags);
  end_busy(cb);
  cpu.add_cycles(timing::kKretprobeReturnCycles + handlers * timing::kKprobeHandlerCycles);
  return HookResult::handled;
}

// The trap-free trampoline's load (kprobes/rethook.hpp): the same work in
// the middle of the load, which costs the CPU the handler path (no trap
// entry, no iret: the paper's kretprobe-booster). The load's own PC is put
// back after the handlers (the CPU finishes the instruction from there).
bool Engine::rethook_return(int cpu_id, uint64_t& real_return) {
  if (!graveyard_.empty()) graveyard_.clear();
  Cpu& cpu = m_.cpu(cpu_id);
  const uint64_t pc = cpu.pc();
  uint64_t handlers = 0;
  std::string why;
  const bool ok = run_return_handlers(cpu, real_return, handlers, why);
  cpu.set_pc(pc);
  if (!ok) {
    // The run stops before the jump; were it taken, the breakpoint
    // trampoline would report the same.
    m_.request_stop(why);
    real_return = layout_.trampoline;
    return true;
  }
  emit(cpu, layout_.rethook, "rethook-return", real_return);
  cpu.add_cycles(timing::kKretprobeReturnCycles + handlers * timing::kKprobeHandlerCycles);
  return true;
}

}  // namespace ksim::kprobes
