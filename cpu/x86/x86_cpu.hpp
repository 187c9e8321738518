// One x86-64 CPU: long mode, 64-bit code, flat addressing (no paging, no
// segmentation beyond the FS/GS bases), interrupts through a 64-bit IDT.
// See docs/X86.md for what is and is not modelled.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <utility>
#include <new>
#include <string>
#include <unordered_map>

#include "cpu/code_pages.hpp"
#include "cpu/code_view.hpp"
#include "cpu/cpu.hpp"
#include "cpu/isa.hpp"
#include "cpu/perturb.hpp"
#include "cpu/slice.hpp"
#include "cpu/trap_hooks.hpp"
#include "cpu/x86/insn.hpp"
#include "mem/bus.hpp"
#include "mem/cache/memory_system.hpp"
#include "mem/ownership.hpp"

namespace ksim::x86 {

// RFLAGS bits.
enum : uint64_t {
  kCF = 1ull << 0, kPF = 1ull << 2, kAF = 1ull << 4, kZF = 1ull << 6, kSF = 1ull << 7, kTF = 1ull << 8,
  kIF = 1ull << 9, kDF = 1ull << 10, kOF = 1ull << 11, kNT = 1ull << 14, kRF = 1ull << 16, kAC = 1ull << 18,
  kID = 1ull << 21,
  kArith = kCF | kPF | kAF | kZF | kSF | kOF,
  kFlagsFixed = 1ull << 1,
  // What POPFQ and IRETQ may change in this model (CPL 0).
  kFlagsWritable = kArith | kTF | kIF | kDF | kNT | kAC | kID,
};

// Exception vectors.
enum Vector : uint8_t { kDE = 0, kDB = 1, kBP = 3, kUD = 6, kDF_ = 8, kGP = 13 };

struct State {
  uint64_t gpr[16] = {};
  uint64_t rip = 0;
  uint64_t rflags = kFlagsFixed;
  uint64_t fs_base = 0, gs_base = 0, kernel_gs_base = 0;
  uint64_t idt_base = 0;
  uint16_t idt_limit = 0;
  uint16_t cs = 0x08, ss = 0x10;
  uint64_t cycle = 0, instret = 0;
};

// The interrupt controller side the CPU needs (the local APIC, mem/lapic).
class InterruptSource {
 public:
  virtual ~InterruptSource() = default;
  // Highest-priority pending vector deliverable at `cycle`, or -1.
  virtual int pending(int cpu, uint64_t cycle) const = 0;
  // The CPU takes `vector` at `cycle` (moves it to in-service).
  virtual void acknowledge(int cpu, int vector, uint64_t cycle) = 0;
  // First cycle after `now` at which something may become pending (a timer
  // expiry, an IPI arriving); UINT64_MAX if none. Vectors that have arrived
  // but are blocked (priority, disabled APIC) do not count: only the CPU
  // itself can unblock them.
  virtual uint64_t next_event(int cpu, uint64_t now) const = 0;
  virtual uint32_t apic_id(int cpu) const = 0;
};

// The decoded instructions of one code page: per byte address (x86
// instructions start anywhere) a compact fast entry and the full Insn of
// the precise path. An entry whose fast handler is the decode stub
// (fast_decode) is not decoded yet, and its Insn holds nothing: the Insn
// storage is raw memory, constructed on decode, so the 384 KiB a page
// reserves for it cost nothing until the instructions are executed.
// Sixteen guard entries follow the last byte: sequential execution that
// runs off the page lands on one and continues on the next page.
// Aligned so that the fast entries of one I-cache line (at most 256 bytes:
// 256 entries of 32 bytes) share every address bit above theirs
// (X86Cpu::other_line).
struct alignas(8192) CodePage {
  static constexpr unsigned kBytes = 4096, kGuards = 16;
  Fast fast[kBytes + kGuards];
  CodePage();
  void reset(unsigned from, unsigned to);  // entries [from, to)
  bool decoded(unsigned k) const;
  Insn& insn(unsigned k) { return *std::launder(reinterpret_cast<Insn*>(raw_[k].b)); }
  Insn& construct(unsigned k, const Insn& in) { return *new (raw_[k].b) Insn(in); }

