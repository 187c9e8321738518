// The kprobes engine on the guest kernel, both ISAs: hits counted exactly
// across CPUs and seeds, handler order and registers, the PC-change path,
// aggregates, enable/disable and the global knob, the list view, batch
// rollback and refusals. Kretprobes, jprobes, faults, reentry and races are
// in kprobes_engine_more_test.cpp.
#include <catch2/catch.hpp>

#include <map>

#include "cpu/cpu.hpp"
#include "support/kprobe_rig.hpp"

using namespace ksim;
using namespace ksim::kprobes;
using ksim::test::KprobeRig;
using ksim::test::expected_forks;
using ksim::test::kernel_image;
using ksim::test::run_until;


TEST_CASE("kprobe hits are counted exactly on 4 and 16 CPUs for 20 seeds", "[kprobes][engine][seeds]") {
  const Isa isa = GENERATE(Isa::rv64, Isa::x86_64);
  for (int cpus : {4, 16}) {
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      KprobeRig rig(kernel_image(isa), cpus, seed, StepMode::modern, cpus > 4 ? 100 : 1);
      Kprobe kp;
      kp.symbol_name = "do_fork";
      uint64_t pre = 0, post = 0;
      kp.pre_handler = [&](Kprobe&, Cpu&) { ++pre; return 0; };
      kp.post_handler = [&](Kprobe&, Cpu&, unsigned long) { ++post; };
      REQUIRE(rig.eng->register_kprobe(kp) == 0);
      RunResult r = rig.m.run();
      INFO(isa_name(isa) << " cpus " << cpus << " seed " << seed << ": " << r.reason);
      REQUIRE(rig.passed(r));
      CHECK(rig.printed("forks") == expected_forks(cpus));
      CHECK(static_cast<long>(pre) == expected_forks(cpus));
      CHECK(post == pre);
      CHECK(kp.hits == pre);
      CHECK(kp.nmissed == 0);
      rig.eng->unregister_kprobe(kp);
      CHECK(rig.text_diff().empty());
    }
  }
}

TEST_CASE("pre and post handlers run in order, per CPU, and see the registers at the probe", "[kprobes][engine]") {
  const Isa isa = GENERATE(Isa::rv64, Isa::x86_64);
  KprobeRig rig(kernel_image(isa), 4, 7);
  const uint64_t fn = rig.sym("do_fork");
  Kprobe kp;
  kp.symbol_name = "do_fork";
  std::map<int, std::string> seq;  // per CPU: "pP" pairs
  uint64_t bad_pc = 0, bad_arg = 0, bad_post_pc = 0, bad_sp = 0;
  std::map<int, uint64_t> sp_at_pre;
  const Arch& arch = rig.eng->arch();
  kp.pre_handler = [&](Kprobe& p, Cpu& c) {
    seq[c.id()] += 'p';
    if (c.pc() != fn || p.rec == nullptr) ++bad_pc;
    uint64_t flags = 0;
    // do_fork's first argument: clone flags, always with SIGCHLD (17) in
    // the low byte in this kernel's callers.
    if (!arch.arg(c, rig.m.bus(), 1, flags) || (flags & 0xff) != 17) ++bad_arg;
    sp_at_pre[c.id()] = arch.stack_pointer(c);
    return 0;
  };
  kp.post_handler = [&](Kprobe&, Cpu& c, unsigned long) {
    seq[c.id()] += 'P';
    const ProbePoint* pt = rig.eng->point_at(fn);
    if (!pt || c.pc() != fn + pt->insn.len) ++bad_post_pc;
    // The post handler sees the effect of the probed instruction; on both
    // ISAs do_fork starts by growing the stack or is an endbr64/nop: the
    // stack pointer never grows back.
    if (arch.stack_pointer(c) > sp_at_pre[c.id()]) ++bad_sp;
    // The control block says SSDONE while post handlers run.
    if (rig.eng->ctlblk(c.id()).status != KStatus::hit_ssdone) ++bad_post_pc;
  };
  REQUIRE(rig.eng->register_kprobe(kp) == 0);
  RunResult r = rig.m.run();
  REQUIRE(rig.passed(r));
  CHECK(bad_pc == 0);
  CHECK(bad_arg == 0);
  CHECK(bad_post_pc == 0);
  CHECK(bad_sp == 0);
  long total = 0;
  for (auto& [cpu, s] : seq) {
    INFO("cpu " << cpu);
    for (size_t i = 0; i < s.size(); ++i) CHECK(s[i] == (i % 2 ? 'P' : 'p'));
    total += static_cast<long>(s.size() / 2);
  }
  CHECK(total == expected_forks(4));
  CHECK(seq.size() == 4);  // every CPU forked
}

