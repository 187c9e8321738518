// MESI between L1 caches (mem/cache/coherence): the protocol's invariant
// (one writer or many readers) over random traffic, and the outcomes of
// the textbook sequences, worked out by hand.
#include <catch2/catch.hpp>

#include <random>

#include "mem/cache/coherence.hpp"

using namespace ksim;

namespace {

const CacheGeometry kL1{32 * 1024, 8, 64, Replacement::random};

}  // namespace

TEST_CASE("Coherence: at every moment a line has one modified or exclusive copy, or only shared ones", "[cache]") {
  for (int cpus : {2, 4, 16}) {
    DYNAMIC_SECTION(cpus << " CPUs") {
      // Small caches over a larger range: evictions, refills, sharing.
      Coherence c(cpus, {1024, 2, 64, Replacement::random}, 5);
      std::mt19937_64 rng(cpus);
      uint64_t transfers = 0, invalidations = 0, upgrades = 0;
      for (int i = 0; i < 100000; ++i) {
        const int cpu = static_cast<int>(rng() % static_cast<uint64_t>(cpus));
        const uint64_t addr = 0x80000000ull + (rng() % 96) * 64 + rng() % 64;
        const CoherenceOutcome o = (rng() % 3 == 0) ? c.write(cpu, addr) : c.read(cpu, addr);
        transfers += o.from_cpu >= 0;
        invalidations += o.invalidated;
        upgrades += o.upgrade;
        // Right after the access the accessing CPU holds the line.
        REQUIRE(c.state(cpu, addr) != kMesiI);
        int exclusive = 0, valid = 0;
        for (int k = 0; k < cpus; ++k) {
          const Mesi st = c.state(k, addr);
          valid += st != kMesiI;
          exclusive += st == kMesiM || st == kMesiE;
        }
        REQUIRE(exclusive <= 1);
        if (exclusive) REQUIRE(valid == 1);
      }
      CHECK(transfers > 100);
      CHECK(invalidations > 100);
      CHECK(upgrades > 100);
    }
  }
}

TEST_CASE("Coherence: the textbook sequences (a line read, written, shared and bounced)", "[cache]") {
  Coherence c(4, kL1);
  const uint64_t a = 0x80001000;
  // CPU 0 reads: nobody has it, it comes exclusive from the next level.
  CoherenceOutcome o = c.read(0, a);
  CHECK_FALSE(o.hit);
  CHECK(o.from_next_level);
  CHECK(c.state(0, a) == kMesiE);
  // CPU 0 writes: E to M, silently.
  o = c.write(0, a);
  CHECK(o.hit);
  CHECK(c.state(0, a) == kMesiM);
  // CPU 1 reads: CPU 0's modified copy supplies it and is written back;
  // both shared.
  o = c.read(1, a);
  CHECK(o.from_cpu == 0);
  CHECK(o.owner_wrote_back);
  CHECK(c.state(0, a) == kMesiS);
  CHECK(c.state(1, a) == kMesiS);
  // CPUs 2 and 3 read: clean copies, from the next level, no writeback.
  o = c.read(2, a);
  CHECK(o.from_next_level);
  CHECK_FALSE(o.owner_wrote_back);
  c.read(3, a);
  // CPU 2 writes: an upgrade that invalidates the other three.
  o = c.write(2, a);
  CHECK(o.upgrade);
  CHECK(o.invalidated == 3);
  CHECK(c.state(2, a) == kMesiM);
  for (int k : {0, 1, 3}) CHECK(c.state(k, a) == kMesiI);
  // False sharing: CPUs 0 and 1 take turns writing the line. Every write
  // after CPU 2's moves the line from the other writer and invalidates it.
  int bounces = 0;
  for (int i = 0; i < 10; ++i) {
    const int cpu = i % 2;
    o = c.write(cpu, a + 8 * static_cast<uint64_t>(cpu));  // different words, one line
    CHECK(o.invalidated == 1);
    CHECK(o.from_cpu == (i == 0 ? 2 : 1 - cpu));
    bounces += o.from_cpu >= 0;
  }
  CHECK(bounces == 10);
  // Two lines: no bouncing once each CPU has its own.
  const uint64_t b = a + 64;
  c.write(0, a);
  c.write(1, b);
  for (int i = 0; i < 10; ++i) {
    CHECK(c.write(0, a).hit);
    CHECK(c.write(1, b).hit);
  }
}

TEST_CASE("Coherence: a fill that evicts a modified line writes it back", "[cache]") {
  Coherence c(2, {128, 2, 64, Replacement::lru});  // one set of two ways
  c.write(0, 0x0);
  c.read(0, 0x40);
  const CoherenceOutcome o = c.read(0, 0x80);  // evicts the least recent: 0x0, modified
  CHECK(o.victim_wrote_back);
  CHECK(c.state(0, 0x0) == kMesiI);
  const CoherenceOutcome p = c.read(0, 0xc0);  // evicts 0x40, clean
  CHECK_FALSE(p.victim_wrote_back);
}
