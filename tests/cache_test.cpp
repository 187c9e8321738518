// The cache model's tags and replacement (mem/cache/), checked against a
// reference written the plain way (a list per set, most recent first) and
// against access patterns whose misses are known by hand.
#include <catch2/catch.hpp>

#include <list>
#include <random>
#include <vector>

#include "mem/cache/cache.hpp"

using namespace ksim;

namespace {

// An LRU cache as a textbook draws it: per set, the lines most recent first.
struct ReferenceLru {
  uint32_t sets, ways, line;
  std::vector<std::list<uint64_t>> order;
  ReferenceLru(uint32_t s, uint32_t w, uint32_t l) : sets(s), ways(w), line(l), order(s) {}
  // True on a hit; `victim` the line evicted (or ~0).
  bool access(uint64_t addr, uint64_t& victim) {
    const uint64_t ln = addr / line;
    auto& set = order[ln % sets];
    victim = ~uint64_t{0};
    for (auto it = set.begin(); it != set.end(); ++it)
      if (*it == ln) {
        set.erase(it);
        set.push_front(ln);
        return true;
      }
    if (set.size() == ways) {
      victim = set.back() * line;
      set.pop_back();
    }
    set.push_front(ln);
    return false;
  }
};

// One access as the timing model will make it: a hit touches, a miss fills.
bool access(Cache& c, uint64_t addr, Cache::Victim& v) {
  const int w = c.find(addr);
  if (w >= 0) {
    c.touch(addr, w);
    v = {};
    return true;
  }
  v = c.fill(addr, 1);
  return false;
}

}  // namespace

TEST_CASE("Cache: LRU replacement hits and evicts exactly as the textbook reference does", "[cache]") {
  for (const CacheGeometry g : {CacheGeometry{32 * 1024, 8, 64, Replacement::lru},
                                CacheGeometry{4 * 1024, 4, 64, Replacement::lru},
                                CacheGeometry{512, 2, 32, Replacement::lru},
                                CacheGeometry{6 * 1024 * 1024, 24, 64, Replacement::lru}}) {
    DYNAMIC_SECTION(g.size_bytes << " bytes, " << g.ways << " ways") {
      Cache c(g);
      ReferenceLru ref(c.sets(), g.ways, g.line_bytes);
      std::mt19937_64 rng(g.size_bytes + g.ways);
      uint64_t hits = 0, misses = 0;
      for (int i = 0; i < 200000; ++i) {
        // Mostly a working set near the capacity, sometimes far beyond it.
        const uint64_t span = (i % 7 == 0) ? 8ull * g.size_bytes : g.size_bytes + g.size_bytes / 2;
        const uint64_t addr = 0x80000000ull + rng() % span;
        Cache::Victim v;
        uint64_t want_victim;
        const bool hit = access(c, addr, v);
        const bool want = ref.access(addr, want_victim);
        REQUIRE(hit == want);
        REQUIRE(v.valid == (want_victim != ~uint64_t{0}));
        if (v.valid) REQUIRE(v.addr == want_victim);
        (hit ? hits : misses) += 1;
      }
      CHECK(hits > 1000);
      CHECK(misses > 1000);
    }
  }
}

TEST_CASE("Cache: a working set that fits hits every time after its first pass; ways+1 lines of one set never hit "
          "under LRU", "[cache]") {
  for (Replacement r : {Replacement::lru, Replacement::random}) {
    Cache c({32 * 1024, 8, 64, r}, 7);
    Cache::Victim v;
    for (uint64_t a = 0; a < 32 * 1024; a += 64) CHECK_FALSE(access(c, a, v));
    for (int pass = 0; pass < 3; ++pass)
      for (uint64_t a = 0; a < 32 * 1024; a += 8) CHECK(access(c, a, v));
  }
  // Nine lines that map to one set of an 8-way cache, in a cycle: LRU
  // always evicts the line needed next. Random replacement keeps some.
  Cache lru({32 * 1024, 8, 64, Replacement::lru});
  Cache rnd({32 * 1024, 8, 64, Replacement::random}, 3);
  const uint64_t stride = 64ull * lru.sets();
  int lru_hits = 0, rnd_hits = 0;
  Cache::Victim v;
  for (int pass = 0; pass < 50; ++pass)
    for (uint64_t k = 0; k < 9; ++k) {
      lru_hits += access(lru, k * stride, v);
      rnd_hits += access(rnd, k * stride, v);
    }
  CHECK(lru_hits == 0);
  CHECK(rnd_hits > 100);
}

TEST_CASE("Cache: random replacement is the same for a seed and differs between seeds", "[cache]") {
  auto victims = [](uint64_t seed) {
    Cache c({4 * 1024, 4, 64, Replacement::random}, seed);
    std::vector<uint64_t> out;
    Cache::Victim v;
    std::mt19937_64 rng(99);
    for (int i = 0; i < 5000; ++i) {
      access(c, (rng() % 64) * 4096 + (rng() % 4) * 64, v);
      if (v.valid) out.push_back(v.addr);
    }
    return out;
  };
  CHECK(victims(1) == victims(1));
  CHECK(victims(1) != victims(2));
}

TEST_CASE("Cache: states, and geometries refused with a reason", "[cache]") {
  Cache c({1024, 2, 64, Replacement::lru});
  CHECK(c.state(0x1000) == Cache::kInvalid);
  c.fill(0x1000, 3);
  CHECK(c.state(0x1010) == 3);  // the same line
  CHECK(c.set_state(0x1000, 2));
  CHECK(c.state(0x1000) == 2);
  CHECK(c.set_state(0x1000, Cache::kInvalid));
  CHECK(c.find(0x1000) == -1);
  CHECK_FALSE(c.set_state(0x1000, 1));
  // A dirty victim comes back with its state (a write-back).
  Cache d({128, 2, 64, Replacement::lru});  // one set
  d.fill(0x0, 4);
  d.fill(0x40, 1);
  const Cache::Victim v = d.fill(0x80, 1);
  CHECK(v.valid);
  CHECK(v.addr == 0x0);
  CHECK(v.state == 4);
  CHECK_THROWS_WITH(Cache({3000, 4, 64}), "cache of 3000 bytes is not a whole number of 4-way sets of 64-byte lines");
  CHECK_THROWS_WITH(Cache({3 * 4 * 64, 4, 64}), "cache of 3 sets: not a power of two");
  CHECK_THROWS_WITH(Cache({1024, 0, 64}), "cache with 0 ways");
  CHECK_THROWS_WITH(Cache({1024, 2, 48}), "cache line of 48 bytes: not a power of two >= 8");
}
