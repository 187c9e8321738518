// A simulated machine: RAM and devices on a bus, N CPUs of one ISA, the
// trap hook chain, the event stream, and the scheduler that runs the CPUs.
//
// Scheduling rule (deterministic by construction): the CPU whose clock is
// furthest behind runs next, ties to the lowest CPU number. With quantum 1
// (exact, the default) it keeps running only while it would still be that
// CPU: while (its clock, its number) is below (clock, number) of every
// other CPU, counting an idle CPU at its wake-up cycle. A CPU woken in the
// middle of another's slot (an IPI, a timer write) shortens that slot at
// once, so it runs at its wake-up cycle. With quantum Q > 1 a CPU may run
// Q - 1 cycles further. No host time, thread or address ever decides an
// order. docs/SCHEDULING.md has the details and the guarantees.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cpu/code_model.hpp"
#include "cpu/cpu.hpp"
#include "cpu/isa.hpp"
#include "cpu/perturb.hpp"
#include "cpu/trap_hooks.hpp"
#include "mem/bus.hpp"
#include "mem/cache/memory_system.hpp"
#include "mem/memory_map.hpp"
#include "mem/ownership.hpp"
#include "sim/elf/elf_image.hpp"
#include "sim/events.hpp"
#include "sim/serial.hpp"

namespace ksim {

// Far beyond any useful quantum; bounds what a command line or checkpoint
// can ask for.
inline constexpr uint64_t kMaxQuantum = 1'000'000'000'000ull;

struct MachineConfig {
  Isa isa = Isa::rv64;
  int cpus = 1;
  uint64_t ram_size = memmap::kRamDefaultSize;
  uint64_t max_cycles = 10'000'000'000ull;
  // A CPU may run this many cycles past the CPU furthest behind before the
  // scheduler switches. 1 is exact: instructions of all CPUs execute in
  // the order of their cycles. Larger is faster and still deterministic.
  uint64_t quantum = 1;
  // Seed of the latency perturbation (0: none). See cpu/perturb.hpp.
  uint64_t seed = 0;
  // The reference schedule: one scheduling decision per step (instruction,
  // trap or host phase), on the precise interpreter path. Slow; it exists
  // to check that the default schedule gives identical results. Needs
  // quantum 1.
  bool reference_schedule = false;
  // Exact schedule only: let a CPU run ahead of the others over work no
  // other CPU can observe (docs/SCHEDULING.md). Same results, far fewer
  // scheduling decisions; off is the plain exact schedule, for comparison.
  bool run_ahead = true;
  // When a CPU's fetch sees a store into code (docs/CODE_MODEL.md).
  CodeModel code_model = CodeModel::relaxed;
  // Timing model v2's machine (caches, coherence; docs/TIMING.md), or
  // nullptr for model v1's perfect memory.
  std::shared_ptr<const MachineProfile> profile;
  // Timing v2's memory model (docs/TIMING.md): sc, or the store buffers of
  // x86-TSO or RVWMO. v1 has sc only.
  MemoryModel memory_model = MemoryModel::sc;
  // Timing v2: a cache_miss event for every miss and upgrade (sim/events.hpp;
  // ksim run --trace-cache). They enter the trace hash, so it is opt-in.
  bool trace_cache = false;
};

// What running ahead did in a run (for tests and benchmarks).
struct AheadStats {
  uint64_t runs = 0;        // run-aheads started
  uint64_t cycles = 0;      // cycles run ahead
  uint64_t put_backs = 0;   // CPUs put back to an earlier point
  uint64_t undone = 0;      // cycles run ahead and then undone
  uint64_t replayed = 0;    // cycles re-run after a put-back
};

// Where a run() call pauses (the machine can be run again from there).
struct RunLimits {
  // Pause when execution reaches this cycle: the running CPU stops at its
  // first instruction boundary at or after it, and no CPU starts running at
  // or after it. Resuming continues the same schedule.
  uint64_t cycle = ~uint64_t{0};
  // Pause after exactly this many machine steps (sum over CPUs of
  // instructions executed and traps taken); 0 = no limit. Runs one step at a
  // time on the precise path, so it is meant for short distances.
  uint64_t steps = 0;
};

struct RunResult {
  enum class End { poweroff, cycle_limit, crash, hook_stop, paused };
  End end = End::poweroff;
  int status = 0;         // guest exit status for poweroff
  std::string reason;     // one line for crash / hook_stop
  uint64_t cycles = 0;    // the furthest CPU clock
  uint64_t instret = 0;   // all CPUs
};

class Platform;  // ISA-specific devices and CPUs (sim/platform_*.cpp)

// Host work done on a CPU's behalf in steps that the scheduler interleaves
// with the other CPUs (the kprobes engine's phases of a probe hit). While
// pending(cpu), the scheduler does not run the CPU's instructions: when
// the CPU's turn comes it calls resume(), which does the next step and
// charges the CPU its cycles (Cpu::add_cycles). A component that starts
// such work from a trap hook makes the CPU leave its run loop with
// Cpu::request_stop().
class HostAgent {
 public:
  virtual ~HostAgent() = default;
  virtual bool pending(int cpu) const = 0;
  virtual void resume(Cpu& cpu) = 0;
};

class Machine : private Resolver {
 public:
  explicit Machine(const MachineConfig& cfg);
  ~Machine();

