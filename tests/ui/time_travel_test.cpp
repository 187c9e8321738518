// docs/DEBUGGER.md, "Time travel": going back is exact. Every move is checked
// against the state hash (machine checkpoint bytes, trace hash so far,
// probe engine state) of the same position reached another way.
#include <catch2/catch.hpp>

#include "kprobes/events/probe_script.hpp"
#include "sim/checkpoint.hpp"
#include "ui_support.hpp"

using namespace ksim;
using namespace ksim::ui;
using ksim::test::ui_add;
using ksim::test::ui_kernel;

TEST_CASE("Back to cycle N and forward again: the same state hashes (no probes: checkpoints)", "[ui][travel]") {
  Debugger d(ui_kernel(2, 5), {});
  d.go_to_cycle(300'000);
  const uint64_t h300 = d.state_hash();
  d.go_to_cycle(2'500'000);
  const uint64_t h2500 = d.state_hash();
  const size_t events = d.log().size();
  d.go_to_cycle(300'000);
  CHECK(d.state_hash() == h300);
  CHECK(d.restores() + d.rebuilds() >= 1);
  d.go_to_cycle(2'500'000);
  CHECK(d.state_hash() == h2500);
  CHECK(d.log().size() == events);
  CHECK(d.log().mismatches() == 0);

  // The same position reached in one go from a fresh machine.
  Debugger fresh(ui_kernel(2, 5), {});
  fresh.go_to_cycle(2'500'000);
  CHECK(fresh.state_hash() == h2500);
}

TEST_CASE("Back and forth with a probe registered: replayed from boot, same hashes and events", "[ui][travel]") {
  Debugger d(ui_kernel(4, 3), {ui_add("p do_fork"), ui_add("r:ret sys_open ret=$retval")});
  d.go_to_cycle(1'000'000);
  const uint64_t h1 = d.state_hash();
  const size_t lines1 = d.log().lines().size();
  d.go_to_cycle(4'000'000);
  const uint64_t h4 = d.state_hash();
  const size_t lines4 = d.log().lines().size();
  REQUIRE(lines4 > lines1);
  d.go_to_cycle(1'000'000);
  CHECK(d.rebuilds() == 1);
  CHECK(d.state_hash() == h1);
  d.go_to_cycle(4'000'000);
  CHECK(d.state_hash() == h4);
  CHECK(d.log().lines().size() == lines4);
  CHECK(d.log().mismatches() == 0);
}

TEST_CASE("Step back one step at a time returns each earlier state exactly", "[ui][travel]") {
  for (bool probes : {false, true}) {
    std::vector<ProbeOp> ops;
    if (probes) ops.push_back(ui_add("p vfs_read"));
    Debugger d(ui_kernel(2, 9), ops);
    d.go_to_cycle(700'000);
    std::vector<uint64_t> hashes{d.state_hash()};
    for (int i = 0; i < 40; ++i) {
      d.step();
      hashes.push_back(d.state_hash());
    }
    const uint64_t end_steps = d.position().steps;
    for (int i = 39; i >= 1; --i) {
      REQUIRE(d.step_back());
      CHECK(d.position().steps == end_steps - 40 + static_cast<uint64_t>(i));
      CHECK(d.state_hash() == hashes[static_cast<size_t>(i)]);
    }
    // Forward again by steps.
    d.step(39);
    CHECK(d.state_hash() == hashes[40]);
  }
}

TEST_CASE("A position reached through many pauses equals the one reached directly", "[ui][travel]") {
  Debugger a(ui_kernel(4, 11), {ui_add("p do_fork")});
  for (uint64_t c = 50'000; c <= 900'000; c += 50'000) {
    a.go_to_cycle(c);
    a.step(3);
    a.step_cycle();
  }
  a.go_to_cycle(1'500'000);
  Debugger b(ui_kernel(4, 11), {ui_add("p do_fork")});
  b.go_to_cycle(1'500'000);
  CHECK(a.state_hash() == b.state_hash());
}

TEST_CASE("Run to the end gives ksim run's cycles and trace hash", "[ui][travel]") {
  // README: `ksim run -q` prints cycles 3171761 and trace-hash dd42730f3f8afd4e.
  Debugger d(ui_kernel(1), {});
  d.go_to_cycle(1'000'000);
  d.step(10);
  d.run_to_end();
  REQUIRE(d.position().ended);
  CHECK(d.world().result().end == RunResult::End::poweroff);
  CHECK(d.world().result().cycles == 3171761);
  CHECK(d.world().hasher().hex() == "dd42730f3f8afd4e");
}

TEST_CASE("From the end of the run: back some steps, then to the end again, same hashes", "[ui][travel]") {
  Debugger d(ui_kernel(2, 4), {ui_add("p do_fork")});
  d.run_to_end();
  REQUIRE(d.position().ended);
  const std::string trace = d.world().hasher().hex();
  const uint64_t end_hash = d.state_hash(), end_steps = d.position().steps;
  REQUIRE(d.step_back(5));
  CHECK(d.position().steps == end_steps - 5);
  CHECK_FALSE(d.position().ended);
  d.step(2);
  CHECK(d.position().steps == end_steps - 3);
  d.run_to_end();
  CHECK(d.world().hasher().hex() == trace);
  CHECK(d.state_hash() == end_hash);
  // Probe operations are refused at the end (nothing can run after it).
  CHECK(d.probe_op({ProbeOp::Kind::add, "p vfs_read", 0}) == "the run has ended: go back in time to change probes");
}

TEST_CASE("A probe added at a step position is replayed before a nearby cycle it precedes", "[ui][travel]") {
  // The operation is made after S steps; the target cycle lies within the
  // CPUs' clock spread there, so only running tells which comes first.
  auto world_at = [](uint64_t c, uint64_t extra_steps, uint64_t target) {
    EventLog log;
    World w(ui_kernel(4, 2), log);
    RunLimits lim;
    lim.cycle = c;
    w.run(lim);
    RunLimits st;
    st.steps = w.machine().steps() + extra_steps;
    w.run(st);
    const uint64_t steps = w.machine().steps();
    uint64_t high = 0;
    for (int i = 0; i < 4; ++i) high = std::max(high, w.machine().cpu(i).cycle());
    REQUIRE(w.apply(ui_add("p vfs_read")).empty());
    RunLimits to;
    to.cycle = target ? target : high;
    w.run(to);
    return std::make_tuple(w.state_hash(), steps, high);
  };
  auto [h_probe, steps, high] = world_at(800'000, 200, 0);
  Debugger d(ui_kernel(4, 2), {});
  d.go_to_cycle(800'000);
  d.step(200);
  REQUIRE(d.position().steps == steps);
  REQUIRE(d.position().high == high);
  REQUIRE(d.probe_op(ui_add("p vfs_read")).empty());
  d.go_to_cycle(3'000'000);
  d.go_to_cycle(high);  // back: replayed from boot, the probe added on the way
  CHECK(d.state_hash() == h_probe);
  CHECK(d.log().mismatches() == 0);
}

TEST_CASE("Travel is exact with a scheduling quantum too", "[ui][travel]") {
  ui::WorldSpec spec = ui_kernel(4, 6);
  spec.config.quantum = 500;
  Debugger d(spec, {ui_add("p vfs_read")});
  d.go_to_cycle(600'000);
  d.step(50);
  const uint64_t h = d.state_hash(), steps = d.position().steps;
  d.go_to_cycle(2'000'000);
  const uint64_t h2 = d.state_hash();
  d.go_to_steps(steps);
  CHECK(d.state_hash() == h);
  d.go_to_cycle(2'000'000);
  CHECK(d.state_hash() == h2);
  CHECK(d.log().mismatches() == 0);
}

TEST_CASE("A probe script in the debugger: run to the end gives the trace hash of the same script run without it, "
          "and travel back and forth through its operations is exact",
          "[ui][travel][script]") {
  const std::string script =
      "@200000 p:pf do_fork\n@260000 r:ro sys_open ret=$retval\n@330000 disable pf\n@380000 enable pf\n"
      "@450000 -:ro\n@520000 kprobes-enabled 0\n@560000 kprobes-enabled 1\n";
  for (Isa isa : {Isa::rv64, Isa::x86_64}) {
    INFO(isa_name(isa));
    WorldSpec spec = ui_kernel(2, 3, isa);
    spec.script = script;
    spec.script_file = "t.probes";
    spec.script_cpu = 1;
    // The reference: machine, engine, session and ProbeOpQueue, as `ksim run --probe-script` builds them.
    std::string expect;
    uint64_t expect_cycles = 0;
    {
      Machine m(spec.config);
      m.load(*spec.image);
      TraceHasher h;
      m.events().add(&h);
      kprobes::Engine eng(m);
      eng.set_optimization(spec.optimize);  // as the debugger's World sets it
      kprobes::ProbeSession session(eng, nullptr);
      kprobes::ProbeOpQueue q(session, kprobes::events::parse_probe_script(script, "t.probes", eng.arch()), 1,
                              "t.probes");
      q.check();
      const RunResult r = q.run(m);
      REQUIRE(r.end == RunResult::End::poweroff);
      CHECK(q.performed() == 7);
      expect = h.hex();
      expect_cycles = r.cycles;
      m.events().remove(&h);
    }
    Debugger d(spec, {});
    d.go_to_cycle(300'000);
    const uint64_t at300 = d.state_hash();
    d.step(25);  // stepping across no operation
    d.go_to_cycle(420'000);
    d.go_to_cycle(300'000);  // back: replayed from boot, operations included
    CHECK(d.state_hash() == at300);
    d.run_to_end();
    REQUIRE(d.position().ended);
    CHECK(d.world().script()->performed() == 7);
    CHECK(d.world().result().cycles == expect_cycles);
    CHECK(d.world().hasher().hex() == expect);
    // Stepping across an operation's cycle performs it there too.
    Debugger e(spec, {});
    e.go_to_cycle(199'900);
    e.step(400);
    CHECK(e.world().script()->performed() == 1);
    e.run_to_end();
    CHECK(e.world().hasher().hex() == expect);
  }
}

TEST_CASE("A probe script in the debugger: checked after the --probe probes, and an operation waiting for its caller "
          "to come online does not carry a move past its target",
          "[ui][travel][script]") {
  // The script removes an event a --probe defined (ksim run accepts this).
  WorldSpec spec = ui_kernel(2, 0);
  spec.script = "@300000 -:foo\n";
  spec.script_file = "t.probes";
  Debugger d(spec, {ui_add("p:foo do_fork")});
  d.run_to_end();
  CHECK(d.world().script()->performed() == 1);
  // An operation at cycle 0: CPU 0 is not online then (the engine waits
  // for it); a move to cycle 500 stops at 500 all the same.
  WorldSpec early = ui_kernel(2, 0);
  early.script = "@0 p:pf do_fork\n";
  early.script_file = "t.probes";
  Debugger e(early, {});
  e.go_to_cycle(500);
  CHECK(e.here() == 500);
  CHECK(e.world().machine().now() < 600);
  CHECK(e.world().script()->performed() == 0);
  e.run_to_end();
  CHECK(e.world().script()->performed() == 1);
}

TEST_CASE("Back one step of the selected CPU: just before its latest step, which is the machine's next step",
          "[ui][travel]") {
  for (Isa isa : {Isa::rv64, Isa::x86_64}) {
    INFO(isa_name(isa));
    Debugger d(ui_kernel(4, 2, isa), {ui_add("p do_fork")});
    d.go_to_cycle(400'000);
    for (int cpu : {0, 3}) {
      REQUIRE(d.step_cpu(cpu));
      const uint64_t mine = d.world().machine().cpu(cpu).steps(), at = d.position().steps;
      const uint64_t hash_after = d.state_hash();
      REQUIRE(d.step_back_cpu(cpu));
      CHECK(d.world().machine().cpu(cpu).steps() == mine - 1);
      CHECK(d.position().steps < at);
      d.step(1);  // the machine's next step is that CPU's
      CHECK(d.world().machine().cpu(cpu).steps() == mine);
      // and forward to where it was: the same state
      d.go_to_steps(at);
      CHECK(d.state_hash() == hash_after);
    }
  }
}
