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
  {"workloads/rv64/kernel_preempt.elf", Isa::rv64, 1, 0, 1, 2392108, 3231997, 0xedbaa6c14bc54275ull},
  {"workloads/rv64/kernel_preempt.elf", Isa::rv64, 4, 0, 1, 9281485, 3280513, 0x53cf0a6f8828104aull},
  {"workloads/rv64/kernel_preempt.elf", Isa::rv64, 4, 42, 1, 9293267, 3365780, 0x34a1f4e24864e405ull},
  {"workloads/rv64/kernel_nopreempt.elf", Isa::rv64, 16, 7, 1, 9162584, 971994, 0x4695afc8aa5f5fa1ull},
  {"workloads/rv64/kernel_preempt.elf", Isa::rv64, 4, 3, 1000, 9302759, 3339721, 0xf07b927ac8d661ebull},
  {"workloads/x86/kernel_x86_preempt.elf", Isa::x86_64, 1, 0, 1, 2190590, 2859839, 0xc6f1e2d788755840ull},
  {"workloads/x86/kernel_x86_preempt.elf", Isa::x86_64, 4, 0, 1, 8385219, 2907606, 0xf1d405b51ad91cc2ull},
  {"workloads/x86/kernel_x86_preempt.elf", Isa::x86_64, 4, 42, 1, 8381585, 2955013, 0x76eca841682bb6bfull},
  {"workloads/x86/kernel_x86_nopreempt.elf", Isa::x86_64, 16, 7, 1, 8283536, 893317, 0x31a2005240902e92ull},
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