  // Copies the image's segments into RAM, points every CPU at its entry and
  // arms the `tohost` watch if the image has that symbol. Throws InputError
  // when a segment does not fit in RAM.
  void load(const ElfImage& image);
  RunResult run(const RunLimits& limits = {});
  // Total steps so far (see RunLimits::steps).
  uint64_t steps() const;

  const MachineConfig& config() const { return cfg_; }
  Bus& bus() { return bus_; }
  int cpu_count() const { return static_cast<int>(cpus_.size()); }
  Cpu& cpu(int i) { return *cpus_[i]; }
  const Cpu& cpu(int i) const { return *cpus_[static_cast<size_t>(i)]; }
  TrapHookChain& trap_hooks() { return hooks_; }
  // At most one agent (nullptr: none).
  void set_host_agent(HostAgent* a) { agent_ = a; }
  // Whether `cpu`, now running, would also be the next to run: its clock is
  // still inside its scheduling slot (and short of a pause). A host agent
  // may then do its next step at once instead of parking the CPU, with the
  // same result, since no other CPU could run in between.
  // Not while CPUs run ahead: each host step must be positioned at its own
  // first cycle for the CPUs ahead to be put back to the right point.
  bool may_continue(int cpu) const {
    return running_ == cpu && run_until_ != 0 && cpus_[static_cast<size_t>(cpu)]->cycle() < run_until_ &&
           !owners_->enabled();
  }
  // Before a host component reads CPU `k`'s state on behalf of the running
  // CPU (the kprobes engine reading the kprobe_lock holder's clock): if `k`
  // runs ahead, it is put back to where the running CPU's step began.
  void settle(int k);
  // A store by host code to a device (the kprobes engine ringing an IPI
  // doorbell on behalf of the running CPU): CPUs running ahead that the
  // write affects are put back to this step first. False if it faulted.
  bool host_device_store(const Accessor& who, uint64_t addr, unsigned size, uint64_t value);
  EventStream& events() { return events_; }
  PageOwners& page_owners() { return *owners_; }
  // Timing model v2's caches (nullptr under v1).
  MemorySystem* memory_system() { return memsys_.get(); }
  const MemorySystem* memory_system() const { return memsys_.get(); }
  const AheadStats& ahead_stats() const { return ahead_stats_; }
  const Perturbation& perturbation() const { return perturb_; }
  const SymbolTable& symbols() const { return symbols_; }
  // The image's source lines (empty without debug information).
  const LineTable& source_lines() const { return *source_lines_; }
  // "sym+0x1c (kernel/sched.c:42)": how reports name a code address.
  std::string describe(uint64_t addr) const { return describe_addr(symbols_, source_lines_.get(), addr); }
  // Everything the guest printed on the console so far.
  const std::string& console() const { return console_; }

