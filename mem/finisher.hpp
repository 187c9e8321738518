// The power-off device (SiFive "test finisher" as on QEMU virt). A 32-bit
// store of 0x5555 powers off with status 0; (code << 16) | 0x3333 powers off
// with status `code`; (code << 16) | 0x6666 reports a guest panic (see
// memory_map.hpp). Other values are refused with an access fault so a wild
// store is noticed rather than ignored.
#pragma once
#include <functional>

#include "mem/device.hpp"

namespace ksim {

class Finisher final : public Device {
 public:
  using PowerOff = std::function<void(const Accessor&, int status, bool panic)>;
  explicit Finisher(PowerOff off) : off_(std::move(off)) {}
  std::string_view name() const override { return "finisher"; }
  bool read(const Accessor& who, uint64_t offset, unsigned size, uint64_t& value) override;
  bool write(const Accessor& who, uint64_t offset, unsigned size, uint64_t value) override;

 private:
  PowerOff off_;
};

}  // namespace ksim
