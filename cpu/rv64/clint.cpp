#include "cpu/rv64/clint.hpp"

#include <cstring>
#include <limits>

#include "cpu/timing.hpp"
#include "mem/memory_map.hpp"

namespace ksim::rv64 {

using namespace ksim::memmap;

Clint::Clint(int harts, uint64_t timebase_divider, const Perturbation& perturb, Listener listener)
    : msip_(harts, 0),
      msip_at_(harts, 0),
      msip_from_(harts, -1),
      mtimecmp_(harts, std::numeric_limits<uint64_t>::max()),
      timer_jitter_(harts, 0),
      timer_at_(harts, kNever),
      timer_draws_(harts, 0),
      ipi_draws_(harts, 0),
      divider_(timebase_divider),
      perturb_(perturb),
      listener_(std::move(listener)) {}

void Clint::update_timer_at(int hart) {
  uint64_t cmp = mtimecmp_[hart];
  timer_at_[hart] =
      cmp > (kNever - timing::kTimerJitterMax) / divider_ ? kNever : cmp * divider_ + timer_jitter_[hart];
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
  const uint64_t n = msip_.size();
  if (offset < kClintMsip + 4 * n) {
    if (size != 4 || offset % 4) return false;
    value = msip_[offset / 4];
    return true;
  }
  if (offset >= kClintMtimecmp && offset < kClintMtimecmp + 8 * n) {
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

uint64_t Clint::cpus_affected(const Accessor&, uint64_t offset, unsigned, bool is_write, uint64_t) const {
  if (!is_write) return 0;
  const uint64_t n = msip_.size();
  if (offset < kClintMsip + 4 * n) return uint64_t{1} << (offset / 4);
  if (offset >= kClintMtimecmp && offset < kClintMtimecmp + 8 * n) return uint64_t{1} << ((offset - kClintMtimecmp) / 8);
  return 0;
}

bool Clint::write(const Accessor& who, uint64_t offset, unsigned size, uint64_t value) {
  const uint64_t n = msip_.size();
  if (offset < kClintMsip + 4 * n) {
    if (size != 4 || offset % 4) return false;
    int hart = static_cast<int>(offset / 4);
    bool raise = (value & 1) && !msip_[hart];
    msip_[hart] = value & 1;
    if (raise) {
      uint64_t idx = ipi_draws_[hart]++;
      uint64_t jitter = perturb_.uniform(Perturbation::stream(Perturbation::Stream::ipi, hart), idx, 0,
                                         timing::kIpiJitterMax);
      // A hart raising its own msip sees it at once; others after the hop.
      msip_at_[hart] = who.cycle + (who.cpu == hart ? 0 : timing::kIpiLatency + jitter);
      msip_from_[hart] = who.cpu;
      if (listener_.ipi_sent && who.cpu != hart) listener_.ipi_sent(who.cpu, hart, who.cycle);
    }
    if (listener_.changed) listener_.changed(hart);
    return true;
  }
  if (offset >= kClintMtimecmp && offset < kClintMtimecmp + 8 * n) {
    if (size != 4 && size != 8) return false;
    uint64_t rel = offset - kClintMtimecmp;
    int hart = static_cast<int>(rel / 8);
    mtimecmp_[hart] = insert(mtimecmp_[hart], rel % 8, size, value);
    uint64_t idx = timer_draws_[hart]++;
    timer_jitter_[hart] = perturb_.uniform(Perturbation::stream(Perturbation::Stream::timer, hart), idx, 0,
                                           timing::kTimerJitterMax);
    update_timer_at(hart);
    if (listener_.changed) listener_.changed(hart);
    return true;
  }
  if (offset >= kClintMtime && offset < kClintMtime + 8) {
    // mtime is derived from each hart's clock; writes are ignored (WARL),
    // which keeps time monotonic and per-hart reads deterministic.
    return size == 4 || size == 8;
  }
  return false;
}

Clint::Snapshot Clint::snapshot() const {
  return Snapshot{msip_, msip_at_, mtimecmp_, timer_jitter_, timer_draws_, ipi_draws_, msip_from_};
}

bool Clint::restore(const Snapshot& s) {
  const size_t n = msip_.size();
  if (s.msip.size() != n || s.msip_at.size() != n || s.mtimecmp.size() != n || s.timer_jitter.size() != n ||
      s.timer_draws.size() != n || s.ipi_draws.size() != n || s.msip_from.size() != n)
    return false;
  msip_ = s.msip;
  msip_at_ = s.msip_at;
  mtimecmp_ = s.mtimecmp;
  timer_jitter_ = s.timer_jitter;
  timer_draws_ = s.timer_draws;
  ipi_draws_ = s.ipi_draws;
  msip_from_ = s.msip_from;
  for (int h = 0; h < harts(); ++h) update_timer_at(h);
  return true;
}

}  // namespace ksim::rv64
