// Engine construction, the guest layout, and registration (Linux's
// register_kprobe / unregister_kprobe / enable / disable / arm / disarm).
#include "kprobes/engine.hpp"

#include <algorithm>
#include <cstring>

#include "cpu/hex.hpp"
#include "cpu/timing.hpp"
#include "mem/memory_map.hpp"
#include "sim/elf/symbols.hpp"

namespace ksim::kprobes {

namespace {
// Slot-area layout: the first cells are reserved for the engine's own
// code (a kretprobe trampoline when the image has none of its own).
constexpr uint64_t kTrampolineOffset = 16;
constexpr uint64_t kReservedBytes = 64;

}  // namespace

bool ProbePoint::all_disabled() const {
  return std::all_of(probes.begin(), probes.end(), [](const auto& r) { return r->disabled; });
}

const char* status_name(KStatus s) {
  switch (s) {
    case KStatus::idle: return "IDLE";
    case KStatus::hit_active: return "KPROBE_HIT_ACTIVE";
    case KStatus::hit_ss: return "KPROBE_HIT_SS";
    case KStatus::reenter: return "KPROBE_REENTER";
    case KStatus::hit_ssdone: return "KPROBE_HIT_SSDONE";
  }
  return "?";
}

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::none: return "none";
    case Phase::lookup: return "lookup";
    case Phase::ret: return "ret";
    case Phase::jret: return "jret";
  }
  return "?";
}

Engine::Engine(Machine& m, StepMode mode)
    : m_(m), bus_(m.bus()), arch_(make_arch(m.config().isa)), mode_(mode) {
  cpus_.resize(static_cast<size_t>(m.cpu_count()));
  layout_ = find_layout();
  // The last 16 KiB of the slot area hold detour buffers.
  uint64_t slots_end = layout_.slots_end;
  if (slots_end >= layout_.slots_begin + kReservedBytes + 2 * kDetourArea) {
    slots_end -= kDetourArea;
    opt_slots_.init(slots_end, layout_.slots_end, kDetourCell);
    detour_base_ = slots_end;
    by_detour_.resize(kDetourArea / kDetourCell);
  }
  if (slots_end > layout_.slots_begin + kReservedBytes)
    slots_.init(layout_.slots_begin + kReservedBytes, slots_end, arch_->slot_size());
  // At the head of the chain: breakpoints are ours before the guest's.
  hook_id_ = m.trap_hooks().add(-1000, [this](Cpu& c, const TrapInfo& t) { return on_trap(c, t); });
  m.set_host_agent(this);
  patcher_ = std::make_unique<Patcher>(*this);
  patcher_->set_mode(default_patching(m.config().isa));
  patcher_->set_available(layout_.can_patch_by_protocol());
  rcu_ = std::make_unique<Rcu>(*this);
  // The trap-free kretprobe trampoline needs its port on the bus.
  // (and the jump optimizer's detour buffers).
  if ((layout_.rethook || opt_slots_.ready()) && !bus_.device_at(memmap::kRethookBase)) {
    rethook_port_ = std::make_unique<RethookPort>(*this);
    bus_.map(memmap::kRethookBase, memmap::kRethookSize, rethook_port_.get());
    rethook_ = layout_.rethook != 0;
  } else {
    layout_.rethook = 0;
    opt_slots_ = SlotAllocator{};
  }
}

Engine::~Engine() {
  if (rethook_port_) bus_.unmap(rethook_port_.get());
  m_.trap_hooks().remove(hook_id_);
  m_.set_host_agent(nullptr);
  patcher_->flush();
  // In address order: the disarm events must not depend on the hash
  // table's iteration order.
  std::vector<uint64_t> addrs;
  for (const auto& [addr, p] : table_) addrs.push_back(addr);
  std::sort(addrs.begin(), addrs.end());
  for (uint64_t addr : addrs) {
    auto& p = table_[addr];
    if (p->opt == ProbePoint::Opt::optimizing || p->opt == ProbePoint::Opt::optimized ||
        p->opt == ProbePoint::Opt::unoptimizing)
      bus_.write_bytes(addr, p->region.bytes, p->jump_len, as_caller());  // the jump out, the original back
    p->armed = p->armed || p->opt != ProbePoint::Opt::none;
    disarm(*p);
    for (auto& r : p->probes) {
      if (r->user) r->user->rec = nullptr;
      r->point.reset();  // break the point <-> record cycle
    }
    p->probes.clear();
  }
}

