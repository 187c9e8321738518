// RCU-sched grace periods from the guest kernel's quiescent states (see
// rcu.hpp).
#include "kprobes/rcu.hpp"

#include <algorithm>

#include "kprobes/engine.hpp"

namespace ksim::kprobes {

Rcu::Rcu(Engine& e) : e_(e) {
  Machine& m = e.machine();
  if (const Symbol* s = m.symbols().find("ksim_percpu_switches_offset"); s && e.layout().has_abi)
    m.bus().read_bytes(s->addr, &off_switches_, 8);
  start_switches_.assign(static_cast<size_t>(m.cpu_count()), 0);
  reported_at_.assign(static_cast<size_t>(m.cpu_count()), Stamp{});
  last_.assign(static_cast<size_t>(m.cpu_count()), Seen{});
  tasks_done_at_.assign(static_cast<size_t>(m.cpu_count()), Stamp{});
  reported_.assign(static_cast<size_t>(m.cpu_count()), false);
  noticed_.assign(static_cast<size_t>(m.cpu_count()), false);
  // RCU-tasks: the kernel's thread table (include/kernel/ksim_abi.h).
  if (const Symbol* t = m.symbols().find("ksim_rcu_tasks_abi"); t && e.layout().has_abi) {
    uint64_t w[8] = {};
    if (m.bus().read_bytes(t->addr, w, sizeof w) && w[0] && w[1] && w[2])
      tasks_ = TasksAbi{w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]};
  }
  tasks_listed_.assign(static_cast<size_t>(m.cpu_count()), false);
  tasks_done_.assign(static_cast<size_t>(m.cpu_count()), false);
  holdouts_.resize(static_cast<size_t>(m.cpu_count()));
  last_tasks_.resize(static_cast<size_t>(m.cpu_count()));
  // The kernel's idle loop waits in arch_cpu_idle (arch/<isa>/setup.c).
  if (const Symbol* idle = m.symbols().find("arch_cpu_idle")) {
    idle_begin_ = idle->addr;
    idle_end_ = idle->addr + std::max<uint64_t>(idle->size, 1);
  }
}

uint64_t Rcu::switches(int cpu) const {
  const GuestLayout& g = e_.layout();
  uint64_t v = 0;
  e_.machine().bus().read_bytes(g.percpu_areas + static_cast<uint64_t>(cpu) * g.percpu_size + off_switches_, &v, 8);
  return v;
}

// By stamps, like the rest: a grace period that started after the call (in
// the global (cycle, CPU) order, whichever was handled first) covers it;
// one under way since before it may have seen some CPU's quiescent state
// before the call, so the callback needs the next one.
void Rcu::call_rcu(Cpu& caller, Callback fn) {
  const Stamp at{caller.cycle(), caller.id()};
  waiting_.push_back(Waiting{completed_ + (active_ && !(at < start_) ? 2 : 1), std::move(fn), at});
  if (!active_) start(next_start(last_end_, waiting_));
}

Rcu::Stamp Rcu::next_start(Stamp end, const std::vector<Waiting>& waiting) {
  if (waiting.empty()) return end;
  Stamp first = waiting.front().at;
  for (const Waiting& w : waiting)
    if (w.at < first) first = w.at;
  return end < first ? first : end;
}

void Rcu::start(Stamp at) {
  active_ = true;
  ++gp_;
  start_ = at;
  // Only online CPUs take part (the others run no kernel code and take no
  // interrupt); every CPU notices the new grace period at its next
  // interrupt, as Linux's note_gp_changes().
  const size_t n = reported_.size();
  for (size_t k = 0; k < n; ++k) {
    noticed_[k] = false;
    reported_[k] = !e_.patcher().online(static_cast<int>(k));
    reported_at_[k] = at;
  }
  e_.emit_at(at.cycle, at.cpu, 0, "gp-start", gp_);
  // An interrupt stamped after the start but handled before it (host
  // order) is the CPU's next interrupt all the same.
  for (size_t k = 0; k < n && active_; ++k)
    if (last_[k].valid && start_ < last_[k].at) observe(k, last_[k]);
}

