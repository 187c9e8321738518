// RCU-sched grace periods over the simulated CPUs, from what the guest
// kernel does (Linux's definition): a CPU passes a quiescent state when it
// switches threads or is idle. The kernel counts its context switches in
// its per-CPU area (struct percpu's `switches`, located through the symbol
// ksim_percpu_switches_offset); idle is the CPU waiting in wfi/hlt.
//
// call_rcu() queues a callback that runs once a grace period that started
// after the call has ended. A grace period advances the way Linux's does,
// from each CPU's own interrupts (rcu_sched_clock_irq): a CPU notices the
// grace period at one, and reports a quiescent state at a later one if it
// has switched threads since, or at once if the interrupt came from its
// idle loop (arch_cpu_idle). When every online CPU has reported, it ends,
// its callbacks run, and a new one starts if callbacks wait.
// Each step is an EventKind::probe event: gp-start (b: its number),
// rcu-qs (on the CPU whose interrupt saw it; b: the number, c: the CPU that
// passed it), gp-end (b: the number, c: its length in cycles).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

namespace ksim {
class Cpu;
}

namespace ksim::kprobes {

class Engine;

class Rcu {
 public:
  explicit Rcu(Engine& e);
  // The guest tells where it counts context switches.
  bool available() const { return off_switches_ != 0; }
  // Runs `fn` after a full grace period from now (Linux's call_rcu).
  void call_rcu(Cpu& caller, std::function<void()> fn);
  // An interrupt on `cpu` that interrupted `interrupted_pc`: its report.
  void on_interrupt(Cpu& cpu, uint64_t interrupted_pc);
  // Callbacks still waiting (the run ended first, say).
  size_t pending() const { return waiting_.size(); }
  uint64_t completed() const { return completed_; }
  // Runs every waiting callback at once (the run is over).
  void flush();

 private:
  struct Waiting {
    uint64_t after;  // runs when completed_ reaches this
    std::function<void()> fn;
  };
  uint64_t switches(int cpu) const;
  void start(Cpu& cpu);
  Engine& e_;
  uint64_t off_switches_ = 0;
  bool active_ = false;
  uint64_t gp_ = 0, completed_ = 0, started_at_ = 0;
  std::vector<uint64_t> start_switches_;
  std::vector<bool> reported_, noticed_;
  uint64_t idle_begin_ = 0, idle_end_ = 0;  // the kernel's arch_cpu_idle
  std::vector<Waiting> waiting_;
};

}  // namespace ksim::kprobes
