// One RV64IMAC hart: architectural state, the interpreter loop and the
// memory-access fast paths the instruction semantics use.
#pragma once
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <functional>
#include <utility>

#include "cpu/code_view.hpp"
#include "cpu/cpu.hpp"
#include "cpu/isa.hpp"
#include "cpu/perturb.hpp"
#include "cpu/rv64/clint.hpp"
#include "cpu/rv64/csr_numbers.hpp"
#include "cpu/rv64/decode_cache.hpp"
#include "cpu/rv64/insn.hpp"
#include "cpu/rv64/reservations.hpp"
#include "cpu/slice.hpp"
#include "cpu/trap_hooks.hpp"
#include "mem/bus.hpp"
#include "mem/cache/memory_system.hpp"
#include "mem/ownership.hpp"

namespace ksim::rv64 {

// Architectural state. Public so the instruction semantics read like the
// manual (h.s.x[rs1] + h.s.x[rs2]).
struct State {
  uint64_t x[33] = {};  // x[32] is the sink writes to x0 go to; x[0] stays 0
  uint64_t pc = 0;
  Priv priv = Priv::M;
  uint64_t cycle = 0;    // this hart's clock: the scheduler orders harts by it
  uint64_t instret = 0;  // instructions retired
  // Machine CSRs with storage (the rest are computed or read-only).
  uint64_t mstatus = kMstatusUXL64;
  uint64_t mie = 0, mtvec = 0, mscratch = 0, mepc = 0, mcause = 0, mtval = 0;
  uint64_t mcounteren = 0;
  uint64_t mcycle_base = 0, minstret_base = 0;  // mcycle = cycle - base
};

// What ended a run() call early, besides reaching `until`.
enum class StopReason { none, requested, trap_loop, hook };

// Hart state that is not architectural but must be saved to reproduce a run
// exactly (checkpoints): idling, seeded stalls, trap-loop detection.
struct Control {
  bool idle = false;
  uint64_t next_stall = 0;    // cycle of the next seeded memory stall
  uint64_t stall_draws = 0;   // generator index for stalls
  uint64_t traps = 0;         // exceptions and interrupts taken (or hooked)
  uint64_t instret_at_last_trap = ~uint64_t{0};
  int32_t nested_traps = 0;
  // Timing model v2: loads and stores that hit this hart's L1 (counted
  // here, not in the MemorySystem, so that a put-back takes back the hits
  // of the work it undoes).
  uint64_t l1_hits = 0;
  // Timing model v2's instruction fetch: the line the hart fetches from
  // (kNoLine after a trap, a fence.i, a restore: the next fetch looks
  // again), and the fetches of a new line that hit its L1I.
  uint64_t fetch_line = ~uint64_t{0};
  uint64_t l1i_hits = 0;
};

class Hart;
// The page-end guard entry's semantics (exec_system.cpp): no instruction.
void exec_page_end(Hart&, const Insn&);

class Hart final : public Cpu {
 public:
  Hart(int id, Bus& bus, Clint& clint, DecodeCache& cache, Reservations& reservations,
       const TrapHookChain* hooks, const Perturbation& perturb, PageOwners& owners, CodeViews& views);

