// The kprobes engine, continued: kretprobes (return values, maxactive
// exhausted by recursion and by sleeping, entry_handler veto, private data,
// the mismatch report), jprobes (arguments, reentry from the guest handler),
// fault_handler, a probe on every instruction of the workload (every kind
// of fixup, both x86 modes), the stray-trap race, slot reuse safety, and
// register/unregister churn while the kernel runs.
#include <catch2/catch.hpp>

#include <set>

#include "cpu/perturb.hpp"
#include "cpu/rv64/insn.hpp"
#include "cpu/x86/insn.hpp"
#include "support/kprobe_rig.hpp"

using namespace ksim;
using namespace ksim::kprobes;
using ksim::test::KprobeRig;
using ksim::test::kernel_image;

namespace {

struct ProbeEvents : EventObserver {
  std::function<void(const Event&)> fn;
  void on_event(const Event& e) override {
    if (e.kind == EventKind::probe && fn) fn(e);
  }
};

}  // namespace

TEST_CASE("kretprobe handlers see the return value; entry and return pair up", "[kprobes][kretprobe]") {
  const Isa isa = GENERATE(Isa::rv64, Isa::x86_64);
  KprobeRig rig(kernel_image(isa), 4, 11);
  Kretprobe rp;
  rp.kp.symbol_name = "sys_open";
  rp.data_size = 16;
  long enoent = 0, fds = 0, other = 0, bad_data = 0;
  const Arch& arch = rig.eng->arch();
  rp.entry_handler = [&](KretprobeInstance& ri, Cpu& c) {
    uint64_t cyc = c.cycle();
    std::memcpy(ri.data.data(), &cyc, 8);
    return 0;
  };
  rp.handler = [&](KretprobeInstance& ri, Cpu& c) {
    int64_t v = static_cast<int64_t>(arch.retval(c));
    if (v == -2)
      ++enoent;
    else if (v >= 3 && v <= 7)
      ++fds;
    else
      ++other;
    uint64_t cyc;
    std::memcpy(&cyc, ri.data.data(), 8);
    if (cyc == 0 || cyc >= c.cycle()) ++bad_data;
    return 0;
  };
  REQUIRE(rig.eng->register_kretprobe(rp) == 0);
  RunResult r = rig.m.run();
  REQUIRE(rig.passed(r));
  CHECK(enoent == rig.printed("enoent"));
  CHECK(enoent + fds == rig.printed("opens"));
  CHECK(other == 0);
  CHECK(bad_data == 0);
  CHECK(rp.nmissed == 0);
  CHECK(static_cast<long>(rp.hits) == rig.printed("opens"));
  CHECK(rig.eng->live_instances() == 0);
  rig.eng->unregister_kretprobe(rp);
  CHECK(rig.text_diff().empty());
}

TEST_CASE("kretprobe maxactive is exhausted by recursion: misses counted, entry_handler skipped",
          "[kprobes][kretprobe]") {
  const Isa isa = GENERATE(Isa::rv64, Isa::x86_64);
  KprobeRig rig(kernel_image(isa), 1);
  Kretprobe rp;
  rp.kp.symbol_name = "fib_recursive";
  rp.maxactive = 3;
  uint64_t entries = 0;
  rp.entry_handler = [&](KretprobeInstance&, Cpu&) { ++entries; return 0; };
  REQUIRE(rig.eng->register_kretprobe(rp) == 0);
  RunResult r = rig.m.run();
  REQUIRE(rig.passed(r));
  const long calls = rig.printed("fib calls");
  CHECK(rp.nmissed > 0);
  CHECK(static_cast<long>(rp.hits + rp.nmissed) == calls);
  CHECK(entries == rp.hits);  // no entry_handler for a missed instance
}

TEST_CASE("kretprobe maxactive is exhausted by a task sleeping inside the function", "[kprobes][kretprobe]") {
  const Isa isa = GENERATE(Isa::rv64, Isa::x86_64);
  KprobeRig rig(kernel_image(isa), 1);
  Kretprobe rp;
  rp.kp.symbol_name = "do_sleepy_work";
  rp.maxactive = 1;
  Kprobe count;  // an aggregate with the kretprobe's entry probe
  count.symbol_name = "do_sleepy_work";
  REQUIRE(rig.eng->register_kretprobe(rp) == 0);
  REQUIRE(rig.eng->register_kprobe(count) == 0);
  RunResult r = rig.m.run();
  REQUIRE(rig.passed(r));
  CHECK(rp.nmissed > 0);
  CHECK(rp.hits + rp.nmissed == count.hits);
  CHECK(static_cast<long>(count.hits) == rig.printed("sleeps") + rig.printed("yields"));
}