 private:
  struct RawInsn {
    alignas(Insn) unsigned char b[sizeof(Insn)];
  };
  std::unique_ptr<RawInsn[]> raw_ = std::make_unique_for_overwrite<RawInsn[]>(kBytes);
};

class DecodeCacheX86;

class X86Cpu final : public Cpu {
 public:
  X86Cpu(int id, Bus& bus, DecodeCacheX86& cache, InterruptSource& irq, const TrapHookChain* hooks,
         const Perturbation& perturb, PageOwners& owners, CodeViews& views);

  // Cpu interface.
  Isa isa() const override { return Isa::x86_64; }
  int id() const override { return id_; }
  uint64_t pc() const override { return s.rip; }
  void set_pc(uint64_t pc) override { s.rip = pc; }
  int gpr_count() const override { return 16; }
  uint64_t gpr(int i) const override { return s.gpr[i]; }
  void set_gpr(int i, uint64_t v) override { if (i >= 0 && i < 16) s.gpr[i] = v; }
  std::string gpr_name(int i) const override;
  uint64_t cycle() const override { return s.cycle; }
  void add_cycles(uint64_t n) override { s.cycle += n; }
  uint64_t instret() const override { return s.instret; }
  uint64_t l1_hits() const override { return l1_hits_; }
  uint64_t l1i_hits() const override { return l1i_hits_; }
  void line_evicted(uint64_t line_addr) override {
    if (fetch_line_ == line_addr) fetch_line_ = ~uint64_t{0};
    if (!iline_bytes_) return;
    uint64_t& f = ifilter_[(line_addr >> iline_line_shift_) % kIFilter];
    if (f == line_addr) f = ~uint64_t{0};
  }
  void icache_replaced() override {
    for (uint64_t& f : ifilter_) f = ~uint64_t{0};
  }
  // --- Instruction fetch under timing v2 (as the RV64 core's, hart.hpp) ---
  // An instruction is fetched from the line of its first byte; a fetch from
  // another line than the last looks in the L1I. Fast entries flagged
  // kEdge (the last instruction of a line, jumps) test whether the next
  // entry is in another line, from the entries' addresses.
  static constexpr uint8_t kEdge = 1;  // Fast::pad[0]
  unsigned iline_bytes() const { return iline_bytes_; }
  bool other_line(const Fast* f, const Fast* n) const {
    return ((reinterpret_cast<uintptr_t>(f) ^ reinterpret_cast<uintptr_t>(n)) >> iline_entry_shift_) != 0;
  }
  // The fast path enters the line of `n` (an entry of the current page, or
  // the fault entry): true on a hit (counted), false on a miss, which the
  // precise path charges.
  bool enter_line(const Fast* n) {
    if (n == &fault_fast_) return false;
    const uint64_t line = pc_of(n) & ~uint64_t{iline_bytes_ - 1};
    if (line == fetch_line_) return true;
    uint64_t& f = ifilter_[(line >> iline_line_shift_) % kIFilter];
    if (f != line) {
      if (!mem_->ihit(id_, line)) return false;
      f = line;
    }
    ++l1i_hits_;
    fetch_line_ = line;
    return true;
  }
  // The precise path's fetch of the line of s.rip, at the step's start;
  // ahead, a miss is a sync point (false, nothing done).
  bool fetch_line_precise();
  // A fast handler whose load hit and which then hands the instruction to
  // the precise path (which loads again) takes its count back.
  void uncount_l1_hit() {
    if (mem_) --l1_hits_;
  }
  // Where the current precise step began: the position at which its
  // accesses are seen by CPUs that ran ahead (a miss inside the step moves
  // s.cycle on, but the step is one event at its start).
  uint64_t pos() const { return step_cycle_ < s.cycle ? step_cycle_ : s.cycle; }
  // Timing model v2 (mem/cache/memory_system.hpp; nullptr under v1).
  void set_memory_system(MemorySystem* m);
  // A CPU running ahead may only hit in its L1: anything else changes
  // what other CPUs see and waits for exact order (false: a sync point).
  bool cache_ready(uint64_t addr, unsigned size, bool write) const {
    return grants_.mode == AccessMode::exact || mem_->hit(id_, addr, size, write);
  }
  // Makes every buffered store visible now (serialising instructions,
  // exceptions and interrupts, devices, stores into watched pages; timing
  // v2 under tso): they reach RAM at this step, and the CPU waits as long
  // as the last of them would take.
  void drain_stores() {
    if (mem_ && mem_->buffered(id_)) s.cycle = mem_->drain(id_, s.cycle, pos());
  }
  // Before MFENCE, a locked instruction or HLT: true when no buffered store
  // is still on its way. Otherwise the CPU waits until the last one is
  // visible and the instruction runs again then (false: it did not run),
  // so that the other CPUs see those stores at their own cycles, not
  // before, and before anything the instruction does.
  bool stores_visible() {
    if (!mem_ || mem_->stores_visible(id_, s.cycle, pos())) return true;
    stop_ = 0;
    deferred_ = true;  // the instruction did not run (an STI shadow stays)
    waited_at_ = {s.rip, steps()};  // its instruction event is not repeated
    return false;
  }
  // A load served by the store buffer (true), or after waiting for a store
  // that covers part of it (false: load from RAM).
  bool forwarded(uint64_t addr, unsigned size, uint64_t& out) {
    if (!mem_->load_forward(id_, s.cycle, pos(), addr, size, out)) return false;
    ++l1_hits_;
    return true;
  }
  // The access's cost beyond an L1 hit, in exact order (0 for a hit).
  uint64_t cache_access(uint64_t addr, unsigned size, bool write) {
    if (mem_->hit(id_, addr, size, write)) {
      ++l1_hits_;
      return 0;
    }
    return mem_->access(id_, pos(), addr, size, write);
  }
  void run(uint64_t until) override;
  uint64_t step(uint64_t until, uint64_t steps) override;
  // A step is an instruction retired, a trap taken, or one iteration of a
  // rep string instruction that does not retire it (docs/X86.md).
  uint64_t steps() const override { return s.instret + traps_ + rep_iterations_; }
  bool idle() const override { return halted_; }
  uint64_t wake_cycle() const override;
  void advance_idle(uint64_t to_cycle) override { if (to_cycle > s.cycle) s.cycle = to_cycle; }
  void interrupts_changed() override { stop_ = 0; }
  void request_stop() override { stop_requested_ = true; stop_ = 0; }
  // What every serialising event of the model does (serialize_code() and
  // the instructions and deliveries that serialise, docs/CODE_MODEL.md).
  // Back to the fast path at once when that ends a view.
  void serialize_code() override {
    drain_stores();  // a serialising event also waits for the store buffer
    if (!*stale_) return views_.note_serialized(id_, s.cycle);
    views_.serialize(id_, s.cycle);
    stop_ = 0;
  }
  void see_code_now() override {
    if (!*stale_) return;
    views_.drop_all(id_, s.cycle);
    stop_ = 0;
  }
  size_t fetch_view(uint64_t addr, uint8_t* out, size_t n) const override { return views_.read(id_, addr, out, n); }
  bool code_view_stale() const override { return views_.stale(id_); }
  void raise_breakpoint() override { deliver(kBP, s.rip + 1, false, "int3"); }