  // Ends the run after the current instruction (devices, hooks, tohost).
  void power_off(int status, uint64_t cycle, int cpu);
  // Ends the run as a guest crash: the guest kernel reported a panic.
  void guest_panic(int code, uint64_t cycle, int cpu);
  // Ends the run on behalf of a host component (a trap hook that returned
  // HookResult::stop); `reason` is reported as the run's end.
  void request_stop(const std::string& reason);
  // Receives each console byte as the guest writes it (the CLI prints it).
  std::function<void(char)> console_sink;

  // The whole machine state, for checkpoints (sim/checkpoint.hpp). The
  // configuration is not included: restore into a machine built with the
  // configuration the checkpoint records.
  void save_state(Writer& w) const;
  void restore_state(Reader& r);

  // Delivers every event still held for ordering (EventStream). A paused
  // machine holds the events at or after the slowest CPU's clock; call
  // this when no more events will come before the observers are read.
  void drain_events() { events_.drain(); }

  // Used by the platform's devices.
  void console_putc(const Accessor& who, char c);
  void cpu_interrupts_changed(int cpu);
  // A host component charged an idle or waiting CPU cycles (Cpu::add_cycles
  // outside its own turn): the scheduler refreshes when it is next ready.
  void cpu_clock_changed(int cpu);
  uint64_t now() const;  // clock of the running CPU (or max when none runs)
  int running_cpu() const { return running_; }  // -1 between runs
  // Where the running CPU's current step began: a trap's cycle while trap
  // hooks run, a host phase's first cycle, else its clock. Host work is
  // ordered against the other CPUs at that point.
  uint64_t step_position() const;

 private:
  void flush_console(uint64_t cycle);
  void arm_tohost(uint64_t addr);
  void connect_fetch();
  // The exclusive bound on the cycle at which `cur` may start a step while
  // `other` waits (see the scheduling rule above).
  uint64_t bound_for(int cur, int other) const;
  // Running ahead (sim/run_ahead.cpp).
  bool ahead_allowed(const RunLimits& limits) const;
  void set_run_ahead(bool on);
  // After an exact slot of `cur` ends at its bound: runs it on ahead.
  uint32_t run_ahead(int cur, const RunLimits& limits);
  // Puts CPU `k` back to the exact point (cycle, cpu) (Resolver).
  void resolve(int k, uint64_t cycle, int cpu) override;
  void commit_all();
  void resolve_all_to(uint64_t cycle, int cpu);

  MachineConfig cfg_;
  Bus bus_;
  TrapHookChain hooks_;
  EventStream events_;
  SymbolTable symbols_;
  std::shared_ptr<const LineTable> source_lines_ = std::make_shared<LineTable>();
  Perturbation perturb_;
  void save_caches(Writer& w) const;
  void restore_caches(Reader& r);
  std::unique_ptr<PageOwners> owners_;
  std::unique_ptr<MemorySystem> memsys_;  // before platform_: its CPUs point at it
  AheadStats ahead_stats_;
  // Where a run that ends early (power-off, crash, stop) ended: CPUs that
  // ran ahead are put back there.
  bool agent_step_ = false;  // the host agent works on the running CPU's behalf
  uint64_t agent_step_start_ = 0;
  int end_cpu_ = -1;
  uint64_t end_cycle_ = 0;
  std::unique_ptr<Platform> platform_;
  std::vector<Cpu*> cpus_;
  std::string console_;
  std::vector<std::string> lines_;  // per CPU: the console line being assembled
  std::optional<int> exit_status_;
  std::string stop_reason_;
  std::string panic_reason_;
  std::vector<bool> idle_reported_;
  int running_ = -1;
  // The current scheduling slot: which CPU runs until which cycle. Kept
  // across run() calls so a paused run resumes on the same schedule.
  std::vector<uint64_t> ready_;  // per CPU: ready_at(), cached during run()
  std::vector<uint8_t> idle_;    // per CPU: idle(), cached during run()
  bool halt_ = false;            // an exit, panic or stop is pending: the loop checks which
  int slot_cpu_ = -1;
  uint64_t slot_until_ = 0;
  HostAgent* agent_ = nullptr;
  uint64_t run_until_ = 0;  // the running CPU's slot end (0: stepping, no shortcut)
  uint64_t tohost_ = 0;
  bool has_tohost_ = false;
};

}  // namespace ksim
