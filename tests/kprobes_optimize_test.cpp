// x86 jump optimization (docs/KPROBES_X86.md, "Jump optimization"): the
// safety check (Linux's can_optimize) on the guest kernel's own code, each
// of its refusals on the functions of workloads/kernel/arch/x86/
// opt_cases.S, the detour buffer's code, and the optimizer on the running
// kernel: hits through the jump equal the kernel's own counts, the
// optimizer's order (queued, RCU-tasks grace period, text_poke_bp), the
// knob, unoptimizing for a post handler or a probe inside the region, and
// the text byte-exact once the probes are gone.
#include <catch2/catch.hpp>

#include <map>

#include "cpu/cpu.hpp"
#include "cpu/x86/insn.hpp"
#include "kprobes/arch.hpp"
#include "kprobes/op_queue.hpp"
#include "support/kprobe_rig.hpp"

using namespace ksim;
using namespace ksim::kprobes;
using ksim::test::KprobeRig;
using ksim::test::expected_forks;
using ksim::test::kernel_image;
using ksim::test::run_until;

namespace {

// (Shared with kprobes_optimize_rv64_test.cpp.)
struct Counter : EventObserver {
  std::map<std::string, uint64_t> n;
  std::map<std::string, uint64_t> first;  // cycle of each kind's first event
  uint64_t traps_at = 0, addr = 0;
  void on_event(const Event& e) override {
    if (e.kind != EventKind::probe) return;
    if (!n[e.text]++) first[e.text] = e.cycle;
    if (e.text == "trap" && e.a == addr) ++traps_at;
  }
};

struct Check {
  int err;
  std::string why;
  OptRegion r;
};

Check check(KprobeRig& rig, const char* fn, uint64_t off) {
  const Symbol* s = rig.symbol(fn);
  REQUIRE(s);
  TextReader text = [&](uint64_t a, uint8_t* out, size_t n) { return rig.eng->read_original(a, out, n); };
  Check c;
  c.err = rig.eng->arch().can_optimize(text, s->addr + off, *s, c.r, c.why);
  return c;
}

}  // namespace

TEST_CASE("x86 optprobes: can_optimize accepts kernel functions and refuses each unsafe case with a reason",
          "[kprobes][optprobe]") {
  KprobeRig rig(kernel_image(Isa::x86_64), 1);
  // Every function of the kernel at its entry: accepted ones have a region
  // of whole instructions covering at least the jump's 5 bytes (at most one
  // instruction more); refused ones say one of the reasons below.
  size_t accepted = 0, refused = 0;
  for (const Symbol& s : rig.m.symbols().all()) {
    if (s.kind != Symbol::Kind::function || !s.size) continue;
    INFO(s.name);
    Check c = check(rig, s.name.c_str(), 0);
    if (c.err == 0) {
      ++accepted;
      CHECK(c.why.empty());
      CHECK(c.r.len >= 5);
      CHECK(c.r.len < 5 + 15);
      CHECK(c.r.insns >= 1);
    } else {
      ++refused;
      const bool known = c.why.find("indirect jump") != std::string::npos ||
                         c.why.find("inside the region") != std::string::npos ||
                         c.why.find("cannot run from the detour buffer") != std::string::npos ||
                         c.why.find("RIP-relative") != std::string::npos ||
                         c.why.find("fewer than 5 bytes") != std::string::npos ||
                         c.why.find("past the end") != std::string::npos;
      CHECK(known);
    }
  }
  CHECK(accepted >= 20);
  CHECK(refused >= 5);
  CHECK(check(rig, "do_fork", 0).err == 0);  // `mov r9, rsi; test rdi, imm32`
  struct Refusal {
    const char* fn;
    uint64_t off;
    int err;
    const char* says;
  };
  const Refusal refusals[] = {
      {"optcase_jump_table", 0, -kEOPNOTSUPP, "has an indirect jump"},
      {"optcase_branch_into", 1, -kEOPNOTSUPP, "inside the region"},
      {"optcase_call_in_region", 0, -kEOPNOTSUPP, "cannot run from the detour buffer"},
      {"optcase_leaf", 2, -kERANGE, "fewer than 5 bytes to the end"},
  };
  for (const Refusal& f : refusals) {
    INFO(f.fn << "+" << f.off);
    Check c = check(rig, f.fn, f.off);
    CHECK(c.err == f.err);
    CHECK(c.why.find(f.says) != std::string::npos);
    CHECK(c.why.rfind(std::string(f.fn) + "+", 0) == 0);  // it names the place
  }
  // The same function is fine where nothing lands in the region: the
  // branch's target is +4, before a probe at +4 (targets *inside* count).
  CHECK(check(rig, "optcase_branch_into", 4).err == 0);
}