  State s;

  // Observation.
  struct TrapRecord {
    TrapInfo info;
    bool delivered;
    std::string text;  // e.g. the unsupported instruction for #UD
    uint64_t cycle;    // when the trap was taken (before its entry cost)
  };
  std::function<void(const X86Cpu&, const TrapRecord&)> on_trap;
  std::function<void(const X86Cpu&, const Insn&)> on_insn;
  void set_trace_insns(bool on) { trace_insns_ = on; }
  bool crashed() const { return crashed_; }
  // Checkpoints: the control state beyond `s` (idle, STI shadow, traps,
  // rep iterations, the seeded stall schedule).
  struct Control {
    bool halted, sti_shadow;
    uint64_t traps, instret_at_last_trap;
    int32_t nested_traps;
    uint64_t rep_iterations = 0;  // rep iterations that did not retire (steps)
    uint64_t next_stall = ~0ull;  // cycle of the next seeded memory stall
    uint64_t stall_draws = 0;     // generator index for stalls
    uint64_t l1_hits = 0;         // timing v2: L1 hits (a put-back takes them back)
    uint64_t fetch_line = ~0ull;  // timing v2: the line fetched from (X86Cpu::fetch_line_)
    uint64_t l1i_hits = 0;        // timing v2: fetches of a new line that hit the L1I
    uint64_t fetch_next = 0;      // timing v2: the RIP after the last careful step (stale fetch windows)
  };
  Control control() const {
    return {halted_, sti_shadow_, traps_, instret_at_last_trap_, nested_traps_, rep_iterations_, next_stall_,
            stall_draws_, l1_hits_, fetch_line_, l1i_hits_, fetch_next_};
  }
  void set_control(const Control& c) {
    halted_ = c.halted;
    sti_shadow_ = c.sti_shadow;
    traps_ = c.traps;
    instret_at_last_trap_ = c.instret_at_last_trap;
    nested_traps_ = c.nested_traps;
    rep_iterations_ = c.rep_iterations;
    next_stall_ = c.next_stall;
    stall_draws_ = c.stall_draws;
    l1_hits_ = c.l1_hits;
    fetch_line_ = c.fetch_line;
    l1i_hits_ = c.l1i_hits;
    fetch_next_ = c.fetch_next;
  }
  // Forgets idling, crash and trap-loop history (for harnesses that reuse
  // one machine to run many independent snippets).
  void reset_control() {
    halted_ = sti_shadow_ = crashed_ = hook_stopped_ = false;
    crash_reason_.clear();
    nested_traps_ = 0;
    instret_at_last_trap_ = ~0ull;
  }
  bool hook_stopped() const { return hook_stopped_; }
  uint64_t last_trap_cycle() const { return last_trap_cycle_; }
  const std::string& crash_reason() const { return crash_reason_; }
  // Where the crash began (a trap loop's first trap), for naming it.
  uint64_t crash_pc() const { return crash_pc_; }