  // --- Cpu interface -------------------------------------------------------
  Isa isa() const override { return Isa::rv64; }
  int id() const override { return id_; }
  uint64_t pc() const override { return s.pc; }
  // PCs are 2-byte aligned (IALIGN = 16 with the C extension).
  void set_pc(uint64_t pc) override { s.pc = pc & ~uint64_t{1}; }
  int gpr_count() const override { return 32; }
  uint64_t gpr(int i) const override { return s.x[i]; }
  void set_gpr(int i, uint64_t v) override { if (i > 0 && i < 32) s.x[i] = v; }
  std::string gpr_name(int i) const override;
  uint64_t cycle() const override { return s.cycle; }
  void add_cycles(uint64_t n) override { s.cycle += n; }
  uint64_t instret() const override { return s.instret; }
  uint64_t l1_hits() const override { return ctl_.l1_hits; }
  uint64_t l1i_hits() const override { return ctl_.l1i_hits; }
  void run(uint64_t until) override;
  // Runs at most `steps` steps (an instruction executed, or a trap taken),
  // one at a time on the precise path; returns the steps done.
  uint64_t step(uint64_t until, uint64_t steps) override;
  uint64_t steps() const override { return s.instret + ctl_.traps; }
  bool idle() const override { return ctl_.idle; }
  uint64_t wake_cycle() const override;
  void advance_idle(uint64_t to_cycle) override;
  void interrupts_changed() override { end_slice(); }
  void request_stop() override {
    stop_requested_ = true;
    end_slice();
  }
  // fence.i (exec_fence_i) is the one thing that synchronises a hart's
  // fetch with memory: traps do not (docs/CODE_MODEL.md).
  void serialize_code() override;
  void see_code_now() override;
  size_t fetch_view(uint64_t addr, uint8_t* out, size_t n) const override { return views_.read(id_, addr, out, n); }
  bool code_view_stale() const override { return views_.stale(id_); }
  void raise_breakpoint() override { raise(kBreakpoint, s.pc); }
  void line_evicted(uint64_t line_addr) override {
    if (ctl_.fetch_line == line_addr) ctl_.fetch_line = ~uint64_t{0};
    if (!iline_bytes_) return;
    uint64_t& f = ifilter_[(line_addr >> iline_line_shift_) % kIFilter];
    if (f == line_addr) f = ~uint64_t{0};
  }
  void icache_replaced() override {
    for (uint64_t& f : ifilter_) f = ~uint64_t{0};
  }

  // --- Observation ---------------------------------------------------------
  struct TrapRecord {
    TrapInfo info;
    bool delivered;  // false when a host hook handled it
    uint64_t cycle;  // when the trap was taken (before its entry cost)
  };
  std::function<void(const Hart&, const TrapRecord&)> on_trap;
  // Called before each instruction executes when tracing instructions, with
  // s.pc and s.cycle up to date (the untraced loop never looks at it).
  std::function<void(const Hart&, const Insn&)> on_insn;
  void set_trace_insns(bool on) { trace_insns_ = on; }
  StopReason stop_reason() const { return stop_reason_; }
  // The last run()/step() ended in a trap loop (a guest crash), or because
  // a trap hook returned HookResult::stop.
  bool crashed() const { return stop_reason_ == StopReason::trap_loop; }
  bool hook_stopped() const { return stop_reason_ == StopReason::hook; }
  const TrapInfo& last_trap() const { return last_trap_; }
  // After a trap loop: the exception that started it (what the guest did
  // wrong; the rest are its trap vector faulting) and the one that ended
  // it. (Not in checkpoints: a run restored inside a loop reports the
  // first trap since the restore.)
  const TrapInfo& trap_loop_first() const { return loop_first_; }
  const TrapInfo& trap_loop_last() const { return loop_last_; }
  uint64_t last_trap_cycle() const { return last_trap_cycle_; }

  // --- Used by the instruction semantics ------------------------------------
  State s;
  Control ctl_;

  void retire(const Insn& i) {
    s.pc += i.len;
    s.cycle += i.cycles;
    ++s.instret;
  }
  // Raises a synchronous exception at the current PC (not retired).
  void raise(uint64_t cause, uint64_t tval);
  // Runs an instruction's precise semantics on a copy of its decoded entry:
  // the instruction runs as it was fetched whatever happens to the shared
  // cache meanwhile. Its own memory access may reset the entry: a store
  // into its own bytes, or a put-back of a CPU that ran ahead, whose undo
  // resets the code it takes back (sim/run_ahead.cpp); a reset entry is
  // the decode stub, whose rdw 0 would write x0 and whose len 0 would
  // leave the PC where it was.
  void exec_copy(const Insn& in) {
    step_cycle_ = s.cycle;
    // The fetch (timing v2): a new line may miss; ahead that is a sync
    // point, and the instruction does not run. (A page-end guard entry is
    // no instruction: the one after it fetches, at its own step.)
    if (iline_bytes_ && in.exec != &exec_page_end && !fetch_line_precise()) return;
    const Insn copy = in;
    copy.exec(*this, copy);
  }

