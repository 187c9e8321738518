// The kprobes engine: Linux's kernel/kprobes.c and the arch trap handlers,
// running on the host against simulated memory and simulated traps.
//
// How a hit runs. The engine sits at the head of the machine's trap hook
// chain. A CPU that executes a probe's breakpoint traps; the engine masks
// its interrupts and *parks* it: the CPU is charged the cycles of the work
// just done and leaves its run loop with the next phase pending (the
// engine is the machine's HostAgent). When the scheduler gives that CPU its
// turn again it calls the engine back instead of running instructions, and
// the engine does the next phase. So a hit is a sequence of phases
//   trap -> lookup + pre handlers -> step (the guest runs the slot) or
//   emulate -> post handlers -> resume
// each costing the CPU cycles (cpu/timing.hpp, kprobes section), with the
// other CPUs running in between: a CPU can find the probe gone at lookup,
// be mid-hit while another CPU removes the probe, and so on. Each state
// change is an EventKind::probe event.
//
// Registration, removal, enable and disable are host calls made while the
// machine is paused; they take effect at once (atomically for the guest)
// and their cost is charged to the CPU set with set_caller_cpu().
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "kprobes/arch.hpp"
#include "kprobes/ctlblk.hpp"
#include "kprobes/kprobe.hpp"
#include "kprobes/patching.hpp"
#include "kprobes/rcu.hpp"
#include "kprobes/rethook.hpp"
#include "kprobes/slots.hpp"
#include "sim/machine.hpp"