  // --- Used by the semantics -------------------------------------------------
  uint64_t reg_read(const Operand& o) const {
    uint64_t v = s.gpr[o.reg];
    if (o.high8) return (v >> 8) & 0xff;
    switch (o.size) {
      case 1: return v & 0xff;
      case 2: return v & 0xffff;
      case 4: return v & 0xffffffff;
      default: return v;
    }
  }
  void reg_write(const Operand& o, uint64_t v) {
    uint64_t& r = s.gpr[o.reg];
    if (o.high8) { r = (r & ~0xff00ull) | ((v & 0xff) << 8); return; }
    switch (o.size) {
      case 1: r = (r & ~0xffull) | (v & 0xff); break;
      case 2: r = (r & ~0xffffull) | (v & 0xffff); break;
      case 4: r = v & 0xffffffff; break;  // 32-bit writes zero-extend
      default: r = v; break;
    }
  }
  uint64_t effective_address(const Insn& i, const Operand& o) const;
  // Operand access; false means an exception was raised (state untouched).
  // Register and immediate operands are handled inline (most accesses).
  bool read(const Insn& i, const Operand& o, uint64_t& v) {
    if (o.kind == OpKind::reg) [[likely]] {
      v = reg_read(o);
      return true;
    }
    if (o.kind == OpKind::imm) {
      v = static_cast<uint64_t>(o.disp);
      return true;
    }
    return read_mem_operand(i, o, v);
  }
  bool write(const Insn& i, const Operand& o, uint64_t v) {
    if (o.kind == OpKind::reg) [[likely]] {
      reg_write(o, v);
      return true;
    }
    return write_mem_operand(i, o, v);
  }
  bool read_mem_operand(const Insn& i, const Operand& o, uint64_t& v);
  bool write_mem_operand(const Insn& i, const Operand& o, uint64_t v);
  bool mem_read(uint64_t addr, unsigned size, uint64_t& v);
  bool mem_write(uint64_t addr, unsigned size, uint64_t v);
  bool push(uint64_t v) { s.gpr[4] -= 8; if (mem_write(s.gpr[4], 8, v)) return true; s.gpr[4] += 8; return false; }
  bool pop(uint64_t& v) { if (!mem_read(s.gpr[4], 8, v)) return false; s.gpr[4] += 8; return true; }

