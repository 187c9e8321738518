// The x86-64 machine: local APIC, UART, finisher, and CPUs sharing one
// decode cache. Devices sit at the same addresses as on RV64 (UART, the
// finisher), plus the APIC window at 0xFEE0_0000.
#include <algorithm>
#include <memory>

#include "cpu/timing.hpp"
#include "cpu/x86/lapic.hpp"
#include "cpu/x86/x86_cpu.hpp"
#include "mem/finisher.hpp"
#include "mem/uart.hpp"
#include "sim/machine.hpp"
#include "sim/platform.hpp"

namespace ksim {

namespace {

class X86Platform final : public Platform {
 public:
  explicit X86Platform(Machine& m)
      : m_(m),
        lapic_(m.config().cpus, m.perturbation(),
               x86::Lapic::Listener{[&m](int cpu) { m.cpu_interrupts_changed(cpu); },
                                    [&m](int from, int to, int, uint64_t cycle) {
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
        // A CPU sees its own stores to code at once (docs/CODE_MODEL.md).
        views_(m.bus(), m.config().cpus, m.config().code_model, true),
        cache_(m.bus(), &views_) {
    connect_code_views(m, views_);
    m.bus().map(x86::kLapicBase, x86::kLapicSize, &lapic_);
    m.bus().map(memmap::kUartBase, memmap::kUartSize, &uart_);
    m.bus().map(memmap::kFinisherBase, memmap::kFinisherSize, &finisher_);
    for (int i = 0; i < m.config().cpus; ++i) {
      auto c = std::make_unique<x86::X86Cpu>(i, m.bus(), cache_, lapic_, &m.trap_hooks(), m.perturbation(),
                                              m.page_owners(), views_);
      c->set_memory_system(m.memory_system());
      c->on_trap = [this](const x86::X86Cpu& cpu, const x86::X86Cpu::TrapRecord& r) {
        if (m_.events().empty()) return;  // nobody listens: skip building events
        m_.events().emit(Event{r.cycle, cpu.id(), r.info.interrupt ? EventKind::interrupt : EventKind::trap,
                               r.info.cause, r.info.tval, r.info.pc,
                               (r.delivered ? std::string("delivered") : std::string("hooked")) +
                                   (r.text.empty() ? "" : ": " + r.text),
                               static_cast<uint8_t>(r.delivered ? 0 : 1)});
        // An interrupt another CPU's IPI raised: who sent it (as RV64).
        if (r.info.interrupt) {
          const int from = lapic_.ipi_source(cpu.id(), static_cast<int>(r.info.cause));
          if (from >= 0)
            m_.events().emit(Event{r.cycle, cpu.id(), EventKind::ipi_recv, static_cast<uint64_t>(from), 0, 0, ""});
        }
      };
      // `raw`: the instruction's first (up to) 8 bytes, little-endian
      // (docs/X86.md); x86 instructions are up to 15 bytes long.
      c->on_insn = [this](const x86::X86Cpu& cpu, const x86::Insn& in) {
        // The bytes this CPU executed: memory as its (possibly stale) view
        // of code shows it (cpu/code_view.hpp).
        uint64_t raw = 0;
        const unsigned n = std::min<unsigned>(in.len, 8);
        if (cpu.fetch_view(cpu.pc(), reinterpret_cast<uint8_t*>(&raw), n) != n) raw = 0;
        m_.events().emit(Event{cpu.cycle(), cpu.id(), EventKind::insn, cpu.pc(), raw, in.len, ""});
      };
      cpus_.push_back(std::move(c));
      ahead_timer_.push_back({});
    }
  }

  CodeViews& code_views() override { return views_; }
  std::vector<Cpu*> cpus() override {
    std::vector<Cpu*> v;
    for (auto& c : cpus_) v.push_back(c.get());
    return v;
  }
  uint32_t run_slot(int cpu, uint64_t until, uint64_t steps, uint64_t& ready) override {
    return run_core_slot(*cpus_[static_cast<size_t>(cpu)], until, steps, ready);
  }
  void save_ahead_point(int cpu) override {
    cpus_[static_cast<size_t>(cpu)]->save_ahead_point();
    ahead_timer_[static_cast<size_t>(cpu)] = lapic_.timer_point(cpu);
  }
  void restore_ahead_point(int cpu) override {
    cpus_[static_cast<size_t>(cpu)]->restore_ahead_point();
    lapic_.restore_timer_point(cpu, ahead_timer_[static_cast<size_t>(cpu)]);
  }
  void set_access_mode(int cpu, AccessMode m) override { cpus_[static_cast<size_t>(cpu)]->set_access_mode(m); }
  uint64_t last_trap_cycle(int cpu) const override { return cpus_[static_cast<size_t>(cpu)]->last_trap_cycle(); }
  std::string crash_reason(int cpu) override {
    const x86::X86Cpu& c = *cpus_[cpu];
    if (c.crash_reason().empty()) return "";
    return c.crash_reason() + "; in " + m_.describe(c.crash_pc());
  }
  void set_trace_insns(bool on) override {
    for (auto& c : cpus_) c->set_trace_insns(on);
  }
  // Field by field, like the RV64 platform.
  void save(Writer& w) const override {
    w.u32(static_cast<uint32_t>(cpus_.size()));
    for (const auto& c : cpus_) {
      const x86::State& s = c->s;
      for (uint64_t v : s.gpr) w.u64(v);
      for (uint64_t v : {s.rip, s.rflags, s.fs_base, s.gs_base, s.kernel_gs_base, s.idt_base, s.cycle, s.instret})
        w.u64(v);
      w.u32(s.idt_limit);
      w.u32(s.cs);
      w.u32(s.ss);
      const x86::X86Cpu::Control k = c->control();
      w.boolean(k.halted);
      w.boolean(k.sti_shadow);
      w.u64(k.traps);
      w.u64(k.instret_at_last_trap);
      w.i32(k.nested_traps);
      // The rep iterations counted as steps, and the seeded stall schedule
      // (as RV64 saves its harts' next_stall and stall_draws).
      for (uint64_t v : {k.rep_iterations, k.next_stall, k.stall_draws, k.l1_hits, k.fetch_line, k.l1i_hits, k.fetch_next})
        w.u64(v);
    }
    w.vec(lapic_.snapshot());
    save_code_views(w, views_, static_cast<int>(cpus_.size()));
  }

  void restore(Reader& r) override {
    if (r.u32() != cpus_.size()) r.fail("CPU count differs");
    for (auto& c : cpus_) {
      x86::State& s = c->s;
      for (uint64_t& v : s.gpr) v = r.u64();
      for (uint64_t* v : {&s.rip, &s.rflags, &s.fs_base, &s.gs_base, &s.kernel_gs_base, &s.idt_base, &s.cycle,
                          &s.instret})
        *v = r.u64();
      uint32_t limit = r.u32(), cs = r.u32(), ss = r.u32();
      if (limit > 0xffff || cs > 0xffff || ss > 0xffff) r.fail("bad segment state");
      if ((s.rflags & ~x86::kFlagsWritable) != x86::kFlagsFixed) r.fail("impossible rflags");
      s.idt_limit = static_cast<uint16_t>(limit);
      s.cs = static_cast<uint16_t>(cs);
      s.ss = static_cast<uint16_t>(ss);
      x86::X86Cpu::Control k;
      k.halted = r.boolean();
      k.sti_shadow = r.boolean();
      k.traps = r.u64();
      k.instret_at_last_trap = r.u64();
      k.nested_traps = r.i32();
      k.rep_iterations = r.u64();
      k.next_stall = r.u64();
      k.stall_draws = r.u64();
      k.l1_hits = r.u64();
      k.fetch_line = r.u64();
      k.l1i_hits = r.u64();
      k.fetch_next = r.u64();
      c->reset_control();
      c->set_control(k);
    }
    if (!lapic_.restore(r.vec<uint64_t>())) r.fail("APIC state does not match the CPU count");
    restore_code_views(r, views_, static_cast<int>(cpus_.size()));
    cache_.flush();
  }

 private:
  Machine& m_;
  x86::Lapic lapic_;
  Uart uart_;
  Finisher finisher_;
  CodeViews views_;  // before the cache, which tells it of new code pages
  x86::DecodeCacheX86 cache_;
  std::vector<std::unique_ptr<x86::X86Cpu>> cpus_;
  std::vector<x86::Lapic::TimerPoint> ahead_timer_;  // per CPU, where its run-ahead began
};

}  // namespace

std::unique_ptr<Platform> make_x86_platform(Machine& m) { return std::make_unique<X86Platform>(m); }

}  // namespace ksim
