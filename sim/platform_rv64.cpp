// The RV64 machine: CLINT, UART, finisher, and harts sharing one decode
// cache and one reservation set.
#include <cstdio>
#include <memory>

#include "cpu/rv64/clint.hpp"
#include "cpu/rv64/decode_cache.hpp"
#include "cpu/rv64/hart.hpp"
#include "cpu/rv64/reservations.hpp"
#include "cpu/timing.hpp"
#include "cpu/trap_loop.hpp"
#include "mem/finisher.hpp"
#include "mem/uart.hpp"
#include "sim/machine.hpp"
#include "cpu/trap_loop.hpp"
#include "sim/platform.hpp"

namespace ksim {

namespace {

class Rv64Platform final : public Platform {
 public:
  explicit Rv64Platform(Machine& m)
      : m_(m),
        clint_(m.config().cpus, timing::kTimebaseDivider, m.perturbation(),
               rv64::Clint::Listener{[&m](int hart) { m.cpu_interrupts_changed(hart); },
                               [&m](int from, int to, uint64_t cycle) {
                                 m.events().emit(Event{cycle, from, EventKind::ipi_send,
                                                       static_cast<uint64_t>(to), 0, 0, ""});
                               }}),
        uart_([&m](const Accessor& who, char c) { m.console_putc(who, c); }),
        finisher_([&m](const Accessor& who, int status, bool panic) {
          if (panic)
            m.guest_panic(status, who.cycle, who.cpu);
          else
            m.power_off(status, who.cycle, who.cpu);
        }),
        // A hart sees its own stores to code only after fence.i, like
        // everyone else's (docs/CODE_MODEL.md).
        views_(m.bus(), m.config().cpus, m.config().code_model, false),
        cache_(m.bus(), &views_),
        reservations_(m.bus(), m.config().cpus) {
    connect_code_views(m, views_);
    m.bus().map(memmap::kClintBase, memmap::kClintSize, &clint_);
    m.bus().map(memmap::kUartBase, memmap::kUartSize, &uart_);
    m.bus().map(memmap::kFinisherBase, memmap::kFinisherSize, &finisher_);
    for (int i = 0; i < m.config().cpus; ++i) {
      auto h = std::make_unique<rv64::Hart>(i, m.bus(), clint_, cache_, reservations_, &m.trap_hooks(),
                                            m.perturbation(), m.page_owners(), views_);
      h->set_memory_system(m.memory_system());
      h->on_trap = [this](const rv64::Hart& hart, const rv64::Hart::TrapRecord& r) {
        if (m_.events().empty()) return;  // nobody listens: skip building events
        Event e;
        e.cycle = r.cycle;
        e.cpu = hart.id();
        e.kind = r.info.interrupt ? EventKind::interrupt : EventKind::trap;
        e.a = r.info.cause;
        e.b = r.info.tval;
        e.c = r.info.pc;
        e.text = r.delivered ? "delivered" : "hooked";
        e.sub = r.delivered ? 0 : 1;
        m_.events().emit(e);
        // A software interrupt another hart raised (an IPI): who sent it.
        // A hart's own msip write or the host's is not an IPI (as on x86).
        if (r.info.interrupt && r.info.cause == rv64::kIrqMSoft) {
          const int from = clint_.msip_source(hart.id());
          if (from >= 0 && from != hart.id())
            m_.events().emit(Event{r.cycle, hart.id(), EventKind::ipi_recv, static_cast<uint64_t>(from), 0, 0, ""});
        }
      };
      h->on_insn = [this](const rv64::Hart& hart, const rv64::Insn& in) {
        Event e;
        e.cycle = hart.cycle();
        e.cpu = hart.id();
        e.kind = EventKind::insn;
        e.a = hart.pc();
        e.b = in.raw;
        e.c = in.len;
        m_.events().emit(e);
      };
      harts_.push_back(std::move(h));
    }
  }

  CodeViews& code_views() override { return views_; }
  std::vector<Cpu*> cpus() override {
    std::vector<Cpu*> v;
    for (auto& h : harts_) v.push_back(h.get());
    return v;
  }

  uint32_t run_slot(int cpu, uint64_t until, uint64_t steps, uint64_t& ready) override {
    return run_core_slot(*harts_[static_cast<size_t>(cpu)], until, steps, ready);
  }
  void save_ahead_point(int cpu) override { harts_[static_cast<size_t>(cpu)]->save_ahead_point(); }
  void restore_ahead_point(int cpu) override { harts_[static_cast<size_t>(cpu)]->restore_ahead_point(); }
  void set_access_mode(int cpu, AccessMode m) override { harts_[static_cast<size_t>(cpu)]->set_access_mode(m); }
  uint64_t last_trap_cycle(int cpu) const override { return harts_[static_cast<size_t>(cpu)]->last_trap_cycle(); }

  std::string crash_reason(int cpu) override {
    const rv64::Hart& h = *harts_[cpu];
    if (h.stop_reason() != rv64::StopReason::trap_loop) return "";
    // The first trap is what the guest did wrong; the others are its trap
    // vector faulting in turn.
    const TrapInfo& t = h.trap_loop_first();
    const TrapInfo& l = h.trap_loop_last();
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "cpu %d: unhandled trap loop: mcause=%llu mtval=0x%llx at pc=0x%llx (%s), then %d more with no "
                  "instruction retired, the last mcause=%llu at pc=0x%llx; mtvec=0x%llx",
                  cpu, static_cast<unsigned long long>(t.cause), static_cast<unsigned long long>(t.tval),
                  static_cast<unsigned long long>(t.pc), m_.describe(t.pc).c_str(), kMaxNestedTraps,
                  static_cast<unsigned long long>(l.cause), static_cast<unsigned long long>(l.pc),
                  static_cast<unsigned long long>(h.s.mtvec));
    return buf;
  }