// Each CPU looks only at itself, from its own interrupts (Linux's
// rcu_sched_clock_irq and rcu_report_qs_rdp): an interrupt that came from
// the idle loop is a quiescent state; otherwise a context switch since the
// CPU noticed the grace period is. Reading no other CPU's state keeps the
// outcome independent of how far the others have run.
void Rcu::on_interrupt(Cpu& cpu, uint64_t interrupted_pc) {
  const size_t k = static_cast<size_t>(cpu.id());
  Seen& s = last_[k];
  s.valid = true;
  s.at = Stamp{cpu.cycle(), cpu.id()};
  s.idle = interrupted_pc >= idle_begin_ && interrupted_pc < idle_end_;
  if (off_switches_) s.switches = switches(cpu.id());
  if (tasks_available()) tasks_interrupt(cpu);
  if (active_ && start_ < s.at) observe(k, s);
}

void Rcu::observe(size_t k, const Seen& s) {
  if (reported_[k]) return;
  if (!noticed_[k]) {
    noticed_[k] = true;
    start_switches_[k] = s.switches;
    if (!s.idle) return;
  } else if (!s.idle && s.switches == start_switches_[k]) {
    return;
  }
  reported_[k] = true;
  reported_at_[k] = s.at;
  e_.emit_at(s.at.cycle, s.at.cpu, 0, "rcu-qs", gp_);
  maybe_end();
}

// Every online CPU has reported: the grace period ends at the latest
// report (its stamp and CPU), and what it covers runs there.
void Rcu::maybe_end() {
  Stamp end = start_;
  for (size_t k = 0; k < reported_.size(); ++k) {
    if (!reported_[k]) return;
    if (end < reported_at_[k]) end = reported_at_[k];
  }
  active_ = false;
  ++completed_;
  last_end_ = end;
  e_.emit_at(end.cycle, end.cpu, 0, "gp-end", gp_, end.cycle - start_.cycle);
  // Run what this grace period covers (a callback may queue more).
  Cpu& at = e_.machine().cpu(end.cpu);
  for (auto& w : take_due(waiting_, completed_)) w.fn(&at, end.cycle);
  if (!waiting_.empty() && !active_) start(next_start(end, waiting_));
}

std::vector<Rcu::Waiting> Rcu::take_due(std::vector<Waiting>& from, uint64_t completed) {
  std::vector<Waiting> due, later;
  for (auto& w : from) (w.after <= completed ? due : later).push_back(std::move(w));
  from = std::move(later);
  return due;
}

void Rcu::flush() {
  std::vector<Waiting> all = std::move(waiting_);
  waiting_.clear();
  active_ = false;
  for (auto& w : tasks_waiting_) all.push_back(std::move(w));
  tasks_waiting_.clear();
  tasks_active_ = false;
  for (auto& w : all) w.fn(nullptr, 0);
}

// --- RCU-tasks -----------------------------------------------------------------

uint64_t Rcu::thread(int cpu, unsigned j) const {
  return tasks_.threads + (static_cast<uint64_t>(cpu) * tasks_.per_cpu + j) * tasks_.thread_size;
}

bool Rcu::on_rq(uint64_t t) const {
  int32_t state = -1;
  e_.machine().bus().read_bytes(t + tasks_.off_state, &state, 4);
  return state >= 0 && (static_cast<uint64_t>(state) == tasks_.running || static_cast<uint64_t>(state) == tasks_.runnable);
}

uint64_t Rcu::tasks_qs(uint64_t t) const {
  uint64_t v = 0;
  e_.machine().bus().read_bytes(t + tasks_.off_qs, &v, 8);
  return v;
}

void Rcu::call_rcu_tasks(Cpu& caller, Callback fn) {
  // As call_rcu: a grace period under way may have listed some CPU's tasks
  // before this call.
  const Stamp at{caller.cycle(), caller.id()};
  tasks_waiting_.push_back(
      Waiting{tasks_completed_ + (tasks_active_ && !(at < tasks_start_) ? 2 : 1), std::move(fn), at});
  if (!tasks_active_) start_tasks(next_start(tasks_last_end_, tasks_waiting_));
}