  void retire(const Insn& i) { s.rip += i.len; s.cycle += i.cycles; ++s.instret; }
  // A rep string iteration that leaves the instruction unfinished: a step,
  // not a retirement (RIP stays on the instruction).
  void rep_iteration() { ++rep_iterations_; }
  // Raises an exception for the instruction at s.rip (not retired).
  void raise(uint8_t vector, std::string text = {}, bool has_error = false, uint64_t error = 0);
  // Delivers a trap whose saved RIP is `return_rip` (int3, int n, #DB).
  // Exceptions that carry an error code (#DF, #TS, #NP, #SS, #GP, #PF,
  // #AC, #CP, #VC, #SX) push it after RIP.
  void deliver(uint8_t vector, uint64_t return_rip, bool interrupt, std::string text = {}, bool has_error = false,
               uint64_t error = 0);
  void do_iretq(const Insn& i);
  void do_hlt(const Insn& i);
  void do_sti(const Insn& i);
  uint64_t msr_read(uint32_t msr, bool& ok) const;
  bool msr_write(uint32_t msr, uint64_t v);
  InterruptSource& irq() { return irq_; }
  // Intel-syntax text of the instruction at `rip` (for messages).
  std::string insn_text(uint64_t rip) const;
  Bus& bus() { return bus_; }
  Accessor accessor() const { return Accessor{id_, s.cycle}; }

  // --- The fast path (cpu/x86/fast.hpp) ---------------------------------------
  // Longest chain of fast handlers before control returns to the loop (bounds
  // the host stack should a handler's final call not become a jump).
  static constexpr uint64_t kChainLength = 64;
  uint64_t stop_cycle() const { return stop_; }
  uint64_t chain_retired = 0;       // set by a chain's last handler
  const Fast* precise_ip = nullptr;  // set by a handler that needs the precise path
  // The RIP of a fast entry of the page being executed (the guard entries
  // past its end give addresses on the next page, as they should).
  uint64_t pc_of(const Fast* f) const { return fetch_base_ + static_cast<uint64_t>(f - fetch_page_->fast); }
  // The fast entry for `rip` (a jump target); outside RAM, an entry that
  // hands back to the precise path, which raises the fault.
  const Fast* fast_at(uint64_t rip) {
    const uint64_t off = rip - fetch_base_;
    if (off < kCodePage) [[likely]] return &fetch_page_->fast[off];
    return fast_slow(rip);
  }
  // The entry for `rip` when it is on the current page, else nullptr.
  const Fast* fast_in_page(uint64_t rip) const {
    const uint64_t off = rip - fetch_base_;
    return off < kCodePage ? &fetch_page_->fast[off] : nullptr;
  }
  // The entry for `rip` when it is on the current page or one of the
  // recent ones (which fetch() and fast_slow() found in RAM), now the
  // current page; else nullptr. No call: a handler's jump to another page
  // (a call, a return, a detour buffer and back) needs no register saves.
  const Fast* fast_recent(uint64_t rip) {
    const uint64_t base = rip & ~uint64_t{kCodePage - 1};
    const RecentPage& p = recent_[(base >> kPageShift) % kRecentPages];
    if (p.base != base) return nullptr;
    fetch_page_ = p.page;
    fetch_base_ = base;
    return &fetch_page_->fast[rip - base];
  }
  // A handler that runs its instruction's precise semantics without
  // leaving the fast loop (fast::load_precise): enter_precise writes the
  // state back as the loop does when a handler hands back (`cyc`, `r`
  // retired in this chain) and materialises the flags; retire_fast is
  // retire(); leave_precise gives the loop the entry at the new RIP, or
  // ends the fast loop with precise_ip there when the next instruction
  // needs loop_as's careful step (TF, an STI shadow).
  void enter_precise(const Fast* f, uint64_t cyc, uint64_t r) {
    s.cycle = cyc;
    step_cycle_ = cyc;
    s.instret += r;
    s.rip = pc_of(f);
    materialise_flags();
  }
  void retire_fast(const Fast* f) {
    s.rip += f->len;
    s.cycle += f->cycles;
    ++s.instret;
  }
  FastNext leave_precise() {
    chain_retired = 0;
    const Fast* n = fast_at(s.rip);
    if ((s.rflags & kTF) || sti_shadow_ || (iline_bytes_ && !enter_line(n))) [[unlikely]] {
      precise_ip = n;
      return {nullptr, s.cycle};
    }
    return {n, s.cycle};
  }
  // Decodes the entry `f` of the current page (its first execution).
  void decode_fast(const Fast* f) { fetch(pc_of(f)); }
  // Timing v2: the access may go straight to RAM (MemorySystem::direct,
  // its filter inlined here: one compare for a line used recently).
  bool l1_direct(uint64_t addr, unsigned size, bool write) const {
    return dfilter_->covers(addr, size, write, dline_shift_) || mem_->direct_slow(id_, addr, size, write);
  }
  // Under timing model v2 a miss in the L1 also takes the precise path,
  // which charges it.
  template <typename T>
  bool load_ram(uint64_t addr, T& out) {
    const uint64_t off = addr - ram_base_;
    if (off > ram_size_ - sizeof(T)) [[unlikely]] return false;
    if (!may_read(off, sizeof(T))) [[unlikely]] return false;
    if (mem_) {
      if (!l1_direct(addr, sizeof(T), false)) return false;
      ++l1_hits_;
    }
    std::memcpy(&out, ram_ + off, sizeof(T));
    return true;
  }
  // A RAM store that leaves the decode cache's notification to the caller:
  // 0 not RAM (nothing written), 1 written, 2 written into a page flagged
  // for listeners (the caller must call notify_store).
  template <typename T>
  int store_ram_quiet(uint64_t addr, T value) {
    const uint64_t off = addr - ram_base_;
    if (off > ram_size_ - sizeof(T)) [[unlikely]] return 0;
    if (!may_write(off, sizeof(T))) [[unlikely]] return 0;
    const bool flagged = page_flags_[off >> kPageShift] | page_flags_[(off + sizeof(T) - 1) >> kPageShift];
    // Under exact SMP a store into a flagged page may have to put back a
    // CPU running ahead first (PageOwners::flagged_store): precise path.
    // So does one into a flagged page while stores are buffered (timing
    // v2), which must be visible first (mem_write).
    if (flagged && (owners_.enabled() || (mem_ && mem_->buffered(id_)))) [[unlikely]] return 0;
    if (mem_) {
      if (!l1_direct(addr, sizeof(T), true)) return 0;
      ++l1_hits_;
    }
    std::memcpy(ram_ + off, &value, sizeof(T));
    return flagged ? 2 : 1;
  }
  // Whether store_ram_quiet() would store at [addr, addr+size) (RAM
  // already checked by a load of the same bytes).
  bool store_quiet_ok(uint64_t addr, unsigned size) const {
    const uint64_t off = addr - ram_base_;
    if (!may_write(off, size)) return false;
    if (mem_ && !l1_direct(addr, size, true)) return false;
    return !(owners_.enabled() || (mem_ && mem_->buffered(id_))) ||
           !(page_flags_[off >> kPageShift] | page_flags_[(off + size - 1) >> kPageShift]);
  }
  // Whether a RAM access at [addr, addr+size) touches a flagged page.
  bool flagged_ram(uint64_t addr, unsigned size) const {
    const uint64_t off = addr - ram_base_;
    return off <= ram_size_ - size && (page_flags_[off >> kPageShift] | page_flags_[(off + size - 1) >> kPageShift]);
  }
  void notify_store(uint64_t addr, unsigned size, uint64_t cycle) {
    bus_.notify_flagged_store(Accessor{id_, cycle}, addr, size);
  }