GuestLayout Engine::find_layout() const {
  GuestLayout g;
  const SymbolTable& syms = m_.symbols();
  auto addr_of = [&](const char* n) -> uint64_t {
    const Symbol* s = syms.find(n);
    return s ? s->addr : 0;
  };
  g.slots_begin = addr_of("__kprobe_slots_start");
  g.slots_end = addr_of("__kprobe_slots_end");
  if (g.slots_end <= g.slots_begin) g.slots_begin = g.slots_end = 0;
  if (g.slots_begin) g.trampoline = g.slots_begin + kTrampolineOffset;
  if (const Symbol* t = syms.find("kretprobe_trampoline")) g.trampoline = t->addr;
  g.rethook = addr_of("rethook_trampoline");
  if (const Symbol* j = syms.find("jprobe_return")) {
    g.jprobe_return = j->addr;
    g.jprobe_return_end = j->addr + std::max<uint64_t>(j->size, 1);
  }
  // NOKPROBE_SYMBOL entries: function start addresses, widened to the
  // whole function as Linux does; plus .kprobes.text and the slot area.
  uint64_t bl_begin = addr_of("__start__kprobe_blacklist"), bl_end = addr_of("__stop__kprobe_blacklist");
  for (uint64_t a = bl_begin; a && a + 8 <= bl_end; a += 8) {
    uint64_t fn = 0;
    if (!bus_.read_bytes(a, &fn, 8)) break;
    const Symbol* s = syms.containing(fn);
    uint64_t end = s && s->addr == fn && s->size ? fn + s->size : fn + 1;
    g.blacklist.push_back({fn, end});
  }
  uint64_t kt_begin = addr_of("__kprobes_text_start"), kt_end = addr_of("__kprobes_text_end");
  if (kt_end > kt_begin) g.blacklist.push_back({kt_begin, kt_end});
  if (g.slots_begin) g.blacklist.push_back({g.slots_begin, g.slots_end});
  // ksim_kernel_abi: magic, percpu_areas, sizeof(percpu), offsetof curr,
  // offsetof name, offsetof tid, name length, offsetof ipi_pending (0 in
  // images from before it).
  if (const Symbol* abi = syms.find("ksim_kernel_abi")) {
    uint64_t v[8] = {};
    if (bus_.read_bytes(abi->addr, v, sizeof v) && v[0] == 0x314942414d49534bull) {
      g.has_abi = true;
      g.percpu_areas = v[1];
      g.percpu_size = v[2];
      g.off_curr = v[3];
      g.off_name = v[4];
      g.off_tid = v[5];
      g.name_len = std::min<uint64_t>(v[6], 64);
      g.off_ipi_pending = v[7];
    }
  }
  g.ipi_work = addr_of("ksim_kprobes_ipi");
  if (const Symbol* pre = syms.find("ksim_kernel_preempt")) {
    uint64_t v = 0;
    g.preemptible = bus_.read_bytes(pre->addr, &v, 8) && v != 0;
  }
  return g;
}

uint64_t Engine::current_task_key(int cpu) const {
  const uint64_t fallback = cpu_task_key(cpu);
  if (!layout_.has_abi) return fallback;
  uint64_t curr = 0;
  if (!bus_.read_bytes(layout_.percpu_areas + static_cast<uint64_t>(cpu) * layout_.percpu_size + layout_.off_curr,
                       &curr, 8) ||
      curr == 0)
    return fallback;
  return curr;
}

Engine::Task Engine::current_task(int cpu) const {
  Task t{"cpu" + std::to_string(cpu), 0, cpu_task_key(cpu)};
  if (!layout_.has_abi) return t;
  uint64_t curr = 0;
  if (!bus_.read_bytes(layout_.percpu_areas + static_cast<uint64_t>(cpu) * layout_.percpu_size + layout_.off_curr,
                       &curr, 8) ||
      curr == 0)
    return t;
  char name[65] = {};
  uint32_t tid = 0;
  if (!bus_.read_bytes(curr + layout_.off_name, name, layout_.name_len) ||
      !bus_.read_bytes(curr + layout_.off_tid, &tid, 4))
    return t;
  name[layout_.name_len] = 0;
  t.comm = name;
  t.tid = tid;
  t.key = curr;
  return t;
}

// --- Errors and costs ---------------------------------------------------------

int Engine::fail(int err, std::string why) {
  error_ = std::string(errno_name(err)) + ": " + std::move(why);
  return -err;
}

void Engine::charge_caller(uint64_t cycles) {
  m_.cpu(caller_cpu_).add_cycles(cycles);
  m_.cpu_clock_changed(caller_cpu_);
}

Accessor Engine::as_caller() const { return Accessor{caller_cpu_, m_.cpu(caller_cpu_).cycle()}; }

