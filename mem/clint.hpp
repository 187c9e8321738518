// Core-local interruptor (SiFive CLINT layout): a software-interrupt bit
// (msip) and a timer compare register (mtimecmp) per hart, and mtime.
//
// Time is not a shared wall clock: each hart reads mtime from its own cycle
// count divided by the timebase divider (cpu/timing.hpp), which keeps every
// read deterministic whatever order the harts run in.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "mem/device.hpp"

namespace ksim {

class Clint final : public Device {
 public:
  // `changed(hart)` is called after msip or mtimecmp of `hart` is written,
  // so the hart re-evaluates its pending interrupts.
  Clint(int harts, uint64_t timebase_divider, std::function<void(int hart)> changed);
  std::string_view name() const override { return "clint"; }
  bool read(const Accessor& who, uint64_t offset, unsigned size, uint64_t& value) override;
  bool write(const Accessor& who, uint64_t offset, unsigned size, uint64_t value) override;

  bool msip(int hart) const { return msip_[hart]; }
  uint64_t mtimecmp(int hart) const { return mtimecmp_[hart]; }
  uint64_t mtime_at(uint64_t cycle) const { return cycle / divider_; }
  // First cycle at which mtime >= mtimecmp for `hart` (UINT64_MAX if never).
  uint64_t timer_cycle(int hart) const;

 private:
  std::vector<uint8_t> msip_;
  std::vector<uint64_t> mtimecmp_;
  uint64_t divider_;
  std::function<void(int)> changed_;
};

}  // namespace ksim