namespace ksim::kprobes {

// One registered probe (kprobe, kretprobe or jprobe) at a probe point.
struct ProbeRec {
  enum class Type : uint8_t { k, r, j } type = Type::k;
  Kprobe* user = nullptr;       // null once unregistered
  Kretprobe* rp = nullptr;      // Type::r
  Jprobe* jp = nullptr;         // Type::j
  uint64_t id = 0;              // registration number (events, listing)
  bool disabled = false;
  std::shared_ptr<ProbePoint> point;
  // Type::r: the free kretprobe instances (maxactive of them at first).
  std::vector<std::unique_ptr<KretprobeInstance>> pool;
  bool internal = false;  // the engine's own probe (not listed, not counted)
};

// Everything registered at one address: one breakpoint, one slot, the
// probes in registration order (Linux's aggregate kprobe when more than one).
struct ProbePoint {
  uint64_t addr = 0;
  ProbeInsn insn;
  uint64_t slot = 0;   // 0 for emulated instructions
  bool armed = false;     // the breakpoint is in memory
  bool removed = false;   // unregistered (in-flight hits may still hold it)
  // Counts the removals of the point's last probe: a grace period's
  // callback acts only for the removal it was started for (a point revived
  // by a new registration and removed again has a later one).
  uint64_t removals = 0;
  bool queued = false;    // a patching job will bring its text to what is wanted
  bool retired = false;   // out of the table, its slot given back
  uint64_t boosted_hits = 0;  // hits that ran the slot with no trap to end them
  // Jump optimization (x86, kprobes/optprobe.cpp): queued (detour buffer
  // ready, the int3 still in the text), optimizing (text_poke_bp of the
  // jump under way), optimized (the jump is in), unoptimizing (the int3
  // and the original bytes going back).
  enum class Opt : uint8_t { none, queued, optimizing, optimized, unoptimizing };
  Opt opt = Opt::none;
  OptRegion region;
  uint64_t detour = 0;       // its detour buffer (0: none)
  uint64_t detour_copy = 0;  // where the region's copy starts in it
  uint8_t jump_len = 0;      // the jump's length (set when it is written)
  bool cannot_optimize = false;  // can_optimize refused it (the original text does not change)
  // Counts the times it was queued for optimization: the optimizer's grace
  // period acts only for the queueing it was started for (a point
  // unoptimized and queued again has a later one).
  uint64_t opt_gen = 0;
  std::vector<std::shared_ptr<ProbeRec>> probes;
  bool all_disabled() const;
};

// Addresses the engine needs from the guest image (by symbol).
struct GuestLayout {
  uint64_t slots_begin = 0, slots_end = 0;  // __kprobe_slots_start / _end
  uint64_t trampoline = 0;                  // kretprobe_trampoline
  uint64_t rethook = 0;                     // rethook_trampoline (trap-free), 0 if none
  uint64_t jprobe_return = 0, jprobe_return_end = 0;
  std::vector<std::pair<uint64_t, uint64_t>> blacklist;  // [begin, end) ranges
  // ksim_kernel_abi (optional): for $comm and task identity.
  uint64_t percpu_areas = 0, percpu_size = 0, off_curr = 0, off_name = 0, off_tid = 0, name_len = 0;
  bool has_abi = false;
  // Text patching protocols (kprobes/patching.hpp): the per-CPU IPI request
  // word (ksim_kernel_abi) and the guest's ksim_kprobes_ipi landing point.
  uint64_t off_ipi_pending = 0, ipi_work = 0;
  // ksim_kernel_preempt: a task may be preempted inside a boosted slot.
  bool preemptible = false;
  bool can_patch_by_protocol() const { return has_abi && off_ipi_pending && ipi_work; }
};

struct EngineStats {
  uint64_t hits = 0, misses = 0, strays = 0, reentries = 0, returns = 0;
  // Traps at a point with no enabled probe (its disarming under way).
  uint64_t unhandled = 0;
  // --kprobes-locking spinlock: acquisitions of kprobe_lock, how many found
  // it held, and the cycles CPUs spent spinning on it.
  uint64_t lock_acquires = 0, lock_contended = 0, lock_spin_cycles = 0;
  // A grace period that ended while a CPU that was inside the engine (a
  // read-side critical section: from its trap's lookup to its return to
  // guest code) when it began was still in there. Always 0 unless the
  // grace-period machinery is wrong; the engine's own bookkeeping checks
  // the grace periods made of the guest's quiescent states.
  uint64_t rcu_violations = 0;
  // Kretprobe instances of unregistered kretprobes freed by call_rcu, and
  // those still waiting for their grace period.
  uint64_t instances_freed = 0, instances_pending = 0;
  // The kprobe-booster: hits that ran their slot with no second trap, and
  // boosted slots waiting for the end of the run to be reused (freed with
  // no grace period to cover a CPU still in them).
  uint64_t boosted = 0, boost_quarantined = 0;
  // Jump optimization: hits through an installed jump (the detour's call
  // of the handlers), hits of a queued point sent from the int3 to the
  // detour's copy of the region, and points optimized and unoptimized.
  uint64_t optimized_hits = 0, detour_hits = 0, optimized = 0, unoptimized = 0;
};

// How probe hits on different CPUs synchronise (docs/KPROBES.md, "Locking").
// What the jump optimizer waits for before it writes a jump (Linux:
// synchronize_rcu_tasks). The others are broken on purpose, for `ksim race
// dcr-interrupted` (none) and `dcr-preempted` (rcu_sched) only.
enum class OptimizerWait : uint8_t { rcu_tasks, rcu_sched, none };

enum class Locking : uint8_t {
  rcu,       // per-CPU state (CtlBlk) and a lock-free lookup: hits run in parallel (Linux since 2.6.13)
  spinlock,  // one global kprobe_lock around every hit's handler path (Linux 2.6.9, the paper's baseline)
};

class Engine final : public HostAgent {
 public:
  explicit Engine(Machine& m, StepMode mode = StepMode::modern);
  ~Engine();  // disarms everything: the guest text is as it was
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // --- Linux's API (negative Errno on failure; last_error() says why) -----
  int register_kprobe(Kprobe& kp);
  void unregister_kprobe(Kprobe& kp);
  int register_kprobes(std::span<Kprobe* const> kps);  // all or none
  void unregister_kprobes(std::span<Kprobe* const> kps);
  int register_kretprobe(Kretprobe& rp);
  void unregister_kretprobe(Kretprobe& rp);
  int register_kretprobes(std::span<Kretprobe* const> rps);
  void unregister_kretprobes(std::span<Kretprobe* const> rps);
  int register_jprobe(Jprobe& jp);
  void unregister_jprobe(Jprobe& jp);
  int register_jprobes(std::span<Jprobe* const> jps);
  void unregister_jprobes(std::span<Jprobe* const> jps);
  int disable_kprobe(Kprobe& kp);
  int enable_kprobe(Kprobe& kp);
  // debugfs kprobes/enabled: disarm or re-arm every probe; each probe's own
  // disabled state is untouched.
  void set_enabled(bool on);
  bool enabled() const { return enabled_; }
  const std::string& last_error() const { return error_; }
  // Whether register_kprobe (register_kretprobe with is_return) would
  // accept this location now: every check registration makes except the
  // slot allocation, with no side effect (probe scripts are checked before
  // the run). 0, or a negative Errno with last_error().
  int check_location(Kprobe& kp, bool is_return);