  // --- Fast-path helpers (loop state in registers; see loop_fast) ---------
  // Longest chain of fast handlers, in simulated cycles, before control
  // returns to the loop. It bounds the host stack depth should the compiler
  // not turn a handler's final call into a jump (unoptimised or sanitizer
  // builds): every instruction costs at least one cycle, so a chain is at
  // most this many handlers deep. Bounding it in cycles rather than in
  // instructions folds the bound into the stop-cycle test each handler
  // makes anyway (chain_start), so it costs nothing per instruction.
  static constexpr uint64_t kChainCycles = 1024;
  // A chain retires at most one instruction per cycle, and its last
  // dispatch (a fused group of at most three instructions) may pass the limit.
  static_assert(kChainCycles + 64 < (uint64_t{1} << kRetiredBits), "a chain's retired count fits its bits");
  // The chain clock (insn.hpp) a chain of `cycles` cycles starts at: minus
  // its length, so that the addition which takes it to or past zero (the
  // first instruction boundary at or after the chain's stop cycle) carries
  // out and ends the chain (semantics.hpp, advance). A chain of 0 cycles
  // ends after its first dispatch.
  static constexpr ChainClock chain_start(uint64_t cycles) {
    return cycles ? ChainClock{0} - (cycles << kRetiredBits) : ~ChainClock{0};
  }
  const Insn* precise_ip = nullptr;  // set by a handler that needs the precise path
  // The PC of a decoded entry of the page being executed.
  uint64_t pc_of(const Insn* i) const {
    return fetch_base_ + 2 * static_cast<uint64_t>(i - fetch_page_);
  }
  const Insn& fetch(uint64_t pc) {
    uint64_t off = pc - fetch_base_;
    if (off < kPageSize) [[likely]] return fetch_page_[off >> 1];
    return fetch_slow(pc);
  }
  // The entry of `pc` if it is on the page being executed, else nullptr.
  const Insn* fetch_in_page(uint64_t pc) const {
    uint64_t off = pc - fetch_base_;
    return off < kPageSize ? fetch_page_ + (off >> 1) : nullptr;
  }
  // The entry of `pc` on a page the hart executed recently (it becomes the
  // page being executed), else nullptr: an indirect jump's target on
  // another page (a return to a caller, a jump to a detour buffer) goes on
  // in the fast path when its page is one of the recent ones, which the
  // precise path's fetch_slow validated. The PC of the jump's own entry
  // must be taken before (pc_of changes with the page).
  const Insn* fetch_recent_page(uint64_t pc) {
    const uint64_t base = pc & ~(kPageSize - 1);
    const RecentPage& recent = recent_pages_[(base >> kPageShift) % kRecentPages];
    if (recent.base != base || !recent.page) return nullptr;
    fetch_page_ = recent.page;
    fetch_base_ = base;
    return fetch_page_ + ((pc - base) >> 1);
  }
  // Plain-RAM accesses; false sends the instruction to its precise path
  // (devices, faults, and for stores a page someone watches).
  // Under timing model v2 a miss in the L1 also takes the precise path,
  // which charges it.
  template <typename T>
  bool load_ram(uint64_t addr, T& out) {
    uint64_t off = addr - ram_base_;
    if (off > ram_fast_last_) [[unlikely]] return false;
    if (!may_read(off, sizeof(T))) [[unlikely]] return false;
    if (mem_) {
      if (!l1_direct(addr, sizeof(T), false)) return false;
      ++ctl_.l1_hits;
    }
    std::memcpy(&out, ram_ + off, sizeof(T));
    return true;
  }
  // Timing v2: the access may go straight to RAM (MemorySystem::direct,
  // its filter inlined here: one compare for a line used recently).
  bool l1_direct(uint64_t addr, unsigned size, bool write) const {
    return dfilter_->covers(addr, size, write, dline_shift_) || mem_->direct_slow(id_, addr, size, write);
  }
  // Cycles an L1 hit of a T-sized load costs beyond the load class's
  // (timing model v2: the profile's load-to-use latency; 0 under v1).
  template <typename T>
  uint64_t load_hit_extra() const { return load_extra_[sizeof(T) < 4]; }
  template <typename T>
  bool store_ram_unwatched(uint64_t addr, T value) {
    uint64_t off = addr - ram_base_;
    if (off > ram_fast_last_) [[unlikely]] return false;
    if (page_flags_[off >> kPageShift] | page_flags_[(off + sizeof(T) - 1) >> kPageShift]) [[unlikely]]
      return false;
    if (!may_write(off, sizeof(T))) [[unlikely]] return false;
    if (mem_) {
      if (!l1_direct(addr, sizeof(T), true)) return false;
      ++ctl_.l1_hits;
    }
    std::memcpy(ram_ + off, &value, sizeof(T));
    return true;
  }