TEST_CASE("a kretprobe entry_handler that returns non-zero vetoes the return handler", "[kprobes][kretprobe]") {
  const Isa isa = GENERATE(Isa::rv64, Isa::x86_64);
  KprobeRig rig(kernel_image(isa), 2, 4);
  Kretprobe rp;
  rp.kp.symbol_name = "vfs_read";
  uint64_t entries = 0, vetoed = 0;
  rp.entry_handler = [&](KretprobeInstance&, Cpu&) {
    if (++entries % 3 == 0) {
      ++vetoed;
      return 1;
    }
    return 0;
  };
  REQUIRE(rig.eng->register_kretprobe(rp) == 0);
  RunResult r = rig.m.run();
  REQUIRE(rig.passed(r));
  CHECK(static_cast<long>(entries) == rig.printed("reads"));
  CHECK(rp.hits == entries - vetoed);
  CHECK(vetoed > 0);
  CHECK(rp.nmissed == 0);
}

TEST_CASE("a return through the trampoline that matches no instance is reported as a kretprobe BUG",
          "[kprobes][kretprobe]") {
  const Isa isa = GENERATE(Isa::rv64, Isa::x86_64);
  KprobeRig rig(kernel_image(isa), 2, 1);
  Kretprobe rp;
  rp.kp.symbol_name = "sys_open";
  REQUIRE(rig.eng->register_kretprobe(rp) == 0);
  RunLimits lim;
  lim.cycle = 1'000'000;
  REQUIRE(rig.m.run(lim).end == RunResult::End::paused);
  // CPU 1 "returns" to the trampoline out of nowhere (a corrupted return
  // address, a longjmp past a probed frame).
  int cpu = rig.m.cpu(1).idle() ? 0 : 1;
  REQUIRE_FALSE(rig.m.cpu(cpu).idle());
  rig.m.cpu(cpu).set_pc(rig.eng->layout().trampoline);
  RunResult r = rig.m.run();
  CHECK(r.end == RunResult::End::hook_stop);
  CHECK(r.reason.find("kretprobe BUG!") != std::string::npos);
  CHECK(r.reason.find("cpu " + std::to_string(cpu)) != std::string::npos);
}

TEST_CASE("jprobe handlers see the probed function's arguments; registers and stack come back",
          "[kprobes][jprobe]") {
  const Isa isa = GENERATE(Isa::rv64, Isa::x86_64);
  KprobeRig rig(kernel_image(isa), 1);
  const Arch& arch = rig.eng->arch();
  Kprobe k;  // registered first: runs before the jprobe at the same address
  k.symbol_name = "do_fork";
  uint64_t last[5] = {};
  k.pre_handler = [&](Kprobe&, Cpu& c) {
    for (int i = 0; i < 5; ++i) arch.arg(c, rig.m.bus(), i + 1, last[i]);
    return 0;
  };
  Kprobe post;  // and a post handler that sees the registers as they were
  post.symbol_name = "do_fork";
  uint64_t bad_regs = 0, posts = 0;
  post.post_handler = [&](Kprobe&, Cpu& c, unsigned long) {
    ++posts;
    uint64_t a1 = 0;
    arch.arg(c, rig.m.bus(), 1, a1);
    if (a1 != last[0]) ++bad_regs;
  };
  Jprobe jp;
  jp.kp.symbol_name = "do_fork";
  jp.entry_symbol = "jprobe_do_fork";
  REQUIRE(rig.eng->register_kprobe(k) == 0);
  REQUIRE(rig.eng->register_jprobe(jp) == 0);
  REQUIRE(rig.eng->register_kprobe(post) == 0);
  RunResult r = rig.m.run();
  REQUIRE(rig.passed(r));
  const uint64_t log = rig.sym("jprobe_log_do_fork");
  REQUIRE(log != 0);
  const long forks = rig.printed("forks");
  CHECK(static_cast<long>(rig.read<uint64_t>(log)) == forks);
  CHECK(static_cast<long>(jp.kp.hits) == forks);
  // Its pre stage never reaches `post` (the aggregate stops at the
  // jprobe's non-zero return, as Linux's aggr_pre_handler), but its post
  // handler runs after every step.
  CHECK(post.hits == 0);
  CHECK(static_cast<long>(posts) == forks);
  CHECK(bad_regs == 0);
  for (int i = 0; i < 5; ++i) {
    INFO("arg " << i + 1);
    CHECK(rig.read<uint64_t>(log + 8 + 8 * i) == last[i]);
  }
  CHECK(rig.eng->ctlblk(0).jprobe_active == false);
}

