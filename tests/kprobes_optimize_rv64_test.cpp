// RV64 jump optimization (docs/KPROBES_RV64.md, "Jump optimization"): the
// safety check with its register liveness on the guest kernel's own code,
// each refusal on the functions of workloads/kernel/arch/rv64/
// opt_cases.S, the detour buffer's code, hits through the auipc+jalr
// equal to the kernel's own counts, and the two-step removal of the jump.
#include <catch2/catch.hpp>

#include <map>

#include "cpu/cpu.hpp"
#include "cpu/rv64/disasm.hpp"
#include "cpu/rv64/insn.hpp"
#include "kprobes/arch.hpp"
#include "kprobes/op_queue.hpp"
#include "support/kprobe_rig.hpp"

using namespace ksim;
using namespace ksim::kprobes;
using ksim::test::KprobeRig;
using ksim::test::expected_forks;
using ksim::test::kernel_image;

namespace {

struct Events : EventObserver {
  std::map<std::string, uint64_t> n;
  std::map<std::string, uint64_t> first;
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

TEST_CASE("rv64 optprobes: can_optimize accepts kernel functions, finds a dead register and refuses each unsafe case",
          "[kprobes][optprobe]") {
  KprobeRig rig(kernel_image(Isa::rv64), 1);
  size_t accepted = 0, refused = 0, no_reg = 0;
  for (const Symbol& s : rig.m.symbols().all()) {
    if (s.kind != Symbol::Kind::function || !s.size) continue;
    INFO(s.name);
    Check c = check(rig, s.name.c_str(), 0);
    if (c.err == 0) {
      ++accepted;
      CHECK(c.r.len >= 8);
      CHECK(c.r.len <= 10);  // one 4-byte instruction past the 8 at most
      // The jump's register is a temporary or an argument register.
      const bool t_or_a = (c.r.scratch >= 5 && c.r.scratch <= 7) || (c.r.scratch >= 10 && c.r.scratch <= 17) ||
                          (c.r.scratch >= 28 && c.r.scratch <= 31);
      CHECK(t_or_a);
    } else {
      ++refused;
      no_reg += c.err == -kEBUSY;
      const bool known = c.why.find("indirect jump") != std::string::npos ||
                         c.why.find("inside the region") != std::string::npos ||
                         c.why.find("cannot run from the detour buffer") != std::string::npos ||
                         c.why.find("no register is free") != std::string::npos ||
                         c.why.find("fewer than 8 bytes") != std::string::npos ||
                         c.why.find("past the end") != std::string::npos;
      CHECK(known);
    }
  }
  CHECK(accepted >= 20);
  CHECK(refused >= 5);
  // do_fork: `addi sp; sd s0; mv a5, a0; addi s0` (8 bytes of compressed
  // instructions); it never names t0, so t0, the first candidate, is free.
  Check fork = check(rig, "do_fork", 0);
  REQUIRE(fork.err == 0);
  CHECK(fork.r.len == 8);
  CHECK(fork.r.insns == 4);
  CHECK(fork.r.scratch == 5);
  for (const std::string& line : disassembly(rig, "do_fork")) CHECK(line.find("t0") == std::string::npos);
  struct Refusal {
    const char* fn;
    uint64_t off;
    int err;
    const char* says;
  };
  const Refusal refusals[] = {
      {"optcase_jump_table", 0, -kEOPNOTSUPP, "has an indirect jump"},
      {"optcase_branch_into", 0, -kEOPNOTSUPP, "inside the region"},
      {"optcase_call_in_region", 4, -kEOPNOTSUPP, "cannot run from the detour buffer"},
      {"optcase_no_free_reg", 0, -kEBUSY, "no register is free"},
      {"optcase_leaf", 8, -kERANGE, "fewer than 8 bytes to the end"},
  };
  for (const Refusal& f : refusals) {
    INFO(f.fn << "+" << f.off);
    Check c = check(rig, f.fn, f.off);
    CHECK(c.err == f.err);
    CHECK(c.why.find(f.says) != std::string::npos);
    CHECK(c.why.rfind(std::string(f.fn) + "+", 0) == 0);
  }
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
  Check c = check(rig, "do_fork", 0);
  REQUIRE(c.err == 0);
  const uint64_t addr = rig.sym("do_fork");
  const uint64_t buf = rig.eng->layout().slots_end - 64;
  std::vector<uint8_t> code;
  std::string why;
  unsigned copy_at = 0;
  REQUIRE(rig.eng->arch().build_detour(c.r, addr, buf, code, copy_at, why) == 0);
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

TEST_CASE("rv64 optprobes: registered before the run, every do_fork hit goes through the jump (seeds, 4 and 16 CPUs)",
          "[kprobes][optprobe][seeds]") {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    const int cpus = seed > 4 ? 16 : 4;
    KprobeRig rig(kernel_image(Isa::rv64, seed % 2 == 0), cpus, seed, StepMode::modern, cpus > 4 ? 100 : 1);
    rig.eng->set_optimization(true);
    Events ev;
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
    const ProbePoint* p = rig.eng->point_at(ev.addr);
    REQUIRE(p);
    CHECK(p->opt == ProbePoint::Opt::optimized);
    CHECK(rig.eng->list().find("do_fork+0x0  [OPTIMIZED]") != std::string::npos);
    CHECK((rig.read<uint32_t>(ev.addr) & 0x7f) == 0x17);  // auipc
    RunResult r = rig.m.run();
    INFO("seed " << seed << " cpus " << cpus << ": " << r.reason);
    REQUIRE(rig.passed(r));
    CHECK(rig.printed("forks") == expected_forks(cpus));
    CHECK(static_cast<long>(pre) == expected_forks(cpus));
    CHECK(bad_pc == 0);
    CHECK(rig.eng->stats().optimized_hits == pre);
    CHECK(ev.traps_at == 0);  // no ebreak at do_fork: no trap
    rig.m.events().remove(&ev);
    rig.eng->unregister_kprobe(kp);
    rig.eng->finish_patching();
    CHECK(rig.text_diff().empty());
  }
}

TEST_CASE("rv64 optprobes: during a run the jump goes in under stop_machine and out in two steps",
          "[kprobes][optprobe]") {
  for (uint64_t seed : {1, 2, 3}) {
    KprobeRig rig(kernel_image(Isa::rv64), 4, seed);
    rig.eng->set_optimization(true);
    ProbeSession session(*rig.eng, nullptr);
    ProbeOpQueue ops(session,
                     events::parse_probe_script("@300000 p:f do_fork\n@1500000 -:f\n", "t.probes", rig.eng->arch()),
                     1, "t.probes");
    ops.check();
    Events ev;
    ev.addr = rig.sym("do_fork");
    rig.m.events().add(&ev);
    RunResult r = ops.run(rig.m);
    INFO("seed " << seed << ": " << r.reason);
    REQUIRE(rig.passed(r));
    // In: queued, RCU-tasks, the jump written by stop_machine, hits through it.
    REQUIRE(ev.n["optimize-queued"] == 1);
    REQUIRE(ev.n["optimized"] == 1);
    CHECK(ev.first["optimize-queued"] < ev.first["tasks-gp-end"]);
    CHECK(ev.first["tasks-gp-end"] <= ev.first["optimize"]);
    CHECK(ev.stops_installing >= 4 * 4);  // PREPARE..EXIT on each of 4 CPUs
    CHECK(ev.first["optimize"] < ev.first["optimized"]);
    CHECK(ev.first["optimized"] <= ev.first["optimized-hit"]);
    // Out: the ebreak over the auipc, an RCU-tasks grace period, the rest.
    REQUIRE(ev.n["unoptimize"] == 1);
    REQUIRE(ev.n["unoptimize-rest"] == 1);
    CHECK(ev.first["unoptimize"] < ev.first["unoptimize-rest"]);
    uint64_t hits = 0;
    for (const auto& sp : session.probes()) hits += sp->hits();
    CHECK(hits + rig.eng->stats().unhandled == ev.n["detour"] + ev.n["optimized-hit"] + ev.n["optimized-unhandled"]);
    rig.m.events().remove(&ev);
    rig.eng->finish_patching();
    CHECK(rig.text_diff().empty());
  }
}
