// Core-local interruptor (SiFive CLINT layout): a software-interrupt bit
// (msip) and a timer compare register (mtimecmp) per hart, and mtime. It
// lives with the RV64 core (as the x86 local APIC does with the x86 core):
// it is part of the CPU complex, and it reads the machine-wide timing model
// and the perturbation generator, which are cpu/ headers; mem/ stays below
// cpu/ and knows only the Device interface.
//
// Time is not a shared wall clock: each hart reads mtime from its own cycle
// count divided by the timebase divider (cpu/timing.hpp), which keeps every
// read deterministic whatever order the harts run in.
//
// Delivery has latency: an msip write by one hart becomes visible to the
// target kIpiLatency cycles later (plus seeded jitter), and a timer
// interrupt may arrive a seeded few cycles after mtime reaches mtimecmp.
// Both are decided when the register is written, from the writer's clock,
// so they are deterministic.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "cpu/perturb.hpp"
#include "mem/device.hpp"

namespace ksim::rv64 {

class Clint final : public Device {
 public:
  struct Listener {
    // msip or mtimecmp of `hart` changed: the hart re-evaluates interrupts.
    std::function<void(int hart)> changed;
    // A hart raised another's msip (an IPI): from, to, the writer's cycle.
    std::function<void(int from, int to, uint64_t cycle)> ipi_sent;
  };
  Clint(int harts, uint64_t timebase_divider, const Perturbation& perturb, Listener listener);
  std::string_view name() const override { return "clint"; }
  bool read(const Accessor& who, uint64_t offset, unsigned size, uint64_t& value) override;
  bool write(const Accessor& who, uint64_t offset, unsigned size, uint64_t value) override;
  // Writes to a hart's msip or mtimecmp change that hart's interrupts;
  // nothing else changes a hart's state (mtime follows the reader's clock).
  uint64_t cpus_affected(const Accessor& who, uint64_t offset, unsigned size, bool is_write,
                         uint64_t value) const override;

  uint64_t mtime_at(uint64_t cycle) const { return cycle / divider_; }
  // First cycle at which `hart` sees its timer interrupt pending
  // (UINT64_MAX if never).
  uint64_t timer_cycle(int hart) const { return timer_at_[hart]; }
  // First cycle at which `hart` sees its software interrupt pending
  // (UINT64_MAX when msip is clear).
  uint64_t msip_cycle(int hart) const { return msip_[hart] ? msip_at_[hart] : kNever; }
  // The hart that last raised `hart`'s msip (-1 for none / the host).
  int msip_source(int hart) const { return msip_from_[hart]; }

  // Everything that must be saved to reproduce the device exactly.
  struct Snapshot {
    std::vector<uint8_t> msip;
    std::vector<uint64_t> msip_at, mtimecmp, timer_jitter, timer_draws, ipi_draws;
    std::vector<int32_t> msip_from;
  };
  Snapshot snapshot() const;
  // Returns false when the snapshot does not fit this CLINT (hart count).
  bool restore(const Snapshot& s);

 private:
  static constexpr uint64_t kNever = ~uint64_t{0};
  int harts() const { return static_cast<int>(msip_.size()); }
  std::vector<uint8_t> msip_;
  std::vector<uint64_t> msip_at_;
  std::vector<int32_t> msip_from_;
  std::vector<uint64_t> mtimecmp_;
  std::vector<uint64_t> timer_jitter_;           // drawn at each mtimecmp write
  std::vector<uint64_t> timer_at_;               // derived: mtimecmp * divider + jitter
  void update_timer_at(int hart);
  std::vector<uint64_t> timer_draws_, ipi_draws_;  // generator indices
  uint64_t divider_;
  const Perturbation& perturb_;
  Listener listener_;
};

}  // namespace ksim::rv64