void Engine::emit_event(const Cpu& cpu, uint64_t addr, const char* what, uint64_t b, uint64_t c) {
  // A registration made on behalf of a CPU that is not the running one (it
  // may idle with a lagging clock) happens now, at the running CPU's clock.
  // Between runs (an operation of a probe script) nothing runs: the
  // caller's own clock, not the furthest CPU's, which depends on how the
  // schedule sliced the run up to here.
  const uint64_t at = m_.running_cpu() >= 0 ? std::max(cpu.cycle(), m_.now()) : cpu.cycle();
  m_.events().emit(Event{at, cpu.id(), EventKind::probe, addr, b, c, what});
}

// --- Text: arming and disarming ------------------------------------------------

bool Engine::read_original(uint64_t addr, uint8_t* out, size_t len) const {
  if (!bus_.read_bytes(addr, out, len)) return false;
  // Undo every armed breakpoint that overlaps [addr, addr+len), and every
  // jump an optimized point put in (Linux's __recover_optprobed_insn).
  for (const auto& [a, p] : table_) {
    if (p->opt == ProbePoint::Opt::optimizing || p->opt == ProbePoint::Opt::optimized ||
        p->opt == ProbePoint::Opt::unoptimizing)
      for (unsigned i = 0; i < p->jump_len; ++i)
        if (a + i >= addr && a + i < addr + len) out[a + i - addr] = p->region.bytes[i];
    if (!p->armed) continue;
    for (unsigned i = 0; i < p->insn.bp_len; ++i) {
      uint64_t b = a + i;
      if (b >= addr && b < addr + len) out[b - addr] = p->insn.orig[i];
    }
  }
  return true;
}

void Engine::write_point(ProbePoint& p, bool breakpoint, const Accessor& who) {
  const uint8_t* from = breakpoint ? p.insn.orig : p.insn.bp;
  const uint8_t* to = breakpoint ? p.insn.bp : p.insn.orig;
  bus_.write_bytes(p.addr, to, p.insn.bp_len, who);
  p.armed = breakpoint;
  if (m_.events().empty()) return;
  // The bytes replaced and written, little-endian (a breakpoint is 1-4 bytes).
  uint64_t old_bytes = 0, new_bytes = 0;
  std::memcpy(&old_bytes, from, std::min<size_t>(p.insn.bp_len, 8));
  std::memcpy(&new_bytes, to, std::min<size_t>(p.insn.bp_len, 8));
  emit(m_.cpu(who.cpu), p.addr, breakpoint ? "arm" : "disarm", old_bytes, new_bytes);
}

void Engine::arm(ProbePoint& p) {
  if (p.armed) return;
  write_point(p, true, as_caller());
  see_text_now();
  charge_caller(timing::kTextPokeCycles);
}

void Engine::disarm(ProbePoint& p) {
  if (!p.armed) return;
  write_point(p, false, as_caller());
  see_text_now();
  charge_caller(timing::kTextPokeCycles);
}

// Instant patching means every CPU sees the new text at once, whatever the
// code model: no CPU keeps a stale copy of what was just written.
void Engine::see_text_now() {
  for (int k = 0; k < m_.cpu_count(); ++k) m_.cpu(k).see_code_now();
}

// A removed point whose original bytes are back. During a run (the removal
// went through a patching protocol) it is unpublished and its slot freed
// after an RCU grace period, as unregister_kprobe's synchronize_rcu; a CPU
// that trapped on it meanwhile still finds it.
void Engine::point_patched(ProbePoint& p) {
  if (!p.removed || p.armed || p.retired) return;
  if (!patcher_->deferring_now() || !rcu_->available()) {
    retire(p);
    return;
  }
  auto it = table_.find(p.addr);
  if (it == table_.end() || it->second.get() != &p) {
    retire(p);
    return;
  }
  std::shared_ptr<ProbePoint> keep = it->second;
  emit(m_.cpu(caller_cpu_), p.addr, "synchronize_rcu");
  // The callback runs in the interrupt of the CPU that ended the grace
  // period: that CPU frees the slot and refills it with breakpoints, at
  // that cycle (a fixed point of the run, whatever the schedule).
  rcu_->call_rcu(m_.cpu(caller_cpu_), [this, keep, r = readers(), gen = p.removals](Cpu* at, uint64_t cycle) {
    if (at) check_readers(r, keep->addr, cycle);  // (not when the run is over and flush() runs it)
    if (!keep->removed || keep->armed || keep->retired || keep->removals != gen) return;
    auto free_it = [this, keep, gen](Cpu* at2, uint64_t cycle2) {
      if (!keep->removed || keep->armed || keep->retired || keep->removals != gen) return;
      const uint64_t slot = keep->slot;
      retire(*keep, false, true);
      if (slot && at2) emit_at(cycle2, at2->id(), slot, "slot-free", slot);
    };
    // A boosted slot on a preemptible kernel: a task preempted in it has
    // passed RCU-sched quiescent states; only RCU-tasks waits for it.
    then_tasks_gp(at, cycle, keep->addr, keep->boosted_hits && boosted_slots_need_tasks(), free_it);
  });
}

