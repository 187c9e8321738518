// Text patching protocols, executed: how a breakpoint gets written into
// code other CPUs may be running, and how they are made to see it.
//
// During a run, arming and disarming a probe (register, unregister,
// enable, disable, the kprobes/enabled knob, from --probe-script or the
// debugger) is work a *caller CPU* does over simulated time while the
// others keep running. The engine queues one job per probe point whose
// text must change; the caller takes the jobs at its next interrupt (a
// self-IPI: the work runs where interrupts are allowed, never inside a
// critical section with them off) and executes the protocol:
//
//   text_poke      (x86, Linux since 2.6.x; the default): text_mutex, write
//                  the int3 byte or the original byte, then text_poke_sync:
//                  an IPI to every other CPU whose handler runs sync_core(),
//                  and the caller waits until all have run it.
//   text_poke_smp  (x86, 2010-era, for comparison): stop_machine; the first
//                  CPU to arrive in the callback patches, the others wait
//                  for it; all serialise.
//   patch_text     (RV64, Linux): stop_machine; the last hart to arrive
//                  patches, the others wait for it; every hart runs fence.i.
//   instant        the text changes at once for every CPU and nothing is
//                  executed (ksim before the protocols; what a probe set up
//                  before the run uses, when no CPU has started).
//
// stop_machine is Linux's multi_cpu_stop: a stopper on every CPU (woken by
// an IPI, so a CPU with interrupts off delays everyone), states PREPARE ->
// DISABLE_IRQ -> RUN -> EXIT, each acknowledged by every CPU, the last
// acknowledgement moving all to the next state. Every step is an
// EventKind::probe event (docs/PATCHING.md lists them).
//
// Exactness. Shared protocol state (acknowledgements, the stop_machine
// state, "patched") is host data written by one CPU's step and read by
// another's; each write carries the cycle at which it is done, and a
// reader whose clock is earlier does not see it yet. Steps run in the
// global (cycle, CPU) order on every schedule, so runs are identical on
// the reference schedule.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cpu/isa.hpp"
#include "kprobes/arch.hpp"
#include "cpu/trap_hooks.hpp"

namespace ksim {
class Cpu;
}

namespace ksim::kprobes {

class Engine;
struct ProbePoint;

enum class Patching : uint8_t { instant, text_poke, text_poke_smp, patch_text };
const char* patching_name(Patching p);
// Parses a --kprobes-patching value; false if unknown.
bool parse_patching(const std::string& s, Patching& out);
// The ISA's Linux protocol: text_poke (x86), patch_text (RV64).
Patching default_patching(Isa isa);
// Whether the protocol exists for the ISA (instant: both).
bool patching_valid(Patching p, Isa isa);

// multi_cpu_stop's states (kernel/stop_machine.c).
enum class StopState : uint8_t { none, prepare, disable_irq, run, exit };
const char* stop_state_name(StopState s);

class Patcher {
 public:
  explicit Patcher(Engine& e);

  void set_mode(Patching p) { mode_ = p; }
  // Broken on purpose, for `ksim race stale-code-x86` / `rv64-no-fence-i`:
  // text_poke sends no sync IPIs; under stop_machine only the CPU that
  // patched serialises (no fence.i on the other harts).
  void set_omit_sync(bool on) { omit_sync_ = on; }
  Patching mode() const { return mode_; }

  // Probe operations bracket their arming work: between begin_op() and
  // end_op() (and outside instant mode) a point whose text must change is
  // queued for `caller` instead of patched at once; end_op() sends the
  // caller its self-IPI.
  void begin_op(int caller);
  void end_op();
  bool protocol() const { return mode_ != Patching::instant && available_; }
  // A caller not online yet (an operation before the kernel is up, or made
  // by hand before the run) cannot run a protocol; nor does any other CPU
  // run kernel text yet: its operation patches at once.
  bool deferring() const { return op_depth_ > 0 && protocol() && op_online_; }
  // A protocol job is being executed (its effects are the run's, not an
  // operation's made at once).
  bool deferring_now() const { return in_job_ || deferring(); }
  // Online, as the kernel's cpu_online_mask (its per-CPU area is set up).
  bool online(int k) const;
  // The guest has what the protocols need (GuestLayout::can_patch_by_protocol);
  // without it, patching is instant.
  void set_available(bool a) { available_ = a; }
  void queue(const std::shared_ptr<ProbePoint>& p);
  // A generic patch of live code: `bytes` over the instruction(s) at
  // `addr`. With the protocol, as the mode patches: text_poke (x86)
  // uses text_poke_bp: int3 on the first byte, sync, the tail, sync, the
  // first byte, sync; a CPU that reaches the int3 meanwhile executes
  // `emulate` (the new instruction) instead. text_poke_smp and patch_text
  // write all the bytes under stop_machine (RV64's patch_text of an
  // optprobe's auipc+jalr). Without it: one byte per step, no
  // synchronisation (torn writes).
  // `done` runs when the last byte is in (with the caller CPU; null when
  // flush() finishes the job at once).
  void queue_bytes(uint64_t addr, std::vector<uint8_t> bytes, bool int3_protocol,
                   std::shared_ptr<const ProbeInsn> emulate, std::function<void(Cpu*)> done = {});
  // text_poke_bp's int3 handler: true if the trap is its int3 (handled).
  bool poke_handler(Cpu& cpu, const TrapInfo& t);
  // Finishes every queued job at once (the run is over): the text ends as
  // the probes' states say, and no CPU is left mid-protocol. `charge`: each
  // write costs its CPU a text poke, as instant patching does.
  void flush(bool charge = false);
  size_t queued() const { return jobs_.size(); }
  // Whether a CPU is parked in protocol work (HostAgent::pending).
  bool pending(int cpu) const { return cpus_[static_cast<size_t>(cpu)].doing != Doing::none; }
  // What the CPU does in the protocol, for a person ("" when nothing):
  // "patching job", "stop_machine: MULTI_STOP_RUN".
  std::string doing(int cpu) const;
  // The CPU's next protocol step.
  void resume(Cpu& cpu);
  // The guest's IPI handler reached ksim_kprobes_ipi (a request carried
  // IPI_KPROBES): the work this CPU was asked for starts here.
  HookResult on_ipi_work(Cpu& cpu);

