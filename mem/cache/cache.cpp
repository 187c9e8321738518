#include "mem/cache/cache.hpp"

#include <algorithm>

namespace ksim {

namespace {

bool power_of_two(uint64_t v) { return v && !(v & (v - 1)); }

}  // namespace

Cache::Cache(const CacheGeometry& g, uint64_t seed) : g_(g) {
  if (!power_of_two(g.line_bytes) || g.line_bytes < 8)
    throw std::invalid_argument("cache line of " + std::to_string(g.line_bytes) + " bytes: not a power of two >= 8");
  if (g.ways == 0) throw std::invalid_argument("cache with 0 ways");
  const uint64_t per_set = static_cast<uint64_t>(g.ways) * g.line_bytes;
  if (g.size_bytes == 0 || g.size_bytes % per_set)
    throw std::invalid_argument("cache of " + std::to_string(g.size_bytes) + " bytes is not a whole number of " +
                                std::to_string(g.ways) + "-way sets of " + std::to_string(g.line_bytes) + "-byte lines");
  const uint64_t sets = g.size_bytes / per_set;
  if (!power_of_two(sets))
    throw std::invalid_argument("cache of " + std::to_string(sets) + " sets: not a power of two");
  sets_ = static_cast<uint32_t>(sets);
  set_mask_ = sets - 1;
  while ((1u << line_shift_) < g.line_bytes) ++line_shift_;
  const size_t slots = static_cast<size_t>(sets) * g.ways;
  lines_.assign(slots, kNoLine);
  state_.assign(slots, kInvalid);
  stamp_.assign(slots, 0);
  // xorshift64* needs a non-zero state; the seed picks the sequence.
  rng_ = seed * 0x9e3779b97f4a7c15ull + 0x2545f4914f6cdd1dull;
  if (rng_ == 0) rng_ = 1;
}

uint64_t Cache::next_random() {
  rng_ ^= rng_ >> 12;
  rng_ ^= rng_ << 25;
  rng_ ^= rng_ >> 27;
  return rng_ * 0x2545f4914f6cdd1dull;
}

Cache::Victim Cache::fill(uint64_t addr, uint8_t st) {
  const uint64_t line = line_of(addr);
  const size_t base = static_cast<size_t>(line & set_mask_) * g_.ways;
  size_t pick = base + g_.ways;
  for (uint32_t w = 0; w < g_.ways && pick == base + g_.ways; ++w)
    if (state_[base + w] == kInvalid) pick = base + w;
  Victim v;
  if (pick == base + g_.ways) {
    if (g_.replacement == Replacement::lru) {
      pick = base;
      for (uint32_t w = 1; w < g_.ways; ++w)
        if (stamp_[base + w] < stamp_[pick]) pick = base + w;
    } else {
      pick = base + static_cast<size_t>(next_random() % g_.ways);
    }
    v.valid = true;
    v.addr = lines_[pick] << line_shift_;
    v.state = state_[pick];
  }
  lines_[pick] = line;
  state_[pick] = st;
  stamp_[pick] = ++clock_;
  return v;
}

bool Cache::set_state(uint64_t addr, uint8_t st) {
  const int w = find(addr);
  if (w < 0) return false;
  const size_t i = slot(addr, w);
  state_[i] = st;
  if (st == kInvalid) lines_[i] = kNoLine;
  return true;
}

void Cache::clear() {
  std::fill(state_.begin(), state_.end(), kInvalid);
  std::fill(lines_.begin(), lines_.end(), kNoLine);
  std::fill(stamp_.begin(), stamp_.end(), 0);
}

}  // namespace ksim
