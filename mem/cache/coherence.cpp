#include "mem/cache/coherence.hpp"

namespace ksim {

Coherence::Coherence(int cpus, const CacheGeometry& l1, uint64_t seed) {
  l1_.reserve(static_cast<size_t>(cpus));
  // Each cache its own replacement sequence, from the one seed.
  for (int c = 0; c < cpus; ++c) l1_.emplace_back(l1, seed * 64 + static_cast<uint64_t>(c));
}

void Coherence::fill(int cpu, uint64_t addr, Mesi st, CoherenceOutcome& o) {
  const Cache::Victim v = l1_[static_cast<size_t>(cpu)].fill(addr, st);
  o.victim_wrote_back = v.valid && v.state == kMesiM;
}

CoherenceOutcome Coherence::read(int cpu, uint64_t addr) {
  CoherenceOutcome o;
  Cache& mine = l1_[static_cast<size_t>(cpu)];
  if (const int w = mine.find(addr); w >= 0) {
    mine.touch(addr, w);
    o.hit = true;
    return o;
  }
  // A miss: a modified copy elsewhere supplies the line and keeps it
  // shared (writing it back); clean copies become shared; with none, the
  // line comes exclusive from the next level.
  bool shared = false;
  for (int k = 0; k < cpus(); ++k) {
    if (k == cpu) continue;
    Cache& other = l1_[static_cast<size_t>(k)];
    const uint8_t st = other.state(addr);
    if (st == kMesiI) continue;
    shared = true;
    if (st == kMesiM) {
      o.from_cpu = k;
      o.owner_wrote_back = true;
    }
    if (st != kMesiS) other.set_state(addr, kMesiS);
  }
  o.from_next_level = o.from_cpu < 0;
  fill(cpu, addr, shared ? kMesiS : kMesiE, o);
  return o;
}

CoherenceOutcome Coherence::write(int cpu, uint64_t addr) {
  CoherenceOutcome o;
  Cache& mine = l1_[static_cast<size_t>(cpu)];
  const int w = mine.find(addr);
  const uint8_t st = w >= 0 ? mine.state(addr) : uint8_t{kMesiI};
  if (st == kMesiM || st == kMesiE) {  // exclusive already: silently modified
    mine.touch(addr, w);
    if (st == kMesiE) mine.set_state(addr, kMesiM);
    o.hit = true;
    return o;
  }
  // Every other copy goes; a modified one supplies the line.
  for (int k = 0; k < cpus(); ++k) {
    if (k == cpu) continue;
    Cache& other = l1_[static_cast<size_t>(k)];
    const uint8_t ost = other.state(addr);
    if (ost == kMesiI) continue;
    if (ost == kMesiM) o.from_cpu = k;
    other.set_state(addr, kMesiI);
    ++o.invalidated;
  }
  if (st == kMesiS) {  // the data is here: an upgrade
    mine.touch(addr, w);
    mine.set_state(addr, kMesiM);
    o.upgrade = true;
    return o;
  }
  o.from_next_level = o.from_cpu < 0;
  fill(cpu, addr, kMesiM, o);
  return o;
}

}  // namespace ksim
