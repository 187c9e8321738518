#include "sim/machine.hpp"

#include <cstring>

#include <algorithm>
#include <cstdio>
#include <limits>

#include "cpu/hex.hpp"
#include "sim/platform.hpp"

namespace ksim {

namespace {
constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();
// How often a long slot returns to the scheduler to deliver held events.
constexpr uint64_t kReleaseCycles = 4096;

// When a CPU next has something to do: now if it is runnable, its wake-up
// time if it idles, kNever if only someone else can wake it.
uint64_t ready_at(const Cpu& c) { return c.idle() ? c.wake_cycle() : c.cycle(); }

}  // namespace

Machine::Machine(const MachineConfig& cfg)
    : cfg_(cfg),
      bus_(cfg.isa == Isa::x86_64 ? memmap::kRamBaseX86 : memmap::kRamBase, cfg.ram_size),
      perturb_(cfg.seed, cfg.profile == nullptr) {
  if (cfg.cpus < 1 || cfg.cpus > 64) throw InputError("--cpus must be between 1 and 64");
  if (cfg.quantum < 1 || cfg.quantum > kMaxQuantum)
    throw InputError("quantum must be between 1 and " + std::to_string(kMaxQuantum) + " cycles");
  owners_ = std::make_unique<PageOwners>(bus_, cfg.cpus);
  if (cfg.profile) {
    const bool x86 = cfg.isa == Isa::x86_64;
    if (cfg.profile->isa != (x86 ? "x86" : "rv64"))
      throw InputError("machine profile " + cfg.profile->name + " describes an " + cfg.profile->isa + " core, not " +
                       (x86 ? "x86" : "rv64"));
    if (x86 && cfg.memory_model == MemoryModel::rvwmo)
      throw InputError("--memory-model rvwmo is weaker than x86 promises (its code assumes TSO): use tso or sc");
    memsys_ = std::make_unique<MemorySystem>(*cfg.profile, cfg.cpus, cfg.seed);
    memsys_->connect(owners_.get());
    memsys_->set_model(cfg.memory_model);
    // A buffered store becoming visible is that CPU's store reaching RAM:
    // the page's listeners (decoded code, reservations, tohost) hear it.
    memsys_->apply = [this](int cpu, const BufferedStore& e) {
      Ram& ram = bus_.ram();
      std::memcpy(ram.host() + (e.addr - ram.base()), &e.value, e.size);
      if (ram.page_flags(e.addr) | ram.page_flags(e.addr + e.size - 1))
        bus_.notify_flagged_store(Accessor{cpu, e.visible}, e.addr, e.size);
    };
    if (cfg.trace_cache)
      memsys_->on_miss = [this](int cpu, uint64_t cycle, uint64_t la, unsigned what, unsigned from) {
        events_.emit(Event{cycle, cpu, EventKind::cache_miss, la, what, from, ""});
      };
  } else if (cfg.trace_cache) {
    throw InputError("--trace-cache needs timing model v2 (model v1 has no caches)");
  } else if (cfg.memory_model != MemoryModel::sc) {
    throw InputError("--memory-model tso and rvwmo need timing model v2 (store buffers live in its caches)");
  }
  platform_ = cfg.isa == Isa::rv64 ? make_rv64_platform(*this) : make_x86_platform(*this);
  // The host (the kprobes engine, a debugger) reads and writes RAM on
  // behalf of the running CPU, at its clock: CPUs that ran ahead over those
  // pages are put back first.
  // The position is where the CPU's current step began: a trap's when
  // hooks run, a host phase's when the engine works on the CPU's behalf.
  bus_.before_host_access = [this](uint64_t addr, uint64_t len, bool write) {
    // The host works on behalf of the running CPU, which sees its own
    // buffered stores: they reach RAM first.
    if (running_ >= 0 && memsys_ && memsys_->buffered(running_))
      memsys_->apply_due(running_, ~uint64_t{0}, step_position());
    if (running_ < 0 || !owners_->enabled()) return;
    owners_->before_host_access(running_, step_position(), addr, len, write);
  };
  cpus_ = platform_->cpus();
  if (memsys_) connect_fetch();
  idle_reported_.assign(cpus_.size(), false);
  lines_.assign(cpus_.size(), std::string());
  if (cfg.reference_schedule && cfg.quantum != 1)
    throw InputError("the reference schedule is exact: it needs quantum 1");
}

Machine::~Machine() = default;

// Timing model v2's instruction caches decide who holds old code
// (docs/CODE_MODEL.md, "Under timing v2"): a non-coherent I-cache (RV64)
// keeps a line until fence.i or its eviction; a coherent one (x86) loses
// it to the store, and only what the CPU fetched ahead of its PC stays.
void Machine::connect_fetch() {
  CodeViews& views = platform_->code_views();
  const MachineProfile& p = memsys_->profile();
  const unsigned line = memsys_->line_bytes();
  if (!p.l1i_coherent) {
    views.holds_copy = [this, line](int cpu, uint64_t addr, unsigned len, StaleRange&) {
      const uint64_t mask = ~uint64_t{line - 1};
      return memsys_->ihit(cpu, addr & mask) || memsys_->ihit(cpu, (addr + len - 1) & mask);
    };
  } else {
    const uint64_t block = p.fetch_block;
    views.holds_copy = [this, block](int cpu, uint64_t addr, unsigned len, StaleRange& r) {
      // The aligned fetch block holding the PC, from the PC on.
      const uint64_t pc = cpus_[static_cast<size_t>(cpu)]->pc();
      const uint64_t end = (pc & ~(block - 1)) + block;
      if (!(addr < end && pc < addr + len)) return false;
      r.window_lo = pc;
      r.window_hi = end;
      return true;
    };
    // A store into a code page reaches every I-cache (a host write too).
    bus_.on_store_to_flagged(kPageHasCode, [this](const Accessor& who, uint64_t addr, unsigned size) {
      if (!who.taken_back) memsys_->code_store(who.cpu, who.cycle, addr, size);
    });
  }
  // A line leaving a non-coherent I-cache takes its old code with it; a
  // coherent one's stale bytes are those fetched ahead, beyond the cache.
  const bool drop = !p.l1i_coherent;
  memsys_->on_ievict = [this, &views, line, drop](int cpu, uint64_t la) {
    if (drop) views.drop_line(cpu, la, line);
    cpus_[static_cast<size_t>(cpu)]->line_evicted(la);
  };
}

void Machine::load(const ElfImage& image) {
  if (image.isa != cfg_.isa) throw InputError("image ISA does not match the machine");
  bool entry_ok = false;
  for (const auto& seg : image.segments) {
    if (!bus_.ram().contains(seg.paddr, std::max<uint64_t>(seg.memsz, 1)))
      throw InputError("segment at " + hex(seg.paddr) + " (" + std::to_string(seg.memsz) +
                       " bytes) does not fit in RAM [" + hex(bus_.ram().base()) + ", " +
                       hex(bus_.ram().base() + bus_.ram().size()) + ")");
    bus_.write_bytes(seg.paddr, seg.bytes.data(), seg.bytes.size());
    std::vector<uint8_t> zeros(seg.memsz - seg.bytes.size(), 0);
    bus_.write_bytes(seg.paddr + seg.bytes.size(), zeros.data(), zeros.size());
    // Segment flags are not checked: bare-metal loaders (Spike, QEMU) load
    // every PT_LOAD whatever its R/W/X bits, and programs rely on it (the
    // riscv-tests link every section into one segment without flags). The
    // simulated machine has no memory protection to map them onto.
    if (image.entry - seg.paddr < seg.memsz) entry_ok = true;
  }
  if (!entry_ok) throw InputError("entry point " + hex(image.entry) + " is not inside any loadable segment");
  if (image.entry & 1) throw InputError("entry point " + hex(image.entry) + " is not 2-byte aligned");
  symbols_ = image.symbols;
  source_lines_ = image.lines;
  for (Cpu* c : cpus_) c->set_pc(image.entry);
  // The image's code, for the code model: stores elsewhere are data.
  std::vector<std::pair<uint64_t, uint64_t>> code;
  for (const auto& seg : image.segments)
    if (seg.executable) code.emplace_back(seg.paddr, seg.paddr + seg.memsz);
  platform_->code_views().set_code_ranges(std::move(code));

  // riscv-tests convention: a store to `tohost` of (status << 1) | 1 ends
  // the run with that status.
  if (const Symbol* t = symbols_.find("tohost")) {
    if (!bus_.ram().contains(t->addr, 8)) throw InputError("tohost symbol at " + hex(t->addr) + " is outside RAM");
    arm_tohost(t->addr);
  }
}

void Machine::arm_tohost(uint64_t addr) {
  tohost_ = addr;
  bus_.ram().set_page_flag(tohost_, kPageWatched);
  if (has_tohost_) return;  // the listener is registered once
  has_tohost_ = true;
  bus_.on_store_to_flagged(kPageWatched, [this](const Accessor& who, uint64_t a, unsigned size) {
    if (a >= tohost_ + 8 || a + size <= tohost_) return;
    uint64_t v = 0;
    bus_.read_bytes(tohost_, &v, 8);
    // Even non-zero values are HTIF commands (syscalls, console), which
    // the -p- environment never sends; they are ignored.
    if (v & 1) power_off(static_cast<int>(v >> 1), who.cycle, who.cpu);
  });
}

void Machine::save_state(Writer& w) const {
  // Symbols, so a restored run prints addresses the same way.
  const auto syms = symbols_.all();
  w.u64(syms.size());
  for (const Symbol& s : syms) {
    w.str(s.name);
    w.u64(s.addr);
    w.u64(s.size);
    w.u8(static_cast<uint8_t>(s.kind));
  }
  source_lines_->save(w);
  w.boolean(has_tohost_);
  w.u64(tohost_);
  // Machine-level run state.
  w.boolean(exit_status_.has_value());
  w.i32(exit_status_.value_or(0));
  w.str(panic_reason_);
  w.str(console_);
  for (const std::string& l : lines_) w.str(l);
  for (bool b : idle_reported_) w.boolean(b);
  w.i32(slot_cpu_);
  w.u64(slot_until_);
  // RAM: only pages that are not all zero.
  const Ram& ram = bus_.ram();
  std::vector<uint64_t> used;
  for (uint64_t p : ram.resident_pages()) {
    const uint64_t* q = reinterpret_cast<const uint64_t*>(ram.host() + p * kPageSize);
    for (size_t i = 0; i < kPageSize / 8; ++i)
      if (q[i]) {
        used.push_back(p);
        break;
      }
  }
  w.u64(used.size());
  for (uint64_t p : used) {
    w.u64(p);
    w.raw(ram.host() + p * kPageSize, kPageSize);
  }
  platform_->save(w);
  events_.save(w);
  save_caches(w);
}

// Timing model v2's caches: per cache the replacement clock and generator
// and its valid slots (most are invalid), then each CPU's counters.
void Machine::save_caches(Writer& w) const {
  if (!memsys_) return;
  for (Cache* c : const_cast<MemorySystem&>(*memsys_).all_caches()) {
    const Cache::Raw raw = c->raw();
    w.u64(*raw.clock);
    w.u64(*raw.rng);
    uint64_t valid = 0;
    for (uint8_t st : *raw.state) valid += st != Cache::kInvalid;
    w.u64(valid);
    for (size_t i = 0; i < raw.state->size(); ++i) {
      if ((*raw.state)[i] == Cache::kInvalid) continue;
      w.u32(static_cast<uint32_t>(i));
      w.u64((*raw.lines)[i]);
      w.u8((*raw.state)[i]);
      w.u64((*raw.stamp)[i]);
    }
  }
  for (const CacheStats& st : const_cast<MemorySystem&>(*memsys_).all_stats()) w.raw(&st, sizeof st);
  for (const StoreBuffer& b : const_cast<MemorySystem&>(*memsys_).all_buffers()) {
    w.u64(b.size());
    for (const BufferedStore& e : b) {
      w.u64(e.addr);
      w.u64(e.value);
      w.u64(e.visible);
      w.u8(e.size);
      w.boolean(e.applied);
    }
  }
}

void Machine::restore_caches(Reader& r) {
  if (!memsys_) return;
  for (Cache* c : memsys_->all_caches()) {
    const Cache::Raw raw = c->raw();
    c->clear();
    *raw.clock = r.u64();
    *raw.rng = r.u64();
    const uint64_t valid = r.length(4 + 8 + 1 + 8);
    for (uint64_t k = 0; k < valid; ++k) {
      const uint32_t i = r.u32();
      if (i >= raw.state->size()) r.fail("cache slot out of range");
      (*raw.lines)[i] = r.u64();
      const uint8_t st = r.u8();
      if (st == Cache::kInvalid || st > kMesiM) r.fail("bad cache line state");
      (*raw.state)[i] = st;
      (*raw.stamp)[i] = r.u64();
    }
  }
  for (Cpu* c : cpus_) c->icache_replaced();
  memsys_->forget_filters();
  for (CacheStats& st : memsys_->all_stats()) r.raw(&st, sizeof st);
  for (StoreBuffer& b : memsys_->all_buffers()) {
    b.clear();
    const uint64_t n = r.length(8 + 8 + 8 + 1 + 1);
    for (uint64_t k = 0; k < n; ++k) {
      BufferedStore e;
      e.addr = r.u64();
      e.value = r.u64();
      e.visible = r.u64();
      e.size = r.u8();
      e.applied = r.boolean();
      if (e.size == 0 || e.size > 8 || !bus_.ram().contains(e.addr, e.size)) r.fail("bad buffered store");
      b.push(e);
    }
  }
}

void Machine::restore_state(Reader& r) {
  SymbolTable syms;
  uint64_t nsyms = r.length(8 + 8 + 8 + 1);
  for (uint64_t i = 0; i < nsyms; ++i) {
    Symbol s;
    s.name = r.str();
    s.addr = r.u64();
    s.size = r.u64();
    uint8_t kind = r.u8();
    if (kind > static_cast<uint8_t>(Symbol::Kind::other)) r.fail("bad symbol kind");
    s.kind = static_cast<Symbol::Kind>(kind);
    syms.add(std::move(s));
  }
  syms.finalize();
  auto source_lines = std::make_shared<const LineTable>(LineTable::restore(r));
  bool has_tohost = r.boolean();
  uint64_t tohost = r.u64();
  if (has_tohost && !bus_.ram().contains(tohost, 8)) r.fail("tohost outside RAM");
  bool exited = r.boolean();
  int32_t status = r.i32();
  std::string panic = r.str(), console = r.str();
  std::vector<std::string> lines(cpus_.size());
  for (std::string& l : lines) l = r.str();
  std::vector<bool> idle_reported(cpus_.size());
  for (size_t i = 0; i < idle_reported.size(); ++i) idle_reported[i] = r.boolean();
  int32_t slot_cpu = r.i32();
  uint64_t slot_until = r.u64();
  if (slot_cpu < -1 || slot_cpu >= cpu_count()) r.fail("bad scheduler slot");

  Ram& ram = bus_.ram();
  ram.clear();
  const uint64_t pages = ram.size() / kPageSize;
  uint64_t used = r.length(8 + kPageSize);
  for (uint64_t i = 0; i < used; ++i) {
    uint64_t p = r.u64();
    if (p >= pages) r.fail("page outside RAM");
    r.raw(ram.host() + p * kPageSize, kPageSize);
  }
  platform_->restore(r);
  EventStream held;
  held.restore(r);
  restore_caches(r);
  if (!r.at_end()) r.fail("trailing data");

  symbols_ = std::move(syms);
  source_lines_ = std::move(source_lines);
  if (has_tohost) arm_tohost(tohost);
  exit_status_ = exited ? std::optional<int>(status) : std::nullopt;
  panic_reason_ = panic;
  stop_reason_.clear();
  console_ = console;
  lines_ = std::move(lines);
  idle_reported_ = idle_reported;
  events_.adopt_held(std::move(held));
  slot_cpu_ = slot_cpu;
  slot_until_ = slot_until;
}

void Machine::power_off(int status, uint64_t cycle, int cpu) {
  if (exit_status_) return;
  exit_status_ = status;
  end_cpu_ = cpu;
  end_cycle_ = cycle;
  halt_ = true;
  flush_console(cycle);
  events_.emit(Event{cycle, cpu, EventKind::exit, static_cast<uint64_t>(static_cast<int64_t>(status)), 0, 0,
                     "poweroff", static_cast<uint8_t>(RunResult::End::poweroff)});
  for (Cpu* c : cpus_) c->request_stop();
}

void Machine::guest_panic(int code, uint64_t cycle, int cpu) {
  if (exit_status_ || !panic_reason_.empty()) return;
  panic_reason_ = "cpu " + std::to_string(cpu) + ": guest kernel panic (code " + std::to_string(code) + ")";
  end_cpu_ = cpu;
  end_cycle_ = cycle;
  halt_ = true;
  flush_console(cycle);
  for (Cpu* c : cpus_) c->request_stop();
}

void Machine::request_stop(const std::string& reason) {
  if (!stop_reason_.empty()) return;
  stop_reason_ = reason;
  if (running_ >= 0) {
    end_cpu_ = running_;
    end_cycle_ = step_position();
  }
  halt_ = true;
  for (Cpu* c : cpus_) c->request_stop();
}

// Lines are assembled per CPU (CPUs printing at once do not mix their
// lines) and stamped with the cycle of the newline: the line exists when
// it is complete, which also keeps console events in cycle order.
void Machine::console_putc(const Accessor& who, char c) {
  console_ += c;
  if (console_sink) console_sink(c);
  const size_t k = who.cpu >= 0 && static_cast<size_t>(who.cpu) < lines_.size() ? static_cast<size_t>(who.cpu) : 0;
  if (c == '\n') {
    events_.emit(Event{who.cycle, static_cast<int>(k), EventKind::console, 0, 0, 0, lines_[k]});
    lines_[k].clear();
  } else {
    lines_[k] += c;
  }
}

// Unfinished lines when the run ends, stamped with the end's cycle.
void Machine::flush_console(uint64_t cycle) {
  for (size_t k = 0; k < lines_.size(); ++k) {
    if (lines_[k].empty()) continue;
    events_.emit(Event{std::max(cycle, cpus_[k]->cycle()), static_cast<int>(k), EventKind::console, 0, 0, 0,
                       lines_[k]});
    lines_[k].clear();
  }
}

void Machine::cpu_interrupts_changed(int cpu) {
  // An idle CPU wakes when the scheduler reaches its wake_cycle(), which
  // already accounts for the interrupt's delivery latency.
  cpus_[cpu]->interrupts_changed();
  if (static_cast<size_t>(cpu) >= ready_.size()) return;
  // Exact schedule: idle time passes up to the writer's clock, so a timer
  // compare written (by the running CPU) for an idle CPU whose clock lags
  // cannot wake it in the writer's past. (Under a larger quantum CPUs run
  // in each other's past by design, and an idle CPU keeps its own timer's
  // wake-up.)
  if (cfg_.quantum == 1 && running_ >= 0 && cpu != running_ && cpus_[cpu]->idle())
    cpus_[cpu]->advance_idle(cpus_[running_]->cycle());
  ready_[cpu] = ready_at(*cpus_[cpu]);
  idle_[cpu] = cpus_[cpu]->idle();
  // A CPU woken (or woken earlier) by the running one: the running CPU's
  // slot must end where the woken CPU's turn begins, not where it was
  // computed to end when nobody else was ready.
  if (running_ >= 0 && cpu != running_ && slot_cpu_ == running_) {
    const uint64_t b = bound_for(running_, cpu);
    if (b < slot_until_) {
      slot_until_ = b;
      if (run_until_ > b) run_until_ = b;
      cpus_[running_]->request_stop();  // returns after this instruction; the slot goes on to b
    }
  }
}

void Machine::cpu_clock_changed(int cpu) {
  if (static_cast<size_t>(cpu) < ready_.size() && cpu != running_) ready_[cpu] = ready_at(*cpus_[cpu]);
}

uint64_t Machine::bound_for(int cur, int other) const {
  const uint64_t t = ready_[other];
  if (t == kNever) return kNever;
  // Exact: `cur` may start a step at cycle c while (c, cur) < (t, other).
  const uint64_t exact = t + (cur < other ? 1 : 0);
  const uint64_t extra = cfg_.quantum - 1;
  return exact > kNever - extra ? kNever : exact + extra;
}

uint64_t Machine::step_position() const {
  if (running_ < 0) return now();
  if (hooks_.active()) return platform_->last_trap_cycle(running_);
  if (agent_step_) return agent_step_start_;
  return cpus_[static_cast<size_t>(running_)]->cycle();
}

void Machine::settle(int k) {
  if (running_ >= 0 && k != running_ && owners_->enabled() && owners_->ahead(k)) resolve(k, step_position(), running_);
}

bool Machine::host_device_store(const Accessor& who, uint64_t addr, unsigned size, uint64_t value) {
  if (running_ >= 0 && owners_->enabled())
    owners_->resolve_mask(running_, step_position(), bus_.cpus_affected(who, addr, size, true, value));
  return bus_.store(who, addr, size, value) == AccessResult::ok;
}

uint64_t Machine::now() const {
  if (running_ >= 0) return cpus_[running_]->cycle();
  uint64_t t = 0;
  for (Cpu* c : cpus_) t = std::max(t, c->cycle());
  return t;
}

uint64_t Machine::steps() const {
  uint64_t n = 0;
  for (Cpu* c : cpus_) n += c->steps();
  return n;
}

RunResult Machine::run(const RunLimits& limits) {
  platform_->set_trace_insns(events_.wants_insns());
  events_.set_ordered(true);
  stop_reason_.clear();  // a host stop ends one run(); the next one resumes
  // When each CPU next has something to do. Kept up to date incrementally:
  // only the CPU that ran, and CPUs whose interrupts changed, can move.
  ready_.resize(cpus_.size());
  idle_.resize(cpus_.size());
  for (size_t i = 0; i < cpus_.size(); ++i) {
    ready_[i] = ready_at(*cpus_[i]);
    idle_[i] = cpus_[i]->idle();
  }
  halt_ = exit_status_.has_value() || !panic_reason_.empty();
  end_cpu_ = -1;
  const bool ahead = ahead_allowed(limits);
  set_run_ahead(ahead);
  // A slot resumed after a pause ends where another CPU's turn now begins:
  // something done while paused (a host write to the CLINT, say) may have
  // woken a CPU.
  // Work done on the slot CPU's behalf while paused (a --probe-script
  // operation charged to it) may have moved it past its own turn.
  if (slot_cpu_ >= 0) {
    for (int j = 0; j < cpu_count(); ++j)
      if (j != slot_cpu_) slot_until_ = std::min(slot_until_, bound_for(slot_cpu_, j));
    if (memsys_) slot_until_ = std::min(slot_until_, memsys_->next_visible_except(slot_cpu_));
  }
  if (slot_cpu_ >= 0 && ready_[slot_cpu_] >= slot_until_) slot_cpu_ = -1;
  auto finish = [this](RunResult r) {
    // CPUs that ran ahead: at a pause or the cycle limit every CPU has run
    // every step that starts before it, so what they did ahead is final;
    // a run that ends at one CPU's step (power-off, crash, stop) puts them
    // back to that step.
    if (owners_->enabled()) {
      if (r.end == RunResult::End::paused || r.end == RunResult::End::cycle_limit || end_cpu_ < 0)
        commit_all();
      else
        resolve_all_to(end_cycle_, end_cpu_);
    }
    r.cycles = 0;
    for (Cpu* c : cpus_) {
      r.cycles = std::max(r.cycles, c->cycle());
      r.instret += c->instret();
    }
    // A pause is not an end: a half-printed line stays pending, so pausing
    // never splits a console event, and events at or after the slowest
    // CPU's clock stay held (a resumed run may still produce earlier ones).
    if (r.end == RunResult::End::paused) {
      uint64_t low = kNever;
      for (Cpu* c : cpus_) low = std::min(low, ready_at(*c));
      // Memory as the host sees it at the pause: every buffered store
      // visible by the time no CPU has passed (as before a step there).
      if (memsys_ && low != kNever) memsys_->apply_due_all(low);
      events_.release_below(low);
      return r;
    }
    flush_console(r.cycles);
    if (r.end != RunResult::End::poweroff)
      events_.emit(Event{r.cycles, -1, EventKind::exit, static_cast<uint64_t>(r.status), 0, 0, r.reason,
                         static_cast<uint8_t>(r.end)});
    events_.set_ordered(false);  // the run is over: deliver everything
    return r;
  };

  const bool stepping = limits.steps != 0;
  const bool reference = cfg_.reference_schedule;
  const int n = cpu_count();
  while (true) {
    if (halt_) {
      if (exit_status_) return finish({RunResult::End::poweroff, *exit_status_, "", 0, 0});
      if (!panic_reason_.empty()) return finish({RunResult::End::crash, 0, panic_reason_, 0, 0});
      if (!stop_reason_.empty()) return finish({RunResult::End::hook_stop, 0, stop_reason_, 0, 0});
      halt_ = false;
    }
    const uint64_t now_steps = stepping ? steps() : 0;
    if (stepping && now_steps >= limits.steps) return finish({RunResult::End::paused, 0, "", 0, 0});

    if (slot_cpu_ < 0) {
      // A new slot. The CPU furthest behind runs next, ties to the lowest
      // number; the slot lasts while that CPU would still be chosen, i.e.
      // up to the second smallest (ready time, number): see bound_for().
      int next = -1, second = -1;
      uint64_t next_t = kNever, second_t = kNever;
      for (int i = 0; i < n; ++i) {
        const uint64_t t = ready_[i];
        if (t < next_t) {
          second_t = next_t;
          second = next;
          next_t = t;
          next = i;
        } else if (t < second_t) {
          second_t = t;
          second = i;
        }
      }
      // Nothing can happen before next_t any more: what is held below it
      // can be delivered.
      events_.release_below(next_t);
      if (next < 0)
        return finish({RunResult::End::crash, 0,
                       "every CPU is waiting for an interrupt that nothing will send (wfi with no timer armed)", 0,
                       0});
      if (next_t >= cfg_.max_cycles) return finish({RunResult::End::cycle_limit, 0, "cycle limit reached", 0, 0});
      if (next_t >= limits.cycle) return finish({RunResult::End::paused, 0, "", 0, 0});

      Cpu& c = *cpus_[next];
      // The CPU furthest behind: what it did ahead can no longer be seen
      // by anyone earlier.
      if (owners_->ahead(next)) owners_->commit(next);
      if (idle_[next]) {
        c.advance_idle(next_t);
        ready_[next] = ready_at(c);
        idle_[next] = c.idle();
        if (idle_reported_[next]) {
          events_.emit(Event{c.cycle(), next, EventKind::wake, 0, 0, 0, ""});
          idle_reported_[next] = false;
        }
      }
      slot_cpu_ = next;
      slot_until_ = second < 0 ? cfg_.max_cycles : std::min(cfg_.max_cycles, bound_for(next, second));
      // Store buffers (timing v2): what became visible by now reaches RAM
      // before this step, and no step of this slot starts at or after the
      // next moment another CPU's buffered store becomes visible.
      if (memsys_) {
        memsys_->apply_due_all(ready_[next]);
        slot_until_ = std::min(slot_until_, memsys_->next_visible_except(next));
      }
    } else if (ready_[slot_cpu_] >= limits.cycle) {
      return finish({RunResult::End::paused, 0, "", 0, 0});
    }

    // Run the slot: to its end, or to the step limit (a paused slot resumes
    // where it stopped, so pausing never changes the schedule). While anyone
    // observes events in order, a long slot comes back every kReleaseCycles
    // so held events are delivered as the run goes (splitting a slot changes
    // nothing either), instead of piling up until a CPU alone reaches its end.
    const int cur = slot_cpu_;
    running_ = cur;
    uint64_t until = std::min(slot_until_, limits.cycle);
    if (events_.has_ordered_observers()) until = std::min(until, ready_[cur] + kReleaseCycles);
    run_until_ = stepping || reference ? 0 : until;
    uint32_t st = 0;
    if (agent_ && agent_->pending(cur)) {
      Cpu& c = *cpus_[cur];
      agent_step_ = true;
      agent_step_start_ = c.cycle();
      agent_->resume(c);  // host work on this CPU's behalf: no instruction runs
      agent_step_ = false;
      ready_[cur] = ready_at(c);
      if (c.idle()) st |= Platform::kSlotIdle;
    } else {
      // The reference schedule decides again after every step.
      st = platform_->run_slot(cur, until, reference ? 1 : stepping ? limits.steps - now_steps : 0, ready_[cur]);
      // Its slot ended at its exact bound: it runs on ahead of the others.
      if (ahead && st == 0 && !halt_ && ready_[cur] >= slot_until_ && !(agent_ && agent_->pending(cur)))
        st = run_ahead(cur, limits);
    }
    running_ = -1;
    run_until_ = 0;
    const bool idle = (st & Platform::kSlotIdle) != 0;
    idle_[cur] = idle;
    if (ready_[cur] >= slot_until_ || idle || reference) {
      slot_cpu_ = -1;
    } else if (events_.held()) {
      // The slot goes on; nothing can happen below the smallest ready time.
      uint64_t low = kNever;
      for (int i = 0; i < n; ++i) low = std::min(low, ready_[i]);
      events_.release_below(low);
    }
    if (st & ~Platform::kSlotIdle) [[unlikely]] {
      if (st & (Platform::kSlotCrashed | Platform::kSlotHookStopped)) {
        end_cpu_ = cur;
        end_cycle_ = platform_->last_trap_cycle(cur);
      }
      if (st & Platform::kSlotCrashed)
        return finish({RunResult::End::crash, 0, platform_->crash_reason(cur), 0, 0});
      if ((st & Platform::kSlotHookStopped) && stop_reason_.empty()) {
        const uint64_t pc = cpus_[cur]->pc();
        stop_reason_ = "a trap hook stopped the run on cpu " + std::to_string(cur) + " at pc " + hex(pc) + " (" +
                       describe(pc) + ")";
        halt_ = true;
      }
    }
    if (idle && !idle_reported_[cur]) {
      events_.emit(Event{cpus_[cur]->cycle(), cur, EventKind::idle, 0, 0, 0, ""});
      idle_reported_[cur] = true;
    }
  }
}

}  // namespace ksim
