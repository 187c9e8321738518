// Freestanding C programs (sorting, hashing, big numbers, strings) compiled
// at -O0 to -O3 run on the x86 core and print exactly what the same code
// prints natively on the host (workloads/x86/).
#include <catch2/catch.hpp>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "sim/machine.hpp"
#include "support/run_process.hpp"

using namespace ksim;

TEST_CASE("x86 freestanding programs at every optimisation level match their native runs", "[x86][programs]") {
  const std::string list = std::string(KSIM_BINARY_DIR) + "/workloads/x86/native.txt";
  std::ifstream in(list);
  REQUIRE(in.good());
  int programs = 0, images = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream ls(line);
    std::string name, native;
    ls >> name >> native;
    if (name.empty()) continue;
    ++programs;
    ksim::test::ProcessResult ref = ksim::test::run_process({native});
    INFO(name << ": native " << native);
    REQUIRE(ref.status == 0);
    REQUIRE(!ref.out.empty());
    for (std::string elf; ls >> elf;) {
      ++images;
      INFO(elf);
      MachineConfig cfg;
      cfg.isa = Isa::x86_64;
      cfg.max_cycles = 20'000'000'000ull;
      Machine m(cfg);
      m.load(load_elf_file(elf, Isa::x86_64));
      RunResult r = m.run();
      CHECK(r.end == RunResult::End::poweroff);
      CHECK(r.status == 0);
      CHECK(m.console() == ref.out);
    }
  }
  CHECK(programs >= 4);
  CHECK(images >= 8);
}
