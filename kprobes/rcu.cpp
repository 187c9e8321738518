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
  sched_.done_at.assign(static_cast<size_t>(m.cpu_count()), Stamp{});
  last_.assign(static_cast<size_t>(m.cpu_count()), Seen{});
  tasks_p_.done_at.assign(static_cast<size_t>(m.cpu_count()), Stamp{});
  sched_.done.assign(static_cast<size_t>(m.cpu_count()), false);
  noticed_.assign(static_cast<size_t>(m.cpu_count()), false);
  // RCU-tasks: the kernel's thread table (include/kernel/ksim_abi.h).
  if (const Symbol* t = m.symbols().find("ksim_rcu_tasks_abi"); t && e.layout().has_abi) {
    uint64_t w[8] = {};
    if (m.bus().read_bytes(t->addr, w, sizeof w) && w[0] && w[1] && w[2])
      tasks_ = TasksAbi{w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]};
  }
  tasks_listed_.assign(static_cast<size_t>(m.cpu_count()), false);
  tasks_p_.done.assign(static_cast<size_t>(m.cpu_count()), false);
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
void Rcu::call_rcu(Cpu& caller, Callback fn) { queue(sched_, caller, std::move(fn), &Rcu::start); }

void Rcu::queue(Period& p, Cpu& caller, Callback fn, Starter start) {
  const Stamp at{caller.cycle(), caller.id()};
  p.waiting.push_back(Waiting{p.completed + (p.active && !(at < p.start) ? 2 : 1), std::move(fn), at});
  if (!p.active) (this->*start)(next_start(p.last_end, p.waiting));
}

Rcu::Stamp Rcu::next_start(Stamp end, const std::vector<Waiting>& waiting) {
  if (waiting.empty()) return end;
  Stamp first = waiting.front().at;
  for (const Waiting& w : waiting)
    if (w.at < first) first = w.at;
  return end < first ? first : end;
}

void Rcu::start(Stamp at) {
  sched_.active = true;
  ++sched_.number;
  sched_.start = at;
  // Only online CPUs take part (the others run no kernel code and take no
  // interrupt); every CPU notices the new grace period at its next
  // interrupt, as Linux's note_gp_changes().
  const size_t n = sched_.done.size();
  for (size_t k = 0; k < n; ++k) {
    noticed_[k] = false;
    sched_.done[k] = !e_.patcher().online(static_cast<int>(k));
    sched_.done_at[k] = at;
  }
  e_.emit_at(at.cycle, at.cpu, 0, "gp-start", sched_.number);
  // An interrupt stamped after the start but handled before it (host
  // order) is the CPU's next interrupt all the same.
  for (size_t k = 0; k < n && sched_.active; ++k)
    if (last_[k].valid && sched_.start < last_[k].at) observe(k, last_[k]);
  // No CPU online yet (a grace period asked for before the kernel is up):
  // nothing can be inside a read-side section, it ends where it starts.
  if (sched_.active) maybe_end(sched_, "gp-end", &Rcu::start);
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
  if (sched_.active && sched_.start < s.at) observe(k, s);
}

void Rcu::observe(size_t k, const Seen& s) {
  if (sched_.done[k]) return;
  if (!noticed_[k]) {
    noticed_[k] = true;
    start_switches_[k] = s.switches;
    if (!s.idle) return;
  } else if (!s.idle && s.switches == start_switches_[k]) {
    return;
  }
  sched_.done[k] = true;
  sched_.done_at[k] = s.at;
  e_.emit_at(s.at.cycle, s.at.cpu, 0, "rcu-qs", sched_.number);
  maybe_end(sched_, "gp-end", &Rcu::start);
}