TEST_CASE("x86 optprobes: the detour buffer calls the handler path, runs the region, jumps back",
          "[kprobes][optprobe]") {
  KprobeRig rig(kernel_image(Isa::x86_64), 1);
  Check c = check(rig, "do_fork", 0);
  REQUIRE(c.err == 0);
  const uint64_t addr = rig.sym("do_fork");
  const uint64_t buf = rig.eng->layout().slots_end - 64;
  std::vector<uint8_t> code;
  std::string why;
  unsigned copy_at = 0;
  REQUIRE(rig.eng->arch().build_detour(c.r, addr, buf, code, copy_at, why) == 0);
  CHECK(copy_at == 12);  // after push, load, pop
  // Decode it back, instruction by instruction.
  std::vector<std::string> text;
  for (size_t off = 0; off < code.size();) {
    x86::Insn in = x86::decode(code.data() + off, code.size() - off, buf + off);
    REQUIRE(in.len > 0);
    text.push_back(x86::disassemble(code.data() + off, code.size() - off, buf + off));
    off += in.len;
  }
  REQUIRE(text.size() == 3u + c.r.insns + 1u);
  CHECK(text[0] == "push r11");
  CHECK(text[1] == "mov r11, [0x0000000000110008]");
  CHECK(text[2] == "pop r11");
  // The region's instructions, byte for byte.
  CHECK(std::equal(c.r.bytes, c.r.bytes + c.r.len, code.begin() + 12));
  CHECK(code.size() == 12u + c.r.len + 5u);
  // The jump back lands after the region.
  char back[40];
  std::snprintf(back, sizeof back, "jmp 0x%016llX", static_cast<unsigned long long>(addr + c.r.len));
  CHECK(text.back() == back);
}

TEST_CASE("x86 optprobes: registered before the run, every do_fork hit goes through the jump (seeds, 4 and 16 CPUs)",
          "[kprobes][optprobe][seeds]") {
  for (uint64_t seed = 1; seed <= 13; ++seed) {
    const int cpus = seed > 10 ? 16 : 4;
    KprobeRig rig(kernel_image(Isa::x86_64, seed % 2 == 0), cpus, seed, StepMode::modern, cpus > 4 ? 100 : 1);
    rig.eng->set_optimization(true);
    Counter ev;
    ev.addr = rig.sym("do_fork");
    rig.m.events().add(&ev);
    Kprobe kp;
    kp.symbol_name = "do_fork";
    uint64_t pre = 0;
    kp.pre_handler = [&](Kprobe&, Cpu&) { ++pre; return 0; };
    REQUIRE(rig.eng->register_kprobe(kp) == 0);
    // No CPU runs yet: the grace period is over at once, the jump is in.
    const ProbePoint* p = rig.eng->point_at(ev.addr);
    REQUIRE(p);
    CHECK(p->opt == ProbePoint::Opt::optimized);
    CHECK(rig.eng->list().find("do_fork+0x0  [OPTIMIZED]") != std::string::npos);
    CHECK(rig.read<uint8_t>(ev.addr) == 0xe9);
    RunResult r = rig.m.run();
    INFO("seed " << seed << " cpus " << cpus << ": " << r.reason);
    REQUIRE(rig.passed(r));
    CHECK(rig.printed("forks") == expected_forks(cpus));
    CHECK(static_cast<long>(pre) == expected_forks(cpus));
    CHECK(rig.eng->stats().optimized_hits == pre);
    CHECK(ev.traps_at == 0);  // no int3 at do_fork: no trap
    rig.m.events().remove(&ev);
    rig.eng->unregister_kprobe(kp);
    rig.eng->finish_patching();
    CHECK(rig.text_diff().empty());
  }
}

