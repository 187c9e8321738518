// Seeded memory stalls (--seed S, docs/TIMING.md), the same for every core:
// at intervals drawn from [kStallIntervalMin, kStallIntervalMax] cycles a
// CPU stalls for [1, kStallMax] cycles. A stall is charged at the first
// instruction boundary at or after the cycle it comes due, including the
// boundary right after an interrupt's entry, in every schedule: both cores
// call charge_due() before checking for interrupts and again after taking
// one. One implementation, so the cores cannot drift apart (they once did:
// a stall due during an interrupt's entry was charged at a point that
// depended on how the run was sliced).
#pragma once
#include <cstdint>

#include "cpu/perturb.hpp"
#include "cpu/timing.hpp"

namespace ksim::stalls {

inline constexpr uint64_t kNone = ~uint64_t{0};

// The cycle of the next stall, drawn from `now` with generator index `draws`.
inline uint64_t next_after(const Perturbation& p, int cpu, uint64_t now, uint64_t draws) {
  return now + p.uniform(Perturbation::stream(Perturbation::Stream::stall_interval, cpu), draws,
                         timing::kStallIntervalMin, timing::kStallIntervalMax);
}

// The first stall of a CPU whose clock starts at `now` (none without a
// seed, and none under timing v2, whose misses are real).
inline uint64_t first(const Perturbation& p, int cpu, uint64_t now) {
  return p.stalls() ? next_after(p, cpu, now, 0) : kNone;
}

// Charges the stall due at `cycle`, if one is, and draws the next one.
inline void charge_due(const Perturbation& p, int cpu, uint64_t& cycle, uint64_t& next, uint64_t& draws) {
  if (cycle < next) return;
  cycle += p.uniform(Perturbation::stream(Perturbation::Stream::stall_length, cpu), draws, 1, timing::kStallMax);
  ++draws;
  next = next_after(p, cpu, cycle, draws);
}

}  // namespace ksim::stalls
