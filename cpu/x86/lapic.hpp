// A local-APIC-like interrupt controller, one register window at
// 0xFEE0_0000 that each CPU sees as its own APIC (the accessing CPU selects
// which): ID, EOI, spurious vector, the interrupt command register for IPIs,
// and the LVT timer (one-shot or periodic, counting core cycles through the
// divide configuration). Delivery latency and jitter follow the same timing
// model as the RV64 CLINT.
#pragma once
#include <bitset>
#include <cstdint>
#include <functional>
#include <vector>

#include "cpu/perturb.hpp"
#include "cpu/x86/x86_cpu.hpp"
#include "mem/device.hpp"

namespace ksim::x86 {

inline constexpr uint64_t kLapicBase = 0xfee0'0000;
inline constexpr uint64_t kLapicSize = 0x1000;

class Lapic final : public Device, public InterruptSource {
 public:
  struct Listener {
    std::function<void(int cpu)> changed;
    std::function<void(int from, int to, int vector, uint64_t cycle)> ipi_sent;
  };
  Lapic(int cpus, const Perturbation& perturb, Listener l);
  std::string_view name() const override { return "lapic"; }
  bool read(const Accessor& who, uint64_t offset, unsigned size, uint64_t& value) override;
  bool write(const Accessor& who, uint64_t offset, unsigned size, uint64_t value) override;
  // Only an ICR write (an IPI) changes another CPU's state; every other
  // register is the accessing CPU's own.
  uint64_t cpus_affected(const Accessor& who, uint64_t offset, unsigned size, bool is_write,
                         uint64_t value) const override;

  int pending(int cpu, uint64_t cycle) const override;
  void acknowledge(int cpu, int vector, uint64_t cycle) override;
  uint64_t next_event(int cpu, uint64_t now) const override;
  uint32_t apic_id(int cpu) const override { return static_cast<uint32_t>(cpu); }
  // The CPU whose IPI `cpu` took last as `vector`, or -1 when it was
  // raised locally (timer, self-IPI): for the ipi_recv event.
  int ipi_source(int cpu, int vector) const { return cpu_[cpu].taken_source[vector]; }

  // Running ahead (docs/SCHEDULING.md): a CPU ahead changes its own APIC
  // only by looking at it (pending() and next_event() move a due timer into
  // IRR; every register access is a device access, a sync point), so a
  // put-back restores just what firing the timer changes.
  struct TimerPoint {
    int vector;
    bool in_irr;
    uint64_t arrive, deadline;
    int source;
  };
  TimerPoint timer_point(int cpu) const {
    const PerCpu& p = cpu_[static_cast<size_t>(cpu)];
    const int v = static_cast<int>(p.lvt_timer & 0xff);
    return {v, p.irr.test(v), p.arrive[static_cast<size_t>(v)], p.deadline, p.source[static_cast<size_t>(v)]};
  }
  void restore_timer_point(int cpu, const TimerPoint& t) {
    PerCpu& p = cpu_[static_cast<size_t>(cpu)];
    if (t.in_irr) p.irr.set(t.vector);
    else p.irr.reset(t.vector);
    p.arrive[static_cast<size_t>(t.vector)] = t.arrive;
    p.source[static_cast<size_t>(t.vector)] = t.source;
    p.deadline = t.deadline;
  }

  // Checkpoints: every field of every CPU's APIC as 64-bit words, in a
  // fixed order (restore() returns false if the layout does not fit).
  std::vector<uint64_t> snapshot() const;
  bool restore(const std::vector<uint64_t>& words);

 private:
  static constexpr uint64_t kNever = ~uint64_t{0};
  // 256-bit vector sets as four words, scanned with bit tricks: these are
  // consulted at every scheduling slot, so no 256-step loops.
  struct VecSet {
    uint64_t w[4] = {};
    bool test(int v) const { return (w[v >> 6] >> (v & 63)) & 1; }
    void set(int v) { w[v >> 6] |= 1ull << (v & 63); }
    void reset(int v) { w[v >> 6] &= ~(1ull << (v & 63)); }
    int highest() const {
      for (int k = 3; k >= 0; --k)
        if (w[k]) return k * 64 + 63 - __builtin_clzll(w[k]);
      return -1;
    }
    template <typename F>
    void for_each_high_to_low(F f) const {
      for (int k = 3; k >= 0; --k)
        for (uint64_t m = w[k]; m;) {
          int b = 63 - __builtin_clzll(m);
          if (!f(k * 64 + b)) return;
          m &= ~(1ull << b);
        }
    }
  };
  struct PerCpu {
    VecSet irr, isr;
    std::vector<uint64_t> arrive = std::vector<uint64_t>(256, 0);  // IRR entry visible from this cycle
    std::vector<int> source = std::vector<int>(256, -1);           // sending CPU of an IRR entry, or -1
    std::vector<int> taken_source = std::vector<int>(256, -1);     // `source` of the entry last acknowledged
    uint32_t svr = 0xff, tpr = 0, icr_high = 0;
    uint32_t lvt_timer = 1u << 16;  // masked at reset
    uint32_t divide = 0, initial = 0;
    uint64_t deadline = kNever;     // timer fires at this cycle
    uint64_t period = 0;            // cycles, for periodic mode
    uint64_t ipi_draws = 0, timer_draws = 0;
    // IPIs posted to a vector already in IRR that arrive after its entry
    // (vector, arrival, source). One IRR bit holds one interrupt, so they
    // merge with it if they arrive before the CPU takes it; otherwise they
    // are the next one. Which happens is decided at the acknowledgement,
    // by the cycles, not by the host order in which the post and the
    // acknowledgement are handled (a CPU's slot may end after another
    // CPU's post stamped later than its acknowledgement).
    struct Later {
      int vector;
      uint64_t arrive;
      int source;
    };
    std::vector<Later> later;
  };
  void post(int cpu, int vector, uint64_t at, int from = -1);
  void fire_timer(int cpu, uint64_t cycle) const;  // moves a due timer into IRR
  uint64_t divide_by(uint32_t d) const;
  mutable std::vector<PerCpu> cpu_;
  const Perturbation& perturb_;
  Listener listener_;
};

}  // namespace ksim::x86
