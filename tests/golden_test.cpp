// Golden table: for a small matrix of (ISA, image, CPUs, seed, quantum),
// the instructions, cycles and trace hash of a whole run, pinned.
//
// Any change to the timing model, the scheduler, an interpreter, the guest
// kernels or the event stream moves these numbers. That is the point: a
// change here must be deliberate, and the commit that updates the table
// says why. To print the current values in the table's own format:
//
//   KSIM_GOLDEN_PRINT=1 build/tests/ksim_tests '[golden]'
#include <catch2/catch.hpp>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "sim/elf/elf_image.hpp"
#include "sim/events.hpp"
#include "sim/machine.hpp"
#include "support/images.hpp"

using namespace ksim;

namespace {

struct Golden {
  const char* image;  // path under the build directory
  Isa isa;
  int cpus;
  uint64_t seed;
  uint64_t quantum;
  uint64_t instructions, cycles;
  uint64_t hash;
};

// clang-format off
const Golden kTable[] = {
  {"workloads/rv64/hello.elf", Isa::rv64, 1, 0, 1, 194605, 248052, 0x7114b25bd09fac5dull},
  {"workloads/rv64/kernel_preempt.elf", Isa::rv64, 1, 0, 1, 2347795, 3168687, 0xe12cf70af4470858ull},
  {"workloads/rv64/kernel_preempt.elf", Isa::rv64, 4, 0, 1, 9257653, 3260437, 0xd48c79864aa5c67bull},
  {"workloads/rv64/kernel_preempt.elf", Isa::rv64, 4, 42, 1, 9268061, 3291927, 0xf81a08f4236dc66aull},
  {"workloads/rv64/kernel_nopreempt.elf", Isa::rv64, 16, 7, 1, 9123130, 897570, 0x44c8c7e6c6238a0aull},
  {"workloads/rv64/kernel_preempt.elf", Isa::rv64, 4, 3, 1000, 9292751, 3303141, 0xaa1e835eff6209a2ull},
  {"workloads/x86/kernel_x86_preempt.elf", Isa::x86_64, 1, 0, 1, 2124848, 2760726, 0x156251c51847538aull},
  {"workloads/x86/kernel_x86_preempt.elf", Isa::x86_64, 4, 0, 1, 8320315, 2830298, 0xd2c1525222e33ec8ull},
  {"workloads/x86/kernel_x86_preempt.elf", Isa::x86_64, 4, 42, 1, 8333920, 2877472, 0x30d2c2e91f7c7995ull},
  {"workloads/x86/kernel_x86_nopreempt.elf", Isa::x86_64, 16, 7, 1, 8229060, 802624, 0x2d88587105316fd4ull},
  {"workloads/x86/x86_sort_O2.elf", Isa::x86_64, 1, 0, 1, 10002626, 12243124, 0x5b6319054260c54full},
};
// clang-format on

const ElfImage& image(const std::string& rel, Isa isa) { return test::guest_image(rel, isa); }

}  // namespace

TEST_CASE("golden table: instructions, cycles and trace hash of pinned runs", "[golden]") {
  const bool print = std::getenv("KSIM_GOLDEN_PRINT") != nullptr;
  for (const Golden& g : kTable) {
    MachineConfig cfg;
    cfg.isa = g.isa;
    cfg.cpus = g.cpus;
    cfg.seed = g.seed;
    cfg.quantum = g.quantum;
    Machine m(cfg);
    m.load(image(g.image, g.isa));
    TraceHasher h;
    m.events().add(&h);
    RunResult r = m.run();
    if (print)
      std::printf("  {\"%s\", %s, %d, %" PRIu64 ", %" PRIu64 ", %" PRIu64 ", %" PRIu64 ", 0x%016" PRIx64 "ull},\n",
                  g.image, g.isa == Isa::rv64 ? "Isa::rv64" : "Isa::x86_64", g.cpus, g.seed, g.quantum, r.instret,
                  r.cycles, h.value());
    INFO(g.image << " cpus " << g.cpus << " seed " << g.seed << " quantum " << g.quantum);
    REQUIRE(r.end == RunResult::End::poweroff);
    REQUIRE(r.status == 0);
    CHECK(r.instret == g.instructions);
    CHECK(r.cycles == g.cycles);
    CHECK(h.value() == g.hash);
  }
}