void Rcu::maybe_end(Period& p, const char* end_event, Starter start) {
  Stamp end = p.start;
  for (size_t k = 0; k < p.done.size(); ++k) {
    if (!p.done[k]) return;
    if (end < p.done_at[k]) end = p.done_at[k];
  }
  p.active = false;
  ++p.completed;
  p.last_end = end;
  e_.emit_at(end.cycle, end.cpu, 0, end_event, p.number, end.cycle - p.start.cycle);
  // Run what this grace period covers (a callback may queue more).
  Cpu& at = e_.machine().cpu(end.cpu);
  for (auto& w : take_due(p.waiting, p.completed)) w.fn(&at, end.cycle);
  if (!p.waiting.empty() && !p.active) (this->*start)(next_start(end, p.waiting));
}

std::vector<Rcu::Waiting> Rcu::take_due(std::vector<Waiting>& from, uint64_t completed) {
  std::vector<Waiting> due, later;
  for (auto& w : from) (w.after <= completed ? due : later).push_back(std::move(w));
  from = std::move(later);
  return due;
}

void Rcu::flush() {
  // A callback may wait again (a detour freed once a jump is out): until
  // none is left.
  while (!sched_.waiting.empty() || !tasks_p_.waiting.empty()) {
    std::vector<Waiting> all = std::move(sched_.waiting);
    sched_.waiting.clear();
    sched_.active = false;
    for (auto& w : tasks_p_.waiting) all.push_back(std::move(w));
    tasks_p_.waiting.clear();
    tasks_p_.active = false;
    for (auto& w : all) w.fn(nullptr, 0);
  }
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

void Rcu::call_rcu_tasks(Cpu& caller, Callback fn) { queue(tasks_p_, caller, std::move(fn), &Rcu::start_tasks); }

void Rcu::start_tasks(Stamp at) {
  tasks_p_.active = true;
  ++tasks_p_.number;
  tasks_p_.start = at;
  for (int k = 0; k < e_.machine().cpu_count(); ++k) {
    const size_t i = static_cast<size_t>(k);
    tasks_listed_[i] = false;
    tasks_p_.done[i] = !e_.patcher().online(k);  // no task of its runs yet
    tasks_p_.done_at[i] = at;
    holdouts_[i].clear();
  }
  e_.emit_at(at.cycle, at.cpu, 0, "tasks-gp-start", tasks_p_.number);
  // As for RCU-sched: an interrupt stamped after the start but handled
  // before it lists that CPU's tasks, from what the CPU saw then.
  for (size_t k = 0; k < last_tasks_.size() && tasks_p_.active; ++k)
    if (!tasks_p_.done[k] && last_tasks_[k].valid && at < last_tasks_[k].at) tasks_observe(k, last_tasks_[k]);
  // No CPU online yet: no task has run, it ends where it starts.
  if (tasks_p_.active) maybe_end(tasks_p_, "tasks-gp-end", &Rcu::start_tasks);
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
  if (tasks_p_.active && !tasks_p_.done[i] && tasks_p_.start < last_tasks_[i].at) tasks_observe(i, last_tasks_[i]);
}

void Rcu::tasks_observe(size_t i, const TasksSeen& seen) {
  auto& hold = holdouts_[i];
  if (!tasks_listed_[i]) {
    tasks_listed_[i] = true;
    hold = seen.on_rq;
    e_.emit_at(seen.at.cycle, seen.at.cpu, 0, "tasks-holdouts", tasks_p_.number, hold.size());
  } else {
    std::erase_if(hold, [&](const Holdout& h) {
      for (const Holdout& now : seen.on_rq)
        if (now.thread == h.thread) return now.qs != h.qs;  // a voluntary switch since
      return true;                                          // off its run queue
    });
  }
  if (!hold.empty()) return;
  tasks_p_.done[i] = true;
  tasks_p_.done_at[i] = seen.at;
  e_.emit_at(seen.at.cycle, seen.at.cpu, 0, "tasks-qs", tasks_p_.number);
  maybe_end(tasks_p_, "tasks-gp-end", &Rcu::start_tasks);
}

}  // namespace ksim::kprobes