void Engine::then_tasks_gp(Cpu* at, uint64_t cycle, uint64_t addr, bool tasks, Rcu::Callback fn) {
  if (at && tasks && rcu_->tasks_available()) {
    emit_at(cycle, at->id(), addr, "synchronize_rcu_tasks");
    rcu_->call_rcu_tasks(*at, std::move(fn));
  } else {
    fn(at, cycle);
  }
}

std::vector<std::pair<int, uint64_t>> Engine::readers() const {
  std::vector<std::pair<int, uint64_t>> r;
  for (size_t c = 0; c < cpus_.size(); ++c)
    if (cpus_[c].busy) r.emplace_back(static_cast<int>(c), cpus_[c].busy_seq);
  return r;
}

void Engine::check_readers(const std::vector<std::pair<int, uint64_t>>& readers, uint64_t addr, uint64_t cycle) {
  for (auto [c, seq] : readers) {
    const CtlBlk& cb = cpus_[static_cast<size_t>(c)];
    if (!cb.busy || cb.busy_seq != seq) continue;
    ++stats_.rcu_violations;
    emit_at(cycle, c, addr, "rcu-violation", static_cast<uint64_t>(c));
  }
}

// Out of the table; its slot goes back once no CPU can still be stepping
// in it: at once after a grace period that covered every CPU inside the
// engine when the point was unpublished (`after_gp`), else once each of
// those CPUs has left the engine (the engine's own bookkeeping: before the
// run, and with --kprobes-patching instant, where nothing is executed).
void Engine::retire(ProbePoint& p, bool reclaim_now, bool after_gp) {
  p.retired = true;
  if (auto it = table_.find(p.addr); it != table_.end() && it->second.get() == &p) table_.erase(it);
  if (p.slot && after_gp) {
    unfilled_.push_back(p.slot);
  } else if (p.slot && p.boosted_hits && slot_grace_) {
    // A boosted slot a CPU has entered: it may still be in it (or
    // interrupted in it) with no trace in the engine's bookkeeping.
    free_boosted_slot(p.slot, p.addr);
  } else if (p.slot) {
    // Broken on purpose (ksim race slot-reuse): no grace period, as if no
    // CPU could be stepping in the slot.
    static const std::vector<CtlBlk> kNobody;
    slots_.free(p.slot, slot_grace_ ? cpus_ : kNobody);
    if (reclaim_now) reclaim_slots();  // at once if no CPU is inside the engine
  }
}

// A point is armed when the engine is enabled and any of its probes is.
void Engine::update_arming(ProbePoint& p) {
  // Jump optimization first: a point that can no longer be optimized gets
  // its int3 and bytes back before anything else is written there, and a
  // probe inside another point's region unoptimizes that one.
  if (p.opt != ProbePoint::Opt::none && !can_stay_optimized(p)) unoptimize(p);
  unoptimize_around(p.addr);
  struct Then {
    Engine& e;
    ProbePoint& p;
    ~Then() { e.try_optimize(p); }
  } then{*this, p};
  if (patcher_->deferring()) {
    // During a run: the caller CPU patches through the protocol.
    if (breakpoint_goal(p) != p.armed || p.queued) patcher_->queue(table_.at(p.addr));
    return;
  }
  if (wants_breakpoint(p)) {
    if (!arming_blocked(p)) arm(p);
  } else {
    disarm(p);
  }
}

void Engine::set_enabled(bool on) {
  if (enabled_ == on) return;
  enabled_ = on;
  // Address order, so the events and the cycles charged are deterministic.
  std::vector<uint64_t> addrs;
  for (auto& [a, p] : table_) addrs.push_back(a);
  std::sort(addrs.begin(), addrs.end());
  for (uint64_t a : addrs) update_arming(*table_[a]);
}

const ProbePoint* Engine::point_at(uint64_t addr) const {
  auto it = table_.find(addr);
  return it == table_.end() ? nullptr : it->second.get();
}

// --- Registration ----------------------------------------------------------------

