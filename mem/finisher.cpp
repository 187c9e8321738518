#include "mem/finisher.hpp"

#include "mem/memory_map.hpp"

namespace ksim {

bool Finisher::read(const Accessor&, uint64_t offset, unsigned size, uint64_t& value) {
  if (offset != 0 || size != 4) return false;
  value = 0;
  return true;
}

bool Finisher::write(const Accessor& who, uint64_t offset, unsigned size, uint64_t value) {
  if (offset != 0 || size != 4) return false;
  uint32_t v = static_cast<uint32_t>(value);
  if ((v & 0xffff) == memmap::kFinisherPass) {
    off_(who, 0, false);
    return true;
  }
  if ((v & 0xffff) == memmap::kFinisherFail) {
    off_(who, static_cast<int>(v >> 16), false);
    return true;
  }
  if ((v & 0xffff) == memmap::kFinisherPanic) {
    off_(who, static_cast<int>(v >> 16), true);
    return true;
  }
  return false;
}

}  // namespace ksim