TEST_CASE("a probe hit inside a jprobe handler is a reentry: no handlers, nmissed, the first probe completes",
          "[kprobes][jprobe][reentry]") {
  const Isa isa = GENERATE(Isa::rv64, Isa::x86_64);
  KprobeRig rig(kernel_image(isa), 4, 2);
  Jprobe jp;
  jp.kp.symbol_name = "sys_open";
  jp.entry_symbol = "jprobe_sys_open";
  Kprobe inner;
  inner.symbol_name = "jprobe_helper";
  uint64_t inner_runs = 0;
  inner.pre_handler = [&](Kprobe&, Cpu&) { ++inner_runs; return 0; };
  std::set<std::string> statuses;
  ProbeEvents ev;
  ev.fn = [&](const Event& e) { statuses.insert(e.text); };
  rig.m.events().add(&ev);
  REQUIRE(rig.eng->register_jprobe(jp) == 0);
  REQUIRE(rig.eng->register_kprobe(inner) == 0);
  RunResult r = rig.m.run();
  rig.m.events().remove(&ev);
  REQUIRE(rig.passed(r));
  const long opens = rig.printed("opens");
  CHECK(static_cast<long>(jp.kp.hits) == opens);
  CHECK(inner_runs == 0);
  CHECK(inner.hits == 0);
  CHECK(static_cast<long>(inner.nmissed) == opens);
  CHECK(rig.eng->stats().reentries == static_cast<uint64_t>(opens));
  CHECK(statuses.count("KPROBE_REENTER") == 1);
  CHECK(statuses.count("reenter-done") == 1);
}

namespace {

// A load in `fn` whose base register the test can corrupt: RV64 any load
// not based on sp/x0; x86 a mov from [reg+disp] not based on rsp/rip.
struct LoadSite {
  uint64_t addr = 0;
  int base = -1;
};

LoadSite find_load(KprobeRig& rig, const char* fn) {
  const Symbol* s = rig.symbol(fn);
  REQUIRE(s);
  std::vector<uint8_t> code(s->size + 16);
  rig.eng->read_original(s->addr, code.data(), code.size());
  for (uint64_t off = 0; off < s->size;) {
    if (rig.isa() == Isa::rv64) {
      uint16_t lo = static_cast<uint16_t>(code[off] | code[off + 1] << 8);
      uint16_t hi = static_cast<uint16_t>(code[off + 2] | code[off + 3] << 8);
      rv64::Insn in = rv64::decode(lo, hi);
      if (rv64::op_info(in.op).format == rv64::Format::LOAD && in.rs1 != 2 && in.rs1 != 0 && in.rs1 != in.rd)
        return {s->addr + off, in.rs1};
      off += in.len;
    } else {
      x86::Insn in = x86::decode(code.data() + off, code.size() - off, s->addr + off);
      for (int i = 1; i < in.nops; ++i) {
        const x86::Operand& o = in.op[i];
        if (o.kind == x86::OpKind::mem && o.base < 16 && o.base != 4 && o.index == x86::kNoReg && o.seg == 0 &&
            in.op[0].kind == x86::OpKind::reg && in.op[0].reg != o.base)
          return {s->addr + off, o.base};
      }
      off += in.len;
    }
  }
  return {};
}

}  // namespace

TEST_CASE("fault_handler: a fault in the stepped instruction is offered to it first", "[kprobes][fault]") {
  const Isa isa = GENERATE(Isa::rv64, Isa::x86_64);
  const bool handle = GENERATE(true, false);
  KprobeRig rig(kernel_image(isa), 1);
  LoadSite site = find_load(rig, "vfs_read");
  REQUIRE(site.addr != 0);
  Kprobe kp;
  kp.addr = site.addr;
  uint64_t saved = 0, faults = 0, posts = 0;
  int trapnr = -1;
  // The pre_handler breaks the load's base register (an unmapped
  // address); the fault handler repairs it (handled) or declines.
  kp.pre_handler = [&](Kprobe&, Cpu& c) {
    if (faults == 0) {
      saved = c.gpr(site.base);
      c.set_gpr(site.base, 0x10);
    }
    return 0;
  };
  kp.fault_handler = [&](Kprobe&, Cpu& c, int nr) {
    ++faults;
    trapnr = nr;
    if (!handle) return 0;
    c.set_gpr(site.base, saved);
    return 1;
  };
  kp.post_handler = [&](Kprobe&, Cpu&, unsigned long) { ++posts; };
  REQUIRE(rig.eng->register_kprobe(kp) == 0);
  RunResult r = rig.m.run();
  CHECK(faults == 1);
  CHECK(trapnr == (isa == Isa::rv64 ? 5 : 13));  // load access fault / #GP
  if (handle) {
    REQUIRE(rig.passed(r));
    CHECK(posts == kp.hits);  // the retried step completed normally
  } else {
    // The guest's own trap handler sees the fault at the probed address.
    CHECK_FALSE(rig.passed(r));
    char addr[32];
    std::snprintf(addr, sizeof addr, "%016llx", static_cast<unsigned long long>(site.addr));
    INFO(rig.m.console());
    CHECK(rig.m.console().find(addr) != std::string::npos);
    CHECK(rig.eng->ctlblk(0).status == KStatus::idle);
  }
}

