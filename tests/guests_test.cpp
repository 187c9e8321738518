// Runs every guest built by `ksim_guests` in-process through ksim::Machine.
// The guests check themselves (selftests through the finisher, ISA tests
// through tohost), so a wrong status here means the simulator computed
// something wrong. The list comes from guests_expect.txt, written at
// configure time, so a new guest is picked up without touching this file.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/elf/elf_image.hpp"
#include "sim/events.hpp"
#include "sim/machine.hpp"

using namespace ksim;
using Catch::Matchers::Contains;

namespace {

// The file holds 16 guests besides compute: hello, compute_small, six
// selftests, seven ISA tests and isa_fail_demo. Fewer than 15 means the
// build or the list is broken, and a loop over an empty list must not pass
// silently.
constexpr size_t kMinGuests = 15;

struct Guest {
  std::string name;
  int status = 0;  // the exit status a correct simulator ends the run with
  std::string path;
};

const char* const kExpectFile = KSIM_BINARY_DIR "/workloads/rv64/guests_expect.txt";

std::vector<Guest> read_guest_list() {
  std::ifstream in(kExpectFile);
  INFO("guest list: " << kExpectFile << " (built by the ksim_guests target)");
  REQUIRE(in.good());
  std::vector<Guest> guests;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::istringstream fields(line);
    Guest g;
    fields >> g.name >> g.status;
    std::getline(fields >> std::ws, g.path);  // the rest of the line: paths may hold spaces
    INFO("line: " << line);
    REQUIRE(!fields.fail());
    REQUIRE(!g.name.empty());
    REQUIRE(!g.path.empty());
    guests.push_back(g);
  }
  return guests;
}

// Every guest short enough for a unit test: `compute` runs ~300M
// instructions; `compute_small` is the same code with fewer iterations.
std::vector<Guest> testable_guests() {
  std::vector<Guest> out;
  for (auto& g : read_guest_list())
    if (g.name != "compute" && g.name.rfind("smp_", 0) != 0) out.push_back(g);  // smp_*: scheduler_test.cpp
  REQUIRE(out.size() >= kMinGuests);
  return out;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

const char* end_name(RunResult::End e) {
  switch (e) {
    case RunResult::End::poweroff: return "poweroff";
    case RunResult::End::cycle_limit: return "cycle_limit";
    case RunResult::End::crash: return "crash";
    case RunResult::End::hook_stop: return "hook_stop";
    case RunResult::End::paused: return "paused";
  }
  return "?";
}

struct GuestRun {
  RunResult result;
  std::string console;
  std::string trace_hash;
};

// One run with the default machine configuration, as `ksim run --elf` does.
GuestRun run_guest(const Guest& g) {
  Machine m{MachineConfig{}};
  m.load(load_elf_file(g.path, Isa::rv64));
  TraceHasher hasher;
  m.events().add(&hasher);
  GuestRun r{m.run(), m.console(), ""};
  r.trace_hash = hasher.hex();
  return r;
}

}  // namespace

TEST_CASE("The guest list names at least 15 runnable guests, and each one exists", "[guests]") {
  auto guests = testable_guests();
  CHECK(guests.size() >= kMinGuests);
  bool some_expected_failure = false;
  for (const auto& g : guests) {
    INFO(g.name << " -> " << g.path);
    CHECK(std::filesystem::is_regular_file(g.path));
    some_expected_failure |= g.status != 0;
  }
  // isa_fail_demo is there so that the failure path is exercised too; a
  // list where every guest must pass could not notice a simulator that
  // reports 0 for everything.
  CHECK(some_expected_failure);
}

TEST_CASE("Every self-checking guest passes and reports through the finisher or tohost", "[guests]") {
  for (const auto& g : testable_guests()) {
    GuestRun r = run_guest(g);
    INFO("guest " << g.name << " (" << g.path << ")");
    INFO("end: " << end_name(r.result.end) << ", reason: " << r.result.reason << ", cycles: " << r.result.cycles
                 << ", instret: " << r.result.instret);
    INFO("console:\n" << r.console);
    CHECK(r.result.end == RunResult::End::poweroff);
    CHECK(r.result.status == g.status);
    CHECK(r.result.instret > 0);
  }
}

TEST_CASE("Every selftest guest prints how many checks passed on its console", "[guests]") {
  // A selftest that powers off with 0 but never reached its summary line
  // would mean the finisher fired early; the console line rules that out.
  size_t selftests = 0;
  for (const auto& g : testable_guests()) {
    if (!starts_with(g.name, "selftest_") && g.name != "hello") continue;
    if (starts_with(g.name, "selftest_")) ++selftests;
    GuestRun r = run_guest(g);
    INFO("guest " << g.name << ", console:\n" << r.console);
    CHECK_THAT(r.console, Contains("checks passed"));
  }
  // muldiv, atomics, misaligned, shifts, compressed, traps.
  CHECK(selftests >= 6);
}

TEST_CASE("Running the same guest twice gives identical cycles, instructions retired and trace hash", "[guests]") {
  // Determinism is a design rule of the simulator (sim/machine.hpp): no
  // host time, thread or address may decide anything a guest can see.
  for (const auto& g : testable_guests()) {
    GuestRun a = run_guest(g);
    GuestRun b = run_guest(g);
    INFO("guest " << g.name);
    CHECK(a.result.end == b.result.end);
    CHECK(a.result.status == b.result.status);
    CHECK(a.result.cycles == b.result.cycles);
    CHECK(a.result.instret == b.result.instret);
    CHECK(a.trace_hash == b.trace_hash);
    CHECK(a.console == b.console);
    // The hash must have seen events (at least the exit), or comparing it
    // proves nothing: FNV-1a's offset basis is the hash of no events.
    CHECK(a.trace_hash != "cbf29ce484222325");
  }
}
