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
  reported_.assign(static_cast<size_t>(m.cpu_count()), false);
  noticed_.assign(static_cast<size_t>(m.cpu_count()), false);
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

void Rcu::call_rcu(Cpu& caller, std::function<void()> fn) {
  // A grace period already under way may have seen some CPU's quiescent
  // state before this call: the callback needs the next one.
  waiting_.push_back(Waiting{completed_ + (active_ ? 2 : 1), std::move(fn)});
  if (!active_) start(caller);
}

void Rcu::start(Cpu& cpu) {
  active_ = true;
  ++gp_;
  started_at_ = cpu.cycle();
  // Only online CPUs take part (the others run no kernel code and take no
  // interrupt); every CPU notices the new grace period at its next
  // interrupt, as Linux's note_gp_changes().
  for (int k = 0; k < e_.machine().cpu_count(); ++k) {
    noticed_[static_cast<size_t>(k)] = false;
    reported_[static_cast<size_t>(k)] = !e_.patcher().online(k);
  }
  e_.emit(cpu, 0, "gp-start", gp_);
}

// Each CPU looks only at itself, from its own interrupts (Linux's
// rcu_sched_clock_irq and rcu_report_qs_rdp): an interrupt that came from
// the idle loop is a quiescent state; otherwise a context switch since the
// CPU noticed the grace period is. Reading no other CPU's state keeps the
// outcome independent of how far the others have run.
void Rcu::on_interrupt(Cpu& cpu, uint64_t interrupted_pc) {
  if (!active_) return;
  const size_t k = static_cast<size_t>(cpu.id());
  if (reported_[k]) return;
  const bool from_idle = interrupted_pc >= idle_begin_ && interrupted_pc < idle_end_;
  if (!noticed_[k]) {
    noticed_[k] = true;
    start_switches_[k] = switches(cpu.id());
    if (!from_idle) return;
  } else if (!from_idle && switches(cpu.id()) == start_switches_[k]) {
    return;
  }
  reported_[k] = true;
  e_.emit(cpu, 0, "rcu-qs", gp_);
  for (bool r : reported_)
    if (!r) return;
  active_ = false;
  ++completed_;
  e_.emit(cpu, 0, "gp-end", gp_, cpu.cycle() - started_at_);
  // Run what this grace period covers (a callback may queue more).
  std::vector<Waiting> due, later;
  for (auto& w : waiting_) (w.after <= completed_ ? due : later).push_back(std::move(w));
  waiting_ = std::move(later);
  for (auto& w : due) w.fn();
  if (!waiting_.empty() && !active_) start(cpu);
}

void Rcu::flush() {
  std::vector<Waiting> all = std::move(waiting_);
  waiting_.clear();
  active_ = false;
  for (auto& w : all) w.fn();
}

}  // namespace ksim::kprobes