  // --- Precise-path helpers (architectural state in s is current) --------
  template <typename T>
  bool load(uint64_t addr, T& out) {
    uint64_t off = addr - ram_base_;
    if (off <= ram_size_ - sizeof(T)) [[likely]] {
      if (mem_ && !cache_ready(addr, sizeof(T), false)) return sync_stop();
      if (!may_read(off, sizeof(T)) && !owners_.access(id_, pos(), addr, sizeof(T), false, grants_.mode)) [[unlikely]]
        return sync_stop();
      if (mem_) {
        // Its own buffered stores first (forwarding; timing v2).
        if (mem_->buffered(id_) && forwarded(addr, sizeof(T), out)) return true;
        s.cycle += cache_access(addr, sizeof(T), false) + load_hit_extra<T>();
      }
      std::memcpy(&out, ram_ + off, sizeof(T));
      return true;
    }
    uint64_t v;
    if (!load_slow(addr, sizeof(T), v)) return false;
    out = static_cast<T>(v);
    return true;
  }
  template <typename T>
  bool store(uint64_t addr, T value) {
    uint64_t off = addr - ram_base_;
    if (off <= ram_size_ - sizeof(T)) [[likely]] {
      // A store into a flagged page is a sync point ahead: stop before the
      // block grant, which would copy the block for a store that is not made.
      const uint8_t flags = page_flags_[off >> kPageShift] | page_flags_[(off + sizeof(T) - 1) >> kPageShift];
      if (mem_ && !cache_ready(addr, sizeof(T), true)) return sync_stop();
      if (flags && owners_.enabled() && !owners_.flagged_store(id_, pos(), grants_.mode, flags)) [[unlikely]]
        return sync_stop();
      if (!may_write(off, sizeof(T)) && !owners_.access(id_, pos(), addr, sizeof(T), true, grants_.mode)) [[unlikely]]
        return sync_stop();
      if (mem_) {
        // A store into a watched page (code, a reservation, tohost) is
        // made visible at once, after the stores before it.
        if (flags) drain_stores();
        const MemorySystem::StoreResult r =
            mem_->store(id_, s.cycle, pos(), addr, sizeof(T), static_cast<uint64_t>(value), flags == 0);
        ctl_.l1_hits += r.hit;
        s.cycle += r.stall;
        if (r.buffered) return true;  // (loads of its line now take the precise path: l1_direct)
      }
      std::memcpy(ram_ + off, &value, sizeof(T));
      if (flags) [[unlikely]] bus_.notify_flagged_store(accessor(), addr, sizeof(T));
      return true;
    }
    return store_slow(addr, sizeof(T), static_cast<uint64_t>(value));
  }
  // Where this hart's current precise step began: the position at which
  // its accesses are seen by CPUs that ran ahead (a miss inside the step
  // moves s.cycle on, but the step is one event at its start).
  uint64_t pos() const { return step_cycle_ < s.cycle ? step_cycle_ : s.cycle; }
  // Timing model v2 (mem/cache/memory_system.hpp; nullptr under v1).
  void set_memory_system(MemorySystem* m);
  MemorySystem* memory_system() const { return mem_; }