int Engine::resolve(Kprobe& kp, uint64_t& addr, const Symbol*& func) {
  const SymbolTable& syms = m_.symbols();
  bool has_sym = !kp.symbol_name.empty();
  if (has_sym == (kp.addr != 0))
    return fail(kEINVAL, has_sym ? "give a symbol or an address, not both"
                                 : "no probe location: give a symbol or an address");
  if (has_sym) {
    const Symbol* s = syms.find(kp.symbol_name);
    if (!s) return fail(kENOENT, "unknown symbol '" + kp.symbol_name + "'");
    addr = s->addr + kp.offset;
    if (s->size && kp.offset >= s->size)
      return fail(kEINVAL, kp.symbol_name + "+" + hex(kp.offset) + " is past the end of " + kp.symbol_name + " (size " +
                               hex(s->size) + ")");
  } else {
    addr = kp.addr + kp.offset;
  }
  func = syms.containing(addr);
  if (!func || func->kind != Symbol::Kind::function)
    return fail(kEINVAL, hex(addr) + " is not in kernel text (no function contains it)");
  return 0;
}

int Engine::check_safe(uint64_t addr, const Symbol* func) {
  if (!layout_.slots_begin || !slots_.ready())
    return fail(kENOENT, "the guest image has no kprobe slot area (__kprobe_slots_start/__kprobe_slots_end)");
  for (auto [b, e] : layout_.blacklist) {
    if (addr >= b && addr < e) {
      const char* why = b == layout_.slots_begin ? "the kprobe slot area"
                        : func && func->addr == b && func->size == e - b ? "NOKPROBE_SYMBOL"
                                                                          : ".kprobes.text";
      return fail(kEINVAL, m_.symbols().format(addr) + " is blacklisted (" + why + ")");
    }
  }
  return 0;
}

// Where a probe goes and whether it may go there (no side effect).
int Engine::locate(Kprobe& kp, bool is_return, uint64_t& addr, const Symbol*& func) {
  if (int e = resolve(kp, addr, func)) return e;
  if (int e = check_safe(addr, func)) return e;
  if (is_return) {
    // Function entry only (x86: or just after an endbr64 at the entry).
    bool entry = addr == func->addr;
    if (!entry && addr == func->addr + 4 && arch_->isa() == Isa::x86_64) {
      uint8_t b[4];
      entry = read_original(func->addr, b, 4) && b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa;
    }
    if (!entry) return fail(kEINVAL, "a kretprobe must be at a function entry, not " + m_.symbols().format(addr));
  }
  return 0;
}

int Engine::check_location(Kprobe& kp, bool is_return) {
  error_.clear();
  uint64_t addr = 0;
  const Symbol* func = nullptr;
  if (int e = locate(kp, is_return, addr, func)) return e;
  if (table_.count(addr)) return 0;  // joins a probe point already analysed
  ProbeInsn insn;
  std::string why;
  TextReader reader = [this](uint64_t a, uint8_t* out, size_t n) { return read_original(a, out, n); };
  if (int e = arch_->analyse(reader, addr, func, mode_, insn, why); e < 0)
    return fail(-e, m_.symbols().format(addr) + ": " + why);
  return 0;
}