  // Views (tests, the debugger).
  struct Totals {
    uint64_t jobs = 0, ipis = 0, syncs = 0, stop_machines = 0;
    uint64_t last_job_cycles = 0;  // the last job's duration on its caller
    uint64_t last_stop_cycles = 0; // the last stop_machine's, from setup to the caller's EXIT
  };
  const Totals& totals() const { return totals_; }
  StopState stop_state() const { return ms_.state; }
  // stop_machine as a person follows it (the debugger): the shared state,
  // the acknowledgements it still waits for (thread_ack), how many
  // stoppers take part, and the state each CPU last acted on (none: it
  // has not entered its stopper).
  struct StopView {
    StopState state = StopState::none;
    int thread_ack = 0, num = 0;
  };
  StopView stop_view() const { return {ms_.state, ms_.thread_ack, ms_.num}; }
  StopState stop_seen(int cpu) const { return cpus_[static_cast<size_t>(cpu)].seen; }

 private:
  enum class Doing : uint8_t { none, job, sync, stopper };
  // What the caller's job does next.
  enum class Step : uint8_t { start, poke, sync_wait, stop_setup, stop, done, bytes };
  struct PerCpu {
    bool want_job = false, want_sync = false, want_stop = false;  // IPIs sent, not yet taken
    Doing doing = Doing::none;
    StopState seen = StopState::none;  // the last stop_machine state this CPU acted on
    bool fn_arrived = false;           // in the RUN state's callback
    bool fn_done = false;
  };
  enum class JobKind : uint8_t { point, bp, bytewise, stopped };
  struct Job {
    std::shared_ptr<ProbePoint> point;  // JobKind::point
    int cpu = 0;
    uint64_t addr = 0;
    JobKind kind = JobKind::point;
    std::vector<uint8_t> bytes;                 // bp, bytewise: the new bytes
    std::shared_ptr<const ProbeInsn> emulate;   // bp: the new instruction
    std::function<void(Cpu*)> done;             // bp, bytewise: after the last write
    int phase = 0;                              // bp: the write (0..2); bytewise: the byte
  };
  // Shared stop_machine data (struct multi_stop_data plus the callback's).
  struct StopData {
    StopState state = StopState::none;
    uint64_t state_at = 0;  // when the last state change is visible
    int thread_ack = 0;
    int num = 0;
    int arrived = 0;         // patch_text_cb's cpu_count / text_poke_smp's first
    bool patched = false;
    uint64_t patched_at = 0;
    int exited = 0;          // stoppers that saw EXIT (cpu_stop_signal_done)
    uint64_t exited_at = 0;
  };

  bool step_job(Cpu& cpu);      // false: the CPU leaves its protocol work
  bool step_stopper(Cpu& cpu);  // one multi_cpu_stop iteration; false at EXIT
  bool stopper_run(Cpu& cpu, PerCpu& pc);  // the RUN state's callback; true when done
  void ack_state(Cpu& cpu);
  void write_text(Cpu& cpu);    // the job's poke
  void write_bytes(Cpu& cpu, uint64_t addr, const uint8_t* b, size_t n);
  void sync_self(Cpu& cpu);     // sync_core (x86) / fence.i (RV64) on this CPU
  void send_ipi(Cpu& from, int to);
  void finish_job(Cpu& cpu);
  void emit(const Cpu& cpu, const char* what, uint64_t b = 0, uint64_t c = 0);

  Engine& e_;
  Patching mode_ = Patching::instant;
  bool available_ = false;
  bool omit_sync_ = false;
  bool in_job_ = false;
  int op_depth_ = 0;
  int op_caller_ = 0;
  bool op_online_ = false;
  bool op_queued_ = false;
  std::deque<Job> jobs_;
  std::vector<PerCpu> cpus_;
  // The job in progress (jobs_.front()).
  Step step_ = Step::start;
  uint64_t job_start_ = 0;
  uint64_t stop_start_ = 0;
  int acks_needed_ = 0, acks_ = 0;
  uint64_t acks_at_ = 0;  // when the last acknowledgement is visible
  StopData ms_;
  Totals totals_;
  // text_poke_bp in progress: where its int3 is, and what to emulate there.
  uint64_t poke_addr_ = 0;
  std::shared_ptr<const ProbeInsn> poke_insn_;
};

}  // namespace ksim::kprobes
