// A 16550-compatible subset: enough for a guest to print. A byte store to
// THR (+0) is console output; LSR (+5) always reads "transmitter empty".
// Every other register reads 0 and ignores writes, as a polled driver
// expects. Output goes to a sink set by the machine (console capture and the
// event stream).
#pragma once
#include <functional>

#include "mem/device.hpp"

namespace ksim {

class Uart final : public Device {
 public:
  using Sink = std::function<void(const Accessor&, char)>;
  explicit Uart(Sink sink) : sink_(std::move(sink)) {}
  std::string_view name() const override { return "uart"; }
  bool read(const Accessor& who, uint64_t offset, unsigned size, uint64_t& value) override;
  bool write(const Accessor& who, uint64_t offset, unsigned size, uint64_t value) override;
  // The console changes no CPU's state (it raises no interrupt).
  uint64_t cpus_affected(const Accessor&, uint64_t, unsigned, bool, uint64_t) const override { return 0; }

 private:
  Sink sink_;
};

}  // namespace ksim
