#include "cpu/x86/x86_cpu.hpp"

#include "cpu/hex.hpp"

#include <limits>
#include <span>

#include "cpu/stalls.hpp"
#include "cpu/trap_loop.hpp"
#include "cpu/timing.hpp"
#include "cpu/x86/fast.hpp"
#include "cpu/x86/flags.hpp"
#include "cpu/x86/semantics.hpp"

namespace ksim::x86 {

namespace {
constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();
const char* const kNames[16] = {"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
                                "r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15"};
// MSRs modelled.
constexpr uint32_t kMsrTsc = 0x10, kMsrApicBase = 0x1b, kMsrFsBase = 0xc0000100, kMsrGsBase = 0xc0000101,
                   kMsrKernelGsBase = 0xc0000102;
}  // namespace

// --- Decode cache ------------------------------------------------------------

CodePage::CodePage() {
  reset(0, kBytes);
  for (unsigned k = kBytes; k < kBytes + kGuards; ++k) fast[k].fn = &fast_next_page;
}

void CodePage::reset(unsigned from, unsigned to) {
  for (unsigned k = from; k < to; ++k) fast[k].fn = &fast_decode;
}

bool CodePage::decoded(unsigned k) const { return fast[k].fn != &fast_decode; }

DecodeCacheX86::DecodeCacheX86(Bus& bus, CodeViews* views)
    : pages_(bus, [this](uint64_t addr, unsigned size) { invalidate(addr, size); }, views) {}

CodePage* DecodeCacheX86::page(uint64_t page_base) {
  return pages_.get(page_base, [] { return std::make_unique<CodePage>(); });
}

void DecodeCacheX86::invalidate(uint64_t addr, uint64_t size) {
  // An instruction is at most 15 bytes long: one starting up to 14 bytes
  // before the store may overlap it. A CPU's store touches at most two
  // pages; the host may write more at once: walk page by page, one lookup
  // each.
  uint64_t a = addr >= 14 ? addr - 14 : 0;
  const uint64_t end = addr + size;
  while (a < end) {
    const uint64_t base = a & ~uint64_t{kPageBytes - 1};
    const uint64_t stop = std::min(end, base + kPageBytes);
    if (CodePage* p = pages_.find(base))  // none: a page only reached into by a page-crossing instruction
      p->reset(static_cast<unsigned>(a - base), static_cast<unsigned>(stop - base));
    a = stop;
  }
}

void DecodeCacheX86::flush() {
  pages_.for_each([](CodePage& p) { p.reset(0, kPageBytes); });
}

// --- CPU ---------------------------------------------------------------------

X86Cpu::X86Cpu(int id, Bus& bus, DecodeCacheX86& cache, InterruptSource& irq, const TrapHookChain* hooks,
               const Perturbation& perturb, PageOwners& owners, CodeViews& views)
    : id_(id),
      bus_(bus),
      cache_(cache),
      irq_(irq),
      hooks_(hooks),
      perturb_(perturb),
      ram_(bus.ram().host()),
      ram_base_(bus.ram().base()),
      ram_size_(bus.ram().size()),
      page_flags_(bus.ram().flag_table()),
      owners_(owners),
      views_(views),
      stale_(views.stale_flag(id)) {
  grants_.load(owners_, id_);
  s.gpr[7] = static_cast<uint64_t>(id);  // rdi = cpu number at reset
  fault_insn_.exec = nullptr;
  sync_insn_.exec = [](X86Cpu&, const Insn&) {};  // not executed: the CPU stops
  fault_fast_.fn = &fast_go_precise;
  next_stall_ = stalls::first(perturb_, id_, s.cycle);
}

std::string X86Cpu::gpr_name(int i) const { return (i >= 0 && i < 16) ? kNames[i] : "?"; }

std::string X86Cpu::insn_text(uint64_t rip) const {
  if (!bus_.ram().contains(rip, 1)) return "(outside RAM)";
  const uint64_t avail = std::min<uint64_t>(15, ram_base_ + ram_size_ - rip);
  return disassemble(ram_ + (rip - ram_base_), avail, rip);
}

uint64_t X86Cpu::effective_address(const Insn& i, const Operand& o) const {
  uint64_t a = static_cast<uint64_t>(o.disp);
  if (o.base == kRip) a += s.rip + i.len;
  else if (o.base != kNoReg) a += s.gpr[o.base];
  if (o.index != kNoReg) a += s.gpr[o.index] * o.scale;
  if (o.addr32) a &= 0xffffffff;
  if (o.seg == kSegFs) a += s.fs_base;
  else if (o.seg == kSegGs) a += s.gs_base;
  return a;
}

bool X86Cpu::read_mem_operand(const Insn& i, const Operand& o, uint64_t& v) {
  if (o.kind == OpKind::mem) return mem_read(effective_address(i, o), o.size, v);
  v = 0;  // OpKind::none
  return true;
}

bool X86Cpu::write_mem_operand(const Insn& i, const Operand& o, uint64_t v) {
  if (o.kind == OpKind::mem) return mem_write(effective_address(i, o), o.size, v);
  return true;
}

// Flat physical addressing: RAM directly, devices through the bus (naturally
// aligned), anything else #GP(0) (there is no paging, so no #PF).
bool X86Cpu::mem_read(uint64_t addr, unsigned size, uint64_t& v) {
  uint64_t off = addr - ram_base_;
  if (size <= 8 && off < ram_size_ && size <= ram_size_ - off) {
    // A locked instruction's load takes the line exclusive (its store follows).
    if (mem_ && !cache_ready(addr, size, atomic_)) return sync_stop();
    if (!may_read(off, size) && !owners_.access(id_, pos(), addr, size, false, grants_.mode)) [[unlikely]]
      return sync_stop();
    v = 0;
    if (mem_) {
      // Its own buffered stores first (forwarding; timing v2).
      if (mem_->buffered(id_) && forwarded(addr, size, v)) return true;
      s.cycle += cache_access(addr, size, atomic_);
    }
    std::memcpy(&v, ram_ + off, size);
    return true;
  }
  if (grants_.mode == AccessMode::exact) drain_stores();  // device accesses follow the stores before them
  if (!device_access_ok(addr, size, false, 0)) return false;
  if (size <= 8 && bus_.load(accessor(), addr, size, v) == AccessResult::ok) return true;
  raise(kGP, "load from unmapped address", true, 0);
  return false;
}

bool X86Cpu::mem_write(uint64_t addr, unsigned size, uint64_t v) {
  uint64_t off = addr - ram_base_;
  if (size <= 8 && off < ram_size_ && size <= ram_size_ - off) {
    // A store into a flagged page is a sync point ahead: stop before the
    // block grant, which would copy the block for a store that is not made.
    const uint8_t flags = page_flags_[off >> kPageShift] | page_flags_[(off + size - 1) >> kPageShift];
    if (mem_ && !cache_ready(addr, size, true)) return sync_stop();
    if (flags && owners_.enabled() && !owners_.flagged_store(id_, pos(), grants_.mode, flags)) [[unlikely]]
      return sync_stop();
    if (!may_write(off, size) && !owners_.access(id_, pos(), addr, size, true, grants_.mode)) [[unlikely]]
      return sync_stop();
    if (mem_) {
      // A store into a watched page (code, tohost) is visible at once,
      // after the stores before it.
      if (flags) drain_stores();
      const MemorySystem::StoreResult r = mem_->store(id_, s.cycle, pos(), addr, size, v, flags == 0 && !atomic_);
      l1_hits_ += r.hit;
      s.cycle += r.stall;
      if (r.buffered) return true;
    }
    std::memcpy(ram_ + off, &v, size);
    if (flags) bus_.notify_flagged_store(accessor(), addr, size);
    return true;
  }
  if (grants_.mode == AccessMode::exact) drain_stores();
  if (!device_access_ok(addr, size, true, v)) return false;
  if (size <= 8 && bus_.store(accessor(), addr, size, v) == AccessResult::ok) return true;
  raise(kGP, "store to unmapped address", true, 0);
  return false;
}

Insn X86Cpu::decode_at(const uint8_t* bytes, size_t avail, uint64_t rip) const {
  Insn in = decode(bytes, avail, rip);
  in.cycles = static_cast<uint8_t>(in.cycles + load_extra_ * in.mem_reads);
  return in;
}

void X86Cpu::set_memory_system(MemorySystem* m) {
  mem_ = m;
  // Most x86 loads are MOVs, whose class (alu) charges one cycle: a hit
  // costs the profile's load-to-use latency, the rest of it added here
  // per memory operand read (until the pipeline model prices each
  // instruction, issue 25).
  const uint64_t base = timing::kClassCycles[static_cast<int>(timing::Class::alu)];
  load_extra_ = m && m->profile().l1d_latency > base ? static_cast<uint8_t>(m->profile().l1d_latency - base) : 0;
  iline_bytes_ = m ? m->profile().l1i.line_bytes : 0;
  iline_line_shift_ = 0;
  while ((1u << iline_line_shift_) < iline_bytes_) ++iline_line_shift_;
  iline_entry_shift_ = 63;
  if (m) {
    // One line of code is `line` fast entries of sizeof(Fast) bytes.
    iline_entry_shift_ = 0;
    while ((uint64_t{1} << iline_entry_shift_) < uint64_t{iline_bytes_} * sizeof(Fast)) ++iline_entry_shift_;
  }
  fetch_line_ = ~uint64_t{0};
  for (uint64_t& f : ifilter_) f = ~uint64_t{0};
  if (m) {
    dfilter_ = m->filter(id_);
    dline_shift_ = m->line_shift();
  }
}

bool X86Cpu::fetch_line_precise() {
  const uint64_t line = s.rip & ~uint64_t{iline_bytes_ - 1};
  if (line == fetch_line_) return true;
  // Outside RAM the fetch faults: no line is filled.
  if (!bus_.ram().contains(line, iline_bytes_)) return true;
  if (mem_->ihit(id_, line)) {
    ++l1i_hits_;
  } else {
    if (grants_.mode != AccessMode::exact) return sync_stop();
    s.cycle += mem_->ifetch(id_, step_cycle_, line);
  }
  fetch_line_ = line;
  return true;
}

uint64_t X86Cpu::msr_read(uint32_t msr, bool& ok) const {
  ok = true;
  switch (msr) {
    case kMsrTsc: return s.cycle;
    case kMsrApicBase: return 0xfee00000 | (1u << 11) | (id_ == 0 ? (1u << 8) : 0);
    case kMsrFsBase: return s.fs_base;
    case kMsrGsBase: return s.gs_base;
    case kMsrKernelGsBase: return s.kernel_gs_base;
    default: ok = false; return 0;
  }
}

bool X86Cpu::msr_write(uint32_t msr, uint64_t v) {
  switch (msr) {
    case kMsrFsBase: s.fs_base = v; return true;
    case kMsrGsBase: s.gs_base = v; return true;
    case kMsrKernelGsBase: s.kernel_gs_base = v; return true;
    default: return false;
  }
}

void X86Cpu::raise(uint8_t vector, std::string text, bool has_error, uint64_t error) {
  deliver(vector, s.rip, false, std::move(text), has_error, error);
}

// Interrupt/exception delivery through a 64-bit IDT gate (SDM vol. 3,
// 6.14): the CPU aligns RSP to 16, pushes SS, RSP, RFLAGS, CS, RIP and, for
// exceptions that have one, the error code; clears TF, NT, RF and, for an
// interrupt gate, IF; and jumps to the gate's offset. Host trap hooks see
// the trap first.
void X86Cpu::deliver(uint8_t vector, uint64_t return_rip, bool interrupt, std::string text, bool has_error,
                     uint64_t error) {
  // A trap runs hooks and reaches the outside world: a sync point ahead.
  if (grants_.mode != AccessMode::exact) {
    sync_stop();
    return;
  }
  if (interrupt) step_cycle_ = s.cycle;  // an interrupt is a step of its own
  ++traps_;
  halted_ = false;  // delivering an event ends HLT (SDM HLT)
  // Delivering an interrupt or exception serialises: the handler (the
  // kprobes engine's included) and the code it returns to are fetched anew.
  serialize_code();
  const uint64_t taken = s.cycle;
  // An exception belongs to the step that raised it (a TF #DB comes after
  // its instruction); an interrupt is taken between steps, now.
  last_trap_cycle_ = !interrupt && step_start_ != ~0ull ? step_start_ : taken;
  step_start_ = ~0ull;
  s.cycle += timing::kTrapEntryCycles;
  TrapInfo t{vector, 0, s.rip, interrupt};
  if (hooks_ && !hooks_->empty()) {
    HookResult r = hooks_->run(*this, t);
    if (r != HookResult::pass) {
      // (A hook that takes the trap stands for a handler that ends with
      // IRET, which serialises: the kprobes engine does that when it hands
      // the CPU back, Engine::leave; the patcher's IPI work returns into
      // the guest's handler, whose own iretq does.)
      if (on_trap) on_trap(*this, TrapRecord{t, false, text, taken});
      if (r == HookResult::stop) {
        hook_stopped_ = true;
        request_stop();
      }
      return;
    }
  }
  // A hook that passes the trap on may have moved RIP (the kprobes engine
  // reports a fault in an out-of-line step at the probed address).
  if (s.rip != t.pc) return_rip = s.rip;
  if (on_trap) on_trap(*this, TrapRecord{t, true, text, taken});
  const bool trap_loop = !interrupt && note_exception(s.instret, instret_at_last_trap_, nested_traps_);
  auto crash = [&](const std::string& why, uint64_t pc) {
    crashed_ = true;
    crash_pc_ = pc;
    crash_reason_ = "cpu " + std::to_string(id_) + ": " + why;
    request_stop();
  };
  if (!interrupt && nested_traps_ == 0) {  // a loop's first trap, for its report
    loop_first_vector_ = vector;
    loop_first_rip_ = t.pc;
    loop_first_text_ = text;
  }
  // The first trap is what the guest did wrong; the others are its
  // handlers faulting in turn. (Not in checkpoints: a run restored inside
  // a loop names the first trap since the restore.)
  if (trap_loop)
    return crash("unhandled trap loop: vector " + std::to_string(loop_first_vector_) + " at rip " +
                 hex(loop_first_rip_) + (loop_first_text_.empty() ? "" : " (" + loop_first_text_ + ")") + ", then " +
                 std::to_string(kMaxNestedTraps) + " more with no instruction retired, the last vector " +
                 std::to_string(vector) + " at rip " + hex(t.pc),
                 loop_first_rip_);
  const uint64_t gate = s.idt_base + 16ull * vector;
  uint64_t lo, hi;
  if (16ull * vector + 15 > s.idt_limit || !bus_.ram().contains(gate, 16)) {
    return crash("vector " + std::to_string(vector) + " has no IDT entry (triple fault)" +
                 (text.empty() ? "" : ": " + text),
                 t.pc);
  }
  note_access(gate, 16, false);
  std::memcpy(&lo, ram_ + (gate - ram_base_), 8);
  std::memcpy(&hi, ram_ + (gate + 8 - ram_base_), 8);
  const bool present = (lo >> 47) & 1;
  const unsigned type = (lo >> 40) & 0xf;
  if (!present || (type != 0xe && type != 0xf))
    return crash("vector " + std::to_string(vector) + ": IDT gate not present (triple fault)", t.pc);
  const uint64_t target = (lo & 0xffff) | ((lo >> 32) & 0xffff0000ull) | (hi << 32);
  const uint64_t old_rsp = s.gpr[4];
  uint64_t rsp = old_rsp & ~uint64_t{15};
  const uint64_t frame[6] = {s.ss, old_rsp, s.rflags, s.cs, return_rip, error};
  for (uint64_t v : std::span<const uint64_t>(frame, has_error ? 6 : 5)) {
    rsp -= 8;
    uint64_t off = rsp - ram_base_;
    if (off >= ram_size_ || 8 > ram_size_ - off) return crash("interrupt frame outside RAM (triple fault)", t.pc);
    note_access(rsp, 8, true);
    if (page_flags_[off >> kPageShift] && owners_.enabled())
      owners_.flagged_store(id_, last_trap_cycle_, grants_.mode, page_flags_[off >> kPageShift]);
    std::memcpy(ram_ + off, &v, 8);
    if (page_flags_[off >> kPageShift]) bus_.notify_flagged_store(accessor(), rsp, 8);
  }
  s.gpr[4] = rsp;
  s.rflags &= ~(kTF | kNT | kRF);
  if (type == 0xe) s.rflags &= ~kIF;
  s.rip = target;
}

void X86Cpu::do_iretq(const Insn& i) {
  uint64_t rip, cs, fl, rsp, ss;
  const uint64_t sp = s.gpr[4];
  if (!mem_read(sp, 8, rip) || !mem_read(sp + 8, 8, cs) || !mem_read(sp + 16, 8, fl) || !mem_read(sp + 24, 8, rsp) ||
      !mem_read(sp + 32, 8, ss))
    return;
  s.rip = rip;
  s.cs = static_cast<uint16_t>(cs);
  s.ss = static_cast<uint16_t>(ss);
  s.rflags = (s.rflags & ~kFlagsWritable) | (fl & kFlagsWritable) | kFlagsFixed;
  s.gpr[4] = rsp;
  s.cycle += i.cycles;
  ++s.instret;
  stop_ = 0;  // IF may have changed
  serialize_code();  // IRET serialises: what it returns to is fetched anew
}

void X86Cpu::do_hlt(const Insn& i) {
  if (grants_.mode != AccessMode::exact) {  // idling is decided in exact order
    sync_stop();
    return;
  }
  if (!stores_visible()) return;
  retire(i);
  halted_ = true;
  stop_ = 0;
}

void X86Cpu::do_sti(const Insn& i) {
  const bool was = s.rflags & kIF;
  s.rflags |= kIF;
  retire(i);
  // Interrupts are recognised only after the next instruction (SDM STI).
  if (!was) sti_shadow_ = true;
  stop_ = 0;
}

uint64_t X86Cpu::wake_cycle() const {
  if (!halted_) return s.cycle;
  // HLT wakes on any interrupt the APIC delivers (even with IF=0 the CPU
  // leaves HLT only when IF=1 lets it take one; with IF=0 only NMI could).
  if (!(s.rflags & kIF)) return kNever;
  uint64_t t = irq_.pending(id_, s.cycle) >= 0 ? s.cycle : irq_.next_event(id_, s.cycle);
  return t == kNever ? kNever : std::max(s.cycle, t);
}

bool X86Cpu::check_interrupts() {
  if (!(s.rflags & kIF) || sti_shadow_) return false;
  int v = irq_.pending(id_, s.cycle);
  if (v < 0) return false;
  if (grants_.mode != AccessMode::exact) {  // taking it is a sync point ahead
    sync_stop();
    return false;
  }
  irq_.acknowledge(id_, v, s.cycle);
  deliver(static_cast<uint8_t>(v), s.rip, true);
  return true;
}

const Insn& X86Cpu::fetch(uint64_t rip) {
  uint64_t off = rip - fetch_base_;
  if (off >= DecodeCacheX86::kPageBytes) {
    const uint64_t base = rip & ~uint64_t{DecodeCacheX86::kPageBytes - 1};
    if (!bus_.ram().contains(base, DecodeCacheX86::kPageBytes)) return fault_insn_;
    // The page becomes a code page, whose stores are sync points ahead:
    // CPUs ahead that stored into it are put back first, or ahead this is
    // a sync point (PageOwners::before_flag).
    if (owners_.enabled() && !(page_flags_[(base - ram_base_) >> kPageShift] & kPageHasCode) &&
        !owners_.before_flag(id_, s.cycle, base, grants_.mode)) {
      sync_stop();
      return sync_insn_;
    }
    fetch_page_ = code_page(base);
    fetch_base_ = base;
    off = rip - base;
  }
  if (fetch_page_->decoded(static_cast<unsigned>(off))) [[likely]] return fetch_page_->insn(static_cast<unsigned>(off));
  if (owners_.enabled() && !owners_.before_decode(id_, s.cycle, rip, grants_.mode)) {
    sync_stop();
    return sync_insn_;
  }
  const Insn* e;
  {
    const uint64_t avail = std::min<uint64_t>(15, ram_base_ + ram_size_ - rip);
    e = &fetch_page_->construct(static_cast<unsigned>(off), decode_at(ram_ + (rip - ram_base_), avail, rip));
    fetch_page_->fast[off] = make_fast(*e, rip);
    // Timing v2: an instruction after which the next may be in another
    // line (the line's last, a jump, a call, a return) tests for it.
    if (iline_bytes_) {
      const uint64_t mask = ~uint64_t{iline_bytes_ - 1};
      const bool jumps = e->exec == exec_jmp || e->exec == exec_call || e->exec == exec_ret || e->exec == exec_jcc;
      if (jumps || ((rip + e->len) & mask) != (rip & mask)) fetch_page_->fast[off].pad[0] = kEdge;
    }
    // An instruction reaching into the next page must be invalidated by
    // stores there too.
    const uint64_t last = rip + e->len - 1;
    if ((last & ~uint64_t{DecodeCacheX86::kPageBytes - 1}) != fetch_base_) cache_.watch_page(last);
  }
  return *e;
}

// The instruction at `rip` as this CPU sees it. Bytes of stores it has not
// seen yet are decoded on the fly (rare: a CPU is stale only between a
// store into code and its next serialisation), everything else comes from
// the shared cache as usual.
const Insn& X86Cpu::fetch_stale(uint64_t rip) {
  // Timing v2: bytes fetched ahead of the PC are stale only until the CPU
  // fetches past them or jumps (it then fetches from the I-cache, which
  // the store reached).
  if (!views_.expire(id_, s.cycle) || (mem_ && !views_.fetch_from(id_, rip, fetch_next_))) {
    stop_ = 0;  // the view has expired: the fast path again from the next slice
    return fetch(rip);
  }
  if (!views_.overlaps(id_, rip, 15)) return fetch(rip);
  uint8_t bytes[15];
  const size_t n = views_.read(id_, rip, bytes, sizeof bytes);
  if (n == 0) return fetch(rip);  // outside RAM: fetch() faults
  stale_insn_ = decode_at(bytes, n, rip);
  views_.note_fetch(id_, s.cycle, rip, stale_insn_.len);
  return stale_insn_;
}

// Calls and returns between functions on different pages switch pages
// often: the last few pages are remembered, so a switch is rarely a hash
// lookup (pages live as long as the machine, so entries never go stale).
CodePage* X86Cpu::code_page(uint64_t base) {
  RecentPage& r = recent_[(base >> kPageShift) % kRecentPages];
  if (r.base != base) {
    r.page = cache_.page(base);
    r.base = base;
  }
  return r.page;
}

const Fast* X86Cpu::fast_slow(uint64_t rip) {
  const uint64_t base = rip & ~uint64_t{DecodeCacheX86::kPageBytes - 1};
  if (!bus_.ram().contains(base, DecodeCacheX86::kPageBytes)) {
    // Outside RAM: the loop takes RIP from the hand-back and the precise
    // fetch raises #GP there.
    fault_fast_.imm = static_cast<int64_t>(rip);
    return &fault_fast_;
  }
  // A page that is not a code page yet: the precise fetch makes it one
  // (PageOwners::before_flag needs the exact clock, which the fast loop
  // does not keep in s).
  if (owners_.enabled() && !(page_flags_[(base - ram_base_) >> kPageShift] & kPageHasCode)) {
    fault_fast_.imm = static_cast<int64_t>(rip);
    return &fault_fast_;
  }
  fetch_page_ = code_page(base);
  fetch_base_ = base;
  return &fetch_page_->fast[rip - base];
}

// --- Lazy flags --------------------------------------------------------------

void X86Cpu::materialise_slow() {
  if (lazy_op & kLazyRotated) {
    lazy_op &= ~kLazyRotated;
    materialise_flags();  // what the rotate left alone
    s.rflags = (s.rflags & ~(kCF | kOF)) | lazy_cfof;
    return;
  }
  const unsigned bits = lazy_bits;
  const uint64_t a = lazy_a, b = lazy_b, r = lazy_r;
  const uint64_t which = kArith;
  uint64_t f = 0;
  switch (lazy_op) {
    case kLazyAdd: f = flags::add(a, b, 0, a + b, bits); break;
    case kLazySub: f = flags::sub(a, b, 0, a - b, bits); break;
    case kLazyLogic: f = flags::logic(r, bits); break;
    // INC/DEC keep CF: the record holds the CF they found (lazy_cf).
    case kLazyInc: f = (flags::add(a, 1, 0, a + 1, bits) & ~kCF) | (b ? uint64_t{kCF} : 0); break;
    case kLazyDec: f = (flags::sub(a, 1, 0, a - 1, bits) & ~kCF) | (b ? uint64_t{kCF} : 0); break;
    case kLazyMul: f = flags::szp(r, bits) | (b ? kCF | kOF : 0); break;
    case kLazyShl: f = flags::shift(flags::Shift::shl, a, b, r, bits); break;
    case kLazyShr: f = flags::shift(flags::Shift::shr, a, b, r, bits); break;
    case kLazySar: f = flags::shift(flags::Shift::sar, a, b, r, bits); break;
    default: return;
  }
  s.rflags = (s.rflags & ~which) | (f & which);
  lazy_op = kLazyNone;
}

bool X86Cpu::prepare(uint64_t until) {
  if (halted_) {
    if (!(s.rflags & kIF) || irq_.pending(id_, s.cycle) < 0) return false;
    halted_ = false;
  }
  // A seeded memory stall that is due costs its cycles now; so does one
  // that came due while an interrupt was being taken (cpu/stalls.hpp).
  stalls::charge_due(perturb_, id_, s.cycle, next_stall_, stall_draws_);
  if (check_interrupts()) stalls::charge_due(perturb_, id_, s.cycle, next_stall_, stall_draws_);
  if (stop_requested_ || halted_ || s.cycle >= until) return false;
  // Stop at the next event (an interrupt arriving, a stall) so it is
  // handled at the right instruction boundary.
  stop_ = until;
  for (uint64_t e : {irq_.next_event(id_, s.cycle), next_stall_})
    if (e > s.cycle && e < stop_) stop_ = e;
  return true;
}

// The fast loop: RIP (as a pointer to the fast entry), the cycle count and
// the retired count stay in host registers while handlers chain into each
// other; nothing is written back per instruction. A handler that needs the
// precise path ends the chain with precise_ip set; the loop then writes the
// state back (materialising the lazy flags) and returns to loop(), which
// runs that instruction precisely (a MOV's load from a device does that
// itself, in the loop: fast::load_precise).
void X86Cpu::loop_fast() {
  uint64_t cycle = s.cycle;
  const Fast* ip = fast_at(s.rip);
  lazy_op = kLazyNone;
  // Timing v2: a chain that starts in another line than the last fetch
  // fetches it first; a miss goes to the careful step, which charges it.
  if (iline_bytes_ && !enter_line(ip)) [[unlikely]] {
    s.rip = ip == &fault_fast_ ? static_cast<uint64_t>(fault_fast_.imm) : pc_of(ip);
    return;
  }
  while (cycle < stop_) {
    const FastNext n = ip->fn(*this, ip, cycle, 0);
    // Counted per chain, not at the end: a handler that runs precise
    // semantics in the loop (enter_precise) must find instret current.
    s.instret += chain_retired;
    cycle = n.cycle;
    if (!n.ip) [[unlikely]] {
      ip = precise_ip;
      break;
    }
    ip = n.ip;
  }
  s.cycle = cycle;
  s.rip = ip == &fault_fast_ ? static_cast<uint64_t>(fault_fast_.imm) : pc_of(ip);
  materialise_flags();
}

template <bool Stale>
void X86Cpu::loop_as(uint64_t budget) {
  const bool plain = !budget && !(trace_insns_ && on_insn);
  while (s.cycle < stop_) {
    // The common case: no step budget, no tracing, no single-step or STI
    // shadow pending, no stale view of code: the fast path, until an
    // instruction needs more.
    // (Buffered stores, timing v2, do not stop it: a load of a line they
    // touch, and under tso any store, fails l1_direct and runs here.)
    if (!Stale && plain && !(s.rflags & kTF) && !sti_shadow_) {
      loop_fast();
      if (s.cycle >= stop_) return;
    }
    // One careful step.
    const Insn& in = Stale ? fetch_stale(s.rip) : fetch(s.rip);
    if (!in.exec) {  // fetch outside RAM
      raise(kGP, "instruction fetch from unmapped address", true, 0);
      if (budget && --budget == 0) break;
      continue;
    }
    // (An instruction that waited for the store buffer, timing v2, is one
    // instruction executed: its second attempt is not reported again.)
    if (trace_insns_ && on_insn && waited_at_ != std::pair{s.rip, steps()}) on_insn(*this, in);
    const bool tf = s.rflags & kTF;
    // A single-stepped instruction and its #DB are one step, and the trap
    // is a sync point: ahead, stop before the instruction.
    if (tf && grants_.mode != AccessMode::exact) {
      sync_stop();
      break;
    }
    const bool shadow = sti_shadow_;
    const uint64_t before = steps(), retired_before = s.instret, step_cycle = s.cycle;
    const uint64_t hits_before = l1_hits_;
    step_cycle_ = s.cycle;
    // Timing v2: the fetch of a new line; ahead, a miss is a sync point.
    if (iline_bytes_ && !fetch_line_precise()) break;
    // (Only a CPU with a stale view looks at it, and runs every step here,
    // on every schedule: kept there only, it is the same on all of them.)
    if (Stale) fetch_next_ = s.rip + in.len;
    // On a copy: the instruction runs as it was fetched, whatever its own
    // memory access does to the shared cache (a store into its own bytes,
    // or a put-back of a CPU ahead whose undo resets the code it takes
    // back: sim/run_ahead.cpp).
    const Insn copy = in;
    // A locked instruction (XCHG with memory is one) waits for the stores
    // before it to be visible (SDM vol. 3A 8.2.2: locked instructions
    // have a total order, and loads and stores are not reordered with them).
    // Its own store is visible at once (atomic_).
    // (It runs again once they are.)
    atomic_ = mem_ && (copy.lock || (copy.mnemonic == ZYDIS_MNEMONIC_XCHG &&
                                     (copy.op[0].kind == OpKind::mem || copy.op[1].kind == OpKind::mem)));
    if (!atomic_ || grants_.mode != AccessMode::exact || stores_visible()) copy.exec(*this, copy);
    atomic_ = false;
    const bool ran = !deferred_;
    deferred_ = false;
    // Stopped at a sync point (a store after a load, running ahead): the
    // instruction will run again, and count its hits again.
    if (sync_stop_) l1_hits_ = hits_before;
    if (shadow && !sync_stop_ && ran) {  // (an instruction stopped at a sync point did not run)
      sti_shadow_ = false;
      stop_ = 0;  // now interrupts may be taken
    }
    // Single-step: a #DB after each instruction that began with TF set,
    // with RIP pointing after it (SDM vol. 3, 17.3.1.4).
    if (tf && s.instret != retired_before && !crashed_) {
      step_start_ = step_cycle;
      deliver(kDB, s.rip, false);
    }
    if (budget && steps() != before && --budget == 0) break;
  }
}

// Devices (and unmapped addresses). Every device access is a sync point
// for a CPU running ahead; in exact order, the CPUs ahead are put back
// first, as a device may interrupt them or end the run.
bool X86Cpu::device_access_ok(uint64_t addr, unsigned size, bool is_write, uint64_t value) {
  if (!owners_.enabled()) return true;
  if (grants_.mode != AccessMode::exact) return sync_stop();
  owners_.resolve_mask(id_, pos(), bus_.cpus_affected(accessor(), addr, size, is_write, value));
  return true;
}

void X86Cpu::run(uint64_t until) { Slice::run(*this, until); }

uint64_t X86Cpu::step(uint64_t until, uint64_t steps_wanted) { return Slice::step(*this, until, steps_wanted); }

}  // namespace ksim::x86
