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
// Order. Reports are engine state shared between CPUs, written from each
// CPU's interrupts. Two schedules that give the same run may still handle
// two CPUs' interrupts a few cycles apart in either host order, so every
// step carries its (cycle, CPU) stamp and decisions follow the stamps, not
// the host order: a grace period is seen only by interrupts stamped after
// its start (one handled earlier but stamped later counts, from what the
// CPU recorded then), and it ends at its latest report's stamp, on that
// report's CPU, whichever CPU's interrupt completes the set.
//
// Each step is an EventKind::probe event: gp-start (b: its number),
// rcu-qs (on the CPU whose interrupt saw it; b: the number, c: the CPU that
// passed it), gp-end (b: the number, c: its length in cycles).
//
// RCU-tasks (call_rcu_tasks / synchronize_rcu_tasks; Linux 3.18+, what
// optprobes and boosted slots on a preemptible kernel wait for): a grace
// period ends when every task that was on a run queue when it started has
// passed a voluntary context switch (yield, sleep, block, exit) or left
// its run queue. A preempted task does not count: it may be stopped in
// the middle of a trampoline. The tasks of CPU c are listed, and later
// checked, from CPU c's own interrupts (threads never migrate), through
// the kernel's ksim_rcu_tasks_abi table. Events: tasks-gp-start (b: its
// number), tasks-holdouts (b: the number, c: how many of this CPU's tasks
// must pass one), tasks-qs (b: the number; all of this CPU's holdouts
// passed), tasks-gp-end (b: the number, c: its length).
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
  // A callback gets the CPU whose report ended the grace period and that
  // report's cycle (null and 0 when the run is over and flush() runs it).
  using Callback = std::function<void(Cpu*, uint64_t)>;
  // Runs `fn` after a full grace period from now (Linux's call_rcu).
  void call_rcu(Cpu& caller, Callback fn);
  // The guest tells where its threads' RCU-tasks state is.
  bool tasks_available() const { return tasks_.threads != 0; }
  // Runs `fn` after a full RCU-tasks grace period from now.
  void call_rcu_tasks(Cpu& caller, Callback fn);
  uint64_t tasks_completed() const { return tasks_p_.completed; }
  size_t tasks_pending() const { return tasks_p_.waiting.size(); }
  // An interrupt on `cpu` that interrupted `interrupted_pc`: its report.
  void on_interrupt(Cpu& cpu, uint64_t interrupted_pc);
  // Callbacks still waiting (the run ended first, say).
  size_t pending() const { return sched_.waiting.size(); }
  uint64_t completed() const { return sched_.completed; }
  // Runs every waiting callback at once (the run is over).
  void flush();

 private:
  struct Stamp {
    uint64_t cycle = 0;
    int cpu = 0;
    bool operator<(const Stamp& o) const { return cycle != o.cycle ? cycle < o.cycle : cpu < o.cpu; }
  };
  struct Waiting {
    uint64_t after;  // runs when its flavour's `completed` reaches this
    Callback fn;
    Stamp at;        // when it was queued
  };
  // The stamp a new grace period starts at: not before the last one ended,
  // nor before the earliest callback still waiting was queued.
  static Stamp next_start(Stamp end, const std::vector<Waiting>& waiting);
  // One flavour's grace periods (RCU-sched, RCU-tasks): the one under way,
  // which CPUs are done with it and when, and the callbacks waiting.
  struct Period {
    bool active = false;
    uint64_t number = 0, completed = 0;
    Stamp start, last_end;
    std::vector<bool> done;
    std::vector<Stamp> done_at;
    std::vector<Waiting> waiting;
  };
  using Starter = void (Rcu::*)(Stamp);
  // call_rcu for a flavour (`start` begins its next grace period).
  void queue(Period& p, Cpu& caller, Callback fn, Starter start);
  // Every online CPU done: the grace period ends at the latest CPU's stamp,
  // on that CPU; its callbacks run there, and the next one starts if
  // callbacks wait. `end_event`: gp-end or tasks-gp-end.
  void maybe_end(Period& p, const char* end_event, Starter start);
  // A CPU's latest interrupt, as RCU-sched saw it.
  struct Seen {
    bool valid = false, idle = false;
    Stamp at;
    uint64_t switches = 0;
  };
  uint64_t switches(int cpu) const;
  void start(Stamp at);
  void observe(size_t k, const Seen& s);
  void start_tasks(Stamp at);
  void tasks_interrupt(Cpu& cpu);
  // A thread of CPU `cpu`: its address, whether it is on a run queue, and
  // its count of voluntary passes through the scheduler.
  uint64_t thread(int cpu, unsigned j) const;
  bool on_rq(uint64_t t) const;
  uint64_t tasks_qs(uint64_t t) const;
  static std::vector<Waiting> take_due(std::vector<Waiting>& from, uint64_t completed);
  Engine& e_;
  uint64_t off_switches_ = 0;
  Period sched_;
  std::vector<uint64_t> start_switches_;
  std::vector<bool> noticed_;
  std::vector<Seen> last_;
  uint64_t idle_begin_ = 0, idle_end_ = 0;  // the kernel's arch_cpu_idle

  // RCU-tasks: the kernel's table (ksim_abi.h), then the grace period.
  struct TasksAbi {
    uint64_t threads = 0, thread_size = 0, per_cpu = 0, off_state = 0, off_qs = 0, off_total = 0;
    uint64_t running = 0, runnable = 0;
  } tasks_;
  struct Holdout {
    uint64_t thread;  // its struct thread
    uint64_t qs;      // its rcu_tasks_qs when listed
  };
  // A CPU's latest interrupt, as RCU-tasks saw it: its tasks on a run queue.
  struct TasksSeen {
    bool valid = false;
    Stamp at;
    std::vector<Holdout> on_rq;
  };
  void tasks_seen(Cpu& cpu, TasksSeen& out) const;
  void tasks_observe(size_t i, const TasksSeen& seen);
  std::vector<TasksSeen> last_tasks_;
  Period tasks_p_;
  std::vector<bool> tasks_listed_;
  std::vector<std::vector<Holdout>> holdouts_;
};

}  // namespace ksim::kprobes