  // --- Views ---------------------------------------------------------------
  // debugfs kprobes/list: "<addr>  k|r|j  sym+off  [DISABLED] [OPTIMIZED] [GONE]"
  std::string list() const;
  const CtlBlk& ctlblk(int cpu) const { return cpus_[cpu]; }
  const std::vector<CtlBlk>& ctlblks() const { return cpus_; }
  const GuestLayout& layout() const { return layout_; }
  const Arch& arch() const { return *arch_; }
  StepMode mode() const { return mode_; }
  const EngineStats& stats() const { return stats_; }
  const SlotAllocator& slots() const { return slots_; }
  size_t points() const { return table_.size(); }
  // The probe point armed at `addr`, or null.
  const ProbePoint* point_at(uint64_t addr) const;
  // Guest text as it would be without any probe (breakpoints undone).
  bool read_original(uint64_t addr, uint8_t* out, size_t len) const;
  // Frees the slots whose grace period is over and fills them with
  // breakpoints again, as the guest image had them; returns how many.
  size_t reclaim_slots();
  size_t reclaim_slots(const Accessor& who);
  std::vector<uint8_t> breakpoint_cell(size_t size = 0) const;  // 0: a slot's size
  // Slots freed by a grace period: refilled with breakpoints and given back
  // to the allocator at the next registration (or reclaim), a point every
  // schedule reaches in the same order.
  void refill_slots(const Accessor& who);
  std::vector<uint64_t> unfilled_, unfilled_detours_, quarantined_detours_;
  // The host's writes to guest memory are made as the caller CPU, at its clock.
  Accessor as_caller() const;
  // Live kretprobe instances (all tasks).
  size_t live_instances() const;