TEST_CASE("a probe on every instruction of the workload: every fixup keeps the kernel's results",
          "[kprobes][fixups]") {
  struct Variant {
    Isa isa;
    StepMode mode;
  };
  const Variant v = GENERATE(Variant{Isa::rv64, StepMode::modern}, Variant{Isa::x86_64, StepMode::modern},
                             Variant{Isa::x86_64, StepMode::classic});
  KprobeRig rig(kernel_image(v.isa), 4, 9, v.mode);
  std::vector<std::unique_ptr<Kprobe>> probes;
  std::map<std::string, uint64_t> hits_by_class;  // class -> hits
  std::map<std::string, int> sites_by_class;
  int refused = 0;
  for (const char* fn : {"do_fork", "vfs_read", "sys_open", "fib_recursive", "do_sleepy_work", "counter_add"}) {
    const Symbol* s = rig.symbol(fn);
    REQUIRE(s);
    std::vector<uint8_t> code(s->size + 16);
    rig.eng->read_original(s->addr, code.data(), code.size());
    for (uint64_t off = 0; off < s->size;) {
      std::string cls;
      uint64_t len;
      if (v.isa == Isa::rv64) {
        uint16_t lo = static_cast<uint16_t>(code[off] | code[off + 1] << 8);
        uint16_t hi = static_cast<uint16_t>(code[off + 2] | code[off + 3] << 8);
        rv64::Insn in = rv64::decode(lo, hi);
        len = in.len;
        std::string m = rv64::op_info(in.op).mnemonic;
        rv64::Format f = rv64::op_info(in.op).format;
        cls = m == "auipc" ? "auipc"
              : m == "jal" ? (len == 2 ? "c.j/c.jal" : "jal")
              : m == "jalr" ? (len == 2 ? "c.jr/c.jalr" : "jalr")
              : f == rv64::Format::B ? (len == 2 ? "c.beqz/c.bnez" : "branch")
              : f == rv64::Format::LOAD ? "load"
              : f == rv64::Format::STORE ? "store"
              : len == 2 ? "compressed" : "other";
      } else {
        x86::Insn in = x86::decode(code.data() + off, code.size() - off, s->addr + off);
        len = in.len;
        bool rip = false;
        for (int i = 0; i < in.nops; ++i) rip |= in.op[i].kind == x86::OpKind::mem && in.op[i].base == x86::kRip;
        uint8_t b0 = code[off];
        cls = rip ? "rip-relative"
              : b0 == 0xe8 ? "call rel32"
              : b0 == 0xc3 || b0 == 0xc2 ? "ret"
              : (b0 >= 0x70 && b0 <= 0x7f) || (b0 == 0x0f && (code[off + 1] & 0xf0) == 0x80) ? "jcc"
              : b0 == 0xe9 || b0 == 0xeb ? "jmp"
              : b0 == 0x9c || b0 == 0x9d ? "pushf/popf"
              : "other";
      }
      auto kp = std::make_unique<Kprobe>();
      kp->addr = s->addr + off;
      std::string c = cls;
      kp->pre_handler = [&hits_by_class, c](Kprobe&, Cpu&) {
        ++hits_by_class[c];
        return 0;
      };
      int e = rig.eng->register_kprobe(*kp);
      if (e == 0) {
        ++sites_by_class[cls];
        probes.push_back(std::move(kp));
      } else {
        // Only instructions Linux refuses too (fences, CSR and system
        // instructions); never a boundary error: we walk real boundaries.
        INFO(rig.eng->last_error());
        CHECK(e == -kEINVAL);
        CHECK(rig.eng->last_error().find("EILSEQ") == std::string::npos);
        ++refused;
      }
      off += len;
    }
  }
  INFO(isa_name(v.isa) << (v.mode == StepMode::classic ? " classic" : " modern"));
  RunResult r = rig.m.run();
  INFO(r.reason << "\n" << rig.m.console().substr(rig.m.console().size() > 3000 ? rig.m.console().size() - 3000 : 0));
  REQUIRE(rig.passed(r));
  const std::vector<std::string> required =
      v.isa == Isa::rv64 ? std::vector<std::string>{"auipc", "jal", "c.jr/c.jalr", "branch", "c.beqz/c.bnez",
                                                    "c.j/c.jal", "load", "store", "compressed"}
                         : std::vector<std::string>{"rip-relative", "call rel32", "ret", "jcc", "other"};
  for (const std::string& c : required) {
    INFO("class " << c);
    CHECK(sites_by_class[c] > 0);
    CHECK(hits_by_class[c] > 0);
  }
  for (auto& kp : probes) rig.eng->unregister_kprobe(*kp);
  rig.eng->reclaim_slots();
  CHECK(rig.text_diff().empty());
  CHECK(refused <= 2);
}

