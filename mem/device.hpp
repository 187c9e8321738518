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
  // The write takes back bytes a CPU wrote while running ahead
  // (PageOwners::undo): a restoration, not a store anyone made, so it
  // leaves no stale view of code behind (cpu/code_view.hpp).
  bool taken_back = false;
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
  // The CPUs whose state an access (a load when !is_write) may change, bit
  // i for CPU i: exact SMP puts back only those of them that ran ahead
  // (mem/ownership.hpp). By default, all of them.
  virtual uint64_t cpus_affected(const Accessor& who, uint64_t offset, unsigned size, bool is_write,
                                 uint64_t value) const {
    (void)who, (void)offset, (void)size, (void)is_write, (void)value;
    return ~uint64_t{0};
  }
};

}  // namespace ksim