  // --- Instruction fetch under timing v2 ---------------------------------
  // An instruction is fetched from the line of its first byte; a fetch
  // from another line than the last one looks in the L1I (an instruction
  // across two lines is charged for the first; the next one fetches the
  // second). Bytes of I-cache line `iline_bytes_`: 0 under timing v1.
  unsigned iline_bytes() const { return iline_bytes_; }
  // The fast path's test (fast_one_edge, on the handlers of instructions
  // that may leave their line): `n` follows `i`; whether they lie in
  // different lines, from the entries' addresses (a page's entries are
  // aligned to a line's worth of them, DecodeCache).
  bool other_line(const Insn* i, const Insn* n) const {
    return ((reinterpret_cast<uintptr_t>(i) ^ reinterpret_cast<uintptr_t>(n)) >> iline_entry_shift_) != 0;
  }
  // The fast path enters `n`'s line: true when the L1I holds it (a hit,
  // counted); false when the fetch misses, which the precise path makes
  // (fetch_line_precise).
  bool enter_line(const Insn* n);
  // The precise path's fetch of the line of s.pc: charges a miss (in exact
  // order; ahead, a miss is a sync point: false, nothing done).
  bool fetch_line_precise() {
    if (!iline_bytes_) return true;
    const uint64_t line = s.pc & ~uint64_t{iline_bytes_ - 1};
    if (line == ctl_.fetch_line) return true;
    return fetch_line_slow(line);
  }
  // A CPU running ahead may only hit in its L1: anything else changes
  // what other CPUs see and waits for exact order (false: a sync point).
  bool cache_ready(uint64_t addr, unsigned size, bool write) const {
    return grants_.mode == AccessMode::exact || mem_->hit(id_, addr, size, write);
  }
  // Makes every buffered store visible now (traps, device accesses, stores
  // into watched pages; timing v2 under tso or rvwmo): they reach RAM at
  // this step, and the hart waits as long as the last of them would take.
  void drain_stores() {
    if (mem_ && mem_->buffered(id_)) s.cycle = mem_->drain(id_, s.cycle, pos());
  }
  // Before a fence, an atomic or WFI: true when no buffered store is still
  // on its way. Otherwise the hart waits until the last one is visible and
  // the instruction runs again then (false: it did not run), so that the
  // other CPUs see those stores at their own cycles, not before, and
  // before anything the instruction does.
  bool stores_visible() {
    if (!mem_ || mem_->stores_visible(id_, s.cycle, pos())) return true;
    end_slice();
    waited_at_ = {s.pc, steps()};  // its instruction event is not repeated
    return false;
  }
  // A load served by the store buffer (true), or after waiting for a store
  // that covers part of it (false: load from RAM).
  template <typename T>
  bool forwarded(uint64_t addr, unsigned size, T& out) {
    uint64_t v = 0;
    if (!mem_->load_forward(id_, s.cycle, pos(), addr, size, v)) return false;
    ++ctl_.l1_hits;
    s.cycle += load_hit_extra<T>();
    out = static_cast<T>(v);
    return true;
  }
  // The access's cost beyond an L1 hit, in exact order (0 for a hit).
  uint64_t cache_access(uint64_t addr, unsigned size, bool write) {
    if (mem_->hit(id_, addr, size, write)) {
      ++ctl_.l1_hits;
      return 0;
    }
    return mem_->access(id_, pos(), addr, size, write);
  }
  // Atomic memory operations: RAM only, naturally aligned.
  bool amo_check(uint64_t addr, unsigned size, bool is_load_reserved);
  uint8_t* ram_ptr(uint64_t addr) { return ram_ + (addr - ram_base_); }
  void note_atomic_store(uint64_t addr, unsigned size);

  // CSR access; returns false (and raises illegal instruction) on failure.
  bool csr_read(uint32_t num, uint64_t& value, const Insn& i);
  bool csr_write(uint32_t num, uint64_t value, const Insn& i);

  void do_mret(const Insn& i);
  void do_wfi(const Insn& i);
  Reservations& reservations() { return res_; }

  uint64_t mip() const;

