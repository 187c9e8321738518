#include "mem/clint.hpp"

#include <cstring>
#include <limits>

#include "mem/memory_map.hpp"

namespace ksim {

using namespace memmap;

Clint::Clint(int harts, uint64_t timebase_divider, std::function<void(int)> changed)
    : msip_(harts, 0),
      mtimecmp_(harts, std::numeric_limits<uint64_t>::max()),
      divider_(timebase_divider),
      changed_(std::move(changed)) {}

uint64_t Clint::timer_cycle(int hart) const {
  uint64_t cmp = mtimecmp_[hart];
  if (cmp > std::numeric_limits<uint64_t>::max() / divider_) return std::numeric_limits<uint64_t>::max();
  return cmp * divider_;
}

namespace {
// Reads `size` bytes at byte `sub` of a 64-bit register.
uint64_t extract(uint64_t reg, uint64_t sub, unsigned size) {
  uint64_t v = 0;
  std::memcpy(&v, reinterpret_cast<const uint8_t*>(&reg) + sub, size);
  return v;
}
uint64_t insert(uint64_t reg, uint64_t sub, unsigned size, uint64_t value) {
  std::memcpy(reinterpret_cast<uint8_t*>(&reg) + sub, &value, size);
  return reg;
}
}  // namespace

bool Clint::read(const Accessor& who, uint64_t offset, unsigned size, uint64_t& value) {
  const uint64_t harts = msip_.size();
  if (offset < kClintMsip + 4 * harts) {
    if (size != 4) return false;
    value = msip_[offset / 4];
    return true;
  }
  if (offset >= kClintMtimecmp && offset < kClintMtimecmp + 8 * harts) {
    if (size != 4 && size != 8) return false;
    uint64_t rel = offset - kClintMtimecmp;
    value = extract(mtimecmp_[rel / 8], rel % 8, size);
    return true;
  }
  if (offset >= kClintMtime && offset < kClintMtime + 8) {
    if (size != 4 && size != 8) return false;
    value = extract(mtime_at(who.cycle), offset - kClintMtime, size);
    return true;
  }
  return false;
}

bool Clint::write(const Accessor&, uint64_t offset, unsigned size, uint64_t value) {
  const uint64_t harts = msip_.size();
  if (offset < kClintMsip + 4 * harts) {
    if (size != 4) return false;
    int hart = static_cast<int>(offset / 4);
    msip_[hart] = value & 1;
    if (changed_) changed_(hart);
    return true;
  }
  if (offset >= kClintMtimecmp && offset < kClintMtimecmp + 8 * harts) {
    if (size != 4 && size != 8) return false;
    uint64_t rel = offset - kClintMtimecmp;
    int hart = static_cast<int>(rel / 8);
    mtimecmp_[hart] = insert(mtimecmp_[hart], rel % 8, size, value);
    if (changed_) changed_(hart);
    return true;
  }
  if (offset >= kClintMtime && offset < kClintMtime + 8) {
    // mtime is derived from each hart's clock; writes are ignored (WARL),
    // which keeps time monotonic and per-hart reads deterministic.
    return size == 4 || size == 8;
  }
  return false;
}

}  // namespace ksim