void Rcu::start_tasks(Stamp at) {
  tasks_active_ = true;
  ++tasks_gp_;
  tasks_start_ = at;
  for (int k = 0; k < e_.machine().cpu_count(); ++k) {
    const size_t i = static_cast<size_t>(k);
    tasks_listed_[i] = false;
    tasks_done_[i] = !e_.patcher().online(k);  // no task of its runs yet
    tasks_done_at_[i] = at;
    holdouts_[i].clear();
  }
  e_.emit_at(at.cycle, at.cpu, 0, "tasks-gp-start", tasks_gp_);
  // As for RCU-sched: an interrupt stamped after the start but handled
  // before it lists that CPU's tasks, from what the CPU saw then.
  for (size_t k = 0; k < last_tasks_.size() && tasks_active_; ++k)
    if (!tasks_done_[k] && last_tasks_[k].valid && at < last_tasks_[k].at) tasks_observe(k, last_tasks_[k]);
}

// This CPU's tasks on a run queue and their voluntary-switch counts, read
// at its own interrupt.
void Rcu::tasks_seen(Cpu& cpu, TasksSeen& seen) const {
  seen.on_rq.clear();  // (its buffer is kept: no allocation per interrupt)
  seen.valid = true;
  seen.at = Stamp{cpu.cycle(), cpu.id()};
  uint32_t total = 0;
  const GuestLayout& g = e_.layout();
  e_.machine().bus().read_bytes(g.percpu_areas + static_cast<uint64_t>(cpu.id()) * g.percpu_size + tasks_.off_total,
                                &total, 4);
  for (unsigned j = 0; j < std::min<uint64_t>(total, tasks_.per_cpu); ++j) {
    const uint64_t t = thread(cpu.id(), j);
    if (on_rq(t)) seen.on_rq.push_back(Holdout{t, tasks_qs(t)});
  }
}

// At each interrupt of a CPU (rcu_tasks_wait_gp's scan of every task, and
// check_holdout_task): the first one stamped after the start lists the
// CPU's tasks on a run queue (the interrupted one, running, is among them);
// each later one drops those that have passed a voluntary switch or left
// their run queue. Only this CPU's tasks, read at its own interrupt.
void Rcu::tasks_interrupt(Cpu& cpu) {
  const size_t i = static_cast<size_t>(cpu.id());
  tasks_seen(cpu, last_tasks_[i]);
  if (tasks_active_ && !tasks_done_[i] && tasks_start_ < last_tasks_[i].at) tasks_observe(i, last_tasks_[i]);
}

void Rcu::tasks_observe(size_t i, const TasksSeen& seen) {
  auto& hold = holdouts_[i];
  if (!tasks_listed_[i]) {
    tasks_listed_[i] = true;
    hold = seen.on_rq;
    e_.emit_at(seen.at.cycle, seen.at.cpu, 0, "tasks-holdouts", tasks_gp_, hold.size());
  } else {
    std::erase_if(hold, [&](const Holdout& h) {
      for (const Holdout& now : seen.on_rq)
        if (now.thread == h.thread) return now.qs != h.qs;  // a voluntary switch since
      return true;                                          // off its run queue
    });
  }
  if (!hold.empty()) return;
  tasks_done_[i] = true;
  tasks_done_at_[i] = seen.at;
  e_.emit_at(seen.at.cycle, seen.at.cpu, 0, "tasks-qs", tasks_gp_);
  maybe_end_tasks();
}

void Rcu::maybe_end_tasks() {
  Stamp end = tasks_start_;
  for (size_t k = 0; k < tasks_done_.size(); ++k) {
    if (!tasks_done_[k]) return;
    if (end < tasks_done_at_[k]) end = tasks_done_at_[k];
  }
  tasks_active_ = false;
  ++tasks_completed_;
  tasks_last_end_ = end;
  e_.emit_at(end.cycle, end.cpu, 0, "tasks-gp-end", tasks_gp_, end.cycle - tasks_start_.cycle);
  Cpu& at = e_.machine().cpu(end.cpu);
  for (auto& w : take_due(tasks_waiting_, tasks_completed_)) w.fn(&at, end.cycle);
  if (!tasks_waiting_.empty() && !tasks_active_) start_tasks(next_start(end, tasks_waiting_));
}

}  // namespace ksim::kprobes