  // --- Running ahead (mem/ownership.hpp, docs/SCHEDULING.md) ---------------
  // How memory accesses are checked: in exact order, ahead of it, or
  // replaying an undone run-ahead.
  void set_access_mode(AccessMode m) {
    grants_.mode = m;
    grants_.load(owners_, id_);
  }
  AccessMode access_mode() const { return grants_.mode; }
  // The state a run-ahead starts from, and going back to it.
  void save_ahead_point() {
    ahead_sync_ = views_.sync_point(id_);
    ahead_s_ = s;
    ahead_ctl_ = ctl_;
  }
  void restore_ahead_point() {
    views_.set_sync_point(id_, ahead_sync_);
    s = ahead_s_;
    ctl_ = ahead_ctl_;
    end_slice();
  }
  // The last run()/step() stopped before an instruction that is a sync
  // point (the hart runs ahead; see PageOwners).
  bool sync_stopped() const { return sync_stop_; }
  // Stops before the current instruction, which is not executed; returns
  // false for the callers' "not done" path.
  bool sync_stop() {
    sync_stop_ = true;
    request_stop();
    return false;
  }
  bool ahead() const { return grants_.mode != AccessMode::exact; }
  PageOwners& owners() { return owners_; }
  Accessor accessor() const { return Accessor{id_, s.cycle}; }
  Bus& bus() { return bus_; }

  // Decodes the instruction at `pc` into `slot`, an entry of a decode-cache
  // page (decode-on-first-use), fusing it with the next instruction when
  // fusion_table.def says so.
  void decode_into(Insn& slot, uint64_t pc);

 private:
  void loop_fast();
  // The precise loop, for a hart without (Stale false) or with a stale view
  // of code: decided once per loop, as anything that changes the view ends
  // the slice (end_slice). Never inlined: the per-step callers (stepping,
  // the reference schedule) stay as small as they were.
  void loop_precise() { *stale_ ? loop_precise_as<true>() : loop_precise_as<false>(); }
  template <bool Stale>
  [[gnu::noinline]] void loop_precise_as();
  // The run()/step() skeleton (cpu/slice.hpp) and this core's parts of it.
  friend struct ksim::Slice;
  void begin_slice();
  // The block grants (PageOwners): one load and compare per access.
  bool may_read(uint64_t off, unsigned size) const { return grants_.may_read(off, size); }
  bool may_write(uint64_t off, unsigned size) const { return grants_.may_write(off, size); }
  bool stop_requested() const { return stop_requested_; }
  void run_pass();
  void step_pass(uint64_t budget);
  void end_steps() { step_budget_ = 0; }
  // Common set-up of run() and step(): idling, interrupts, stalls; returns
  // false when the hart cannot run now (idle, or stopped).
  bool prepare(uint64_t until);
  void decode_one(Insn& slot, uint64_t pc);
  static FastFn unfused(const Insn& in);
  static uint64_t lead_cycles(const Insn& in);
  void fuse(Insn& a, uint64_t pc);
  Insn* next_on_page(Insn& in, uint64_t pc);
  // pc_of() that also knows the fetch-fault entry (slow path only).
  uint64_t pc_of_any(const Insn* i) const { return i == &fault_insn_ || i == &sync_insn_ ? fault_pc_ : pc_of(i); }
  const Insn& fetch_slow(uint64_t pc);
  // fetch() for a hart with a stale view: the instruction its view holds.
  const Insn& fetch_stale(uint64_t pc);
  bool device_access_ok(uint64_t addr, unsigned size, bool is_write, uint64_t value);
  bool load_slow(uint64_t addr, unsigned size, uint64_t& out);
  bool store_slow(uint64_t addr, unsigned size, uint64_t value);
  bool check_interrupts();
  void take_trap(const TrapInfo& t);

