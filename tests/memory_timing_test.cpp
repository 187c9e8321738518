// Timing model v2's memory (issue 23): the machine profiles against their
// cited figures, the memory system's outcomes and prices against the
// textbook MESI sequences, a pointer-chase guest whose plateaus must be
// the profile's latencies (lmbench's lat_mem_rd), and exact SMP under v2:
// the default schedule, the reference schedule and no run-ahead agree,
// and a checkpoint resumes the same run.
#include <catch2/catch.hpp>

#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <tuple>

#include "mem/cache/memory_system.hpp"
#include "sim/checkpoint.hpp"
#include "sim/machine.hpp"
#include "sim/machine_profiles.hpp"
#include "support/images.hpp"

using namespace ksim;

namespace {

std::shared_ptr<const MachineProfile> profile(const char* name) { return load_machine_profile(name); }

std::string replace_line(std::string text, const std::string& key, const std::string& line) {
  const size_t at = text.find("\n" + key + " ");
  REQUIRE(at != std::string::npos);
  const size_t end = text.find('\n', at + 1);
  return text.replace(at + 1, end - at - 1, line);
}

}  // namespace

// The cited figures (docs/research/machine-profiles.md), written here
// from the sources, not read from the profile files.
TEST_CASE("sifive-u54 holds the FU540-C000 manual's figures", "[memory][profile]") {
  const auto p = profile("sifive-u54");
  CHECK(p->isa == "rv64");
  CHECK(p->clock_mhz == 1000);
  // FU540 v1p0 §4.1: 32 KiB 8-way I-cache, 64-byte lines, one cycle, not
  // coherent with stores (FENCE.I).
  CHECK(p->l1i.size_bytes == 32 * 1024);
  CHECK(p->l1i.ways == 8);
  CHECK(p->l1i.line_bytes == 64);
  CHECK(p->l1i_latency == 1);
  CHECK_FALSE(p->l1i_coherent);
  CHECK(p->fetch_block == 0);
  // FU540 v1p0 §4.4: 32 KiB 8-way write-back D-cache, 64-byte lines,
  // 2 cycles for words and doublewords, 3 for smaller loads.
  CHECK(p->l1d.size_bytes == 32 * 1024);
  CHECK(p->l1d.ways == 8);
  CHECK(p->l1d.line_bytes == 64);
  CHECK(p->l1d_latency == 2);
  CHECK(p->l1d_latency_narrow == 3);
  // §11.2: 4 banks x 512 sets x 16 ways x 64 B; §1.5: shared, inclusive.
  CHECK(p->l2.size_bytes == 4u * 512 * 16 * 64);
  CHECK(p->l2.ways == 16);
  CHECK(p->l2_shared_by == 0);
  CHECK(p->l2_inclusive);
  // Proxies (no FU540 measurement published): chipyard #602, CS152 Rocket.
  CHECK(p->l2_latency == 10);
  CHECK(p->memory_latency == 100);
  // One L2 as the coherence hub: every transfer and upgrade goes through it.
  CHECK(p->transfer_same_l2 == 10);
  CHECK(p->upgrade_same_l2 == 10);
  for (const auto& [key, e] : p->entries)
    if (key != "name" && key != "isa") CHECK_FALSE(e.source.empty());
}

TEST_CASE("xeon-e5410 holds Intel's and the published Penryn figures", "[memory][profile]") {
  const auto p = profile("xeon-e5410");
  CHECK(p->isa == "x86");
  CHECK(p->clock_mhz == 2333);
  CHECK(p->l1i.size_bytes == 32 * 1024);  // CPUID leaf 4 of a 06_17H Penryn (InstLatx64)
  CHECK(p->l1i.ways == 8);
  CHECK(p->l1i.line_bytes == 64);
  CHECK(p->l1i_latency == 3);             // proxy: the L1D's
  CHECK(p->l1i_coherent);                 // SDM vol. 3A §11.6: a store invalidates the cached code line
  CHECK(p->fetch_block == 16);            // Intel Opt. Manual §2.1.2: a 16-byte aligned fetch
  CHECK(p->l1d.size_bytes == 32 * 1024);  // Intel Opt. Manual §2.1.4
  CHECK(p->l1d.ways == 8);
  CHECK(p->l1d_latency == 3);             // AnandTech: Core 2's L1 is 3 cycles
  CHECK(p->l2.size_bytes == 6 * 1024 * 1024);  // 6 MB per die, 24-way
  CHECK(p->l2.ways == 24);
  CHECK(p->l2_shared_by == 2);
  CHECK_FALSE(p->l2_inclusive);           // "writeback and non-inclusive"
  CHECK(p->l2_latency == 15);             // CPU-Z on the QX9650
  CHECK(p->memory_latency == 163);        // 70 ns at 2.333 GHz, rounded
  CHECK(p->transfer_same_l2 == 15);
  CHECK(p->transfer_other_l2 == 163);     // across dies: the FSB and memory
  CHECK(p->upgrade_other_l2 == 163);
}

