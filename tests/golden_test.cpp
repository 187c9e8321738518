// Golden table: for a small matrix of (ISA, image, CPUs, seed, quantum,
// timing model), the instructions, cycles and trace hash of a whole run,
// pinned. Timing v2 rows name their machine profile and memory model
// (docs/TIMING.md); the others run model v1.
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
#include "sim/machine_profiles.hpp"
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
  const char* machine = nullptr;  // timing v2's profile; nullptr: timing v1
  MemoryModel model = MemoryModel::sc;
};

const char* model_name(MemoryModel m) {
  return m == MemoryModel::tso ? "MemoryModel::tso" : m == MemoryModel::rvwmo ? "MemoryModel::rvwmo" : "MemoryModel::sc";
}

// clang-format off
const Golden kTable[] = {
  {"workloads/rv64/hello.elf", Isa::rv64, 1, 0, 1, 194605, 248052, 0x7114b25bd09fac5dull},
  {"workloads/rv64/kernel_preempt.elf", Isa::rv64, 1, 0, 1, 2349944, 3171761, 0xdd42730f3f8afd4eull},
  {"workloads/rv64/kernel_preempt.elf", Isa::rv64, 4, 0, 1, 9276388, 3245455, 0x2639d98d57eed2b6ull},
  {"workloads/rv64/kernel_preempt.elf", Isa::rv64, 4, 42, 1, 9279864, 3297561, 0xb1d5b099f6741bc2ull},
  {"workloads/rv64/kernel_nopreempt.elf", Isa::rv64, 16, 7, 1, 9148196, 903678, 0x3aa8c32cbe4ab2afull},
  {"workloads/rv64/kernel_preempt.elf", Isa::rv64, 4, 3, 1000, 9307063, 3337220, 0xd80da0a3f76dd447ull},
  {"workloads/x86/kernel_x86_preempt.elf", Isa::x86_64, 1, 0, 1, 2127855, 2764034, 0x1354b5f88d1d0a9bull},
  {"workloads/x86/kernel_x86_preempt.elf", Isa::x86_64, 4, 0, 1, 8344760, 2823678, 0x356c7b8e6941e89full},
  {"workloads/x86/kernel_x86_preempt.elf", Isa::x86_64, 4, 42, 1, 8349527, 2896773, 0x85b1c353ff87539eull},
  {"workloads/x86/kernel_x86_nopreempt.elf", Isa::x86_64, 16, 7, 1, 8239851, 806632, 0xed7a194e0e8ad8dbull},
  {"workloads/x86/x86_sort_O2.elf", Isa::x86_64, 1, 0, 1, 10002626, 12243124, 0x5b6319054260c54full},
  {"workloads/rv64/kernel_preempt.elf", Isa::rv64, 1, 0, 1, 2352450, 3697754, 0x62cf46f14b125404ull, "sifive-u54", MemoryModel::rvwmo},
  {"workloads/rv64/kernel_preempt.elf", Isa::rv64, 4, 0, 1, 9286316, 3782382, 0x33aa7ddea33662b3ull, "sifive-u54", MemoryModel::rvwmo},
  {"workloads/rv64/kernel_nopreempt.elf", Isa::rv64, 16, 7, 1, 9139595, 1369936, 0xb9c3d60ebd916a80ull, "sifive-u54", MemoryModel::rvwmo},
  {"workloads/rv64/kernel_preempt.elf", Isa::rv64, 4, 0, 1, 9288170, 3779106, 0x120360d39d41a347ull, "sifive-u54", MemoryModel::sc},
  {"workloads/x86/kernel_x86_preempt.elf", Isa::x86_64, 1, 0, 1, 2154683, 4002239, 0x649d296a89c59a0full, "xeon-e5410", MemoryModel::tso},
  {"workloads/x86/kernel_x86_preempt.elf", Isa::x86_64, 4, 0, 1, 8502810, 4287240, 0xad0430506a23b919ull, "xeon-e5410", MemoryModel::tso},
  {"workloads/x86/kernel_x86_nopreempt.elf", Isa::x86_64, 16, 7, 1, 8523941, 1472241, 0x66aec24fdd779f6aull, "xeon-e5410", MemoryModel::tso},
  {"workloads/x86/x86_sort_O2.elf", Isa::x86_64, 1, 0, 1, 10002626, 15115075, 0x74495aac861f69e1ull, "xeon-e5410", MemoryModel::tso},
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
    if (g.machine) {
      cfg.profile = load_machine_profile(g.machine);
      cfg.memory_model = g.model;
    }
    Machine m(cfg);
    m.load(image(g.image, g.isa));
    TraceHasher h;
    m.events().add(&h);
    RunResult r = m.run();
    if (print) {
      std::printf("  {\"%s\", %s, %d, %" PRIu64 ", %" PRIu64 ", %" PRIu64 ", %" PRIu64 ", 0x%016" PRIx64 "ull",
                  g.image, g.isa == Isa::rv64 ? "Isa::rv64" : "Isa::x86_64", g.cpus, g.seed, g.quantum, r.instret,
                  r.cycles, h.value());
      if (g.machine) std::printf(", \"%s\", %s", g.machine, model_name(g.model));
      std::printf("},\n");
    }
    INFO(g.image << " cpus " << g.cpus << " seed " << g.seed << " quantum " << g.quantum << " machine "
                 << (g.machine ? g.machine : "(timing v1)"));
    REQUIRE(r.end == RunResult::End::poweroff);
    REQUIRE(r.status == 0);
    CHECK(r.instret == g.instructions);
    CHECK(r.cycles == g.cycles);
    CHECK(h.value() == g.hash);
  }
}