TEST_CASE("stray trap: a CPU that trapped on a breakpoint another CPU just removed re-executes the instruction",
          "[kprobes][race]") {
  const Isa isa = GENERATE(Isa::rv64, Isa::x86_64);
  // Strict code model: exactly one stray needs every other CPU to see the
  // removal at once. Under the relaxed model CPUs that still see the
  // breakpoint trap on it too (x86 until that trap serialises them, RV64
  // until their view expires: the engine does not make them synchronise).
  KprobeRig rig(kernel_image(isa), 4, 6, kprobes::StepMode::modern, 1, false, CodeModel::strict);
  Kprobe kp;
  kp.symbol_name = "do_fork";
  REQUIRE(rig.eng->register_kprobe(kp) == 0);
  const uint64_t addr = rig.sym("do_fork");
  int victim = -1;
  bool stray = false;
  ProbeEvents ev;
  // The interleaving on purpose: the first time a CPU has trapped at
  // do_fork and not yet looked the probe up, another CPU unregisters it.
  ev.fn = [&](const Event& e) {
    if (victim < 0 && e.a == addr && e.text == "trap") {
      victim = e.cpu;
      rig.eng->set_caller_cpu((e.cpu + 1) % 4);
      rig.eng->unregister_kprobe(kp);
    } else if (e.cpu == victim && e.text == "stray") {
      stray = e.a == addr;
    }
  };
  rig.m.events().add(&ev, EventStream::Delivery::immediate);  // it acts at the very event
  RunResult r = rig.m.run();
  rig.m.events().remove(&ev);
  REQUIRE(victim >= 0);
  CHECK(stray);
  CHECK(rig.eng->stats().strays == 1);
  CHECK(kp.hits == 0);
  REQUIRE(rig.passed(r));  // the victim's do_fork ran exactly once: the pid checks pass
  CHECK(rig.printed("forks") == 1536);
  CHECK(rig.text_diff().empty());
}

TEST_CASE("a slot is not reused while a CPU may still be stepping in it", "[kprobes][race]") {
  const Isa isa = GENERATE(Isa::rv64, Isa::x86_64);
  KprobeRig rig(kernel_image(isa), 4, 8);
  // The first instruction of vfs_read that is stepped, not emulated.
  uint64_t off = 0;
  for (;;) {
    Kprobe probe;
    probe.symbol_name = "vfs_read";
    probe.offset = off;
    REQUIRE(rig.eng->register_kprobe(probe) == 0);
    const ProbePoint* p0 = rig.eng->point_at(rig.sym("vfs_read") + off);
    const bool stepped = p0->insn.kind == ProbeInsn::Kind::step;
    const uint64_t len = p0->insn.len;
    rig.eng->unregister_kprobe(probe);
    if (stepped) break;
    off += len;
  }
  Kprobe a;
  a.symbol_name = "vfs_read";
  a.offset = off;
  REQUIRE(rig.eng->register_kprobe(a) == 0);
  const ProbePoint* pa = rig.eng->point_at(rig.sym("vfs_read") + off);
  REQUIRE(pa->insn.kind == ProbeInsn::Kind::step);
  const uint64_t old_slot = pa->slot;
  std::vector<std::unique_ptr<Kprobe>> later;
  int stepper = -1;
  bool done_checks = false;
  ProbeEvents ev;
  ev.fn = [&](const Event& e) {
    if (stepper < 0 && e.text == "KPROBE_HIT_SS" && e.b == old_slot) {
      // This CPU's PC is in the slot now. Remove the probe and register
      // others: none may get the slot while this CPU has not left it.
      stepper = e.cpu;
      rig.eng->set_caller_cpu((e.cpu + 1) % 4);
      rig.eng->unregister_kprobe(a);
      for (const char* fn : {"do_fork", "sys_open", "counter_add"}) {
        auto k = std::make_unique<Kprobe>();
        k->symbol_name = fn;
        k->offset = 0;
        REQUIRE(rig.eng->register_kprobe(*k) == 0);
        if (rig.eng->point_at(rig.sym(fn))->slot) CHECK(rig.eng->point_at(rig.sym(fn))->slot != old_slot);
        later.push_back(std::move(k));
      }
      CHECK(rig.eng->slots().garbage() == 1);
      CHECK(rig.eng->reclaim_slots() == 0);  // its grace period is not over
      done_checks = true;
    }
  };
  rig.m.events().add(&ev, EventStream::Delivery::immediate);  // it acts at the very event
  RunResult r = rig.m.run();
  rig.m.events().remove(&ev);
  REQUIRE(done_checks);
  REQUIRE(rig.passed(r));
  // Reclaimed (and refilled with breakpoints) when the stepper left.
  CHECK(rig.eng->slots().garbage() == 0);
  for (auto& k : later) rig.eng->unregister_kprobe(*k);
  rig.eng->reclaim_slots();
  CHECK(rig.text_diff().empty());
}