TEST_CASE("a pre_handler that changes the PC skips the step and the post handler", "[kprobes][engine]") {
  const Isa isa = GENERATE(Isa::rv64, Isa::x86_64);
  KprobeRig rig(ksim::test::bench_image(isa), 1);
  const uint64_t n = rig.read<uint64_t>(rig.sym("bench_calls"));
  const Arch& arch = rig.eng->arch();
  // Fault injection by hand: bench_target returns 1 without running.
  Kprobe kp;
  kp.symbol_name = "bench_target";
  uint64_t posts = 0;
  kp.pre_handler = [&](Kprobe&, Cpu& c) {
    uint64_t ret = 0;
    REQUIRE(arch.return_address(c, rig.m.bus(), ret));
    uint64_t sp = arch.stack_pointer(c);
    arch.set_retval(c, 1);
    c.set_pc(ret);
    c.set_gpr(arch.reg_index("sp"), arch.sp_after_return(sp));
    return 1;
  };
  kp.post_handler = [&](Kprobe&, Cpu&, unsigned long) { ++posts; };
  // A second probe inside the body proves the body never ran.
  const Symbol* s = rig.symbol("bench_target");
  REQUIRE(s);
  Kprobe inner;
  uint8_t b[16];
  REQUIRE(rig.eng->read_original(s->addr, b, sizeof b));
  REQUIRE(rig.eng->register_kprobe(kp) == 0);
  const uint64_t first_len = rig.eng->point_at(s->addr)->insn.len;
  inner.addr = s->addr + first_len;
  REQUIRE(rig.eng->register_kprobe(inner) == 0);
  RunResult r = rig.m.run();
  REQUIRE(r.end == RunResult::End::poweroff);
  CHECK(r.status == 0);
  CHECK(kp.hits == n);
  CHECK(posts == 0);
  CHECK(inner.hits == 0);
  CHECK(rig.read<uint64_t>(rig.sym("bench_result")) == n);  // n calls returning 1
  CHECK(rig.eng->ctlblk(0).status == KStatus::idle);
}

TEST_CASE("aggregate probes run in registration order; removing one leaves the others", "[kprobes][engine]") {
  const Isa isa = GENERATE(Isa::rv64, Isa::x86_64);
  KprobeRig rig(kernel_image(isa), 4, 3);
  std::string order;
  Kprobe a, b, c;
  for (Kprobe* k : {&a, &b, &c}) k->symbol_name = "vfs_read";
  a.pre_handler = [&](Kprobe&, Cpu&) { if (order.size() < 30) order += 'a'; return 0; };
  b.pre_handler = [&](Kprobe&, Cpu&) { if (order.size() < 30) order += 'b'; return 0; };
  c.pre_handler = [&](Kprobe&, Cpu&) { if (order.size() < 30) order += 'c'; return 0; };
  REQUIRE(rig.eng->register_kprobe(a) == 0);
  REQUIRE(rig.eng->register_kprobe(b) == 0);
  REQUIRE(rig.eng->register_kprobe(c) == 0);
  CHECK(rig.eng->points() == 1);  // one breakpoint, one slot
  RunLimits lim;
  lim.cycle = 1'500'000;
  REQUIRE(rig.m.run(lim).end == RunResult::End::paused);
  CHECK(order.substr(0, 6) == "abcabc");
  const uint64_t b_before = b.hits;
  CHECK(b_before > 0);
  rig.eng->unregister_kprobe(b);
  CHECK(rig.eng->point_at(rig.sym("vfs_read")) != nullptr);
  RunResult r = rig.m.run();
  REQUIRE(rig.passed(r));
  const long reads = rig.printed("reads");
  CHECK(static_cast<long>(a.hits) == reads);
  CHECK(static_cast<long>(c.hits) == reads);
  CHECK(b.hits == b_before);
  rig.eng->unregister_kprobe(a);
  rig.eng->unregister_kprobe(c);
  CHECK(rig.eng->points() == 0);
  CHECK(rig.text_diff().empty());
}