TEST_CASE("x86 optprobes: a kretprobe on an optimized point returns through the jump's detour", "[kprobes][optprobe]") {
  KprobeRig rig(kernel_image(Isa::x86_64), 4, 4);
  rig.eng->set_optimization(true);
  Kretprobe rp;
  rp.kp.symbol_name = "do_fork";
  uint64_t bad = 0;
  rp.handler = [&](KretprobeInstance&, Cpu& cpu) {
    bad += static_cast<int64_t>(rig.eng->arch().retval(cpu)) <= 0;  // do_fork returns a pid
    return 0;
  };
  REQUIRE(rig.eng->register_kretprobe(rp) == 0);
  REQUIRE(rig.eng->point_at(rig.sym("do_fork"))->opt == ProbePoint::Opt::optimized);
  RunResult r = rig.m.run();
  REQUIRE(rig.passed(r));
  CHECK(static_cast<long>(rp.hits) == expected_forks(4));
  CHECK(rig.eng->stats().optimized_hits == static_cast<uint64_t>(expected_forks(4)));
  CHECK(bad == 0);
  rig.eng->unregister_kretprobe(rp);
  rig.eng->finish_patching();
  CHECK(rig.text_diff().empty());
}

TEST_CASE("x86 optprobes: registered during a run, queued hits use the detour, then the jump goes in after RCU-tasks",
          "[kprobes][optprobe]") {
  for (uint64_t seed : {1, 2, 3}) {
    KprobeRig rig(kernel_image(Isa::x86_64), 4, seed);
    rig.eng->set_optimization(true);
    ProbeSession session(*rig.eng, nullptr);
    ProbeOpQueue ops(session,
                     events::parse_probe_script("@300000 p:f do_fork\n@2000000 -:f\n", "t.probes", rig.eng->arch()),
                     1, "t.probes");
    ops.check();
    Counter ev;
    ev.addr = rig.sym("do_fork");
    rig.m.events().add(&ev);
    RunResult r = ops.run(rig.m);
    INFO("seed " << seed << ": " << r.reason);
    REQUIRE(rig.passed(r));
    // The optimizer's order: queued at registration, an RCU-tasks grace
    // period, then text_poke_bp of the jump, then optimized hits.
    REQUIRE(ev.n["optimize-queued"] == 1);
    REQUIRE(ev.n["tasks-gp-end"] >= 1);
    REQUIRE(ev.n["optimized"] == 1);
    CHECK(ev.first["optimize-queued"] < ev.first["tasks-gp-end"]);
    CHECK(ev.first["tasks-gp-end"] <= ev.first["optimize"]);
    CHECK(ev.first["optimize"] < ev.first["optimized"]);
    CHECK(ev.n["optimized-hit"] > 0);
    // (During text_poke_bp a CPU at its temporary int3 is sent to the
    // detour by emulating the new jmp: hits through the detour's handler
    // call may come before the last byte is in.)
    CHECK(ev.first["optimize"] <= ev.first["optimized-hit"]);
    // Every hit is one of: through the int3 before the jump (detour from the
    // int3, or the temporary int3 of text_poke_bp emulating the jump), or
    // through the jump.
    uint64_t hits = 0;
    for (const auto& sp : session.probes()) hits += sp->hits();
    CHECK(hits + rig.eng->stats().unhandled == ev.n["detour"] + ev.n["optimized-hit"] + ev.n["optimized-unhandled"]);
    // The removal unoptimized, then disarmed: the text is as the image has it.
    CHECK(ev.n["unoptimize"] == 1);
    rig.m.events().remove(&ev);
    rig.eng->finish_patching();
    CHECK(rig.text_diff().empty());
  }
}

