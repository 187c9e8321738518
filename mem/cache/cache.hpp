// One set-associative cache's tags and per-line states, for the memory
// timing model (issue 23: caches, coherence, store buffers). No data: RAM
// holds the bytes; a cache decides what an access costs and who holds a
// line in which state (the coherence protocol's, e.g. MESI, as a small
// number; 0 is invalid).
//
// Flat arrays, a power-of-two number of sets, no allocation or virtual
// call per access. Replacement is the profile's: LRU, or pseudo-random
// from a seeded generator, so that a run is the same every time.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace ksim {

enum class Replacement : uint8_t { lru, random };

struct CacheGeometry {
  uint32_t size_bytes = 0;
  uint32_t ways = 0;
  uint32_t line_bytes = 64;
  Replacement replacement = Replacement::lru;
};

class Cache {
 public:
  static constexpr uint8_t kInvalid = 0;
  // The line number an invalid slot holds, which no address has: a
  // lookup compares line numbers only.
  static constexpr uint64_t kNoLine = ~uint64_t{0};

  // Throws std::invalid_argument for a geometry that is not a power-of-two
  // number of sets of power-of-two lines (one line to say why).
  explicit Cache(const CacheGeometry& g, uint64_t seed = 0);

  const CacheGeometry& geometry() const { return g_; }
  uint32_t sets() const { return sets_; }
  uint64_t line_of(uint64_t addr) const { return addr >> line_shift_; }

  // The way that holds `addr`'s line, or -1.
  int find(uint64_t addr) const {
    const uint64_t line = line_of(addr);
    const size_t base = static_cast<size_t>(line & set_mask_) * g_.ways;
    for (uint32_t w = 0; w < g_.ways; ++w)
      if (state_[base + w] != kInvalid && lines_[base + w] == line) return static_cast<int>(w);
    return -1;
  }
  // The line's state (kInvalid when absent).
  uint8_t state(uint64_t addr) const {
    const int w = find(addr);
    return w < 0 ? kInvalid : state_[slot(addr, w)];
  }
  // A use of the line in `way` (as find() returned it): the replacement
  // order learns it.
  void touch(uint64_t addr, int way) { stamp_[slot(addr, way)] = ++clock_; }

  struct Victim {
    bool valid = false;
    uint64_t addr = 0;  // the displaced line's first byte
    uint8_t state = kInvalid;
  };
  // Installs `addr`'s line (not present) in `st`, into an invalid way if
  // the set has one, else the replacement policy's victim, which it
  // returns (its state tells a write-back whether it was dirty).
  Victim fill(uint64_t addr, uint8_t st);
  // Changes a present line's state; kInvalid removes it. False if absent.
  bool set_state(uint64_t addr, uint8_t st);
  // Every line invalid.
  void clear();
  // The state of `addr`'s line if present with a state of at least
  // `min_state` (MESI numbers grow with permission), else kInvalid: one
  // set's tags compared, nothing changed (the cores' L1 hit test).
  bool holds(uint64_t addr, uint8_t min_state) const {
    const uint64_t line = addr >> line_shift_;
    const size_t base = static_cast<size_t>(line & set_mask_) * g_.ways;
    for (uint32_t w = 0; w < g_.ways; ++w)
      if (lines_[base + w] == line) return state_[base + w] >= min_state;
    return false;
  }

  // The whole state, for checkpoints: per slot (set * ways + way) the line
  // number, state and last use, then the use clock and the generator.
  struct Raw {
    std::vector<uint64_t>* lines;
    std::vector<uint8_t>* state;
    std::vector<uint64_t>* stamp;
    uint64_t* clock;
    uint64_t* rng;
  };
  Raw raw() { return {&lines_, &state_, &stamp_, &clock_, &rng_}; }

 private:
  size_t slot(uint64_t addr, int way) const {
    return static_cast<size_t>(line_of(addr) & set_mask_) * g_.ways + static_cast<size_t>(way);
  }
  uint64_t next_random();

  CacheGeometry g_;
  uint32_t sets_ = 0;
  uint32_t line_shift_ = 0;
  uint64_t set_mask_ = 0;
  std::vector<uint64_t> lines_;  // per slot (set * ways + way): the line number held
  std::vector<uint8_t> state_;   // per slot
  std::vector<uint64_t> stamp_;  // per slot: last use (LRU)
  uint64_t clock_ = 0;
  uint64_t rng_ = 0;
};

}  // namespace ksim