  // --- Running ahead (mem/ownership.hpp, docs/SCHEDULING.md) ---------------
  void set_access_mode(AccessMode m) {
    grants_.mode = m;
    grants_.load(owners_, id_);
  }
  AccessMode access_mode() const { return grants_.mode; }
  void save_ahead_point() {
    ahead_sync_ = views_.sync_point(id_);
    ahead_s_ = s;
    ahead_ctl_ = control();
  }
  void restore_ahead_point() {
    views_.set_sync_point(id_, ahead_sync_);
    s = ahead_s_;
    set_control(ahead_ctl_);
    lazy_op = kLazyNone;
    stop_ = 0;
  }
  bool sync_stopped() const { return sync_stop_; }
  // Stops before the current instruction (a sync point while running
  // ahead); returns false for the callers' "not done" path.
  bool sync_stop() {
    sync_stop_ = true;
    request_stop();
    return false;
  }
  bool ahead() const { return grants_.mode != AccessMode::exact; }
  PageOwners& owners() { return owners_; }

  // --- Lazy flags (fast path only) ---------------------------------------------
  // The fast handlers do not compute RFLAGS: they record the last
  // flag-producing operation, its operand size, inputs and result, and the
  // arithmetic flags are computed from that record only when something reads
  // them (jcc/setcc/cmovcc evaluate their condition straight from it). The
  // record lives only inside the fast loop: every hand-back to the precise
  // path or to the outside world materialises it into s.rflags, so s.rflags
  // is exact whenever anyone else can look (traps, hooks, the kprobes
  // engine, checkpoints, observers). The non-arithmetic bits of s.rflags
  // are always current.
  enum LazyOp : uint8_t { kLazyNone, kLazyAdd, kLazySub, kLazyLogic, kLazyInc, kLazyDec, kLazyMul, kLazyShl,
                          kLazyShr, kLazySar };
  // Added to lazy_op by a rotate, which changes CF and OF only: they are in
  // lazy_cfof, the other flags still come from the record (or s.rflags).
  static constexpr uint8_t kLazyRotated = 0x80;
  // lazy_op and lazy_bits side by side: handlers set both with one store.
  // What the record holds: ADD SUB INC DEC (and NEG as SUB 0, x) the inputs
  // a and b (for INC/DEC b is the CF they keep), the result being
  // recomputed when needed; logic ops the result r; IMUL r and b = overflow;
  // shifts a, b = count, r.
  uint8_t lazy_op = kLazyNone;
  uint8_t lazy_bits = 64;
  uint64_t lazy_a = 0, lazy_b = 0, lazy_r = 0;
  uint64_t lazy_cfof = 0;
  void materialise_flags() {
    if (lazy_op != kLazyNone) materialise_slow();
  }