int Engine::add_probe(Kprobe& kp, std::shared_ptr<ProbeRec> rec) {
  error_.clear();
  if (kp.rec) return fail(kEEXIST, "this probe object is already registered");
  uint64_t addr = 0;
  const Symbol* func = nullptr;
  if (int e = locate(kp, rec->type == ProbeRec::Type::r, addr, func)) return e;
  // The work is charged when it is done: its effects (slot, table, the
  // instant write of a breakpoint) are stamped at the caller's clock now,
  // where other CPUs can already see them.
  struct Charge {
    Engine& e;
    ~Charge() { e.charge_caller(timing::kKprobeRegisterCycles); }
  } charge{*this};
  std::shared_ptr<ProbePoint> point;
  if (auto it = table_.find(addr); it != table_.end()) {
    point = it->second;  // an aggregate: share the breakpoint and the slot
    point->removed = false;  // (its last probe's removal was still being patched)
    if (kp.post_handler && point->insn.boostable == 1)
      if (int e = unboost(*point)) return e;
    if (rec->type == ProbeRec::Type::j)
      for (auto& r : point->probes)
        if (r->type == ProbeRec::Type::j)
          return fail(kEEXIST, "there is already a jprobe at " + m_.symbols().format(addr) + " (one per address)");
  } else {
    point = std::make_shared<ProbePoint>();
    point->addr = addr;
    std::string why;
    TextReader reader = [this](uint64_t a, uint8_t* out, size_t n) { return read_original(a, out, n); };
    if (int e = arch_->analyse(reader, addr, func, mode_, point->insn, why); e < 0)
      return fail(-e, m_.symbols().format(addr) + ": " + why);
    if (point->insn.kind == ProbeInsn::Kind::step) {
      refill_slots(as_caller());
      uint64_t slot = slots_.alloc(cpus_);
      if (!slot) return fail(kENOMEM, "no free instruction slot (" + std::to_string(slots_.capacity()) + " in use or waiting)");
      // Modern mode builds a boosted slot now, for a probe with no post
      // handler while boosting is on; classic mode boosts after a step.
      if (mode_ == StepMode::modern && point->insn.boostable == 0 && (!boosting() || kp.post_handler || step_in_place_))
        point->insn.boostable = -1;
      if (int e = arch_->build_slot(point->insn, slot, mode_, why); e < 0) {
        slots_.free(slot, cpus_);
        return fail(-e, m_.symbols().format(addr) + ": " + why);
      }
      write_slot(slot, point->insn);
      point->slot = slot;
      emit(m_.cpu(caller_cpu_), addr, "slot-write", slot);
    }
    table_[addr] = point;
  }
  rec->id = next_id_++;
  rec->user = &kp;
  rec->disabled = (kp.flags & kFlagDisabled) != 0;
  rec->point = point;
  kp.nmissed = 0;
  kp.hits = 0;
  kp.rec = rec.get();
  point->probes.push_back(std::move(rec));
  // Published, then armed (Linux: hlist_add_head_rcu, then arm_kprobe).
  emit(m_.cpu(caller_cpu_), addr, "register", point->probes.back()->id);
  update_arming(*point);
  return 0;
}

void Engine::remove_probe(ProbeRec& rec) {
  auto point = rec.point;
  emit(m_.cpu(caller_cpu_), point->addr, "unregister", rec.id);
  if (rec.user) rec.user->rec = nullptr;
  rec.user = nullptr;  // no handler of it runs from now on
  auto& v = point->probes;
  auto it = std::find_if(v.begin(), v.end(), [&](const auto& r) { return r.get() == &rec; });
  if (it != v.end()) {
    graveyard_.push_back(std::move(*it));  // a handler may be running it (see do_pre)
    v.erase(it);
  }
  if (!v.empty()) {
    update_arming(*point);
    return;
  }
  // Last probe of the point: restore the text, unpublish, and give the
  // slot back once no CPU can still be stepping in it. During a run the
  // point stays published until the protocol has restored the text (a CPU
  // that hits the breakpoint meanwhile steps it with no handler, as Linux
  // does with a disabled kprobe still in its hash table).
  point->removed = true;
  ++point->removals;
  unoptimize(*point);
  if (patcher_->deferring()) {
    patcher_->queue(point);
    return;
  }
  disarm(*point);
  retire(*point);
}

int Engine::register_kprobe(Kprobe& kp) {
  auto rec = std::make_shared<ProbeRec>();
  rec->type = ProbeRec::Type::k;
  return add_probe(kp, std::move(rec));
}

void Engine::unregister_kprobe(Kprobe& kp) {
  if (kp.rec) remove_probe(*kp.rec);
}

int Engine::register_kprobes(std::span<Kprobe* const> kps) {
  return register_batch(kps, [this](Kprobe& p) { return register_kprobe(p); }, [this](Kprobe& p) { unregister_kprobe(p); });
}

void Engine::unregister_kprobes(std::span<Kprobe* const> kps) {
  for (Kprobe* p : kps) unregister_kprobe(*p);
}

int Engine::disable_kprobe(Kprobe& kp) {
  if (!kp.rec) return fail(kEINVAL, "probe is not registered");
  kp.rec->disabled = true;
  kp.flags |= kFlagDisabled;
  update_arming(*kp.rec->point);
  return 0;
}

int Engine::enable_kprobe(Kprobe& kp) {
  if (!kp.rec) return fail(kEINVAL, "probe is not registered");
  if (kp.flags & kFlagGone) return fail(kEINVAL, "probe is gone");
  kp.rec->disabled = false;
  kp.flags &= ~kFlagDisabled;
  update_arming(*kp.rec->point);
  return 0;
}

// --- Generic live patching ---------------------------------------------------------

