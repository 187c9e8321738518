// The RV64 machine: CLINT, UART, finisher, and harts sharing one decode
// cache and one reservation set.
#include <cstdio>
#include <memory>

#include "cpu/rv64/decode_cache.hpp"
#include "cpu/rv64/hart.hpp"
#include "cpu/rv64/reservations.hpp"
#include "cpu/timing.hpp"
#include "mem/clint.hpp"
#include "mem/finisher.hpp"
#include "mem/uart.hpp"
#include "sim/machine.hpp"
#include "sim/platform.hpp"

namespace ksim {

namespace {

class Rv64Platform final : public Platform {
 public:
  explicit Rv64Platform(Machine& m)
      : m_(m),
        clint_(m.config().cpus, timing::kTimebaseDivider, m.perturbation(),
               Clint::Listener{[&m](int hart) { m.cpu_interrupts_changed(hart); },
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
        cache_(m.bus()),
        reservations_(m.bus(), m.config().cpus) {
    m.bus().map(memmap::kClintBase, memmap::kClintSize, &clint_);
    m.bus().map(memmap::kUartBase, memmap::kUartSize, &uart_);
    m.bus().map(memmap::kFinisherBase, memmap::kFinisherSize, &finisher_);
    for (int i = 0; i < m.config().cpus; ++i) {
      auto h = std::make_unique<rv64::Hart>(i, m.bus(), clint_, cache_, reservations_, &m.trap_hooks(),
                                            m.perturbation());
      h->on_trap = [this](const rv64::Hart& hart, const rv64::Hart::TrapRecord& r) {
        Event e;
        e.cycle = hart.cycle();
        e.cpu = hart.id();
        e.kind = r.info.interrupt ? EventKind::interrupt : EventKind::trap;
        e.a = r.info.cause;
        e.b = r.info.tval;
        e.c = r.info.pc;
        e.text = r.delivered ? "delivered" : "hooked";
        m_.events().emit(e);
        if (r.info.interrupt && r.info.cause == rv64::kIrqMSoft) {
          int from = clint_.msip_source(hart.id());
          m_.events().emit(Event{hart.cycle(), hart.id(), EventKind::ipi_recv, static_cast<uint64_t>(from), 0, 0, ""});
        }
      };
      h->on_insn = [this](const rv64::Hart& hart, const rv64::Insn& in) {
        Event e;
        e.cycle = hart.cycle();
        e.cpu = hart.id();
        e.kind = EventKind::insn;
        e.a = hart.pc();
        e.b = in.raw;
        m_.events().emit(e);
      };
      harts_.push_back(std::move(h));
    }
  }

  std::vector<Cpu*> cpus() override {
    std::vector<Cpu*> v;
    for (auto& h : harts_) v.push_back(h.get());
    return v;
  }

  std::string crash_reason(int cpu) override {
    const rv64::Hart& h = *harts_[cpu];
    if (h.stop_reason() != rv64::StopReason::trap_loop) return "";
    const TrapInfo& t = h.last_trap();
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "cpu %d: unhandled trap loop: mcause=%llu mtval=0x%llx at pc=0x%llx (%s), mtvec=0x%llx", cpu,
                  static_cast<unsigned long long>(t.cause), static_cast<unsigned long long>(t.tval),
                  static_cast<unsigned long long>(t.pc), m_.symbols().format(t.pc).c_str(),
                  static_cast<unsigned long long>(h.s.mtvec));
    return buf;
  }

  void set_trace_insns(bool on) override {
    for (auto& h : harts_) h->set_trace_insns(on);
  }

 private:
  Machine& m_;
  Clint clint_;
  Uart uart_;
  Finisher finisher_;
  rv64::DecodeCache cache_;
  rv64::Reservations reservations_;
  std::vector<std::unique_ptr<rv64::Hart>> harts_;
};

}  // namespace

std::unique_ptr<Platform> make_rv64_platform(Machine& m) { return std::make_unique<Rv64Platform>(m); }

}  // namespace ksim