 private:
  static constexpr uint64_t kCodePage = 4096;
  void materialise_slow();
  const Insn& fetch(uint64_t rip);
  // fetch() for a CPU with a stale view: the instruction its view holds.
  const Insn& fetch_stale(uint64_t rip);
  const Fast* fast_slow(uint64_t rip);
  CodePage* code_page(uint64_t base);
  bool check_interrupts();
  bool prepare(uint64_t until);
  // The loop, for a CPU without (Stale false) or with a stale view of code:
  // decided once per loop, as anything that changes the view ends the
  // slice (stop_ = 0). Never inlined: the per-step callers (stepping, the
  // reference schedule) stay as small as they were.
  void loop(uint64_t step_budget) { *stale_ ? loop_as<true>(step_budget) : loop_as<false>(step_budget); }
  template <bool Stale>
  [[gnu::noinline]] void loop_as(uint64_t step_budget);
  // The run()/step() skeleton (cpu/slice.hpp) and this core's parts of it.
  friend struct ksim::Slice;
  void begin_slice() {
    stop_requested_ = false;
    hook_stopped_ = false;
    sync_stop_ = false;
  }
  // The block grants (PageOwners): one load and compare per access.
  bool may_read(uint64_t off, unsigned size) const { return grants_.may_read(off, size); }
  bool may_write(uint64_t off, unsigned size) const { return grants_.may_write(off, size); }
  bool device_access_ok(uint64_t addr, unsigned size, bool is_write, uint64_t value);
  // A RAM access made by the CPU itself outside mem_read/mem_write
  // (interrupt delivery, exact order only): recorded in the page owners,
  // at the cycle the trap's step began.
  void note_access(uint64_t addr, unsigned size, bool write) {
    if (owners_.enabled()) owners_.access(id_, last_trap_cycle_, addr, size, write, grants_.mode);
  }
  bool stop_requested() const { return stop_requested_; }
  void run_pass() { loop(0); }
  void step_pass(uint64_t budget) { loop(budget); }
  void end_steps() {}
  void loop_fast();

