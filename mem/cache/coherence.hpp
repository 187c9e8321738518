// MESI between the CPUs' L1 data caches (issue 23, §2): for each access,
// whether it hits, where a missing line comes from (the next level, or
// another CPU's cache that holds it modified), which other copies it
// invalidates, and what is written back. The machine profile prices each
// outcome; this only decides them. Atomics, LR/SC and locked instructions
// take the line exclusive, as a write does.
//
// The other caches are looked up on a miss or an upgrade (as a directory
// or a snooping bus would find them: the outcomes are the same); a hit in
// a state that allows the access touches only its own cache.
#pragma once
#include <cstdint>
#include <vector>

#include "mem/cache/cache.hpp"

namespace ksim {

enum Mesi : uint8_t { kMesiI = 0, kMesiS = 1, kMesiE = 2, kMesiM = 3 };

struct CoherenceOutcome {
  bool hit = false;               // the access needed nothing from outside its L1
  bool upgrade = false;           // a write to a shared copy: others invalidated, no data moved
  int from_cpu = -1;              // the line came from this CPU's cache (it held it modified)
  bool from_next_level = false;   // the line came from the next level (L2 / memory)
  uint32_t invalidated = 0;       // other CPUs' copies invalidated
  bool owner_wrote_back = false;  // the modified owner wrote the line back as it gave it up
  bool victim_wrote_back = false; // the fill evicted a modified line of this CPU's
};

class Coherence {
 public:
  Coherence(int cpus, const CacheGeometry& l1, uint64_t seed = 0);
  CoherenceOutcome read(int cpu, uint64_t addr);
  // A store, an atomic, an SC or a locked instruction: the line exclusive.
  CoherenceOutcome write(int cpu, uint64_t addr);
  Mesi state(int cpu, uint64_t addr) const { return static_cast<Mesi>(l1_[static_cast<size_t>(cpu)].state(addr)); }
  int cpus() const { return static_cast<int>(l1_.size()); }

 private:
  // Installs the line in `cpu`'s L1 and notes a modified victim.
  void fill(int cpu, uint64_t addr, Mesi st, CoherenceOutcome& o);
  std::vector<Cache> l1_;
};

}  // namespace ksim
