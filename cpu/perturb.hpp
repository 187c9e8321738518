// Seeded perturbation of latencies (--seed S): the source of different, but
// reproducible, interleavings.
//
// A counter-based generator: every random number is a pure function of
// (seed, stream, index), so nothing depends on the order in which CPUs or
// devices ask, and a checkpoint only needs the per-stream indices. Seed 0
// turns perturbation off: the base timing model runs unperturbed.
// What is perturbed, and by how much, is part of the timing model
// (cpu/timing.hpp, docs/TIMING.md).
#pragma once
#include <cstdint>

namespace ksim {

class Perturbation {
 public:
  // `stalls`: whether the seed also draws memory stalls (timing model v1,
  // which has no caches to miss; under v2 the caches' misses are real and
  // the seed picks their replacement victims instead).
  explicit Perturbation(uint64_t seed = 0, bool stalls = true) : seed_(seed), stalls_(stalls) {}
  uint64_t seed() const { return seed_; }
  bool enabled() const { return seed_ != 0; }
  bool stalls() const { return seed_ != 0 && stalls_; }

  // Streams: one per (purpose, CPU) so draws never collide.
  enum class Stream : uint64_t { stall_interval = 1, stall_length = 2, timer = 3, ipi = 4 };
  static uint64_t stream(Stream s, int cpu) { return static_cast<uint64_t>(s) << 32 | static_cast<uint32_t>(cpu); }

  // A 64-bit value for (stream, index).
  uint64_t draw(uint64_t stream, uint64_t index) const {
    return mix(seed_ ^ mix(stream * 0x9e3779b97f4a7c15ull + index));
  }
  // Uniform in [lo, hi]; always lo when perturbation is off.
  uint64_t uniform(uint64_t stream, uint64_t index, uint64_t lo, uint64_t hi) const {
    if (!enabled() || hi <= lo) return lo;
    return lo + draw(stream, index) % (hi - lo + 1);
  }

 private:
  // SplitMix64's finaliser (Steele, Lea, Flood: "Fast splittable
  // pseudorandom number generators", OOPSLA 2014).
  static uint64_t mix(uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t seed_;
  bool stalls_;
};

}  // namespace ksim