TEST_CASE("disable/enable and the global knob disarm without forgetting the probe's own state", "[kprobes][engine]") {
  const Isa isa = GENERATE(Isa::rv64, Isa::x86_64);
  KprobeRig rig(kernel_image(isa), 4, 5);
  Kprobe k1, k2;
  k1.symbol_name = "do_fork";
  k2.symbol_name = "sys_open";
  k2.flags = kFlagDisabled;  // registered disabled
  REQUIRE(rig.eng->register_kprobe(k1) == 0);
  REQUIRE(rig.eng->register_kprobe(k2) == 0);
  const uint64_t fork_addr = rig.sym("do_fork"), open_addr = rig.sym("sys_open");
  CHECK(rig.eng->point_at(open_addr)->armed == false);
  CHECK(rig.eng->list().find("sys_open+0x0  [DISABLED]") != std::string::npos);

  RunLimits lim;
  lim.cycle = 800'000;
  REQUIRE(rig.m.run(lim).end == RunResult::End::paused);
  CHECK(k1.hits > 0);
  CHECK(k2.hits == 0);
  // Disable k1: its text is the original again.
  REQUIRE(rig.eng->disable_kprobe(k1) == 0);
  CHECK(rig.text_diff(false).empty());
  CHECK(rig.eng->list().find("do_fork+0x0  [DISABLED]") != std::string::npos);
  uint64_t k1_at_disable = k1.hits;
  lim.cycle = 1'300'000;
  REQUIRE(rig.m.run(lim).end == RunResult::End::paused);
  // A disabled probe's handler never runs again, even for a CPU that had
  // already trapped on it (the lookup skips disabled records).
  CHECK(k1.hits == k1_at_disable);
  REQUIRE(rig.eng->enable_kprobe(k1) == 0);
  REQUIRE(rig.eng->enable_kprobe(k2) == 0);
  // Global knob off: everything disarmed, the probes' flags unchanged. As
  // in Linux, a CPU that already took the breakpoint and waits for its
  // lookup still finds the probe and runs its handler; nobody else does.
  uint64_t in_flight = 0;
  for (const auto& cb : rig.eng->ctlblks())
    if (cb.phase == Phase::lookup && cb.trap_addr == fork_addr) ++in_flight;
  rig.eng->set_enabled(false);
  CHECK(rig.text_diff(false).empty());
  CHECK((k1.flags & kFlagDisabled) == 0);
  CHECK(rig.eng->list().find("[DISABLED]") == std::string::npos);
  lim.cycle = 1'800'000;
  REQUIRE(rig.m.run(lim).end == RunResult::End::paused);
  const uint64_t k1_knob = k1.hits, k2_knob = k2.hits;
  CHECK(k1_knob == k1_at_disable + in_flight);
  // Knob back on: both armed and hitting.
  rig.eng->set_enabled(true);
  CHECK(rig.eng->point_at(fork_addr)->armed);
  CHECK(rig.eng->point_at(open_addr)->armed);
  RunResult r = rig.m.run();
  REQUIRE(rig.passed(r));
  CHECK(k1.hits > k1_knob);
  CHECK(k2.hits > k2_knob);
  CHECK(static_cast<long>(k1.hits) < rig.printed("forks"));
  // A probe registered while the knob is off stays disarmed until it is on.
  rig.eng->set_enabled(false);
  Kprobe k3;
  k3.symbol_name = "vfs_read";
  REQUIRE(rig.eng->register_kprobe(k3) == 0);
  CHECK(rig.eng->point_at(rig.sym("vfs_read"))->armed == false);
  rig.eng->set_enabled(true);
  CHECK(rig.eng->point_at(rig.sym("vfs_read"))->armed);
}

TEST_CASE("the list view has Linux's debugfs format", "[kprobes][engine]") {
  const Isa isa = GENERATE(Isa::rv64, Isa::x86_64);
  KprobeRig rig(kernel_image(isa), 2);
  Kprobe k;
  k.symbol_name = "do_fork";
  Kretprobe r;
  r.kp.symbol_name = "sys_open";
  Jprobe j;
  j.kp.symbol_name = "vfs_read";
  j.entry_symbol = "jprobe_vfs_read";
  REQUIRE(rig.eng->register_kprobe(k) == 0);
  REQUIRE(rig.eng->register_kretprobe(r) == 0);
  REQUIRE(rig.eng->register_jprobe(j) == 0);
  REQUIRE(rig.eng->disable_kprobe(j.kp) == 0);
  char want[256];
  std::snprintf(want, sizeof want, "%016llx  k  do_fork+0x0\n%016llx  r  sys_open+0x0\n%016llx  j  vfs_read+0x0  [DISABLED]\n",
                static_cast<unsigned long long>(rig.sym("do_fork")), static_cast<unsigned long long>(rig.sym("sys_open")),
                static_cast<unsigned long long>(rig.sym("vfs_read")));
  CHECK(rig.eng->list() == want);
}

