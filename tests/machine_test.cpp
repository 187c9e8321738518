// Machine-level robustness: loader checks, scheduler limits, hooks that stop
// the run, and pausing that must never show in the events.
#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "sim/checkpoint.hpp"
#include "support/rv64_asm.hpp"
#include "support/rv64_machine.hpp"

using namespace ksim;

namespace {
std::string guest(const char* name) { return std::string(KSIM_BINARY_DIR) + "/workloads/rv64/" + name; }
}  // namespace

TEST_CASE("An image whose entry point is not 2-byte aligned is refused", "[machine]") {
  ElfImage img = load_elf_file(guest("hello.elf"), Isa::rv64);
  img.entry |= 1;
  Machine m(MachineConfig{});
  CHECK_THROWS_WITH(m.load(img), Catch::Contains("not 2-byte aligned"));
}

TEST_CASE("The largest quantum still makes progress and ends the run", "[machine]") {
  MachineConfig cfg;
  cfg.cpus = 2;
  cfg.quantum = kMaxQuantum;
  Machine m(cfg);
  m.load(load_elf_file(guest("kernel_nopreempt.elf"), Isa::rv64));
  RunResult r = m.run();
  CHECK(r.end == RunResult::End::poweroff);
  CHECK(r.status == 0);
  MachineConfig bad = cfg;
  bad.quantum = kMaxQuantum + 1;
  CHECK_THROWS_AS(Machine(bad), InputError);
}

TEST_CASE("A trap hook returning stop ends the run as a host stop", "[machine][hooks]") {
  test::Rv64Machine t;
  t.machine().trap_hooks().add(-5, [](Cpu&, const TrapInfo& ti) {
    return ti.cause == rv64::kEcallM ? HookResult::stop : HookResult::pass;
  });
  t.load({test::rv::li(test::rv::a0, 1), test::rv::ecall, test::rv::li(test::rv::a0, 2)});
  RunResult r = t.run();
  CHECK(r.end == RunResult::End::hook_stop);
  CHECK_THAT(r.reason, Catch::Contains("trap hook"));
  CHECK(t.x(test::rv::a0) == 1);
  CHECK(r.cycles < 1000);  // it did not spin on the trap until the cycle limit
}

TEST_CASE("Pausing in the middle of a console line does not split the line's event", "[machine][checkpoint]") {
  auto boot = [] {
    auto m = std::make_unique<Machine>(MachineConfig{});
    m->load(load_elf_file(guest("hello.elf"), Isa::rv64));
    return m;
  };
  auto ref = boot();
  TraceHasher ref_hash;
  ref->events().add(&ref_hash);
  REQUIRE(ref->run().end == RunResult::End::poweroff);

  auto m = boot();
  TraceHasher h;
  m->events().add(&h);
  RunResult r;
  // Small steps through the first console lines, then to the end.
  for (uint64_t s = 7; s < 12'000; s += 7) {
    RunLimits lim;
    lim.steps = s;
    r = m->run(lim);
    REQUIRE(r.end == RunResult::End::paused);
  }
  r = m->run();
  CHECK(r.end == RunResult::End::poweroff);
  CHECK(h.value() == ref_hash.value());
}

TEST_CASE("Restoring a checkpoint taken while the guest loops on faults at address 0 does not crash ksim",
          "[machine][checkpoint]") {
  test::Rv64Machine t;
  // mtvec = 0 (outside RAM), then jump to 0x200: every fetch faults.
  t.load({test::rv::csrrw(0, rv64::csr::mtvec, 0), test::rv::li(test::rv::t0, 0x200),
          test::rv::I(0, test::rv::t0, 0, 0, 0x67)});
  RunLimits lim;
  lim.steps = 6;
  REQUIRE(t.machine().run(lim).end == RunResult::End::paused);
  const auto bytes = save_checkpoint(t.machine());
  Machine fresh(read_checkpoint_header(bytes).config);
  restore_checkpoint(fresh, bytes);
  RunResult r = fresh.run();
  CHECK(r.end == RunResult::End::crash);
  CHECK_THAT(r.reason, Catch::Contains("trap loop"));
}