TEST_CASE("x86 optprobes: the knob, a post handler and a probe inside the region unoptimize", "[kprobes][optprobe]") {
  SECTION("kprobes-optimization 0, then 1") {
    KprobeRig rig(kernel_image(Isa::x86_64), 4, 6);
    rig.eng->set_optimization(true);
    Kprobe kp;
    kp.symbol_name = "do_fork";
    REQUIRE(rig.eng->register_kprobe(kp) == 0);
    const ProbePoint* p = rig.eng->point_at(rig.sym("do_fork"));
    run_until(rig, [&] { return kp.hits >= 100; });
    rig.eng->set_optimization(false);
    CHECK(p->opt == ProbePoint::Opt::none);
    CHECK(rig.eng->list().find("[OPTIMIZED]") == std::string::npos);
    CHECK(rig.read<uint8_t>(rig.sym("do_fork")) == 0xcc);  // a plain kprobe again
    run_until(rig, [&] { return kp.hits >= 600; });
    rig.eng->set_optimization(true);
    CHECK(p->opt == ProbePoint::Opt::queued);  // the grace period and the jump come during the run
    RunResult r = rig.m.run();
    REQUIRE(rig.passed(r));
    CHECK(static_cast<long>(kp.hits) == expected_forks(4));
    CHECK(rig.eng->stats().unoptimized == 1);
    CHECK(rig.eng->stats().optimized == 2);
    rig.eng->unregister_kprobe(kp);
    rig.eng->finish_patching();
    CHECK(rig.text_diff().empty());
  }
  SECTION("a post handler joins the point") {
    KprobeRig rig(kernel_image(Isa::x86_64), 4, 7);
    rig.eng->set_optimization(true);
    Kprobe a, b;
    a.symbol_name = b.symbol_name = "do_fork";
    uint64_t post = 0;
    b.post_handler = [&](Kprobe&, Cpu&, unsigned long) { ++post; };
    REQUIRE(rig.eng->register_kprobe(a) == 0);
    run_until(rig, [&] { return a.hits >= 100; });
    REQUIRE(rig.eng->register_kprobe(b) == 0);
    CHECK(rig.eng->point_at(rig.sym("do_fork"))->opt == ProbePoint::Opt::none);
    RunResult r = rig.m.run();
    REQUIRE(rig.passed(r));
    CHECK(static_cast<long>(a.hits) == expected_forks(4));
    CHECK(post == b.hits);
    CHECK(a.hits == b.hits + rig.eng->stats().optimized_hits);
    rig.eng->unregister_kprobe(a);
    rig.eng->unregister_kprobe(b);
    rig.eng->finish_patching();
    CHECK(rig.text_diff().empty());
  }
  SECTION("a probe inside the region") {
    KprobeRig rig(kernel_image(Isa::x86_64), 4, 8);
    rig.eng->set_optimization(true);
    Kprobe a, b;
    a.symbol_name = b.symbol_name = "do_fork";
    b.offset = 3;  // `test rdi, imm32`, inside a's region [+0, +10)
    REQUIRE(rig.eng->register_kprobe(a) == 0);
    REQUIRE(rig.eng->point_at(rig.sym("do_fork"))->opt == ProbePoint::Opt::optimized);
    REQUIRE(rig.eng->register_kprobe(b) == 0);
    CHECK(rig.eng->point_at(rig.sym("do_fork"))->opt == ProbePoint::Opt::none);
    RunResult r = rig.m.run();
    REQUIRE(rig.passed(r));
    CHECK(static_cast<long>(a.hits) == expected_forks(4));
    CHECK(static_cast<long>(b.hits) == expected_forks(4));
    rig.eng->unregister_kprobe(a);
    rig.eng->unregister_kprobe(b);
    rig.eng->finish_patching();
    CHECK(rig.text_diff().empty());
  }
}

TEST_CASE("x86 optprobes: a pre_handler's change of the PC is ignored on an optimized probe", "[kprobes][optprobe]") {
  KprobeRig rig(kernel_image(Isa::x86_64), 4, 9);
  rig.eng->set_optimization(true);
  Kprobe kp;
  kp.symbol_name = "do_fork";
  const uint64_t elsewhere = rig.sym("optcase_leaf");
  kp.pre_handler = [&](Kprobe&, Cpu& cpu) {
    cpu.set_pc(elsewhere);
    return 1;
  };
  REQUIRE(rig.eng->register_kprobe(kp) == 0);
  REQUIRE(rig.eng->point_at(rig.sym("do_fork"))->opt == ProbePoint::Opt::optimized);
  RunResult r = rig.m.run();
  REQUIRE(rig.passed(r));  // every fork ran do_fork as written
  CHECK(rig.printed("forks") == expected_forks(4));
  CHECK(static_cast<long>(kp.hits) == expected_forks(4));
}