TEST_CASE("register_kprobes rolls back the probes already registered when one fails", "[kprobes][engine]") {
  const Isa isa = GENERATE(Isa::rv64, Isa::x86_64);
  KprobeRig rig(kernel_image(isa), 1);
  Kprobe a, b, bad, d;
  a.symbol_name = "do_fork";
  b.symbol_name = "vfs_read";
  bad.symbol_name = "no_such_function";
  d.symbol_name = "sys_open";
  Kprobe* batch[] = {&a, &b, &bad, &d};
  CHECK(rig.eng->register_kprobes(batch) == -kENOENT);
  CHECK(rig.eng->last_error().find("no_such_function") != std::string::npos);
  CHECK(a.rec == nullptr);
  CHECK(b.rec == nullptr);
  CHECK(d.rec == nullptr);
  CHECK(rig.eng->points() == 0);
  CHECK(rig.text_diff().empty());
  Kprobe* good[] = {&a, &b, &d};
  CHECK(rig.eng->register_kprobes(good) == 0);
  CHECK(rig.eng->points() == 3);
  rig.eng->unregister_kprobes(good);
  CHECK(rig.eng->points() == 0);
  CHECK(rig.text_diff().empty());
}

TEST_CASE("unsafe or malformed probe locations are refused with a reason", "[kprobes][engine]") {
  const Isa isa = GENERATE(Isa::rv64, Isa::x86_64);
  KprobeRig rig(kernel_image(isa), 1);
  auto refuse = [&](Kprobe& k, int err, const char* why) {
    INFO(why);
    CHECK(rig.eng->register_kprobe(k) == -err);
    CHECK(rig.eng->last_error().find(why) != std::string::npos);
    CHECK(k.rec == nullptr);
  };
  Kprobe both;
  both.symbol_name = "do_fork";
  both.addr = rig.sym("do_fork");
  refuse(both, kEINVAL, "not both");
  Kprobe neither;
  refuse(neither, kEINVAL, "no probe location");
  Kprobe unknown;
  unknown.symbol_name = "do_fork_nope";
  refuse(unknown, kENOENT, "unknown symbol");
  Kprobe black;  // NOKPROBE_SYMBOL(die_trap)
  black.symbol_name = "die_trap";
  refuse(black, kEINVAL, "blacklisted");
  Kprobe ktext;  // .kprobes.text
  ktext.symbol_name = "kretprobe_trampoline";
  refuse(ktext, kEINVAL, "blacklisted");
  Kprobe past;
  past.symbol_name = "do_fork";
  past.offset = rig.symbol("do_fork")->size + 4;
  refuse(past, kEINVAL, "past the end");
  Kprobe data;
  data.addr = rig.sym("percpu_areas");
  refuse(data, kEINVAL, "not in kernel text");
  // Not an instruction boundary: one byte in (x86), two bytes into a
  // 32-bit instruction (RV64).
  const Symbol* f = rig.symbol("do_fork");
  uint8_t b[4];
  REQUIRE(rig.eng->read_original(f->addr, b, 4));
  Kprobe mid;
  mid.symbol_name = "do_fork";
  if (isa == Isa::x86_64) {
    mid.offset = 1;
    refuse(mid, kEILSEQ, "boundary");
  } else if ((b[0] & 3) == 3) {
    mid.offset = 2;
    refuse(mid, kEILSEQ, "boundary");
  }
  Kretprobe inside;
  inside.kp.symbol_name = "do_fork";
  // Past the entry: at the second instruction.
  Kprobe probe_first;
  probe_first.symbol_name = "do_fork";
  REQUIRE(rig.eng->register_kprobe(probe_first) == 0);
  inside.kp.offset = rig.eng->point_at(f->addr)->insn.len;
  rig.eng->unregister_kprobe(probe_first);
  if (isa == Isa::x86_64 && b[0] == 0xf3 && b[1] == 0x0f) {
    // do_fork+4 after an endbr64 counts as the entry; take the next one.
    Kprobe second;
    second.symbol_name = "do_fork";
    second.offset = 4;
    REQUIRE(rig.eng->register_kprobe(second) == 0);
    inside.kp.offset = 4 + rig.eng->point_at(f->addr + 4)->insn.len;
    rig.eng->unregister_kprobe(second);
  }
  CHECK(rig.eng->register_kretprobe(inside) == -kEINVAL);
  CHECK(rig.eng->last_error().find("function entry") != std::string::npos);
  Kretprobe big;
  big.kp.symbol_name = "do_fork";
  big.data_size = Kretprobe::kMaxDataSize + 1;
  CHECK(rig.eng->register_kretprobe(big) == -kE2BIG);
  // Registering the same object twice.
  Kprobe twice;
  twice.symbol_name = "do_fork";
  REQUIRE(rig.eng->register_kprobe(twice) == 0);
  CHECK(rig.eng->register_kprobe(twice) == -kEEXIST);
  rig.eng->unregister_kprobe(twice);
  CHECK(rig.eng->points() == 0);
  CHECK(rig.text_diff().empty());
}
