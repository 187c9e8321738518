// A memory-mapped device on the bus. Device accesses are rare next to RAM
// accesses, so a virtual interface is fine here (never on the RAM path).
#pragma once
#include <cstdint>
#include <string_view>

namespace ksim {

// Who performs an access: devices whose answer depends on the accessing CPU
// (CLINT's mtime follows the reading hart's own clock) read it from here.
struct Accessor {
  int cpu = 0;
  uint64_t cycle = 0;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string_view name() const = 0;
  // `offset` is relative to the device base; `size` is 1, 2, 4 or 8.
  // Return false for an access the device does not decode: the CPU then
  // takes an access fault.
  virtual bool read(const Accessor& who, uint64_t offset, unsigned size, uint64_t& value) = 0;
  virtual bool write(const Accessor& who, uint64_t offset, unsigned size, uint64_t value) = 0;
};

}  // namespace ksim
