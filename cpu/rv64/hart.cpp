#include "cpu/rv64/hart.hpp"

#include <algorithm>
#include <limits>

#include "cpu/rv64/fusion.hpp"
#include "cpu/rv64/semantics.hpp"
#include "cpu/stalls.hpp"
#include "cpu/trap_loop.hpp"
#include "cpu/timing.hpp"

namespace ksim::rv64 {

namespace {
constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();

// Whether `in`, at `pc`, is a branch or JAL whose target is on another page.
bool jumps_off_page(const Insn& in, uint64_t pc) {
  const Format f = op_info(in.op).format;
  return (f == Format::B || f == Format::J) && ((pc & (kPageSize - 1)) + static_cast<int64_t>(in.imm)) >= kPageSize;
}

const char* const kAbiNames[32] = {"zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0",
                                   "a1",   "a2", "a3", "a4", "a5", "a6", "a7", "s2", "s3", "s4", "s5",
                                   "s6",   "s7", "s8", "s9", "s10", "s11", "t3", "t4", "t5", "t6"};
}  // namespace

Hart::Hart(int id, Bus& bus, Clint& clint, DecodeCache& cache, Reservations& reservations,
           const TrapHookChain* hooks, const Perturbation& perturb, PageOwners& owners, CodeViews& views)
    : id_(id),
      bus_(bus),
      clint_(clint),
      cache_(cache),
      res_(reservations),
      hooks_(hooks),
      ram_(bus.ram().host()),
      ram_base_(bus.ram().base()),
      ram_size_(bus.ram().size()),
      ram_fast_last_(bus.ram().size() - sizeof(uint64_t)),
      page_flags_(bus.ram().flag_table()),
      owners_(owners),
      views_(views),
      stale_(views.stale_flag(id)),
      perturb_(perturb) {
  grants_.load(owners_, id_);
  ctl_.next_stall = stalls::first(perturb_, id_, s.cycle);
  s.x[10] = static_cast<uint64_t>(id);  // a0 = hartid at reset, as firmware expects
  fault_insn_.fast = &fast_go_precise;
  fault_insn_.exec = &exec_fetch_fault;
  sync_insn_.fast = &fast_go_precise;
  sync_insn_.exec = &exec_sync_point;
  sync_insn_.op = Op::illegal;
  // Start with a valid fetch window (the first RAM page): fetch() trusts
  // the window, whatever PC a loader, checkpoint or host sets first.
  fetch_slow(ram_base_);
  fault_insn_.op = Op::illegal;
}

std::string Hart::gpr_name(int i) const { return (i >= 0 && i < 32) ? kAbiNames[i] : "?"; }

// --- The interpreter -------------------------------------------------------

// Two paths. The fast loop keeps the PC (as a pointer to the decoded
// entry), the cycle count and the retired count in host registers (the
// chain clock, insn.hpp); the instruction's `fast` function returns the
// next entry and the clock. Nothing is written back to `s` per
// instruction, which is what makes it fast.
// Whenever an instruction needs more (a trap, a device, a CSR, a page
// change), its `fast` returns nullptr: the loop writes its state back to
// `s` and runs the instruction's precise semantics, then reloads.
//
// Chains of fast handlers end fusion::kMaxLeadCycles before stop_, so
// that a fused group never straddles the stop (semantics.hpp, fast_pair).
// The last few cycles before stop_ (under exact SMP scheduling nearly
// every slot is that short) run one dispatch per call: a fused group only
// when all but its last instruction end before stop_, else its first
// instruction alone. So the hart stops at exactly the first instruction
// boundary at or after stop_, as the unfused interpreter does.
void Hart::loop_fast() {
  uint64_t cycle = s.cycle, retired = 0;
  const Insn* ip = &fetch(s.pc);
  // Runs `ip` on the precise path, the loop's state written back first.
  auto precise = [&] {
    s.cycle = cycle;
    s.instret += retired;
    retired = 0;
    s.pc = pc_of_any(ip);
    // A decode stub here is an entry decoded only as part of a fused group
    // (Hart::fuse) that now starts a dispatch itself. Under exact SMP its
    // fast handler sends it here (fast_decode): decode it properly now, so
    // that it stops coming back.
    if (ip->fast == &fast_decode) [[unlikely]]
      exec_decode(*this, *ip);
    else
      exec_copy(*ip);
    cycle = s.cycle;
    ip = &fetch(s.pc);
  };
  while (cycle < stop_) {
    // A chain that starts in another line than the last fetch (after a
    // trap, a jump on the precise path, a restore) fetches it first; a
    // miss runs the instruction on the precise path, which charges it.
    if (iline_bytes_ && ((pc_of_any(ip) & ~uint64_t{iline_bytes_ - 1}) != ctl_.fetch_line) &&
        (ip == &fault_insn_ || ip == &sync_insn_ || !enter_line(ip))) [[unlikely]] {
      precise();
      continue;
    }
    Next r;
    ChainClock start;
    // (lead_slack_: under timing v2 a load of a group may cost more than
    // its class, by at most the profile's extra hit latency per load.)
    const uint64_t lead = fusion::kMaxLeadCycles + lead_slack_;
    if (cycle + lead < stop_) [[likely]] {
      const uint64_t chain_stop = std::min(stop_ - lead, cycle + kChainCycles);
      start = chain_start(chain_stop - cycle);
      r = ip->fast(*this, ip, start);
    } else {
      start = chain_start(0);
      // Which group the entry starts is known only once it is decoded (a
      // stub, or an instruction decoded as part of the group before it).
      // Decoding may put back a hart running ahead (before_decode), which
      // needs this hart's clock as it is now.
      if (ip->fast == &fast_decode) {
        s.cycle = cycle;
        decode_into(const_cast<Insn&>(*ip), pc_of(ip));
      }
      // A fused group runs only if all but its last instruction end before
      // stop_ (its first instruction is the least of that); else its first
      // instruction runs alone. (Span > len 0: a fetch-fault entry, alone.)
      const bool cut = ip->span > ip->len && ip->len != 0 &&
                       (cycle + ip->cycles + lead_slack_ >= stop_ || cycle + lead_cycles(*ip) + lead_slack_ >= stop_);
      r = (cut ? unfused(*ip) : ip->fast)(*this, ip, start);
    }
    const ChainClock ran = r.clock - start;  // modulo 2^64: the clock may have carried out
    cycle += clock_cycles(ran);
    retired += clock_retired(ran);
    if (r.ip) [[likely]] {
      ip = r.ip;
      continue;
    }
    ip = precise_ip;
    // An instruction whose line missed (fast_one_edge) may start at the
    // stop: it runs in the next slice, as the reference schedule has it.
    if (cycle >= stop_) [[unlikely]] continue;
    precise();
  }
  s.cycle = cycle;
  s.instret += retired;
  s.pc = pc_of_any(ip);
}

// The base cost of the instructions a fused group runs before its last
// one: its first, and for a triple its second (whose entry is decoded).
uint64_t Hart::lead_cycles(const Insn& in) {
  const Insn& b = (&in)[in.len / 2];
  return in.span > in.len + b.len ? in.cycles + b.cycles : in.cycles;
}

// The fast handler that runs the entry's instruction alone: the row's own
// handler for the first instruction of a fused group (never a branch or JAL, whose
// handler would need the same-page check), the precise path for an entry
// whose handler would decode it (and perhaps fuse it) first.
FastFn Hart::unfused(const Insn& in) {
  if (in.span > in.len) return in.len == 4 ? op_info(in.op).fast : op_info(in.op).fast_compressed;
  if (in.fast == &fast_decode) return &fast_go_precise;
  return in.fast;
}

// One instruction at a time with the state always current: used when
// every instruction is observed (tracing).
template <bool Stale>
void Hart::loop_precise_as() {
  while (s.cycle < stop_) {
    const Insn& in = Stale ? fetch_stale(s.pc) : fetch(s.pc);
    // (An instruction that waited for the store buffer, timing v2, is one
    // instruction executed: its second attempt is not reported again.)
    if (trace_insns_ && on_insn && waited_at_ != std::pair{s.pc, steps()}) {
      // Observers see the decoded instruction, not the decode-me stub.
      if (in.exec == &exec_decode) decode_into(const_cast<Insn&>(in), s.pc);
      on_insn(*this, in);
    }
    uint64_t before = steps();
    if (in.exec == &exec_decode)
      in.exec(*this, in);  // fills the cache's entry, then runs a copy of it
    else
      exec_copy(in);
    if (step_budget_ && steps() != before && --step_budget_ == 0) break;
  }
}

bool Hart::prepare(uint64_t until) {
  // Nothing can have changed since the last full preparation: no interrupt
  // or CSR change (they end the slice, which clears prepared_), no trap, and
  // the clock is still short of the next timer, IPI or stall. Exact SMP
  // prepares a slice per instruction or two, so this is worth having.
  if (prepared_ && s.cycle < next_event_) {
    if (stop_requested_ || s.cycle >= until) return false;
    stop_ = std::min(until, next_event_);
    return true;
  }
  if (ctl_.idle) {
    if ((mip() & s.mie) == 0) return false;  // still waiting; the scheduler moves time
    ctl_.idle = false;
  }
  // A seeded memory stall that is due costs its cycles now; so does one
  // that came due while an interrupt was being taken (the handler's first
  // instruction is the next boundary, in every schedule).
  stalls::charge_due(perturb_, id_, s.cycle, ctl_.next_stall, ctl_.stall_draws);
  if (check_interrupts()) stalls::charge_due(perturb_, id_, s.cycle, ctl_.next_stall, ctl_.stall_draws);
  if (stop_requested_ || ctl_.idle || s.cycle >= until) return false;
  // Stop at the next event (a timer or IPI becoming visible, a stall) so it
  // is handled at the right instruction boundary.
  next_event_ = kNever;
  for (uint64_t e : {clint_.timer_cycle(id_), clint_.msip_cycle(id_), ctl_.next_stall})
    if (e > s.cycle && e < next_event_) next_event_ = e;
  prepared_ = true;
  stop_ = std::min(until, next_event_);
  return true;
}

void Hart::run(uint64_t until) { Slice::run(*this, until); }

uint64_t Hart::step(uint64_t until, uint64_t steps) { return Slice::step(*this, until, steps); }

void Hart::begin_slice() {
  stop_requested_ = false;
  sync_stop_ = false;
  stop_reason_ = StopReason::none;
  step_budget_ = 0;
}

void Hart::run_pass() {
  // A hart with a stale view of code fetches through its view: precise.
  // (With buffered stores, timing v2, the fast path goes on: a load of a
  // line they touch fails l1_direct and runs precisely, which forwards.)
  if ((trace_insns_ && on_insn) || *stale_)
    loop_precise();
  else
    loop_fast();
}

void Hart::step_pass(uint64_t budget) {
  step_budget_ = budget;
  loop_precise();
}

// Moves the fetch window to the page of `pc`. Code that calls across pages
// moves it often (the guest kernel every 200 instructions or so), so the
// hart remembers a few recent pages rather than asking the decode cache's
// map each time (pages live as long as the cache).
const Insn& Hart::fetch_slow(uint64_t pc) {
  uint64_t base = pc & ~(kPageSize - 1);
  RecentPage& recent = recent_pages_[(base >> kPageShift) % kRecentPages];
  if (recent.base != base) {
    if (!bus_.ram().contains(base, kPageSize)) {
      fault_pc_ = pc;
      return fault_insn_;
    }
    // The page becomes a code page, whose stores are sync points ahead:
    // CPUs ahead that stored into it are put back first, or ahead this is
    // a sync point (PageOwners::before_flag).
    if (owners_.enabled() && !(page_flags_[(base - ram_base_) >> kPageShift] & kPageHasCode) &&
        !owners_.before_flag(id_, s.cycle, base, grants_.mode)) {
      fault_pc_ = pc;
      sync_stop();
      return sync_insn_;
    }
    recent = RecentPage{base, cache_.page(base)};
  }
  fetch_page_ = recent.page;
  fetch_base_ = base;
  return fetch_page_[(pc - base) >> 1];
}

// The instruction at `pc` as this hart sees it. Bytes of stores it has not
// seen yet (no fence.i since) are decoded on the fly, outside the shared
// cache; everything else comes from the cache as usual.
const Insn& Hart::fetch_stale(uint64_t pc) {
  if (!views_.expire(id_, s.cycle)) {
    end_slice();  // the view has expired: the fast path again from the next slice
    return fetch(pc);
  }
  if (!views_.overlaps(id_, pc, 4)) return fetch(pc);
  uint8_t b[4] = {};
  const size_t n = views_.read(id_, pc, b, sizeof b);
  uint16_t lo = 0, hi = 0;
  std::memcpy(&lo, b, 2);
  std::memcpy(&hi, b + 2, 2);
  if (n < 2 || (!is_compressed(lo) && n < 4)) return fetch(pc);  // at the end of RAM: fetch() faults
  stale_insn_ = decode(lo, hi);
  views_.note_fetch(id_, s.cycle, pc, stale_insn_.len);
  return stale_insn_;
}

void Hart::serialize_code() {
  if (!*stale_) {
    views_.note_serialized(id_, s.cycle);
  } else {
    views_.serialize(id_, s.cycle);
    end_slice();  // back to the fast path
  }
  // The U54's FENCE.I flushes its I-cache (FU540 §4.1); the refills are
  // its cost. (The view is dropped first: that is the synchronisation.)
  if (mem_ && !mem_->profile().l1i_coherent) {
    mem_->iflush(id_);
    ctl_.fetch_line = ~uint64_t{0};
  }
}

void Hart::see_code_now() {
  if (!*stale_) return;
  views_.drop_all(id_, s.cycle);
  end_slice();
}

void Hart::decode_into(Insn& slot, uint64_t pc) {
  if (owners_.enabled() && !owners_.before_decode(id_, s.cycle, pc, grants_.mode)) {
    sync_stop();
    return;
  }
  decode_one(slot, pc);
  fuse(slot, pc);
}

void Hart::decode_one(Insn& slot, uint64_t pc) {
  uint16_t lo = 0, hi = 0;
  std::memcpy(&lo, ram_ptr(pc), 2);  // fetch_slow checked the page is RAM
  if (!is_compressed(lo)) {
    uint64_t next = pc + 2;
    if (!bus_.ram().contains(next, 2)) {
      // The second half lies outside RAM: fault on that half's address.
      slot = fault_insn_;
      slot.imm = 2;
      slot.span = 4;
      return;
    }
    std::memcpy(&hi, ram_ptr(next), 2);
    if ((next & (kPageSize - 1)) == 0) cache_.watch_page(next);  // crosses a page
  }
  slot = decode(lo, hi);
  // A branch or JAL whose target is on another page always takes the
  // precise path (which moves the fetch window): the fast handlers then
  // find every target at a constant distance in the same page.
  if (jumps_off_page(slot, pc))
    slot.fast = &fast_go_precise;
  else if (iline_bytes_ && may_leave_line(slot, pc) && slot.op != Op::illegal)
    slot.fast = slot.len == 4 ? op_info(slot.op).fast_edge : op_info(slot.op).fast_compressed_edge;
}

bool Hart::may_leave_line(const Insn& in, uint64_t pc) const {
  const uint64_t mask = ~uint64_t{iline_bytes_ - 1};
  if (((pc + in.len) & mask) != (pc & mask)) return true;
  switch (op_info(in.op).format) {
    case Format::B:
    case Format::J:
      return ((pc + static_cast<uint64_t>(static_cast<int64_t>(in.imm))) & mask) != (pc & mask);
    case Format::JALR:
      return true;
    default:
      return false;
  }
}

bool Hart::enter_line(const Insn* n) {
  const uint64_t line = pc_of(n) & ~uint64_t{iline_bytes_ - 1};
  uint64_t& f = ifilter_[(line >> iline_line_shift_) % kIFilter];
  if (f != line) {
    if (!mem_->ihit(id_, line)) return false;
    f = line;
  }
  ++ctl_.l1i_hits;
  ctl_.fetch_line = line;
  return true;
}

bool Hart::fetch_line_slow(uint64_t line) {
  // Outside RAM the fetch faults (or reads a device): no line is filled.
  if (!bus_.ram().contains(line, iline_bytes_)) return true;
  if (mem_->ihit(id_, line)) {
    ++ctl_.l1i_hits;
  } else {
    if (ahead()) return sync_stop();
    s.cycle += mem_->ifetch(id_, step_cycle_, line);
  }
  ctl_.fetch_line = line;
  return true;
}

// `a` (at `pc`, an entry of a decode-cache page) becomes a fused group
// with the instructions after it: a triple with the next two, or else a
// pair with the next one, when fusion_table.def has it and the whole group
// lies on this page. Keeping a group on one page means the entries of all
// its instructions are in the same array and one page's invalidation
// covers the whole group. If a later instruction has not been decoded yet
// it is decoded now, but not fused in turn (decoding stays one entry at a
// time): its fast handler stays the decode stub's, so that the first time
// it starts a dispatch itself (a jump into the middle of the group), it is
// decoded again and may then be fused with the instructions after it.
// Re-decoding rewrites the same fields, which the group reads while it
// lives; when such an entry is reset, the decode cache resets the group
// too (DecodeCache::reset).
void Hart::fuse(Insn& a, uint64_t pc) {
  if (a.span != a.len) return;  // not an instruction (fault entry)
  // Timing v2: a group stays inside one I-cache line and never leaves it
  // (only fast_one_edge fetches a new line).
  if (iline_bytes_ && may_leave_line(a, pc)) return;
  Insn* b = next_on_page(a, pc);
  if (!b) return;
  if (iline_bytes_ && may_leave_line(*b, pc + a.len)) return;
  FastFn pair = fused_fast(a, *b);
  if (!pair) return;
  if (Insn* c = next_on_page(*b, pc + a.len); c && !(iline_bytes_ && may_leave_line(*c, pc + a.len + b->len))) {
    if (FastFn triple = fused_triple_fast(a, *b, *c)) {
      a.fast = triple;
      a.span = static_cast<uint8_t>(a.len + b->len + c->len);
      return;
    }
  }
  a.fast = pair;
  a.span = static_cast<uint8_t>(a.len + b->len);
}

// The decoded entry of the instruction after `in` (at `pc`), when it lies
// wholly on the same page and is no branch or JAL to another page (so it
// may end a fused group); decodes it first if need be.
Insn* Hart::next_on_page(Insn& in, uint64_t pc) {
  const uint64_t off_n = (pc & (kPageSize - 1)) + in.len, pc_n = pc + in.len;
  if (off_n + 2 > kPageSize) return nullptr;
  Insn& n = (&in)[in.len / 2];
  if (n.exec == &exec_decode) {
    uint16_t lo = 0;
    std::memcpy(&lo, ram_ptr(pc_n), 2);
    if (!is_compressed(lo) && off_n + 4 > kPageSize) return nullptr;  // n crosses into the next page
    decode_one(n, pc_n);
    n.fast = &fast_decode;
  }
  if (off_n + n.len > kPageSize || jumps_off_page(n, pc_n)) return nullptr;
  return &n;
}

// --- Memory slow paths -----------------------------------------------------

// Devices (and addresses that are neither RAM nor a device). Every device
// access is a sync point for a hart running ahead; in exact order, the
// harts ahead are put back first, as a device may interrupt them or end
// the run.
bool Hart::device_access_ok(uint64_t addr, unsigned size, bool is_write, uint64_t value) {
  if (!owners_.enabled()) return true;
  if (grants_.mode != AccessMode::exact) return sync_stop();
  owners_.resolve_mask(id_, pos(), bus_.cpus_affected(accessor(), addr, size, is_write, value));
  return true;
}

bool Hart::load_slow(uint64_t addr, unsigned size, uint64_t& out) {
  if (grants_.mode == AccessMode::exact) drain_stores();  // device accesses follow the stores before them
  if (!device_access_ok(addr, size, false, 0)) return false;
  if (bus_.load(accessor(), addr, size, out) == AccessResult::ok) {
    if (size < 8) out &= (uint64_t{1} << (8 * size)) - 1;
    return true;
  }
  // Devices only decode aligned accesses; a misaligned one is reported as
  // misaligned (the spec lets I/O regions do that), anything else as a fault.
  bool misaligned = (addr & (size - 1)) != 0 && bus_.device_at(addr) != nullptr;
  raise(misaligned ? kLoadMisaligned : kLoadAccessFault, addr);
  return false;
}

bool Hart::store_slow(uint64_t addr, unsigned size, uint64_t value) {
  if (grants_.mode == AccessMode::exact) drain_stores();
  if (!device_access_ok(addr, size, true, value)) return false;
  if (bus_.store(accessor(), addr, size, value) == AccessResult::ok) return true;
  bool misaligned = (addr & (size - 1)) != 0 && bus_.device_at(addr) != nullptr;
  raise(misaligned ? kStoreMisaligned : kStoreAccessFault, addr);
  return false;
}

bool Hart::amo_check(uint64_t addr, unsigned size, bool is_load_reserved) {
  // Atomics touch the harts' shared reservations: a sync point ahead.
  if (grants_.mode != AccessMode::exact) return sync_stop();
  // The stores before it are visible first (it runs again once they are).
  if (!stores_visible()) return false;
  if (addr & (size - 1)) {
    raise(is_load_reserved ? kLoadMisaligned : kStoreMisaligned, addr);
    return false;
  }
  if (!bus_.ram().contains(addr, size)) {  // devices do not support atomics
    raise(is_load_reserved ? kLoadAccessFault : kStoreAccessFault, addr);
    return false;
  }
  if (owners_.enabled()) {
    // The reservation's page is about to carry kPageReserved (before_flag;
    // atomics run in exact order only, where it puts back and returns true).
    if (is_load_reserved && !(bus_.ram().page_flags(addr) & kPageReserved))
      owners_.before_flag(id_, s.cycle, addr, grants_.mode);
    owners_.access(id_, pos(), addr, size, !is_load_reserved, grants_.mode);
    if (!is_load_reserved && bus_.ram().page_flags(addr)) owners_.flagged_store(id_, pos(), grants_.mode, bus_.ram().page_flags(addr));
  }
  // LR too takes the line exclusive (issue 23, §2), as SiFive's cores do
  // to make the SC that follows succeed.
  if (mem_) s.cycle += cache_access(addr, size, true);
  return true;
}

void Hart::set_memory_system(MemorySystem* m) {
  mem_ = m;
  load_extra_[0] = load_extra_[1] = 0;
  if (!m) return;
  dfilter_ = m->filter(id_);
  dline_shift_ = m->line_shift();
  // The load class already charges its cycles (cpu/timing.hpp); a hit costs
  // the profile's load-to-use latency, which is never less on the U54.
  const uint64_t base = timing::kClassCycles[static_cast<int>(timing::Class::load)];
  const MachineProfile& p = m->profile();
  load_extra_[0] = static_cast<uint8_t>(p.l1d_latency > base ? p.l1d_latency - base : 0);
  load_extra_[1] = static_cast<uint8_t>(p.l1d_latency_narrow > base ? p.l1d_latency_narrow - base : 0);
  // A fused group's first two instructions may both be loads.
  lead_slack_ = 2 * std::max(load_extra_[0], load_extra_[1]);
  // One line of code is line/2 entries of sizeof(Insn) bytes.
  iline_bytes_ = p.l1i.line_bytes;
  iline_line_shift_ = 0;
  while ((1u << iline_line_shift_) < iline_bytes_) ++iline_line_shift_;
  iline_entry_shift_ = 0;
  while ((uint64_t{1} << iline_entry_shift_) < uint64_t{iline_bytes_} / 2 * sizeof(Insn)) ++iline_entry_shift_;
  ctl_.fetch_line = ~uint64_t{0};
  for (uint64_t& f : ifilter_) f = ~uint64_t{0};
}

void Hart::note_atomic_store(uint64_t addr, unsigned size) {
  if (bus_.ram().page_flags(addr)) bus_.notify_flagged_store(accessor(), addr, size);
}

// --- Traps and interrupts --------------------------------------------------

void Hart::raise(uint64_t cause, uint64_t tval) {
  take_trap(TrapInfo{cause, tval, s.pc, false});
}

void Hart::take_trap(const TrapInfo& t) {
  // A trap runs hooks and reaches the outside world: a sync point ahead.
  if (grants_.mode != AccessMode::exact) {
    sync_stop();
    return;
  }
  if (t.interrupt) step_cycle_ = s.cycle;  // an interrupt is a step of its own
  drain_stores();  // the handler (or a hook) sees every store before the trap
  last_trap_ = t;
  ++ctl_.traps;
  prepared_ = false;  // privilege, mstatus and the PC change
  const uint64_t taken = s.cycle;
  last_trap_cycle_ = taken;
  s.cycle += timing::kTrapEntryCycles;
  if (hooks_ && !hooks_->empty()) {
    HookResult r = hooks_->run(*this, t);
    if (r != HookResult::pass) {
      if (on_trap) on_trap(*this, TrapRecord{t, false, taken});
      if (r == HookResult::stop) {
        stop_reason_ = StopReason::hook;
        request_stop();
      }
      return;
    }
  }
  if (on_trap) on_trap(*this, TrapRecord{t, true, taken});

  if (!t.interrupt && note_exception(s.instret, ctl_.instret_at_last_trap, ctl_.nested_traps)) {
    loop_last_ = t;
    stop_reason_ = StopReason::trap_loop;
    request_stop();
    return;
  }

  if (!t.interrupt && ctl_.nested_traps == 0) loop_first_ = t;  // a loop's first trap, for its report

  // A hook that passes the trap on may have moved the PC (the kprobes
  // engine reports a fault in an out-of-line step at the probed address).
  s.mepc = s.pc & ~uint64_t{1};
  s.mcause = t.cause | (t.interrupt ? (uint64_t{1} << 63) : 0);
  s.mtval = t.tval;
  uint64_t st = s.mstatus;
  st = (st & ~kMstatusMPIE) | ((st & kMstatusMIE) ? kMstatusMPIE : 0);
  st &= ~kMstatusMIE;
  st = (st & ~kMstatusMPP) | (static_cast<uint64_t>(s.priv) << 11);
  s.mstatus = st;
  s.priv = Priv::M;
  uint64_t base = s.mtvec & ~uint64_t{3};
  s.pc = (t.interrupt && (s.mtvec & 1)) ? base + 4 * t.cause : base;
}

uint64_t Hart::mip() const {
  uint64_t v = 0;
  if (s.cycle >= clint_.msip_cycle(id_)) v |= kMSIP;
  if (s.cycle >= clint_.timer_cycle(id_)) v |= kMTIP;
  return v;
}

bool Hart::check_interrupts() {
  uint64_t pending = mip() & s.mie;
  if (!pending) return false;
  if (s.priv == Priv::M && !(s.mstatus & kMstatusMIE)) return false;
  // Priority among machine interrupts: external, software, timer.
  uint64_t cause = (pending & kMEIP) ? kIrqMExt : (pending & kMSIP) ? kIrqMSoft : kIrqMTimer;
  take_trap(TrapInfo{cause, 0, s.pc, true});
  return true;
}

uint64_t Hart::wake_cycle() const {
  if (!ctl_.idle) return s.cycle;
  uint64_t t = kNever;
  if (s.mie & kMTIP) t = std::min(t, clint_.timer_cycle(id_));
  if (s.mie & kMSIP) t = std::min(t, clint_.msip_cycle(id_));
  return t == kNever ? kNever : std::max(s.cycle, t);
}

void Hart::advance_idle(uint64_t to_cycle) {
  if (to_cycle > s.cycle) s.cycle = to_cycle;
}

void Hart::do_mret(const Insn& i) {
  if (s.priv != Priv::M) {
    raise(kIllegalInsn, i.raw);
    return;
  }
  uint64_t st = s.mstatus;
  s.priv = static_cast<Priv>((st & kMstatusMPP) >> 11);
  st = (st & ~kMstatusMIE) | ((st & kMstatusMPIE) ? kMstatusMIE : 0);
  st |= kMstatusMPIE;
  st &= ~kMstatusMPP;  // MPP <- least-privileged mode (U)
  if (s.priv != Priv::M) st &= ~kMstatusMPRV;
  s.mstatus = st;
  s.pc = s.mepc;
  s.cycle += i.cycles;
  ++s.instret;
  end_slice();  // interrupt enable may have changed
}

void Hart::do_wfi(const Insn& i) {
  // In U-mode with mstatus.TW set WFI is illegal; otherwise it completes,
  // and without a pending enabled interrupt the hart idles until one comes.
  if (s.priv == Priv::U && (s.mstatus & kMstatusTW)) {
    raise(kIllegalInsn, i.raw);
    return;
  }
  if (grants_.mode != AccessMode::exact) {  // idling is decided in exact order
    sync_stop();
    return;
  }
  if (!stores_visible()) return;
  retire(i);
  if ((mip() & s.mie) == 0 && s.priv == Priv::M) {
    ctl_.idle = true;
    end_slice();
  }
}

}  // namespace ksim::rv64