TEST_CASE("register/unregister/enable/disable churn while the kernel runs: 50 seeds", "[kprobes][churn]") {
  const Isa isa = GENERATE(Isa::rv64, Isa::x86_64);
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    KprobeRig rig(kernel_image(isa), 4, seed);
    // The probe set: kprobes at entries and inside functions, kretprobes, a
    // jprobe; all on functions the workload calls all the time.
    Kprobe k_fork, k_read_in, k_counter, k_open;
    k_fork.symbol_name = "do_fork";
    k_counter.symbol_name = "counter_add";
    k_open.symbol_name = "sys_open";
    k_read_in.symbol_name = "vfs_read";
    {
      Kprobe probe;
      probe.symbol_name = "vfs_read";
      REQUIRE(rig.eng->register_kprobe(probe) == 0);
      k_read_in.offset = rig.eng->point_at(rig.sym("vfs_read"))->insn.len;
      rig.eng->unregister_kprobe(probe);
    }
    Kretprobe r_open, r_fib;
    r_open.kp.symbol_name = "sys_open";
    r_fib.kp.symbol_name = "fib_recursive";
    r_fib.maxactive = 4;
    Jprobe j_fork;
    j_fork.kp.symbol_name = "do_fork";
    j_fork.entry_symbol = "jprobe_do_fork";
    std::vector<Kprobe*> kps = {&k_fork, &k_read_in, &k_counter, &k_open, &r_open.kp, &r_fib.kp, &j_fork.kp};
    auto reg = [&](size_t i) {
      if (i < 4) return rig.eng->register_kprobe(*kps[i]);
      if (i == 4) return rig.eng->register_kretprobe(r_open);
      if (i == 5) return rig.eng->register_kretprobe(r_fib);
      return rig.eng->register_jprobe(j_fork);
    };
    auto unreg = [&](size_t i) {
      if (i < 4) rig.eng->unregister_kprobe(*kps[i]);
      else if (i == 4) rig.eng->unregister_kretprobe(r_open);
      else if (i == 5) rig.eng->unregister_kretprobe(r_fib);
      else rig.eng->unregister_jprobe(j_fork);
    };
    // Host-side choices from a seeded counter-based generator: the same
    // seed gives the same churn.
    const Perturbation gen(seed * 7919 + 1);
    uint64_t draw = 0;
    auto pick = [&](uint64_t n) { return gen.uniform(0x6368, draw++, 0, n - 1); };
    RunLimits lim;
    lim.cycle = 0;
    RunResult r;
    int ops = 0;
    for (;;) {
      lim.cycle += 20'000 + pick(180'000);
      r = rig.m.run(lim);
      if (r.end != RunResult::End::paused) break;
      rig.eng->set_caller_cpu(0);
      size_t i = pick(kps.size());
      switch (pick(5)) {
        case 0:
        case 1:
          if (!kps[i]->rec) REQUIRE(reg(i) == 0);
          break;
        case 2:
          unreg(i);
          break;
        case 3:
          if (kps[i]->rec) (pick(2) ? rig.eng->disable_kprobe(*kps[i]) : rig.eng->enable_kprobe(*kps[i]));
          break;
        case 4:
          if (pick(4) == 0) rig.eng->set_enabled(!rig.eng->enabled());
          break;
      }
      ++ops;
    }
    INFO(isa_name(isa) << " seed " << seed << ": " << r.reason);
    REQUIRE(rig.passed(r));
    CHECK(ops > 20);
    for (size_t i = 0; i < kps.size(); ++i) unreg(i);
    rig.eng->set_enabled(true);
    CHECK(rig.eng->points() == 0);
    rig.eng->reclaim_slots();
    CHECK(rig.text_diff().empty());
  }
}