TEST_CASE("Profiles refuse uncited, unknown, missing and malformed values", "[memory][profile]") {
  const std::string good = profile("sifive-u54")->text;
  REQUIRE_NOTHROW(parse_machine_profile(good, "u54"));
  auto error = [](const std::string& text) {
    try {
      parse_machine_profile(text, "t.machine");
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  CHECK(error(replace_line(good, "l2.latency", "l2.latency = 10")) ==
        "t.machine:32: `l2.latency` has no source: every value needs a `# source` comment");
  CHECK(error(good + "l3.size = 1  # made up\n").find("unknown key `l3.size`") != std::string::npos);
  CHECK(error(good + "l2.ways = 16  # again\n").find("`l2.ways` given twice") != std::string::npos);
  CHECK(error(replace_line(good, "memory.latency", "# (removed)")) == "t.machine: missing key `memory.latency`");
  CHECK(error(replace_line(good, "l2.latency", "l2.latency = l3.latency  # x")).find("neither a number nor a key") !=
        std::string::npos);
  CHECK(error(replace_line(good, "l1d.ways", "l1d.ways = 7  # x")).find("not a whole number") != std::string::npos);
  CHECK(error(replace_line(good, "l1d.ways", "l1d.ways = 16  # x")).find("not a power of two") == std::string::npos);
  CHECK(error(replace_line(good, "l1d.size", "l1d.size = 49152  # x")).find("not a power of two") !=
        std::string::npos);
  CHECK(error(replace_line(good, "memory.latency", "memory.latency = 5  # x")) .find("latencies must grow") !=
        std::string::npos);
  CHECK(error(replace_line(good, "l1d.replacement", "l1d.replacement = fifo  # x")).find("random or lru") !=
        std::string::npos);
  // Bounds that keep the model sound and a hostile file harmless.
  CHECK(error(replace_line(good, "l1d.replacement", "l1d.replacement = lru  # x")).find("LRU is not modelled") !=
        std::string::npos);
  CHECK(error(replace_line(good, "l2.shared_by", "l2.shared_by = 4294967295  # x")).find("at most 64 CPUs") !=
        std::string::npos);
  CHECK(error(replace_line(good, "transfer.same_l2", "transfer.same_l2 = 1  # x")).find("faster than an L1 hit") !=
        std::string::npos);
  CHECK(error(replace_line(good, "memory.latency", "memory.latency = 99999999999ns  # x")).find("bad number of ns") !=
        std::string::npos);
  CHECK(error(replace_line(good, "l2.size", "l2.size = 4294967295  # x")).find("larger than the model allows") !=
        std::string::npos);
  // fetch.block belongs to a coherent I-cache only, and must be a power of two.
  CHECK(error(good + "fetch.block = 16  # x\n").find("fetch.block is only used with l1i.coherent = yes") !=
        std::string::npos);
  const std::string x86 = profile("xeon-e5410")->text;
  REQUIRE_NOTHROW(parse_machine_profile(x86, "e5410"));
  CHECK(error(replace_line(x86, "fetch.block", "# (removed)")) == "t.machine: missing key `fetch.block`");
  CHECK(error(replace_line(x86, "fetch.block", "fetch.block = 24  # x")).find("power of two") != std::string::npos);
  CHECK(error(replace_line(good, "l1i.line", "l1i.line = 32  # x")).find("one line size") != std::string::npos);
  // A reference names a latency; ns converts at the clock.
  CHECK(parse_machine_profile(replace_line(good, "memory.latency", "memory.latency = 55ns  # x"), "t")
            .memory_latency == 55);
  CHECK_THROWS_AS(load_machine_profile("no-such-machine"), InputError);
  CHECK_THROWS_AS(load_machine_profile("/nonexistent/x.machine"), InputError);
}

// Textbook MESI sequences priced by the profile: the returned cost is the
// latency beyond an L1 hit.
TEST_CASE("The memory system prices misses, transfers and upgrades from the profile", "[memory]") {
  const auto p = profile("sifive-u54");
  MemorySystem m(*p, 2, 0);
  const uint64_t a = 0x80001000, l1 = p->l1d_latency;
  CHECK(m.access(0, 0, a, 8, false) == p->memory_latency - l1);  // cold: from memory
  CHECK(m.l1_state(0, a) == kMesiE);
  CHECK(m.hit(0, a, 8, false));
  CHECK(m.access(1, 0, a, 8, false) == p->l2_latency - l1);      // the L2 has it now
  CHECK(m.l1_state(0, a) == kMesiS);
  CHECK(m.l1_state(1, a) == kMesiS);
  CHECK_FALSE(m.hit(0, a, 8, true));                             // a store to S is no hit
  CHECK(m.access(0, 0, a, 8, true) == p->upgrade_same_l2 - l1);
  CHECK(m.l1_state(0, a) == kMesiM);
  CHECK(m.l1_state(1, a) == kMesiI);
  CHECK(m.access(1, 0, a, 8, true) == p->transfer_same_l2 - l1); // from the modified owner
  CHECK(m.l1_state(0, a) == kMesiI);
  CHECK(m.stats(0).upgrades == 1);
  CHECK(m.stats(1).transfers == 1);
  CHECK(m.stats(0).invalidations == 1);
  // A line across two lines pays for both.
  CHECK(m.access(0, 0, 0x80002000 - 4, 8, false) == 2 * (p->memory_latency - l1));
}

TEST_CASE("Xeon dies: a transfer across dies costs the FSB round trip", "[memory]") {
  const auto p = profile("xeon-e5410");
  MemorySystem m(*p, 4, 0);
  const uint64_t a = 0x1000, l1 = p->l1d_latency;
  REQUIRE(m.cluster(1) == 0);
  REQUIRE(m.cluster(2) == 1);
  m.access(0, 0, a, 8, true);                                    // CPU 0 holds it modified
  CHECK(m.access(1, 0, a, 8, true) == p->transfer_same_l2 - l1); // the sibling on its die
  CHECK(m.access(2, 0, a, 8, true) == p->transfer_other_l2 - l1);// the other die
  m.access(3, 0, a, 8, false);                                   // 2 and 3 share it
  CHECK(m.access(2, 0, a, 8, true) == p->upgrade_same_l2 - l1);  // only its die holds copies
  m.access(0, 0, a, 8, false);
  CHECK(m.access(2, 0, a, 8, true) == p->upgrade_other_l2 - l1);
}

TEST_CASE("An inclusive L2 takes its victims out of the L1s", "[memory]") {
  // A tiny inclusive profile: 2 sets x 1 way of L2, so the third line
  // evicts one of the first two from the L2 and hence from its L1.
  std::string text = profile("sifive-u54")->text;
  text = replace_line(text, "l2.size", "l2.size = 128  # test");
  text = replace_line(text, "l2.ways", "l2.ways = 1  # test");
  const MachineProfile p = parse_machine_profile(text, "tiny");
  MemorySystem m(p, 1, 0);
  m.access(0, 0, 0x0, 8, false);
  m.access(0, 0, 0x80, 8, false);  // same L2 set as 0x0: evicts it
  CHECK(m.l1_state(0, 0x0) == kMesiI);
  CHECK(m.stats(0).back_invalidations == 1);
  CHECK(m.l1_state(0, 0x80) == kMesiE);
}

// The cores' first test (MemorySystem::direct, its filter of recently
// used lines) must always give what the tags and the store buffer say:
// random traffic of loads, stores, fetches and buffer drains on small
// caches (evictions, back-invalidations, transfers, downgrades), and after
// every step the filter's answer against that slow truth for every CPU.
TEST_CASE("The fast paths' hit filter always agrees with the tags and the store buffer", "[memory][cache]") {
  std::string text = profile("xeon-e5410")->text;
  text = replace_line(text, "l1d.size", "l1d.size = 1024  # test");
  text = replace_line(text, "l1d.ways", "l1d.ways = 2  # test");
  text = replace_line(text, "l2.size", "l2.size = 4096  # test");
  text = replace_line(text, "l2.ways", "l2.ways = 2  # test");
  text = replace_line(text, "l2.inclusive", "l2.inclusive = yes  # test");
  const MachineProfile p = parse_machine_profile(text, "small");
  for (MemoryModel model : {MemoryModel::sc, MemoryModel::tso, MemoryModel::rvwmo}) {
    DYNAMIC_SECTION("memory model " << static_cast<int>(model)) {
      const int cpus = 4;
      MemorySystem m(p, cpus, 3);
      m.set_model(model);
      std::mt19937_64 rng(static_cast<uint64_t>(model) + 11);
      uint64_t cycle = 0, direct_yes = 0, direct_no = 0, buffered = 0;
      // The truth, from the tags and the buffer alone.
      auto truth = [&](int cpu, uint64_t addr, unsigned size, bool write) {
        if (!m.hit(cpu, addr, size, write)) return false;
        const StoreBuffer& b = m.buffer(cpu);
        if (b.empty()) return true;
        if (write && model == MemoryModel::tso) return false;
        return !b.touches(addr >> 6, 6);
      };
      for (int i = 0; i < 40000; ++i) {
        cycle += rng() % 20;
        const int cpu = static_cast<int>(rng() % cpus);
        const uint64_t addr = 0x10000 + (rng() % 160) * 64 + (rng() % 8) * 8;
        switch (rng() % 6) {
          case 0: case 1: m.access(cpu, cycle, addr, 8, false); break;
          case 2: buffered += m.store(cpu, cycle, cycle, addr, 8, i).buffered; break;
          case 3: m.ifetch(cpu, cycle, addr); break;
          case 4: m.apply_due(cpu, cycle, cycle); break;
          default: m.apply_due_all(cycle); break;
        }
        for (int k = 0; k < cpus; ++k)
          for (int probe = 0; probe < 4; ++probe) {
            // (Some across two lines: never direct.)
            const uint64_t a = 0x10000 + (rng() % 160) * 64 + rng() % 64;
            const bool write = rng() % 2;
            const bool want = truth(k, a, 8, write);
            REQUIRE(m.direct(k, a, 8, write) == want);
            (want ? direct_yes : direct_no) += 1;
          }
      }
      CHECK(direct_yes > 10000);
      CHECK(direct_no > 10000);
      if (model != MemoryModel::sc) CHECK(buffered > 1000);
    }
  }
}

namespace {

// Runs memlat under `profile` and returns centicycles per load by size.
std::map<uint64_t, uint64_t> run_memlat(Isa isa, const char* machine, uint64_t max_ws, uint64_t seed = 0) {
  MachineConfig cfg;
  cfg.isa = isa;
  cfg.seed = seed;
  cfg.ram_size = 256ull << 20;
  cfg.profile = profile(machine);
  Machine m(cfg);
  const char* elf = isa == Isa::rv64 ? "workloads/rv64/memlat_rv64.elf" : "workloads/x86/memlat_x86.elf";
  m.load(test::guest_image(elf, isa));
  const Symbol* ws = m.symbols().find("memlat_max_ws");
  REQUIRE(ws != nullptr);
  m.bus().write_bytes(ws->addr, &max_ws, 8);
  const RunResult r = m.run();
  REQUIRE(r.end == RunResult::End::poweroff);
  REQUIRE(r.status == 0);
  std::map<uint64_t, uint64_t> out;
  std::istringstream in(m.console());
  std::string line;
  while (std::getline(in, line)) {
    unsigned long long bytes = 0, cc = 0;
    if (std::sscanf(line.c_str(), "memlat: %llu bytes %llu centicycles/load", &bytes, &cc) == 2) out[bytes] = cc;
  }
  return out;
}

void check_plateau(const std::map<uint64_t, uint64_t>& t, uint64_t ws, uint64_t cycles) {
  INFO("working set " << ws << " bytes: " << t.at(ws) / 100.0 << " cycles/load, profile " << cycles);
  CHECK(t.at(ws) >= cycles * 90);
  CHECK(t.at(ws) <= cycles * 110);
}

}  // namespace

// lmbench's lat_mem_rd shape: the plateaus are the profile's L1, L2 and
// memory latencies within 10 % (a working set a few times a cache's size
// still hits it a little under random replacement), and a larger working
// set never loads faster (within rounding).
TEST_CASE("Pointer chase: L1, L2 and memory plateaus of both profiles", "[memory][memlat]") {
  struct Case {
    Isa isa;
    const char* machine;
    uint64_t max_ws, l2_ws;
    size_t sizes;
  };
  for (const Case& c : {Case{Isa::rv64, "sifive-u54", 64ull << 20, 1 << 20, 15},   // 4 KiB .. 64 MiB
                        Case{Isa::x86_64, "xeon-e5410", 128ull << 20, 2 << 20, 16}}) {  // .. 128 MiB
    INFO(c.machine);
    const auto p = profile(c.machine);
    const auto t = run_memlat(c.isa, c.machine, c.max_ws);
    REQUIRE(t.size() == c.sizes);
    check_plateau(t, 4096, p->l1d_latency);
    check_plateau(t, 16384, p->l1d_latency);
    check_plateau(t, c.l2_ws, p->l2_latency);
    check_plateau(t, c.max_ws, p->memory_latency);
    uint64_t prev = 0;
    for (const auto& [ws, cc] : t) {
      CHECK(cc + 5 >= prev);
      prev = cc;
    }
  }
}

// Under v2 a seed draws no memory stalls (v1's stand-in for misses): an
// L1-resident chase costs exactly what it costs without a seed.
TEST_CASE("Timing v2: a seed adds no memory stalls", "[memory][memlat]") {
  const auto plain = run_memlat(Isa::rv64, "sifive-u54", 16384);
  const auto seeded = run_memlat(Isa::rv64, "sifive-u54", 16384, 9);
  CHECK(plain.at(4096) == 203);
  CHECK(seeded.at(4096) == plain.at(4096));
  CHECK(seeded.at(16384) == plain.at(16384));
}

// False sharing (issue 23 §5): two CPUs' atomic adds to counters in one
// line take the line from each other every time; in a line each, they hit.
// The guest times both; the difference per add is one transfer from the
// other CPU's cache, less the L1 hit the atomic's own cost already counts
// (the CPUs share an L2 on both machines: CPUs 0 and 1).
TEST_CASE("False sharing: one line between two CPUs costs a transfer per add", "[memory][falseshare]") {
  for (Isa isa : {Isa::rv64, Isa::x86_64}) {
    const auto p = profile(isa == Isa::rv64 ? "sifive-u54" : "xeon-e5410");
    MachineConfig cfg;
    cfg.isa = isa;
    cfg.cpus = 2;
    cfg.profile = p;
    cfg.memory_model = isa == Isa::rv64 ? MemoryModel::rvwmo : MemoryModel::tso;
    Machine m(cfg);
    m.load(test::guest_image(isa == Isa::rv64 ? "workloads/rv64/smp_falseshare_rv64.elf" : "workloads/x86/smp_falseshare_x86.elf",
                             isa));
    const RunResult r = m.run();
    REQUIRE(r.end == RunResult::End::poweroff);
    REQUIRE(r.status == 0);  // both counters reached their count
    unsigned long long same = 0, own = 0;
    const size_t at = m.console().find("falseshare: ");
    REQUIRE(at != std::string::npos);
    REQUIRE(std::sscanf(m.console().c_str() + at, "falseshare: same line %llu own lines %llu", &same, &own) == 2);
    const double diff = (static_cast<double>(same) - static_cast<double>(own)) / 100.0;
    const double expected = p->transfer_same_l2 - p->l1d_latency;
    INFO(p->name << ": same line " << same / 100.0 << ", own lines " << own / 100.0 << " cycles per add");
    CHECK(diff >= expected * 0.9);
    CHECK(diff <= expected * 1.1);
    CHECK(m.memory_system()->stats(0).transfers > 1000);  // most of the 2,000 adds
  }
}

namespace {

struct Outcome {
  uint64_t cycles, instret;
  std::string console;
  std::vector<CacheStats> stats;
  std::vector<uint64_t> hits;
};

Outcome run_kernel(Isa isa, int cpus, uint64_t seed, int schedule, MemoryModel model) {
  MachineConfig cfg;
  cfg.memory_model = model;
  cfg.isa = isa;
  cfg.cpus = cpus;
  cfg.seed = seed;
  cfg.profile = profile(isa == Isa::rv64 ? "sifive-u54" : "xeon-e5410");
  cfg.reference_schedule = schedule == 1;
  cfg.run_ahead = schedule != 2;
  Machine m(cfg);
  m.load(test::guest_image(isa == Isa::rv64 ? "workloads/rv64/kernel_preempt.elf" : "workloads/x86/kernel_x86_preempt.elf",
                           isa));
  const RunResult r = m.run();
  REQUIRE(r.end == RunResult::End::poweroff);
  REQUIRE(r.status == 0);
  Outcome o{r.cycles, r.instret, m.console(), {}};
  for (int c = 0; c < cpus; ++c) {
    o.stats.push_back(m.memory_system()->stats(c));
    o.hits.push_back(m.cpu(c).l1_hits());
  }
  return o;
}

void same(const Outcome& a, const Outcome& b) {
  CHECK(a.cycles == b.cycles);
  CHECK(a.instret == b.instret);
  CHECK(a.console == b.console);
  REQUIRE(a.stats.size() == b.stats.size());
  for (size_t c = 0; c < a.stats.size(); ++c) {
    CHECK(a.stats[c].l1_misses == b.stats[c].l1_misses);
    CHECK(a.stats[c].transfers == b.stats[c].transfers);
    CHECK(a.stats[c].stall_cycles == b.stats[c].stall_cycles);
    CHECK(a.stats[c].upgrades == b.stats[c].upgrades);
    CHECK(a.stats[c].back_invalidations == b.stats[c].back_invalidations);
    CHECK(a.hits[c] == b.hits[c]);
  }
}

}  // namespace

TEST_CASE("Timing v2: the exact schedules agree on the guest kernel", "[memory][schedule]") {
  // 6 CPUs: three x86 dies, where a miss inside a step once put CPUs that
  // ran ahead back to the wrong point (the step's start is the position).
  for (Isa isa : {Isa::rv64, Isa::x86_64}) {
    for (auto [cpus, seed, model] : {std::tuple{4, uint64_t{0}, MemoryModel::sc},
                                     std::tuple{3, uint64_t{5}, isa == Isa::rv64 ? MemoryModel::rvwmo : MemoryModel::tso},
                                     std::tuple{6, uint64_t{0}, isa == Isa::rv64 ? MemoryModel::rvwmo : MemoryModel::tso},
                                     std::tuple{4, uint64_t{2}, isa == Isa::rv64 ? MemoryModel::tso : MemoryModel::sc}}) {
      INFO((isa == Isa::rv64 ? "rv64" : "x86") << " cpus " << cpus << " seed " << seed << " model "
                                                << static_cast<int>(model));
      const Outcome ahead = run_kernel(isa, cpus, seed, 0, model);
      same(ahead, run_kernel(isa, cpus, seed, 1, model));
      same(ahead, run_kernel(isa, cpus, seed, 2, model));
      // Shared kernel data moves between the CPUs' caches.
      uint64_t transfers = 0;
      for (const CacheStats& s : ahead.stats) transfers += s.transfers + s.upgrades;
      CHECK(transfers > 0);
    }
  }
}

TEST_CASE("Timing v2: a checkpoint resumes the same run, caches included", "[memory][checkpoint]") {
  for (Isa isa : {Isa::rv64, Isa::x86_64}) {
    MachineConfig cfg;
    cfg.isa = isa;
    cfg.cpus = 2;
    cfg.profile = profile(isa == Isa::rv64 ? "sifive-u54" : "xeon-e5410");
    cfg.memory_model = isa == Isa::rv64 ? MemoryModel::rvwmo : MemoryModel::tso;  // buffers in the checkpoint
    const char* elf = isa == Isa::rv64 ? "workloads/rv64/kernel_preempt.elf" : "workloads/x86/kernel_x86_preempt.elf";
    Machine whole(cfg);
    whole.load(test::guest_image(elf, isa));
    const RunResult full = whole.run();
    REQUIRE(full.end == RunResult::End::poweroff);

    Machine first(cfg);
    first.load(test::guest_image(elf, isa));
    RunLimits half;
    half.cycle = full.cycles / 2;
    REQUIRE(first.run(half).end == RunResult::End::paused);
    const std::vector<uint8_t> bytes = save_checkpoint(first);
    Machine second(cfg);
    restore_checkpoint(second, bytes);
    const RunResult rest = second.run();
    CHECK(rest.cycles == full.cycles);
    CHECK(rest.instret == full.instret);
    CHECK(second.console() == whole.console());
    CHECK(second.memory_system()->stats(1).l1_misses == whole.memory_system()->stats(1).l1_misses);
    CHECK(second.cpu(0).l1_hits() == whole.cpu(0).l1_hits());
    CHECK(second.memory_system()->stats(1).l1i_misses == whole.memory_system()->stats(1).l1i_misses);
    CHECK(second.cpu(0).l1i_hits() == whole.cpu(0).l1i_hits());

    // A checkpoint of a v2 machine does not restore into a v1 one.
    MachineConfig v1 = cfg;
    v1.profile = nullptr;
    v1.memory_model = MemoryModel::sc;
    Machine other(v1);
    CHECK_THROWS_AS(restore_checkpoint(other, bytes), InputError);
  }
}

namespace {
// The cache_miss events of a run, as they are produced.
struct MissLog : EventObserver {
  std::vector<Event> misses;
  void on_event(const Event& e) override {
    if (e.kind == EventKind::cache_miss) misses.push_back(e);
  }
};
}  // namespace

// --trace-cache (MachineConfig::trace_cache): one event per miss and
// upgrade, which must add up to the memory system's counters, come out the
// same on the reference schedule, and exist only when asked for under v2.
TEST_CASE("Timing v2: cache_miss events account for every miss, upgrade and transfer", "[memory][trace]") {
  for (Isa isa : {Isa::rv64, Isa::x86_64}) {
    INFO(isa_name(isa));
    const char* elf = isa == Isa::rv64 ? "workloads/rv64/kernel_preempt.elf" : "workloads/x86/kernel_x86_preempt.elf";
    std::vector<Event> seen[2];
    for (int reference = 0; reference < 2; ++reference) {
      MachineConfig cfg;
      cfg.isa = isa;
      cfg.cpus = 4;
      cfg.profile = profile(isa == Isa::rv64 ? "sifive-u54" : "xeon-e5410");
      cfg.memory_model = isa == Isa::rv64 ? MemoryModel::rvwmo : MemoryModel::tso;
      cfg.trace_cache = true;
      cfg.reference_schedule = reference == 1;
      Machine m(cfg);
      MissLog log;
      m.events().add(&log);
      m.load(test::guest_image(elf, isa));
      REQUIRE(m.run().end == RunResult::End::poweroff);
      for (int c = 0; c < 4; ++c) {
        uint64_t data = 0, fetch = 0, upgrade = 0, transfer = 0;
        for (const Event& e : log.misses) {
          if (e.cpu != c) continue;
          if (e.b == kMissLoad || e.b == kMissStore) ++data;
          if (e.b == kMissFetch) ++fetch;
          if (e.b == kMissUpgrade) ++upgrade;
          if (e.c >= kFromCpu) {
            ++transfer;
            CHECK(static_cast<int>(e.c - kFromCpu) != c);
          }
        }
        const CacheStats& st = m.memory_system()->stats(c);
        CHECK(data == st.l1_misses);
        CHECK(fetch == st.l1i_misses);
        CHECK(upgrade == st.upgrades);
        CHECK(transfer == st.transfers);
        CHECK(fetch > 0);
      }
      seen[reference] = log.misses;
    }
    REQUIRE(seen[0].size() == seen[1].size());
    bool same = true;
    for (size_t i = 0; i < seen[0].size(); ++i)
      same = same && seen[0][i].cycle == seen[1][i].cycle && seen[0][i].cpu == seen[1][i].cpu &&
             seen[0][i].a == seen[1][i].a && seen[0][i].b == seen[1][i].b && seen[0][i].c == seen[1][i].c;
    CHECK(same);
  }
  // Timing v1 has no caches to trace.
  MachineConfig v1;
  v1.trace_cache = true;
  CHECK_THROWS_AS(Machine(v1), InputError);
}