  // The current task of a CPU from the guest's ksim_kernel_abi table:
  // its name ($comm) and tid; ("cpu<N>", 0) without the table.
  struct Task {
    std::string comm;
    uint64_t tid = 0;
    uint64_t key = 0;  // identity for kretprobe instances
  };
  Task current_task(int cpu) const;
  // Just the identity (one guest read; the hit path's version).
  uint64_t current_task_key(int cpu) const;
  // The key of a CPU with no current task (or no ABI table).
  static uint64_t cpu_task_key(int cpu) { return 0x8000'0000'0000'0000ull | static_cast<uint64_t>(cpu); }

  // Whose cycles registration work costs (the CPU "calling" the API).
  void set_caller_cpu(int cpu) { caller_cpu_ = cpu >= 0 && cpu < m_.cpu_count() ? cpu : 0; }

  // Broken on purpose, for `ksim race sail-past` only: x86 classic mode
  // steps the probed instruction where it is (original bytes back, TF
  // step, breakpoint again) instead of out of line, as the first
  // uniprocessor kprobes did. Returns false where it cannot (not x86
  // classic).
  bool set_step_in_place(bool on) {
    if (on && (arch_->isa() != Isa::x86_64 || mode_ != StepMode::classic)) return false;
    step_in_place_ = on;
    return true;
  }

  // Broken on purpose, for `ksim race slot-reuse` only: a freed slot is
  // reusable at once, without waiting until every CPU that was inside the
  // engine has left it.
  void set_slot_grace(bool on) { slot_grace_ = on; }
  // Broken on purpose, for `ksim race stray-trap` only: a breakpoint trap
  // whose probe is gone (and whose breakpoint too) is handed to the guest
  // as not a kprobe's, instead of re-executing the original instruction.
  void set_stray_as_foreign(bool on) { stray_as_foreign_ = on; }

  // The kprobe-booster (x86; docs/KPROBES_X86.md, "Boosting"): on by
  // default, as in Linux. boosting() says whether hits are boosted now:
  // on a preemptible kernel only when boosted slots can wait for an
  // RCU-tasks grace period.
  // Turning it off moves modern mode's boosted points to stepping slots
  // (their slots end with a jump, not the int3 a step needs).
  void set_boost(bool on);
  // Broken on purpose, for `ksim race boost-preempted` only: a boosted slot
  // on a preemptible kernel is freed after an RCU-sched grace period, with
  // no RCU-tasks grace period after it.
  void set_boost_tasks_grace(bool on) { boost_tasks_grace_ = on; }
  // Broken on purpose for `ksim race rv64-split-jump`: RV64's jump comes
  // out in one write instead of two around an RCU-tasks grace period.
  void set_unoptimize_in_two(bool on) { unoptimize_in_two_ = on; }
  // Broken on purpose, for `ksim race kretprobe-maxactive` only: a
  // kretprobe entry that finds its pool empty counts nothing.
  void set_count_kretprobe_misses(bool on) { count_kretprobe_misses_ = on; }
  void set_optimizer_wait(OptimizerWait w) { optimizer_wait_ = w; }
  bool boost() const { return boost_; }
  bool boosting() const;
  // Jump optimization (x86; debug.kprobes-optimization, docs/KPROBES_X86.md):
  // on by default, as in Linux. Turning it
  // off unoptimizes every point, on again optimizes every point that can be.
  void set_optimization(bool on);
  // A registered probe's handlers changed (Kprobe::moves_pc): the point is
  // unoptimized or optimized as they now allow.
  void reconsider(Kprobe& kp) {
    if (kp.rec) update_arming(*kp.rec->point);
  }
  bool optimization() const { return optimize_; }
  // The optimizer port's load by `cpu` from a detour buffer: runs the
  // optimized probe's handlers (false: the run stops, a load from outside
  // any detour buffer).
  bool optprobe_hit(int cpu, uint64_t& value);
  // How a kretprobed function's return reaches the handlers: the guest's
  // trap-free `rethook_trampoline` (default where the image has it: the
  // paper's kretprobe-booster, Linux's rethook) or the breakpoint at
  // `kretprobe_trampoline` (the classic way, kept for comparison). Returns
  // false if the image has no rethook trampoline. Instances already planted
  // return through the trampoline they were given.
  bool set_rethook(bool on) {
    if (on && !layout_.rethook) return false;
    rethook_ = on;
    return true;
  }
  bool rethook() const { return rethook_; }
  // The rethook port's load by `cpu` (kprobes/rethook.hpp): runs the
  // returning frame's handlers; the real return address, or false (the run
  // stops: a kretprobe BUG).
  bool rethook_return(int cpu, uint64_t& real_return);
  // Set before the run (the lock is part of the hit path's state).
  void set_locking(Locking l) { locking_ = l; }
  Locking locking() const { return locking_; }
  // Locking::spinlock: the CPU holding kprobe_lock, or -1.
  int lock_owner() const { return lock_owner_; }

  Machine& machine() { return m_; }

  // How arming and disarming reach the text during a run (kprobes/
  // patching.hpp): an ISA's protocol, or instant. Probe operations
  // (ProbeOpQueue, the debugger) bracket their calls with begin_op/end_op;
  // calls outside an operation (before the run, tests) patch at once.
  void set_patching(Patching p) { patcher_->set_mode(p); }
  // Broken on purpose, for `ksim race stale-code-x86` / `rv64-no-fence-i`
  // only (Patcher::set_omit_sync).
  void set_omit_sync(bool on) { patcher_->set_omit_sync(on); }
  Patching patching() const { return patcher_->mode(); }
  void begin_op(int caller) {
    set_caller_cpu(caller);
    patcher_->begin_op(caller_cpu_);
  }
  void end_op() { patcher_->end_op(); }
  // Whether `cpu` can make a probe operation that patches by protocol (it
  // is online: kprobes/patching.hpp); always true for instant patching.
  bool caller_online(int cpu) const { return !patcher_->protocol() || patcher_->online(cpu); }
  // Whether `cpu` is inside a probe hit (from its breakpoint trap until it
  // is back in guest code with no kprobe running): it cannot make a probe
  // operation then, as in Linux register_kprobe and unregister_kprobe run
  // in process context, never inside a hit on the same CPU.
  bool caller_in_hit(int cpu) const {
    const CtlBlk& cb = cpus_[static_cast<size_t>(cpu)];
    return cb.busy || cb.phase != Phase::none;
  }
  // A generic live patch of one x86 instruction (not a probe): `bytes`, of
  // the same length, over the instruction at `addr`. The new instruction
  // must be one text_poke_bp's int3 handler can emulate (a jmp, a call or a
  // nop). Inside a probe operation it is queued for the caller CPU: with
  // `int3_protocol`, text_poke_bp; without it, one byte per step with no
  // synchronisation (the torn write the protocol prevents). 0, or a
  // negative Errno with last_error().
  int text_poke_bp(uint64_t addr, const std::vector<uint8_t>& bytes, bool int3_protocol = true);
  // The run is over: finish queued patching at once (the text ends as the
  // probes' states say).
  void finish_patching() {
    patcher_->flush();
    rcu_->flush();
    release_quarantine();
    refill_slots(as_caller());
  }
  const Patcher& patcher() const { return *patcher_; }
  const Rcu& rcu() const { return *rcu_; }
  Rcu& rcu() { return *rcu_; }

  // HostAgent: a parked CPU's next phase.
  bool pending(int cpu) const override {
    return cpus_[static_cast<size_t>(cpu)].phase != Phase::none || patcher_->pending(cpu);
  }
  void resume(Cpu& cpu) override;

 private:
  friend struct HitPath;
  friend class Patcher;
  friend class Rcu;
  // For the patcher: whether a point's breakpoint should be in memory;
  // writing it (or the original bytes) as `who`; a point's text is final.
  bool wants_breakpoint(const ProbePoint& p) const { return enabled_ && !p.removed && !p.all_disabled(); }
  // The breakpoint stays while a two-instruction jump (RV64) is being taken
  // out: its first instruction is the breakpoint until the second goes.
  bool keeps_breakpoint(const ProbePoint& p) const {
    return wants_breakpoint(p) || p.opt == ProbePoint::Opt::unoptimizing;
  }
  bool arming_blocked(const ProbePoint& p) const;
  // What the patcher writes at a point: its breakpoint if kept, unless it
  // is not in yet and arming is blocked.
  bool breakpoint_goal(const ProbePoint& p) const {
    return keeps_breakpoint(p) && (p.armed || !arming_blocked(p));
  }
  void write_point(ProbePoint& p, bool breakpoint, const Accessor& who);
  void point_patched(ProbePoint& p);
  void retire(ProbePoint& p, bool reclaim_now = true, bool after_gp = false);
  // The CPUs inside the engine now (cpu, busy_seq): the read-side
  // sections a grace period that starts now must wait for.
  std::vector<std::pair<int, uint64_t>> readers() const;
  // After a grace period: counts any of `readers` still in that section.
  void check_readers(const std::vector<std::pair<int, uint64_t>>& readers, uint64_t addr, uint64_t cycle);
  // An instance of an unregistered kretprobe: freed after a grace period.
  void free_instance_rcu(std::unique_ptr<KretprobeInstance> inst, Cpu& cpu);
  HookResult on_trap(Cpu& cpu, const TrapInfo& t);

  // The batch forms: all or none (a failure unregisters the ones already
  // registered, as Linux does), keeping the failure's message.
  template <typename T, typename Reg, typename Unreg>
  int register_batch(std::span<T* const> ps, Reg reg, Unreg unreg) {
    for (size_t i = 0; i < ps.size(); ++i) {
      if (int e = reg(*ps[i]); e < 0) {
        std::string why = error_;
        for (size_t j = 0; j < i; ++j) unreg(*ps[j]);
        error_ = why;
        return e;
      }
    }
    return 0;
  }

  // Registration helpers (engine.cpp).
  int fail(int err, std::string why);
  int resolve(Kprobe& kp, uint64_t& addr, const Symbol*& func);
  int check_safe(uint64_t addr, const Symbol* func);
  int locate(Kprobe& kp, bool is_return, uint64_t& addr, const Symbol*& func);
  int add_probe(Kprobe& kp, std::shared_ptr<ProbeRec> rec);
  void remove_probe(ProbeRec& rec);
  void arm(ProbePoint& p);
  void disarm(ProbePoint& p);
  void update_arming(ProbePoint& p);
  void see_text_now();
  void charge_caller(uint64_t cycles);
  void emit(const Cpu& cpu, uint64_t addr, const char* what, uint64_t b = 0, uint64_t c = 0) {
    if (!m_.events().empty()) emit_event(cpu, addr, what, b, c);
  }
  void emit_event(const Cpu& cpu, uint64_t addr, const char* what, uint64_t b, uint64_t c);
  // An event stamped with a given (cycle, CPU) rather than the CPU's clock.
  void emit_at(uint64_t cycle, int cpu, uint64_t addr, const char* what, uint64_t b = 0, uint64_t c = 0) {
    if (!m_.events().empty()) m_.events().emit(Event{cycle, cpu, EventKind::probe, addr, b, c, what});
  }
  GuestLayout find_layout() const;

  // Hit path (hit.cpp).
  HookResult on_breakpoint(Cpu& cpu, CtlBlk& cb, const TrapInfo& t);
  HookResult on_step_end(Cpu& cpu, CtlBlk& cb);
  HookResult on_fault(Cpu& cpu, CtlBlk& cb, const TrapInfo& t);
  void park(Cpu& cpu, CtlBlk& cb, Phase next, uint64_t cycles);
  void enter(CtlBlk& cb);
  void leave(Cpu& cpu, CtlBlk& cb, uint64_t pc);
  void end_busy(CtlBlk& cb);
  bool take_kprobe_lock(Cpu& cpu, CtlBlk& cb);
  void release_kprobe_lock(Cpu& cpu, CtlBlk& cb);
  void do_lookup(Cpu& cpu, CtlBlk& cb);
  HookResult do_pre(Cpu& cpu, CtlBlk& cb);
  void start_step(Cpu& cpu, CtlBlk& cb, ProbePoint& p);
  // The booster: whether this hit of `p` runs its slot with no step trap,
  // and doing so; the jump back appended after a first classic step; a
  // boosted point that gets a post handler moves to a stepping slot.
  bool boost_now(const ProbePoint& p) const;
  void step_or_boost(Cpu& cpu, CtlBlk& cb, ProbePoint& p);
  void prepare_boost(Cpu& cpu, ProbePoint& p);
  int unboost(ProbePoint& p);
  // A boosted slot some CPU has entered, no longer used: after RCU-sched
  // (and RCU-tasks on a preemptible kernel) grace periods, or, in a guest
  // with no RCU, held until the run ends.
  void free_boosted_slot(uint64_t slot, uint64_t addr);
  // From an RCU-sched callback: `fn` after an RCU-tasks grace period too
  // when `tasks` (and the guest has RCU-tasks), else at once.
  void then_tasks_gp(Cpu* at, uint64_t cycle, uint64_t addr, bool tasks, Rcu::Callback fn);
  // A task may be preempted inside a boosted slot (ksim race
  // boost-preempted turns the wait off on purpose).
  bool boosted_slots_need_tasks() const { return layout_.preemptible && boost_tasks_grace_; }
  void write_slot(uint64_t slot, const ProbeInsn& insn);
  void release_quarantine();
  std::vector<uint64_t> quarantine_;
  // Jump optimization (optprobe.cpp).
  void try_optimize(ProbePoint& p);
  void install_jump(const std::shared_ptr<ProbePoint>& p, Cpu* at);
  std::shared_ptr<ProbeInsn> jump_to_detour(const ProbePoint& p, std::vector<uint8_t>& bytes) const;
  void unoptimize(ProbePoint& p);
  void unoptimize_in_two(ProbePoint& p, const std::shared_ptr<ProbePoint>& keep, std::function<void(Cpu*)> done);
  void free_detour(ProbePoint& p);
  bool can_stay_optimized(const ProbePoint& p) const;
  // Unoptimizes any optimized point whose region holds `addr` (a probe
  // registered inside it).
  void unoptimize_around(uint64_t addr);
  bool optimize_ = true;  // on by default, as Linux (docs/KPROBES_X86.md)
  // Detour buffers: 64-byte cells in the last 16 KiB of the slot area (the
  // handler call, a region of up to 19 bytes, the jump back).
  static constexpr unsigned kDetourCell = 64;
  static constexpr uint64_t kDetourArea = 16 * 1024;
  SlotAllocator opt_slots_;
  // The point of each detour cell (by cell index from detour_base_: the
  // optimizer port's lookup, once per optimized hit).
  uint64_t detour_base_ = 0;
  std::vector<std::shared_ptr<ProbePoint>> by_detour_;
  // The entry of the cell holding `addr` (any byte of it), or null.
  std::shared_ptr<ProbePoint>* detour_entry(uint64_t addr) {
    const uint64_t off = addr - detour_base_;
    return off / kDetourCell < by_detour_.size() ? &by_detour_[off / kDetourCell] : nullptr;
  }
  HookResult do_post(Cpu& cpu, CtlBlk& cb);
  void reenter(Cpu& cpu, CtlBlk& cb, const std::shared_ptr<ProbePoint>& p);
  HookResult stop(const std::string& why);

  // Kretprobes and jprobes (retprobe.cpp, jprobe.cpp).
  void update_flush_probe();
  void flush_task(uint64_t key, Cpu& cpu);
  int kretprobe_entry(Cpu& cpu, ProbeRec& rec);
  HookResult do_return(Cpu& cpu, CtlBlk& cb);
  // The returning frame's instances: runs their handlers, gives the real
  // return address and how many handlers ran; false with `why` if the
  // task's instances do not match the frame (a kretprobe BUG).
  bool run_return_handlers(Cpu& cpu, uint64_t& ret, uint64_t& handlers, std::string& why);
  uint64_t return_trampoline() const { return rethook_ ? layout_.rethook : layout_.trampoline; }
  bool is_trampoline(uint64_t a) const { return a == layout_.trampoline || (layout_.rethook && a == layout_.rethook); }
  int jprobe_entry(Cpu& cpu, CtlBlk& cb, ProbeRec& rec);
  HookResult do_jprobe_return(Cpu& cpu, CtlBlk& cb);

  Machine& m_;
  Bus& bus_;
  std::unique_ptr<Arch> arch_;
  StepMode mode_;
  GuestLayout layout_;
  std::vector<CtlBlk> cpus_;
  SlotAllocator slots_;
  std::unordered_map<uint64_t, std::shared_ptr<ProbePoint>> table_;  // by address
  // Records removed since the engine was last entered from a CPU: kept
  // alive so the hit path can hold plain pointers across handler calls.
  std::vector<std::shared_ptr<ProbeRec>> graveyard_;
  bool enabled_ = true;
  std::string error_;
  int hook_id_ = 0;
  int caller_cpu_ = 0;
  uint64_t next_id_ = 1;
  // Locking::spinlock: kprobe_lock's holder (-1: free) and the cycle from
  // which a free lock can be seen free (its release, on the releasing CPU's
  // clock, which may be ahead of the CPU that looks).
  Locking locking_ = Locking::rcu;
  bool step_in_place_ = false;
  bool slot_grace_ = true;
  bool stray_as_foreign_ = false;
  bool boost_ = true;
  bool boost_tasks_grace_ = true;
  bool unoptimize_in_two_ = true;
  bool count_kretprobe_misses_ = true;
  OptimizerWait optimizer_wait_ = OptimizerWait::rcu_tasks;
  // The optimizer's delayed work (Linux's optimizing_work): the points
  // queued for it since it last ran (each with its queueing, opt_gen), and
  // when and on which CPU it runs: that CPU's first interrupt at or after
  // `optimizer_due_` (timing::kOptimizeDelayCycles after the first).
  std::vector<std::pair<std::shared_ptr<ProbePoint>, uint64_t>> optimizer_batch_;
  bool optimizer_pending_ = false;
  int optimizer_cpu_ = 0;
  uint64_t optimizer_due_ = 0;
  void kick_optimizer(const std::shared_ptr<ProbePoint>& p, uint64_t gen);
  void run_optimizer(Cpu& cpu);
  bool rethook_ = false;
  std::unique_ptr<RethookPort> rethook_port_;
  uint64_t step_base(const ProbePoint& p) const { return step_in_place_ ? p.addr : p.slot; }
  int lock_owner_ = -1;
  uint64_t lock_free_at_ = 0;
  EngineStats stats_;
  // Kretprobe instances in flight, per task, most recent last (only looked
  // up by key, never iterated in an order that matters).
  std::unordered_map<uint64_t, std::vector<std::unique_ptr<KretprobeInstance>>> tasks_;
  // While kretprobes are registered: the engine's probe on the guest's
  // thread_exit(), which recycles the instances of a task that exits
  // inside probed functions (Linux's kprobe_flush_task()).
  int kretprobes_ = 0;
  std::unique_ptr<Kprobe> flush_probe_;
  std::unique_ptr<Patcher> patcher_;
  std::unique_ptr<Rcu> rcu_;
};

}  // namespace ksim::kprobes