TEST_CASE("a kretprobe handler or entry_handler may unregister its own kretprobe", "[kprobes][kretprobe]") {
  const Isa isa = GENERATE(Isa::rv64, Isa::x86_64);
  const bool from_entry = GENERATE(false, true);
  KprobeRig rig(kernel_image(isa), 2, 3);
  Kretprobe rp;
  rp.kp.symbol_name = "sys_open";
  uint64_t returns = 0, entries = 0;
  rp.handler = [&](KretprobeInstance&, Cpu&) {
    ++returns;
    if (!from_entry) rig.eng->unregister_kretprobe(rp);
    return 0;
  };
  rp.entry_handler = [&](KretprobeInstance&, Cpu&) {
    ++entries;
    if (from_entry) rig.eng->unregister_kretprobe(rp);
    return 0;
  };
  REQUIRE(rig.eng->register_kretprobe(rp) == 0);
  RunResult r = rig.m.run();
  REQUIRE(rig.passed(r));
  CHECK(entries >= 1);
  // Unregistered at the first entry: no return handler ever runs; at the
  // first return: that one ran, and no later entry happened.
  CHECK(returns == (from_entry ? 0u : 1u));
  CHECK(rp.kp.rec == nullptr);
  CHECK(rig.text_diff().empty());
}

TEST_CASE("a kretprobe on a function that installs the CPU's first task returns normally", "[kprobes][kretprobe]") {
  const Isa isa = GENERATE(Isa::rv64, Isa::x86_64);
  KprobeRig rig(kernel_image(isa), 2, 1);
  Kretprobe rp;  // sched_init_cpu runs with no current task and sets it
  rp.kp.symbol_name = "sched_init_cpu";
  REQUIRE(rig.eng->register_kretprobe(rp) == 0);
  RunResult r = rig.m.run();
  INFO(r.reason);
  REQUIRE(rig.passed(r));
  CHECK(rp.hits == 2);
}

TEST_CASE("reentry on a kretprobe counts in kp.nmissed only; one jprobe per address", "[kprobes][reentry]") {
  const Isa isa = GENERATE(Isa::rv64, Isa::x86_64);
  KprobeRig rig(kernel_image(isa), 2, 5);
  Jprobe jp;
  jp.kp.symbol_name = "sys_open";
  jp.entry_symbol = "jprobe_sys_open";
  Kretprobe inner;
  inner.kp.symbol_name = "jprobe_helper";
  REQUIRE(rig.eng->register_jprobe(jp) == 0);
  REQUIRE(rig.eng->register_kretprobe(inner) == 0);
  Jprobe second;
  second.kp.symbol_name = "sys_open";
  second.entry_symbol = "jprobe_sys_open";
  CHECK(rig.eng->register_jprobe(second) == -kEEXIST);
  RunResult r = rig.m.run();
  REQUIRE(rig.passed(r));
  CHECK(static_cast<long>(inner.kp.nmissed) == rig.printed("opens"));
  CHECK(inner.nmissed == 0);
  CHECK(inner.hits == 0);
}

TEST_CASE("a pre_handler that returns non-zero without moving the PC stops the run with a reason",
          "[kprobes][engine]") {
  const Isa isa = GENERATE(Isa::rv64, Isa::x86_64);
  KprobeRig rig(ksim::test::bench_image(isa), 1);
  Kprobe kp;
  kp.symbol_name = "bench_target";
  kp.pre_handler = [](Kprobe&, Cpu&) { return 1; };
  REQUIRE(rig.eng->register_kprobe(kp) == 0);
  RunResult r = rig.m.run();
  CHECK(r.end == RunResult::End::hook_stop);
  CHECK(r.reason.find("left the PC at the probe") != std::string::npos);
  CHECK(kp.hits == 1);
}

TEST_CASE("batch registration of kretprobes and jprobes rolls back too", "[kprobes][engine]") {
  const Isa isa = GENERATE(Isa::rv64, Isa::x86_64);
  KprobeRig rig(kernel_image(isa), 1);
  Kretprobe r1, r2, rbad;
  r1.kp.symbol_name = "sys_open";
  r2.kp.symbol_name = "vfs_read";
  rbad.kp.symbol_name = "do_fork";
  rbad.kp.offset = 2;  // not the entry
  Kretprobe* rs[] = {&r1, &r2, &rbad};
  CHECK(rig.eng->register_kretprobes(rs) == -kEINVAL);
  CHECK(r1.kp.rec == nullptr);
  CHECK(r2.kp.rec == nullptr);
  Jprobe j1, jbad;
  j1.kp.symbol_name = "do_fork";
  j1.entry_symbol = "jprobe_do_fork";
  jbad.kp.symbol_name = "vfs_read";
  jbad.entry_symbol = "no_such_handler";
  Jprobe* js[] = {&j1, &jbad};
  CHECK(rig.eng->register_jprobes(js) == -kENOENT);
  CHECK(j1.kp.rec == nullptr);
  CHECK(rig.eng->points() == 0);
  CHECK(rig.text_diff().empty());
}