  void set_trace_insns(bool on) override {
    for (auto& h : harts_) h->set_trace_insns(on);
  }

  // Field by field (never whole structs: padding bytes would make equal
  // states serialise differently).
  void save(Writer& w) const override {
    w.u32(static_cast<uint32_t>(harts_.size()));
    for (const auto& h : harts_) {
      const rv64::State& s = h->s;
      for (int i = 0; i < 32; ++i) w.u64(s.x[i]);
      w.u64(s.pc);
      w.u8(static_cast<uint8_t>(s.priv));
      for (uint64_t v : {s.cycle, s.instret, s.mstatus, s.mie, s.mtvec, s.mscratch, s.mepc, s.mcause, s.mtval,
                         s.mcounteren, s.mcycle_base, s.minstret_base})
        w.u64(v);
      const rv64::Control& c = h->ctl_;
      w.boolean(c.idle);
      for (uint64_t v : {c.next_stall, c.stall_draws, c.traps, c.instret_at_last_trap, c.l1_hits, c.fetch_line, c.l1i_hits})
        w.u64(v);
      w.i32(c.nested_traps);
      w.boolean(reservations_.held(h->id()));
      w.u64(reservations_.address(h->id()));
    }
    rv64::Clint::Snapshot cs = clint_.snapshot();
    w.vec(cs.msip);
    w.vec(cs.msip_at);
    w.vec(cs.mtimecmp);
    w.vec(cs.timer_jitter);
    w.vec(cs.timer_draws);
    w.vec(cs.ipi_draws);
    w.vec(cs.msip_from);
    save_code_views(w, views_, static_cast<int>(harts_.size()));
  }

  void restore(Reader& r) override {
    if (r.u32() != harts_.size()) r.fail("CPU count differs");
    for (auto& h : harts_) {
      rv64::State& s = h->s;
      for (int i = 0; i < 32; ++i) s.x[i] = r.u64();
      if (s.x[0] != 0) r.fail("x0 is not zero");
      s.x[32] = 0;
      s.pc = r.u64();
      uint8_t priv = r.u8();
      if (priv != 0 && priv != 3) r.fail("bad privilege mode");
      s.priv = static_cast<rv64::Priv>(priv);
      for (uint64_t* v : {&s.cycle, &s.instret, &s.mstatus, &s.mie, &s.mtvec, &s.mscratch, &s.mepc, &s.mcause,
                          &s.mtval, &s.mcounteren, &s.mcycle_base, &s.minstret_base})
        *v = r.u64();
      // Only states the hart itself could have reached are accepted.
      if (s.pc & 1) r.fail("odd pc");
      if (s.mepc & 1) r.fail("odd mepc");
      if (s.mtvec & 2) r.fail("reserved mtvec mode");
      const uint64_t mpp = (s.mstatus & rv64::kMstatusMPP) >> 11;
      if ((s.mstatus & ~rv64::kMstatusWritableMask) != rv64::kMstatusUXL64 || (mpp != 0 && mpp != 3))
        r.fail("impossible mstatus");
      if (s.mie & ~(rv64::kMSIP | rv64::kMTIP | rv64::kMEIP)) r.fail("impossible mie");
      if (s.mcounteren & ~uint64_t{7}) r.fail("impossible mcounteren");
      rv64::Control& c = h->ctl_;
      c.idle = r.boolean();
      for (uint64_t* v : {&c.next_stall, &c.stall_draws, &c.traps, &c.instret_at_last_trap, &c.l1_hits, &c.fetch_line, &c.l1i_hits})
        *v = r.u64();
      c.nested_traps = r.i32();
      bool held = r.boolean();
      uint64_t granule = r.u64();
      if (held && !m_.bus().ram().contains(granule, 8)) r.fail("reservation outside RAM");
      reservations_.restore(h->id(), held, granule);
    }
    rv64::Clint::Snapshot cs;
    cs.msip = r.vec<uint8_t>();
    cs.msip_at = r.vec<uint64_t>();
    cs.mtimecmp = r.vec<uint64_t>();
    cs.timer_jitter = r.vec<uint64_t>();
    cs.timer_draws = r.vec<uint64_t>();
    cs.ipi_draws = r.vec<uint64_t>();
    cs.msip_from = r.vec<int32_t>();
    if (!clint_.restore(cs)) r.fail("CLINT state does not match the CPU count");
    restore_code_views(r, views_, static_cast<int>(harts_.size()));
    for (auto& h : harts_) h->interrupts_changed();  // forget what the harts had prepared
    // RAM was rewritten wholesale: forget every decoded instruction.
    cache_.flush();
  }

 private:
  Machine& m_;
  rv64::Clint clint_;
  Uart uart_;
  Finisher finisher_;
  CodeViews views_;  // before the cache, which tells it of new code pages
  rv64::DecodeCache cache_;
  rv64::Reservations reservations_;
  std::vector<std::unique_ptr<rv64::Hart>> harts_;
};

}  // namespace

std::unique_ptr<Platform> make_rv64_platform(Machine& m) { return std::make_unique<Rv64Platform>(m); }

}  // namespace ksim