  int id_;
  Bus& bus_;
  Clint& clint_;
  DecodeCache& cache_;
  Reservations& res_;
  const TrapHookChain* hooks_;
  uint8_t* ram_;
  uint64_t ram_base_, ram_size_;
  // The last RAM offset the fast path's loads and stores serve, whatever
  // their size: one bound for every width (no per-width subtraction); the
  // last 7 bytes of RAM are left to the precise path.
  uint64_t ram_fast_last_;
  const uint8_t* page_flags_;
  PageOwners& owners_;
  CodeViews& views_;
  const uint8_t* stale_;  // views_.stale(id_), one load away
  Insn stale_insn_{};  // what fetch_stale() decoded from the stale view
  CpuGrants grants_;  // and the access mode
  bool sync_stop_ = false;
  State ahead_s_;
  std::pair<uint64_t, uint64_t> ahead_sync_{};  // CodeViews::sync_point at the ahead point
  Control ahead_ctl_;

  // Fetch window: the decoded page the hart is executing from.
  uint64_t fetch_base_ = ~uint64_t{0};
  Insn* fetch_page_ = nullptr;
  // Pages the window was on recently, by page number modulo kRecentPages.
  struct RecentPage {
    uint64_t base = ~uint64_t{0};
    Insn* page = nullptr;
  };
  static constexpr unsigned kRecentPages = 8;
  RecentPage recent_pages_[kRecentPages];
  Insn fault_insn_{};  // returned for fetches outside RAM
  uint64_t fault_pc_ = 0;  // (and for sync_insn_)
  Insn sync_insn_{};       // returned by a fetch that is a sync point ahead (fetch_slow)

  uint64_t stop_ = 0;  // the inner loop runs while s.cycle < stop_
  // Ends the current run slice at the next instruction boundary; run() then
  // re-checks interrupts and stop requests. (Nothing calls this inside a
  // chain of fast handlers: they touch no device, CSR or trap, so a chain's
  // limit, fixed when it starts, needs no update.)
  void end_slice() {
    stop_ = 0;
    prepared_ = false;
  }
  // What the last full prepare() found (see there): valid until the slice
  // is ended from outside or a trap is taken.
  bool prepared_ = false;
  uint64_t next_event_ = 0;
  bool stop_requested_ = false;
  bool trace_insns_ = false;
  uint64_t step_budget_ = 0;  // precise loop: steps left (0 = unlimited)
  StopReason stop_reason_ = StopReason::none;
  TrapInfo last_trap_{};
  TrapInfo loop_first_{}, loop_last_{};
  uint64_t last_trap_cycle_ = 0;
  const Perturbation& perturb_;
  MemorySystem* mem_ = nullptr;
  // The instruction that last waited for the store buffer (stores_visible):
  // where it was and the step count then. Run again there, it has been
  // reported to on_insn already.
  std::pair<uint64_t, uint64_t> waited_at_{~uint64_t{0}, 0};
  const HitFilter* dfilter_ = nullptr;  // mem_'s for this hart (l1_direct)
  unsigned dline_shift_ = 6;
  unsigned iline_bytes_ = 0;
  unsigned iline_entry_shift_ = 63;  // v1: no two entries differ above bit 63
  unsigned iline_line_shift_ = 6;    // log2(iline_bytes_)
  // Lines this hart's L1I was found to hold, by line number modulo
  // kIFilter: a hit changes no cache state, so a line stays held until
  // the L1I loses it (line_evicted clears its slot). It spares the tag
  // lookup for loops that span a few lines; host state only (a put-back
  // or a restore may find it empty, never wrong).
  static constexpr unsigned kIFilter = 4;
  uint64_t ifilter_[kIFilter] = {~uint64_t{0}, ~uint64_t{0}, ~uint64_t{0}, ~uint64_t{0}};
  bool fetch_line_slow(uint64_t line);
  // Whether `in` at `pc` may be followed by an instruction in another
  // line (it reaches the line's end, or jumps).
  bool may_leave_line(const Insn& in, uint64_t pc) const;
  uint64_t step_cycle_ = 0;          // pos()
  uint8_t load_extra_[2] = {0, 0};  // load_hit_extra: [0] word and wider, [1] byte and halfword
  uint64_t lead_slack_ = 0;          // what load_extra_ may add to a fused group's lead (loop_fast)
};

}  // namespace ksim::rv64