TEST_CASE("jprobes and kretprobes in x86 classic mode", "[kprobes][jprobe]") {
  KprobeRig rig(kernel_image(Isa::x86_64), 2, 4, StepMode::classic);
  Jprobe jp;
  jp.kp.symbol_name = "do_fork";
  jp.entry_symbol = "jprobe_do_fork";
  Kretprobe rp;
  rp.kp.symbol_name = "do_fork";
  REQUIRE(rig.eng->register_kretprobe(rp) == 0);  // before the jprobe, as Linux users did
  REQUIRE(rig.eng->register_jprobe(jp) == 0);
  RunResult r = rig.m.run();
  REQUIRE(rig.passed(r));
  const long forks = rig.printed("forks");
  CHECK(static_cast<long>(rig.read<uint64_t>(rig.sym("jprobe_log_do_fork"))) == forks);
  CHECK(static_cast<long>(rp.hits) == forks);
  CHECK(rig.text_diff().empty() == false);  // still registered: the breakpoint is there
  rig.eng->unregister_jprobe(jp);
  rig.eng->unregister_kretprobe(rp);
  CHECK(rig.text_diff().empty());
}

TEST_CASE("a guest's own breakpoint (x86 int3 and int 3) reaches the guest, not the engine's stray path",
          "[kprobes][race]") {
  for (const std::vector<uint8_t>& bp : {std::vector<uint8_t>{0xcc}, std::vector<uint8_t>{0xcd, 0x03}}) {
    KprobeRig rig(kernel_image(Isa::x86_64), 2, 1);
    Kprobe kp;  // the engine is at the head of the trap hooks
    kp.symbol_name = "vfs_read";
    REQUIRE(rig.eng->register_kprobe(kp) == 0);
    rig.m.bus().write_bytes(rig.sym("do_fork"), bp.data(), bp.size());
    RunResult r = rig.m.run();
    INFO(r.reason << "\n" << rig.m.console().substr(rig.m.console().size() > 1500 ? rig.m.console().size() - 1500 : 0));
    CHECK(r.end != RunResult::End::cycle_limit);
    CHECK_FALSE(rig.passed(r));
    CHECK(rig.m.console().find("reakpoint") != std::string::npos);  // the guest's die_trap reports it
    CHECK(rig.eng->stats().strays == 0);
  }
}

TEST_CASE("an emulated instruction retires: instructions counted as without the probe", "[kprobes][engine]") {
  const Isa isa = GENERATE(Isa::rv64, Isa::x86_64);
  uint64_t instret[2] = {};
  for (int probed = 0; probed < 2; ++probed) {
    KprobeRig rig(ksim::test::bench_image(isa), 1);
    Kprobe kp;  // on bench_target's final `ret` (x86 c3, RV64 c.jr ra): emulated on both
    const Symbol* s = rig.symbol("bench_target");
    REQUIRE(s);
    kp.addr = s->addr + s->size - (isa == Isa::x86_64 ? 1 : 2);
    if (probed) {
      REQUIRE(rig.eng->register_kprobe(kp) == 0);
      REQUIRE(rig.eng->point_at(kp.addr)->insn.kind == ProbeInsn::Kind::emulate);
    }
    RunResult r = rig.m.run();
    REQUIRE(r.end == RunResult::End::poweroff);
    REQUIRE(r.status == 0);
    if (probed) CHECK(kp.hits == 100000);
    instret[probed] = r.instret;
  }
  CHECK(instret[0] == instret[1]);
}

TEST_CASE("instances of a task that exits inside a kretprobed function are recycled (kprobe_flush_task)",
          "[kprobes][kretprobe]") {
  const Isa isa = GENERATE(Isa::rv64, Isa::x86_64);
  KprobeRig rig(kernel_image(isa), 4, 2);
  Kretprobe rp;  // thread_exit never returns: without the flush, 2 instances serve 2 threads only
  rp.kp.symbol_name = "thread_exit";
  rp.maxactive = 2;
  uint64_t entries = 0;
  rp.entry_handler = [&](KretprobeInstance&, Cpu&) { ++entries; return 0; };
  REQUIRE(rig.eng->register_kretprobe(rp) == 0);
  // The engine's own thread_exit probe is not listed.
  const std::string list = rig.eng->list();
  CHECK(std::count(list.begin(), list.end(), '\n') == 1);
  RunResult r = rig.m.run();
  REQUIRE(rig.passed(r));
  CHECK(entries == 12);  // 4 CPUs x 3 workers
  CHECK(rp.nmissed == 0);
  CHECK(rp.hits == 0);
  rig.eng->unregister_kretprobe(rp);
  CHECK(rig.eng->points() == 0);  // the flush probe went with the last kretprobe
  CHECK(rig.text_diff().empty());
}