int Engine::text_poke_bp(uint64_t addr, const std::vector<uint8_t>& bytes, bool int3_protocol) {
  error_.clear();
  if (arch_->isa() != Isa::x86_64) return fail(kEOPNOTSUPP, "text_poke_bp is x86's (RV64 patches under stop_machine)");
  const Symbol* func = m_.symbols().containing(addr);
  if (!func) return fail(kEINVAL, hex(addr) + " is not in kernel text");
  std::string why;
  ProbeInsn old_insn, new_insn;
  TextReader text = [this](uint64_t a, uint8_t* out, size_t n) { return read_original(a, out, n); };
  if (int e = arch_->analyse(text, addr, func, StepMode::modern, old_insn, why); e < 0)
    return fail(-e, m_.symbols().format(addr) + ": " + why);
  // The new instruction, decoded where it will be.
  TextReader patched = [&](uint64_t a, uint8_t* out, size_t n) {
    if (!read_original(a, out, n)) return false;
    for (size_t i = 0; i < n; ++i)
      if (a + i >= addr && a + i < addr + bytes.size()) out[i] = bytes[a + i - addr];
    return true;
  };
  if (int e = arch_->analyse(patched, addr, func, StepMode::modern, new_insn, why); e < 0)
    return fail(-e, "the new instruction: " + why);
  if (new_insn.len != bytes.size() || old_insn.len != bytes.size())
    return fail(kEINVAL, "the new bytes must be one instruction of the old one's length (" +
                             std::to_string(old_insn.len) + " bytes)");
  const bool nop = new_insn.text.rfind("nop", 0) == 0;
  if (new_insn.kind != ProbeInsn::Kind::emulate && !nop)
    return fail(kEINVAL, "'" + new_insn.text + "': text_poke_bp's int3 handler emulates only jmp, call and nop");
  if (patcher_->deferring()) {
    patcher_->queue_bytes(addr, bytes, int3_protocol, std::make_shared<const ProbeInsn>(new_insn));
    return 0;
  }
  bus_.write_bytes(addr, bytes.data(), bytes.size(), as_caller());
  charge_caller(timing::kTextPokeCycles);
  return 0;
}

// --- Listing --------------------------------------------------------------------

std::string Engine::list() const {
  std::vector<const ProbeRec*> recs;
  for (const auto& [a, p] : table_)
    for (const auto& r : p->probes)
      if (!r->internal) recs.push_back(r.get());
  std::sort(recs.begin(), recs.end(), [](const ProbeRec* x, const ProbeRec* y) { return x->id < y->id; });
  std::string out;
  const int width = 16;
  for (const ProbeRec* r : recs) {
    char addr[32];
    std::snprintf(addr, sizeof addr, "%0*llx", width, static_cast<unsigned long long>(r->point->addr));
    char kind = r->type == ProbeRec::Type::k ? 'k' : r->type == ProbeRec::Type::r ? 'r' : 'j';
    out += addr;
    out += "  ";
    out += kind;
    out += "  ";
    std::string loc = m_.symbols().format(r->point->addr);
    if (loc.find('+') == std::string::npos && loc.rfind("0x", 0) != 0) loc += "+0x0";
    out += loc;
    uint32_t flags = r->user ? r->user->flags : 0;
    if (flags & kFlagGone) out += "  [GONE]";
    if (r->disabled) out += "  [DISABLED]";
    if (flags & kFlagOptimized) out += "  [OPTIMIZED]";
    out += '\n';
  }
  return out;
}

// The slot: the copy, then breakpoints to the end of the cell so a step
// that runs past the copy traps at once. Outside a protocol every CPU sees
// it at once; inside one, the arming protocol's sync covers it.
void Engine::write_slot(uint64_t slot, const ProbeInsn& insn) {
  std::vector<uint8_t> cell = breakpoint_cell();
  std::memcpy(cell.data(), insn.slot_bytes, insn.slot_len);
  bus_.write_bytes(slot, cell.data(), cell.size(), as_caller());
  if (!patcher_->deferring()) see_text_now();
}

// A slot (or detour) cell as the image has it: breakpoints all along (a
// step that runs past a copy traps at once).
std::vector<uint8_t> Engine::breakpoint_cell(size_t size) const {
  std::vector<uint8_t> cell(size ? size : arch_->slot_size());
  uint8_t bp[4];
  const unsigned n = arch_->breakpoint_bytes(bp);
  for (size_t i = 0; i < cell.size(); ++i) cell[i] = bp[i % n];
  return cell;
}

// --- The kprobe-booster ---------------------------------------------------------

bool Engine::boosting() const {
  if (!boost_) return false;
  // On a preemptible kernel a task may be preempted inside a boosted slot;
  // its slot may be reused only after an RCU-tasks grace period.
  return !layout_.preemptible || rcu_->tasks_available();
}

void Engine::set_boost(bool on) {
  boost_ = on;
  if (on) return;
  std::vector<uint64_t> addrs;  // address order: deterministic events and costs
  for (auto& [a, p] : table_)
    if (p->insn.boostable == 1 && mode_ == StepMode::modern) addrs.push_back(a);
  std::sort(addrs.begin(), addrs.end());
  for (uint64_t a : addrs) unboost(*table_[a]);
}

