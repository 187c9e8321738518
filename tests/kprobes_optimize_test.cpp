// Jump optimization on both ISAs (docs/KPROBES_X86.md and KPROBES_RV64.md,
// "Jump optimization"). x86: the
// safety check (Linux's can_optimize) on the guest kernel's own code, each
// of its refusals on the functions of workloads/kernel/arch/x86/
// opt_cases.S, the detour buffer's code, and the optimizer on the running
// kernel: hits through the jump equal the kernel's own counts, the
// optimizer's order (queued, RCU-tasks grace period, text_poke_bp), the
// knob, unoptimizing for a post handler or a probe inside the region, and
// the text byte-exact once the probes are gone. RV64: the same safety check
// with its register liveness, each refusal on workloads/kernel/arch/rv64/
// opt_cases.S, the detour buffer's code, and the two-step removal of the
// jump.
#include <catch2/catch.hpp>

#include <functional>
#include <map>

#include "cpu/cpu.hpp"
#include "cpu/timing.hpp"
#include "cpu/rv64/disasm.hpp"
#include "cpu/rv64/insn.hpp"
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

struct Counter : EventObserver {
  std::map<std::string, uint64_t> n;
  std::map<std::string, uint64_t> first;  // cycle of each kind's first event
  uint64_t traps_at = 0, addr = 0;
  uint64_t stops_installing = 0;  // stop_machine steps between `optimize` and `optimized`
  void on_event(const Event& e) override {
    if (e.kind != EventKind::probe) return;
    if (e.text == "stop_machine" && n["optimize"] && !n["optimized"]) ++stops_installing;
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

// can_optimize at the entry of every function of the kernel: `accepted`
// checks an accepted region; a refusal must give one of `reasons`.
struct Sweep {
  size_t accepted = 0, refused = 0;
};
Sweep sweep_functions(KprobeRig& rig, const std::function<void(const Check&)>& accepted,
                      std::initializer_list<const char*> reasons) {
  Sweep w;
  for (const Symbol& s : rig.m.symbols().all()) {
    if (s.kind != Symbol::Kind::function || !s.size) continue;
    INFO(s.name);
    Check c = check(rig, s.name.c_str(), 0);
    if (c.err == 0) {
      ++w.accepted;
      CHECK(c.why.empty());
      accepted(c);
    } else {
      ++w.refused;
      bool known = false;
      for (const char* r : reasons) known |= c.why.find(r) != std::string::npos;
      CHECK(known);
    }
  }
  return w;
}

// Each refusal: the error, a reason that says why and names the place.
struct Refusal {
  const char* fn;
  uint64_t off;
  int err;
  const char* says;
};
void check_refusals(KprobeRig& rig, std::initializer_list<Refusal> refusals) {
  for (const Refusal& f : refusals) {
    INFO(f.fn << "+" << f.off);
    Check c = check(rig, f.fn, f.off);
    CHECK(c.err == f.err);
    CHECK(c.why.find(f.says) != std::string::npos);
    CHECK(c.why.rfind(std::string(f.fn) + "+", 0) == 0);  // it names the place
  }
}

// A kernel run with jump optimization on and a probe script performed by
// CPU 1, its probe events counted at `sym`.
struct ScriptRun {
  KprobeRig rig;
  ProbeSession session;
  ProbeOpQueue ops;
  Counter ev;
  ScriptRun(Isa isa, uint64_t seed, const std::string& script, const char* sym = "do_fork")
      : rig(kernel_image(isa), 4, seed),
        session(*rig.eng, nullptr),
        ops(session, events::parse_probe_script(script, "t.probes", rig.eng->arch()), 1, "t.probes") {
    rig.eng->set_optimization(true);
    ops.check();
    ev.addr = rig.sym(sym);
    rig.m.events().add(&ev);
  }
  ~ScriptRun() { rig.m.events().remove(&ev); }
  RunResult run() { return ops.run(rig.m); }
  // Every hit is one of: through the breakpoint before the jump (detour
  // from the breakpoint, or x86's temporary int3 of text_poke_bp emulating
  // the jump), through the jump, or stepped once the jump is out (after
  // the jump is out and before the breakpoint goes, as a plain kprobe's).
  void check_hits_accounted() {
    uint64_t hits = 0;
    for (const auto& sp : session.probes()) hits += sp->hits();
    CHECK(hits + rig.eng->stats().unhandled ==
          ev.n["detour"] + ev.n["optimized-hit"] + ev.n["optimized-unhandled"] + ev.n["KPROBE_HIT_SS"]);
    if (ev.n["KPROBE_HIT_SS"]) CHECK(ev.first["KPROBE_HIT_SS"] > ev.first["unoptimize"]);
  }
  // The optimizer's order during the run: queued at registration, its
  // RCU-tasks grace period, the jump written, then hits through it.
  void check_install_order() {
    REQUIRE(ev.n["optimize-queued"] == 1);
    REQUIRE(ev.n["tasks-gp-end"] >= 1);
    REQUIRE(ev.n["optimized"] == 1);
    CHECK(ev.first["optimize-queued"] < ev.first["tasks-gp-end"]);
    CHECK(ev.first["tasks-gp-end"] <= ev.first["optimize"]);
    CHECK(ev.first["optimize"] < ev.first["optimized"]);
    CHECK(ev.n["optimized-hit"] > 0);
  }
  // Every probe gone and the patching finished: the text as the image has it.
  bool text_restored() {
    for (const auto& sp : session.probes())
      if (!sp->removed) session.remove(*sp);
    rig.eng->finish_patching();
    return rig.text_diff().empty();
  }
};

// do_fork's detour buffer as the arch builds it for the last cell.
struct ForkDetour {
  Check c;
  uint64_t addr = 0, buf = 0;
  std::vector<uint8_t> code;
  unsigned copy_at = 0;
};
ForkDetour fork_detour(KprobeRig& rig) {
  ForkDetour d;
  d.c = check(rig, "do_fork", 0);
  REQUIRE(d.c.err == 0);
  d.addr = rig.sym("do_fork");
  d.buf = rig.eng->layout().slots_end - 64;
  std::string why;
  REQUIRE(rig.eng->arch().build_detour(d.c.r, d.addr, d.buf, d.code, d.copy_at, why) == 0);
  return d;
}

// The function's instructions, as objdump writes them.
std::vector<std::string> disassembly(KprobeRig& rig, const char* fn) {
  const Symbol* s = rig.symbol(fn);
  std::vector<std::string> out;
  for (uint64_t pc = s->addr; pc < s->addr + s->size;) {
    const auto lo = rig.read<uint16_t>(pc), hi = rig.read<uint16_t>(pc + 2);
    const rv64::Insn in = rv64::decode(lo, hi);
    out.push_back(rv64::disassemble(in, pc));
    pc += in.len;
  }
  return out;
}

}  // namespace

TEST_CASE("x86 optprobes: can_optimize accepts kernel functions and refuses each unsafe case with a reason",
          "[kprobes][optprobe]") {
  KprobeRig rig(kernel_image(Isa::x86_64), 1);
  // Every function of the kernel at its entry: accepted ones have a region
  // of whole instructions covering at least the jump's 5 bytes (at most one
  // instruction more); refused ones say one of the reasons below.
  const Sweep w = sweep_functions(
      rig,
      [](const Check& c) {
        CHECK(c.r.len >= 5);
        CHECK(c.r.len < 5 + 15);
        CHECK(c.r.insns >= 1);
      },
      {"indirect jump", "inside the region", "cannot run from the detour buffer", "RIP-relative",
       "fewer than 5 bytes", "past the end"});
  CHECK(w.accepted >= 20);
  CHECK(w.refused >= 5);
  CHECK(check(rig, "do_fork", 0).err == 0);  // `mov r9, rsi; test rdi, imm32`
  check_refusals(rig, {
                         {"optcase_jump_table", 0, -kEOPNOTSUPP, "has an indirect jump"},
                         {"optcase_branch_into", 1, -kEOPNOTSUPP, "inside the region"},
                         {"optcase_call_in_region", 0, -kEOPNOTSUPP, "cannot run from the detour buffer"},
                         {"optcase_leaf", 2, -kERANGE, "fewer than 5 bytes to the end"},
                     });
  // The same function is fine where nothing lands in the region: the
  // branch's target is +4, before a probe at +4 (targets *inside* count).
  CHECK(check(rig, "optcase_branch_into", 4).err == 0);
}

TEST_CASE("x86 optprobes: the detour buffer calls the handler path, runs the region, jumps back",
          "[kprobes][optprobe]") {
  KprobeRig rig(kernel_image(Isa::x86_64), 1);
  const ForkDetour d = fork_detour(rig);
  const Check& c = d.c;
  const uint64_t addr = d.addr, buf = d.buf;
  const std::vector<uint8_t>& code = d.code;
  const unsigned copy_at = d.copy_at;
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

TEST_CASE("optprobes, both ISAs: registered before the run, every do_fork hit goes through the jump (20 seeds, 4 and 16 "
          "CPUs, both kernels)",
          "[kprobes][optprobe][seeds]") {
  for (Isa isa : {Isa::x86_64, Isa::rv64}) {
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      const int cpus = seed > 16 ? 16 : 4;
      KprobeRig rig(kernel_image(isa, seed % 2 == 0), cpus, seed, StepMode::modern, cpus > 4 ? 100 : 1);
      rig.eng->set_optimization(true);
      Counter ev;
      ev.addr = rig.sym("do_fork");
      rig.m.events().add(&ev);
      Kprobe kp;
      kp.symbol_name = "do_fork";
      uint64_t pre = 0, bad_pc = 0;
      kp.pre_handler = [&](Kprobe&, Cpu& cpu) {
        ++pre;
        bad_pc += cpu.pc() != ev.addr;  // the handlers see the probed address
        return 0;
      };
      REQUIRE(rig.eng->register_kprobe(kp) == 0);
      // No CPU runs yet: the grace period is over at once, the jump is in.
      const ProbePoint* p = rig.eng->point_at(ev.addr);
      REQUIRE(p);
      CHECK(p->opt == ProbePoint::Opt::optimized);
      CHECK(rig.eng->list().find("do_fork+0x0  [OPTIMIZED]") != std::string::npos);
      if (isa == Isa::x86_64)
        CHECK(rig.read<uint8_t>(ev.addr) == 0xe9);  // jmp rel32
      else
        CHECK((rig.read<uint32_t>(ev.addr) & 0x7f) == 0x17);  // auipc
      RunResult r = rig.m.run();
      INFO(isa_name(isa) << " seed " << seed << " cpus " << cpus << ": " << r.reason);
      REQUIRE(rig.passed(r));
      CHECK(rig.printed("forks") == expected_forks(cpus));
      CHECK(static_cast<long>(pre) == expected_forks(cpus));
      CHECK(bad_pc == 0);
      CHECK(rig.eng->stats().optimized_hits == pre);
      CHECK(ev.traps_at == 0);  // no breakpoint at do_fork: no trap
      rig.m.events().remove(&ev);
      rig.eng->unregister_kprobe(kp);
      rig.eng->finish_patching();
      CHECK(rig.text_diff().empty());
    }
  }
}

TEST_CASE("optprobes, both ISAs: a kretprobe on an optimized point returns through the jump's detour",
          "[kprobes][optprobe]") {
  for (Isa isa : {Isa::x86_64, Isa::rv64}) {
    INFO(isa_name(isa));
    KprobeRig rig(kernel_image(isa), 4, 4);
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
}

TEST_CASE("x86 optprobes: registered during a run, queued hits use the detour, then the jump goes in after RCU-tasks",
          "[kprobes][optprobe]") {
  for (uint64_t seed : {1, 2, 3}) {
    ScriptRun sr(Isa::x86_64, seed, "@300000 p:f do_fork\n@2000000 -:f\n");
    auto& rig = sr.rig;
    auto& ev = sr.ev;
    RunResult r = sr.run();
    INFO("seed " << seed << ": " << r.reason);
    REQUIRE(rig.passed(r));
    sr.check_install_order();  // (x86: the jump by text_poke_bp)
    // (During text_poke_bp a CPU at its temporary int3 is sent to the
    // detour by emulating the new jmp: hits through the detour's handler
    // call may come before the last byte is in.)
    CHECK(ev.first["optimize"] <= ev.first["optimized-hit"]);
    sr.check_hits_accounted();
    // The removal unoptimized, then disarmed: the text is as the image has it.
    CHECK(ev.n["unoptimize"] == 1);
    CHECK(sr.text_restored());
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

// The detour's `push %r11` is the instruction right before its port load,
// so the engine takes the pushed copy from r11 instead of reading the
// stack (X86Arch::detour_enter): every hit, with interrupts landing
// between the two on 4 CPUs, must show the handlers an rsp without the
// push and an r11 equal to the copy just below it.
TEST_CASE("x86 optprobes: the handlers see rsp without the detour's push and r11 equal to the pushed copy",
          "[kprobes][optprobe]") {
  for (uint64_t seed : {3, 11}) {
    KprobeRig rig(kernel_image(Isa::x86_64), 4, seed);
    rig.eng->set_optimization(true);
    Kprobe kp;
    kp.symbol_name = "do_fork";
    uint64_t seen = 0, differ = 0;
    kp.pre_handler = [&](Kprobe&, Cpu& cpu) {
      uint64_t slot = 0;
      REQUIRE(rig.m.bus().read_bytes(cpu.gpr(4) - 8, &slot, 8));
      ++seen;
      differ += slot != cpu.gpr(11);
      return 0;
    };
    REQUIRE(rig.eng->register_kprobe(kp) == 0);
    REQUIRE(rig.eng->point_at(rig.sym("do_fork"))->opt == ProbePoint::Opt::optimized);
    REQUIRE(rig.passed(rig.m.run()));
    CHECK(seen == static_cast<uint64_t>(expected_forks(4)));
    CHECK(rig.eng->stats().optimized_hits == seen);
    CHECK(differ == 0);
  }
}

// --- RV64 (docs/KPROBES_RV64.md, "Jump optimization") ---------------------------

TEST_CASE("rv64 optprobes: can_optimize accepts kernel functions, finds a dead register and refuses each unsafe case",
          "[kprobes][optprobe]") {
  KprobeRig rig(kernel_image(Isa::rv64), 1);
  const Sweep w = sweep_functions(
      rig,
      [](const Check& c) {
        CHECK(c.r.len >= 8);
        CHECK(c.r.len <= 10);  // one 4-byte instruction past the 8 at most
        // The jump's register is a temporary or an argument register.
        const bool t_or_a = (c.r.scratch >= 5 && c.r.scratch <= 7) || (c.r.scratch >= 10 && c.r.scratch <= 17) ||
                            (c.r.scratch >= 28 && c.r.scratch <= 31);
        CHECK(t_or_a);
      },
      {"indirect jump", "inside the region", "cannot run from the detour buffer", "no register is free",
       "fewer than 8 bytes", "past the end", "branches out of"});
  CHECK(w.accepted >= 20);
  CHECK(w.refused >= 5);
  // do_fork: `addi sp; sd s0; mv a5, a0; addi s0` (8 bytes of compressed
  // instructions); it never names t0, so t0, the first candidate, is free.
  Check fork = check(rig, "do_fork", 0);
  REQUIRE(fork.err == 0);
  CHECK(fork.r.len == 8);
  CHECK(fork.r.insns == 4);
  CHECK(fork.r.scratch == 5);
  for (const std::string& line : disassembly(rig, "do_fork")) CHECK(line.find("t0") == std::string::npos);
  check_refusals(rig, {
                         {"optcase_jump_table", 0, -kEOPNOTSUPP, "has an indirect jump"},
                         {"optcase_branch_into", 0, -kEOPNOTSUPP, "inside the region"},
                         {"optcase_call_in_region", 4, -kEOPNOTSUPP, "cannot run from the detour buffer"},
                         {"optcase_no_free_reg", 0, -kEBUSY, "no register is free"},
                         {"optcase_leaf", 8, -kERANGE, "fewer than 8 bytes to the end"},
                     });
  // Where nothing lands inside: the bnez's target +4 is the region's start.
  CHECK(check(rig, "optcase_branch_into", 4).err == 0);
  // The call's caller-saved clobber makes the registers free again before
  // it: at optcase_call_in_region+0 the region is `addi sp; sd ra`, and t0
  // is dead (the jal writes it, for the ABI, before anyone reads it).
  Check before_call = check(rig, "optcase_call_in_region", 0);
  CHECK(before_call.err == 0);
  CHECK(before_call.r.scratch == 5);
}

TEST_CASE("rv64 optprobes: the detour buffer loads from the optimizer port, runs the region, jumps back",
          "[kprobes][optprobe]") {
  KprobeRig rig(kernel_image(Isa::rv64), 1);
  const ForkDetour d = fork_detour(rig);
  const Check& c = d.c;
  const uint64_t addr = d.addr, buf = d.buf;
  const std::vector<uint8_t>& code = d.code;
  const unsigned copy_at = d.copy_at;
  CHECK(copy_at == 8);
  REQUIRE(code.size() == 8u + c.r.len + 8u);
  auto insn_at = [&](size_t off) {
    uint16_t lo = static_cast<uint16_t>(code[off] | code[off + 1] << 8);
    uint16_t hi = off + 3 < code.size() ? static_cast<uint16_t>(code[off + 2] | code[off + 3] << 8) : 0;
    return rv64::decode(lo, hi);
  };
  const rv64::Insn lui = insn_at(0), ld = insn_at(4);
  CHECK(rv64::disassemble(lui, buf) == "lui\tt0,0x110");
  CHECK(rv64::disassemble(ld, buf + 4) == "ld\tt0,8(t0)");  // 0x110008: the optimizer port
  CHECK(std::equal(c.r.bytes, c.r.bytes + c.r.len, code.begin() + 8));
  // auipc t0, hi; jalr x0, lo(t0): back to addr + len.
  const size_t back = 8 + c.r.len;
  const rv64::Insn auipc = insn_at(back), jalr = insn_at(back + 4);
  REQUIRE(auipc.op == rv64::Op::auipc);
  REQUIRE(jalr.op == rv64::Op::jalr);
  CHECK(auipc.rd == 5);
  CHECK(jalr.rd == 0);
  CHECK(jalr.rs1 == 5);
  const uint64_t target = buf + back + static_cast<uint64_t>(static_cast<int64_t>(auipc.imm)) +
                          static_cast<uint64_t>(static_cast<int64_t>(jalr.imm));
  CHECK(target == addr + c.r.len);
  // The jump at the probe point, the same way to the buffer.
  std::vector<uint8_t> jump;
  REQUIRE(rig.eng->arch().encode_detour_jump(c.r, addr, buf, jump));
  REQUIRE(jump.size() == 8u);
  const rv64::Insn j0 = rv64::decode(static_cast<uint16_t>(jump[0] | jump[1] << 8),
                                     static_cast<uint16_t>(jump[2] | jump[3] << 8));
  const rv64::Insn j1 = rv64::decode(static_cast<uint16_t>(jump[4] | jump[5] << 8),
                                     static_cast<uint16_t>(jump[6] | jump[7] << 8));
  CHECK(addr + static_cast<uint64_t>(static_cast<int64_t>(j0.imm)) + static_cast<uint64_t>(static_cast<int64_t>(j1.imm)) ==
        buf);
}

TEST_CASE("rv64 optprobes: during a run the jump goes in under stop_machine and out in two steps",
          "[kprobes][optprobe]") {
  for (uint64_t seed : {1, 2, 3}) {
    ScriptRun sr(Isa::rv64, seed, "@300000 p:f do_fork\n@1500000 -:f\n");
    auto& rig = sr.rig;
    auto& ev = sr.ev;
    RunResult r = sr.run();
    INFO("seed " << seed << ": " << r.reason);
    REQUIRE(rig.passed(r));
    // In: queued, RCU-tasks, the jump written by stop_machine, hits through it.
    sr.check_install_order();
    CHECK(ev.stops_installing >= 4 * 4);  // PREPARE..EXIT on each of 4 CPUs
    CHECK(ev.first["optimized"] <= ev.first["optimized-hit"]);
    // Out: the ebreak over the auipc, an RCU-tasks grace period, the rest.
    REQUIRE(ev.n["unoptimize"] == 1);
    REQUIRE(ev.n["unoptimize-rest"] == 1);
    CHECK(ev.first["unoptimize"] < ev.first["unoptimize-rest"]);
    sr.check_hits_accounted();
    CHECK(sr.text_restored());
  }
}

TEST_CASE("optprobes, both ISAs: the optimizer runs OPTIMIZE_DELAY after the first queued point and takes the "
          "points queued by then through one RCU-tasks grace period",
          "[kprobes][optprobe]") {
  for (Isa isa : {Isa::x86_64, Isa::rv64}) {
    INFO(isa_name(isa));
    KprobeRig rig(kernel_image(isa), 4, 2);
    rig.eng->set_optimization(true);
    ProbeSession session(*rig.eng, nullptr);
    ProbeOpQueue ops(session,
                     events::parse_probe_script("@300000 p:a do_fork\n@310000 p:b counter_add\n", "t.probes",
                                                rig.eng->arch()),
                     1, "t.probes");
    ops.check();
    struct Optimizer : EventObserver {
      std::vector<std::pair<uint64_t, uint64_t>> runs;  // (cycle, batch size)
      uint64_t queued = 0, optimized = 0;
      void on_event(const Event& e) override {
        if (e.kind != EventKind::probe) return;
        if (e.text == "optimizer") runs.emplace_back(e.cycle, e.b);
        if (e.text == "optimize-queued" && !queued) queued = e.cycle;
        optimized += e.text == "optimized";
      }
    } ev;
    rig.m.events().add(&ev);
    RunResult r = ops.run(rig.m);
    REQUIRE(rig.passed(r));
    REQUIRE(ev.runs.size() == 1);
    CHECK(ev.runs[0].second == 2);  // both points, one grace period
    CHECK(ev.runs[0].first >= ev.queued + timing::kOptimizeDelayCycles);
    CHECK(ev.optimized == 2);
    rig.m.events().remove(&ev);
    for (const auto& sp : session.probes()) session.remove(*sp);
    rig.eng->finish_patching();
    CHECK(rig.text_diff().empty());
  }
}

TEST_CASE("rv64 optprobes: a probe registered inside an optimized region is armed once the jump is out; with instant "
          "patching too the jump comes out in two steps",
          "[kprobes][optprobe]") {
  for (const char* patching : {"patch_text", "instant"}) {
    for (uint64_t seed : {1, 2, 3, 4}) {
      INFO(patching << " seed " << seed);
      // The outer point is optimized (OPTIMIZE_DELAY, then its grace
      // period); the inner one lands on the jump's jalr.
      ScriptRun sr(Isa::rv64, seed, "@200000 p:outer fib_recursive\n@900000 p:inner fib_recursive+4\n",
                   "fib_recursive");
      kprobes::Patching mode;
      REQUIRE(kprobes::parse_patching(patching, mode));
      sr.rig.eng->set_patching(mode);
      RunResult r = sr.run();
      REQUIRE(sr.rig.passed(r));  // the kernel's own fib checks hold
      auto& ev = sr.ev;
      REQUIRE(ev.n["optimized"] >= 1);
      CHECK(ev.n["unoptimize"] == 1);
      CHECK(ev.n["unoptimize-rest"] == 1);
      CHECK(ev.first["unoptimize"] < ev.first["unoptimize-rest"]);
      // Both probes saw every call once the inner one was in.
      uint64_t outer = 0, inner = 0;
      for (const auto& sp : sr.session.probes()) (sp->spec.event == "outer" ? outer : inner) = sp->hits();
      CHECK(inner > 0);
      CHECK(outer > inner);
      CHECK(sr.text_restored());
    }
  }
}

TEST_CASE("optprobes, both ISAs: the knob turned off and at once on again: the point is optimized again once the jump "
          "is out",
          "[kprobes][optprobe]") {
  for (Isa isa : {Isa::x86_64, Isa::rv64}) {
    INFO(isa_name(isa));
    ScriptRun sr(isa, 5, "@300000 p:f do_fork\n@900000 kprobes-optimization 0\n@900010 kprobes-optimization 1\n");
    RunResult r = sr.run();
    REQUIRE(sr.rig.passed(r));
    CHECK(sr.ev.n["unoptimize"] == 1);
    CHECK(sr.ev.n["optimized"] == 2);  // before the knob, and again after it
    CHECK(sr.rig.eng->point_at(sr.ev.addr)->opt == ProbePoint::Opt::optimized);
    CHECK(sr.text_restored());
  }
}

// docs/CODE_MODEL.md: the kprobes engine serialises an x86 CPU when it
// hands it back (the IRET of the int3 handler). Here a CPU traps on a
// plain kprobe and, while its hit waits for its lookup, another CPU turns
// jump optimization on: the point is queued and its detour buffer written
// after the first CPU's trap entry; the hit then goes on in that buffer,
// which the CPU must fetch as memory holds it, not as its stale view does.
TEST_CASE("x86 optprobes: a CPU sent into a detour buffer written while its hit was handled fetches the buffer's "
          "new bytes",
          "[kprobes][optprobe][codemodel]") {
  KprobeRig rig(kernel_image(Isa::x86_64), 4, 3);
  // First an optimized do_fork, so that CPUs have run code in the detour
  // area (only a page some CPU ran code from can be seen stale), then the
  // knob off and a plain kprobe on the hottest function.
  rig.eng->set_optimization(true);
  Kprobe fork, kp;
  fork.symbol_name = "do_fork";
  kp.symbol_name = "fib_recursive";
  REQUIRE(rig.eng->register_kprobe(fork) == 0);
  rig.m.run(RunLimits{300'000});
  REQUIRE(rig.eng->stats().optimized_hits > 0);
  rig.eng->begin_op(0);
  rig.eng->set_optimization(false);
  REQUIRE(rig.eng->register_kprobe(kp) == 0);
  rig.eng->end_op();
  rig.m.run(RunLimits{400'000});
  // At a CPU's next breakpoint trap on it (its trap entry serialised it),
  // the CPU furthest ahead turns optimization on: the buffer is written
  // at that CPU's clock, after the trap.
  struct Turn : EventObserver {
    KprobeRig* rig = nullptr;
    int hit_cpu = -1, caller = -1;
    uint64_t trap_cycle = 0, caller_cycle = 0, lo = 0, hi = 0, stale = 0, detour = 0;
    void on_event(const Event& e) override {
      if (e.kind == EventKind::stale_fetch && e.cpu == hit_cpu && e.a >= lo && e.a < hi) ++stale;
      if (e.kind != EventKind::probe) return;
      if (e.text == "detour" && e.cpu == hit_cpu) ++detour;
      if (e.text != "trap" || e.a != rig->sym("fib_recursive") || hit_cpu >= 0) return;
      hit_cpu = e.cpu;
      trap_cycle = e.cycle;
      caller = hit_cpu == 0 ? 1 : 0;
      for (int c = 0; c < 4; ++c)
        if (c != hit_cpu && rig->m.cpu(c).cycle() > rig->m.cpu(caller).cycle()) caller = c;
      caller_cycle = rig->m.cpu(caller).cycle();
      rig->eng->begin_op(caller);
      rig->eng->set_optimization(true);
      rig->eng->end_op();
      const ProbePoint* p = rig->eng->point_at(rig->sym("fib_recursive"));
      lo = p->detour;
      hi = p->detour + 64;
    }
  } w;
  w.rig = &rig;
  rig.m.events().add(&w);
  rig.m.run(RunLimits{600'000});
  rig.m.events().remove(&w);
  REQUIRE(w.hit_cpu >= 0);
  INFO("cpu " << w.hit_cpu << " trapped at " << w.trap_cycle << "; cpu " << w.caller << " wrote the buffer at "
              << rig.m.cpu(w.caller).cycle());
  REQUIRE(w.lo != 0);
  CHECK(w.detour >= 1);  // the hit went on in the buffer
  CHECK(w.stale == 0);   // with its new bytes
}

TEST_CASE("x86 optprobes: unoptimized through text_poke_bp, the int3 written last is the probe's: hits on it before "
          "the last sync are kprobe hits, not the poke handler's",
          "[kprobes][optprobe][patching]") {
  KprobeRig rig(kernel_image(Isa::x86_64), 4, 5);
  rig.eng->set_optimization(true);
  Kprobe kp;
  kp.symbol_name = "fib_recursive";  // the hottest function: CPUs reach it within the window
  REQUIRE(rig.eng->register_kprobe(kp) == 0);
  rig.m.run(RunLimits{300'000});
  const uint64_t addr = rig.sym("fib_recursive");
  REQUIRE(rig.eng->point_at(addr)->opt == ProbePoint::Opt::optimized);
  // The unoptimization's three writes: int3 over the jmp's e9, the tail
  // (the original bytes after the first), then the first byte, here the
  // probe's own int3 (0xcc over 0xcc); then the last sync and patch-done.
  struct Window : EventObserver {
    uint64_t addr = 0, last_write = 0, done = 0, pokes_after = 0, traps_after = 0;
    void on_event(const Event& e) override {
      if (e.kind != EventKind::probe || done) return;
      if (e.text == "text-write" && e.a == addr && (e.b & 0xff) == 0xcc && (e.c & 0xff) == 0xcc) last_write = e.cycle;
      if (!last_write) return;
      if (e.text == "patch-done") done = e.cycle;
      if (e.text == "poke-int3" && e.a == addr) ++pokes_after;
      if (e.text == "trap" && e.a == addr) ++traps_after;
    }
  } w;
  w.addr = addr;
  rig.m.events().add(&w);
  rig.eng->begin_op(0);
  rig.eng->set_optimization(false);
  rig.eng->end_op();
  RunResult r = rig.m.run();
  rig.m.events().remove(&w);
  REQUIRE(rig.passed(r));
  INFO("last write at " << w.last_write << ", patch-done at " << w.done);
  REQUIRE(w.last_write > 0);
  REQUIRE(w.done > w.last_write);
  CHECK(w.traps_after > 0);  // some CPU met the int3 inside the window (else this test shows nothing)
  CHECK(w.pokes_after == 0);
  rig.eng->unregister_kprobe(kp);
  rig.eng->finish_patching();
  CHECK(rig.text_diff().empty());
}