  int id_;
  Bus& bus_;
  DecodeCacheX86& cache_;
  InterruptSource& irq_;
  const TrapHookChain* hooks_;
  const Perturbation& perturb_;
  uint8_t* ram_;
  uint64_t ram_base_, ram_size_;
  const uint8_t* page_flags_;
  PageOwners& owners_;
  CodeViews& views_;
  const uint8_t* stale_;  // views_.stale(id_), one load away
  Insn stale_insn_{};  // what fetch_stale() decoded from the stale view
  CpuGrants grants_;  // and the access mode
  bool sync_stop_ = false;
  State ahead_s_;
  std::pair<uint64_t, uint64_t> ahead_sync_{};  // CodeViews::sync_point at the ahead point
  Control ahead_ctl_{};
  uint8_t loop_first_vector_ = 0;  // the exception that started the current trap loop
  uint64_t loop_first_rip_ = 0;
  uint64_t crash_pc_ = 0;
  std::string loop_first_text_;
  Insn sync_insn_{};  // what fetch() returns when decoding is a sync point
  uint64_t stop_ = 0;
  bool stop_requested_ = false;
  bool trace_insns_ = false;
  bool halted_ = false;
  bool sti_shadow_ = false;   // interrupts stay blocked for one instruction after STI
  bool crashed_ = false, hook_stopped_ = false;
  std::string crash_reason_;
  uint64_t traps_ = 0;
  uint64_t last_trap_cycle_ = 0;
  // Where a single-stepped instruction began: its #DB belongs to that step.
  uint64_t step_start_ = ~0ull;
  uint64_t instret_at_last_trap_ = ~0ull;
  int32_t nested_traps_ = 0;
  uint64_t rep_iterations_ = 0;
  uint64_t next_stall_ = ~0ull;
  uint64_t l1_hits_ = 0;
  unsigned iline_bytes_ = 0;         // timing v2's I-cache line; 0 under v1
  unsigned iline_entry_shift_ = 63;  // v1: no two entries differ above bit 63
  unsigned iline_line_shift_ = 6;    // log2(iline_bytes_)
  uint64_t fetch_line_ = ~uint64_t{0};
  uint64_t l1i_hits_ = 0;
  uint64_t fetch_next_ = 0;          // the RIP after the last careful step's instruction
  // Lines this CPU's L1I was found to hold (as the RV64 core's, hart.hpp).
  static constexpr unsigned kIFilter = 4;
  uint64_t ifilter_[kIFilter] = {~uint64_t{0}, ~uint64_t{0}, ~uint64_t{0}, ~uint64_t{0}};
  MemorySystem* mem_ = nullptr;
  const HitFilter* dfilter_ = nullptr;  // mem_'s for this CPU (l1_direct)
  unsigned dline_shift_ = 6;
  bool atomic_ = false;    // executing a locked instruction: its store is not buffered
  bool deferred_ = false;  // the last instruction waited for the store buffer instead of running
  // Where that instruction was and the step count then: run again there, it
  // has been reported to on_insn already.
  std::pair<uint64_t, uint64_t> waited_at_{~uint64_t{0}, 0};
  uint64_t step_cycle_ = 0;  // pos()
  uint8_t load_extra_ = 0;  // cycles a memory operand read adds (set_memory_system)
  // decode() with timing v2's load latency folded into the cycles.
  Insn decode_at(const uint8_t* bytes, size_t avail, uint64_t rip) const;
  uint64_t stall_draws_ = 0;
  Insn fault_insn_{};
  Fast fault_fast_{};            // fast entry for a jump target outside RAM
  uint64_t fetch_base_ = ~0ull;  // the page the CPU executes from
  CodePage* fetch_page_ = nullptr;
  struct RecentPage {
    uint64_t base = ~0ull;
    CodePage* page = nullptr;
  };
  static constexpr unsigned kRecentPages = 8;
  RecentPage recent_[kRecentPages];
};

// Decoded instructions by address, shared by the CPUs of a machine and kept
// coherent with stores like the RV64 cache (docs/ARCHITECTURE.md). Pages
// are never freed while the machine lives, so a CPU may keep a pointer to
// the page it executes from across invalidations.
class DecodeCacheX86 {
 public:
  static constexpr unsigned kPageBytes = CodePage::kBytes;
  // `views`: the relaxed code model's stale views, told of new code pages.
  explicit DecodeCacheX86(Bus& bus, CodeViews* views = nullptr);
  // The entries of the RAM page at `page_base` (created on demand).
  CodePage* page(uint64_t page_base);
  // Marks the page of `addr` as holding code without creating entries (a
  // page an instruction reaches into).
  void watch_page(uint64_t addr) { pages_.watch(addr & ~uint64_t{kPageBytes - 1}); }
  void invalidate(uint64_t addr, uint64_t size);
  void flush();

 private:
  CodePages<CodePage> pages_;
};

}  // namespace ksim::x86