// Linux 5.13+ decides at registration: a point with a post handler is
// stepped, so its slot ends with the int3; a post handler added to a
// boosted point later moves the point to such a slot.
int Engine::unboost(ProbePoint& p) {
  if (p.insn.boostable != 1 || mode_ != StepMode::modern || !p.slot) return 0;
  refill_slots(as_caller());
  const uint64_t slot = slots_.alloc(cpus_);
  if (!slot) return fail(kENOMEM, "no free instruction slot to step " + m_.symbols().format(p.addr) + " in");
  ProbeInsn insn = p.insn;
  insn.boostable = -1;
  std::string why;
  if (int e = arch_->build_slot(insn, slot, mode_, why); e < 0) {
    slots_.free(slot, cpus_);
    return fail(-e, m_.symbols().format(p.addr) + ": " + why);
  }
  write_slot(slot, insn);
  const uint64_t old = p.slot;
  p.insn = insn;
  p.slot = slot;
  emit(m_.cpu(caller_cpu_), p.addr, "unboost", slot, old);
  if (p.boosted_hits && slot_grace_) {
    free_boosted_slot(old, p.addr);
  } else {
    static const std::vector<CtlBlk> kNobody;
    slots_.free(old, slot_grace_ ? cpus_ : kNobody);
  }
  p.boosted_hits = 0;
  return 0;
}

void Engine::free_boosted_slot(uint64_t slot, uint64_t addr) {
  if (!rcu_->available()) {
    quarantine_.push_back(slot);
    ++stats_.boost_quarantined;
    return;
  }
  emit(m_.cpu(caller_cpu_), addr, "synchronize_rcu");
  rcu_->call_rcu(m_.cpu(caller_cpu_), [this, slot, addr](Cpu* at, uint64_t cycle) {
    then_tasks_gp(at, cycle, addr, boosted_slots_need_tasks(), [this, slot](Cpu* at2, uint64_t cycle2) {
      unfilled_.push_back(slot);
      if (at2) emit_at(cycle2, at2->id(), slot, "slot-free", slot);
    });
  });
}

// The run is over: quarantined boosted slots come back, except one a CPU
// has stopped in (a debugger may run on from there).
void Engine::release_quarantine() {
  for (uint64_t c : quarantined_detours_) {
    if (auto* e = detour_entry(c)) e->reset();
    unfilled_detours_.push_back(c);
  }
  quarantined_detours_.clear();
  std::vector<uint64_t> keep;
  for (uint64_t s : quarantine_) {
    bool in_use = false;
    for (int c = 0; c < m_.cpu_count(); ++c)
      in_use |= m_.cpu(c).pc() >= s && m_.cpu(c).pc() < s + arch_->slot_size();
    if (in_use)
      keep.push_back(s);
    else
      unfilled_.push_back(s);
  }
  quarantine_.swap(keep);
}

void Engine::refill_slots(const Accessor& who) {
  if (!unfilled_detours_.empty()) {
    const std::vector<uint8_t> fill = breakpoint_cell(kDetourCell);
    static const std::vector<CtlBlk> kNobody;
    for (uint64_t c : unfilled_detours_) {
      bus_.write_bytes(c, fill.data(), fill.size(), who);
      opt_slots_.free(c, kNobody);
    }
    (void)opt_slots_.collect(kNobody);
    unfilled_detours_.clear();
  }
  if (unfilled_.empty()) return;
  const std::vector<uint8_t> cell = breakpoint_cell();
  for (uint64_t s : unfilled_) {
    bus_.write_bytes(s, cell.data(), cell.size(), who);
    slots_.release(s);
  }
  unfilled_.clear();
}

size_t Engine::reclaim_slots() {
  // On behalf of the caller CPU (an operation, or a test's clean-up).
  refill_slots(as_caller());
  return reclaim_slots(as_caller());
}

size_t Engine::reclaim_slots(const Accessor& who) {
  std::vector<uint64_t> freed = slots_.collect(cpus_);
  const std::vector<uint8_t> cell = breakpoint_cell();
  for (uint64_t s : freed) {
    bus_.write_bytes(s, cell.data(), cell.size(), who);
    emit(m_.cpu(who.cpu), s, "slot-free", s);
  }
  return freed.size();
}

size_t Engine::live_instances() const {
  size_t n = 0;
  for (const auto& [k, v] : tasks_) n += v.size();
  return n;
}

}  // namespace ksim::kprobes
