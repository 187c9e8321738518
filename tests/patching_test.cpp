// The text patching protocols (kprobes/patching.*), executed on the guest
// kernel: who writes, who serialises, in what order, and what they cost.
// Values are checked against the protocols' definitions (Linux's
// text_poke_sync, multi_cpu_stop, patch_text_cb, stop_machine_text_poke)
// and against bounds computed from cpu/timing.hpp, not against earlier runs.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "cpu/timing.hpp"
#include "kprobes/events/probe_script.hpp"
#include "kprobes/op_queue.hpp"
#include "kprobes/session.hpp"
#include "support/kprobe_rig.hpp"

using namespace ksim;
using namespace ksim::kprobes;
using ksim::test::KprobeRig;
using ksim::test::kernel_image;

namespace {

// The engine's protocol events, in delivery order.
struct Protocol : EventObserver {
  struct Ev {
    uint64_t cycle;
    int cpu;
    std::string what;
    uint64_t b, c;
  };
  std::vector<Ev> ev;
  void on_event(const Event& e) override {
    if (e.kind != EventKind::probe) return;
    static const char* const kinds[] = {"patch-begin", "patch-done",        "arm",      "disarm",
                                        "sync-ack",    "sync_core",         "fence.i",  "stop_machine",
                                        "stop_machine-done", "synchronize_rcu", "gp-start", "rcu-qs",
                                        "gp-end"};
    for (const char* k : kinds)
      if (e.text == k) ev.push_back(Ev{e.cycle, e.cpu, e.text, e.b, e.c});
  }
  // The events of the n-th job (from its patch-begin to its patch-done).
  std::vector<Ev> job(size_t n) const {
    std::vector<Ev> out;
    size_t seen = 0;
    bool in = false;
    for (const Ev& e : ev) {
      if (e.what == "patch-begin") in = seen++ == n;
      if (in) out.push_back(e);
      if (in && e.what == "patch-done") break;
    }
    return out;
  }
};

struct Run {
  KprobeRig rig;
  ProbeSession session;
  Protocol proto;
  RunResult result;
  Run(Isa isa, int cpus, Patching p, uint64_t seed = 0) : rig(kernel_image(isa), cpus, seed), session(*rig.eng, nullptr) {
    rig.eng->set_patching(p);
    rig.m.events().add(&proto);
  }
  // One operation at `at` by `caller`.
  void op(const std::string& line, uint64_t at, int caller) {
    ProbeOpQueue q(session, events::parse_probe_script("@" + std::to_string(at) + " " + line + "\n", "t", rig.eng->arch()),
                   caller, "t");
    RunLimits lim;
    lim.cycle = at;
    REQUIRE(rig.m.run(lim).end == RunResult::End::paused);
    q.perform(q.ops()[0]);
    REQUIRE_FALSE(q.outcomes()[0].failed);
  }
  // The kernel's test hook (kernel/irq.c): CPU `cpu`'s next timer
  // interrupt spins `cycles` with interrupts off. Set at `at`.
  void irqoff(int cpu, uint64_t cycles, uint64_t at) {
    RunLimits lim;
    lim.cycle = at;
    REQUIRE(rig.m.run(lim).end == RunResult::End::paused);
    const uint64_t v = cycles;
    REQUIRE(rig.m.bus().write_bytes(rig.sym("irqoff_spin_cycles") + 8 * static_cast<uint64_t>(cpu), &v, 8,
                                    Accessor{cpu, rig.m.cpu(cpu).cycle()}));
  }
  void finish() {
    result = rig.m.run();
    rig.eng->finish_patching();
  }
};

uint64_t count(const std::vector<Protocol::Ev>& v, const std::string& what, int cpu = -1) {
  uint64_t n = 0;
  for (const auto& e : v) n += e.what == what && (cpu < 0 || e.cpu == cpu);
  return n;
}

const Protocol::Ev* find(const std::vector<Protocol::Ev>& v, const std::string& what) {
  for (const auto& e : v)
    if (e.what == what) return &e;
  return nullptr;
}

}  // namespace

TEST_CASE("text_poke: the caller writes the int3, every other CPU runs sync_core in its IPI handler, and the caller "
          "waits for all of them",
          "[kprobes][patching]") {
  for (int cpus : {1, 4, 16}) {
    Run r(Isa::x86_64, cpus, Patching::text_poke);
    const int caller = cpus - 1;
    r.op("p:pf do_fork", 300'000, caller);
    r.op("-:pf", 600'000, caller);
    r.finish();
    INFO("cpus " << cpus << ": " << r.result.reason);
    REQUIRE(r.rig.passed(r.result));
    for (size_t n = 0; n < 2; ++n) {
      const auto job = r.proto.job(n);
      REQUIRE(job.size() >= 3);
      const auto& done = job.back();
      REQUIRE(done.what == "patch-done");
      CHECK(done.b == (n == 0 ? 1u : 0u));  // armed, then disarmed
      // The write: one, by the caller.
      CHECK(count(job, n == 0 ? "arm" : "disarm") == 1);
      CHECK(find(job, n == 0 ? "arm" : "disarm")->cpu == caller);
      // Every other CPU acknowledged once, after serialising, before the
      // caller's wait ended; the caller serialised itself too.
      for (int k = 0; k < cpus; ++k) {
        CHECK(count(job, "sync_core", k) == 1);
        CHECK(count(job, "sync-ack", k) == (k == caller ? 0u : 1u));
      }
      for (const auto& e : job) CHECK(e.cycle <= done.cycle);
      // Its cost, at least: the poke, an IPI per other CPU, the mutex both
      // ways, the caller's own sync_core (timing.hpp); the wait for the
      // acknowledgements comes on top.
      const uint64_t floor = timing::kTextPokeCycles + 2 * timing::kTextMutexCycles + timing::kSyncCoreCycles +
                             static_cast<uint64_t>(cpus - 1) * timing::kIpiSendCycles;
      CHECK(done.c >= floor);
      if (cpus > 1) CHECK(done.c >= floor + timing::kIpiLatency);
    }
    CHECK(r.rig.text_diff(false).empty());
  }
}

TEST_CASE("patch_text (RV64) and text_poke_smp (x86): multi_cpu_stop's states in order on every CPU, one writer (the "
          "last to arrive, or the first), every CPU serialises after the write",
          "[kprobes][patching]") {
  struct Case {
    Isa isa;
    Patching p;
  };
  for (const Case& c : {Case{Isa::rv64, Patching::patch_text}, Case{Isa::x86_64, Patching::text_poke_smp}})
    for (int cpus : {1, 4, 16}) {
      Run r(c.isa, cpus, c.p, 3);
      r.op("p:pf do_fork", 300'000, 0);
      r.finish();
      INFO(isa_name(c.isa) << " cpus " << cpus << ": " << r.result.reason);
      REQUIRE(r.rig.passed(r.result));
      const auto job = r.proto.job(0);
      REQUIRE(!job.empty());
      // Each CPU sees PREPARE, DISABLE_IRQ, RUN, EXIT, in that order.
      std::map<int, std::vector<uint64_t>> states;
      std::map<int, uint64_t> entered_run;
      for (const auto& e : job)
        if (e.what == "stop_machine") {
          states[e.cpu].push_back(e.b);
          if (e.b == static_cast<uint64_t>(StopState::run)) entered_run[e.cpu] = e.cycle;
        }
      REQUIRE(states.size() == static_cast<size_t>(cpus));
      for (const auto& [cpu, s] : states) CHECK(s == std::vector<uint64_t>{1, 2, 3, 4});
      // One write, by the CPU Linux's callback names.
      REQUIRE(count(job, "arm") == 1);
      const auto* w = find(job, "arm");
      int expected = -1;
      uint64_t best = 0;
      for (const auto& [cpu, at] : entered_run) {
        // Arrival order is (cycle, CPU): the schedule's order.
        const bool later = expected < 0 || at > best || (at == best && cpu > expected);
        const bool earlier = expected < 0 || at < best || (at == best && cpu < expected);
        if (c.p == Patching::patch_text ? later : earlier) {
          expected = cpu;
          best = at;
        }
      }
      CHECK(w->cpu == expected);
      // Every CPU serialises once, none before the write.
      const char* sync = c.isa == Isa::rv64 ? "fence.i" : "sync_core";
      for (int k = 0; k < cpus; ++k) CHECK(count(job, sync, k) == 1);
      for (const auto& e : job)
        if (e.what == sync) CHECK(e.cycle >= w->cycle);
      // No CPU leaves (EXIT) before every CPU has acknowledged RUN, i.e.
      // before the slowest one serialised.
      uint64_t last_sync = 0, first_exit = ~uint64_t{0};
      for (const auto& e : job) {
        if (e.what == sync) last_sync = std::max(last_sync, e.cycle);
        if (e.what == "stop_machine" && e.b == static_cast<uint64_t>(StopState::exit))
          first_exit = std::min(first_exit, e.cycle);
      }
      CHECK(first_exit > last_sync);
      CHECK(r.rig.eng->patcher().totals().stop_machines == 1);
    }
}

TEST_CASE("stop_machine costs more with more CPUs, and a CPU with interrupts off for N cycles delays it by about N",
          "[kprobes][patching]") {
  for (Isa isa : {Isa::rv64, Isa::x86_64}) {
    const Patching p = isa == Isa::rv64 ? Patching::patch_text : Patching::text_poke_smp;
    struct Stop {
      uint64_t cycles = 0;       // stop_machine's duration on the caller
      uint64_t spin_start = 0;   // CPU 2's timer interrupt that spun
      uint64_t entered2 = 0;     // CPU 2's stopper entry
      uint64_t began = 0;        // stop_machine's start on the caller
    };
    const uint64_t at = 300'000, off = 40'000;
    auto stop = [&](int cpus, bool spin) {
      Run r(isa, cpus, p);
      struct Irq : EventObserver {
        uint64_t from = 0, first = 0;
        void on_event(const Event& e) override {
          if (e.kind == EventKind::interrupt && e.cpu == 2 && e.cycle >= from && !first) first = e.cycle;
        }
      } irq;
      if (spin) {
        // Set 12,000 cycles before the operation: the next tick (every
        // 10,000 cycles) comes before it, and its spin covers it.
        irq.from = at - 12'000;
        r.rig.m.events().add(&irq);
        r.irqoff(2, off, irq.from);
      }
      r.op("p:pf do_fork", at, 0);
      r.finish();
      REQUIRE(r.rig.passed(r.result));
      const auto job = r.proto.job(0);
      const auto* d = find(job, "stop_machine-done");
      REQUIRE(d);
      Stop s{d->b, irq.first, 0, d->cycle - d->b};
      for (const auto& e : job)
        if (e.what == "stop_machine" && e.cpu == 2) {
          s.entered2 = e.cycle;
          break;
        }
      return s;
    };
    const uint64_t one = stop(1, false).cycles, four = stop(4, false).cycles, sixteen = stop(16, false).cycles;
    INFO(isa_name(isa) << ": 1/4/16 CPUs " << one << " " << four << " " << sixteen);
    // The IPIs alone (kIpiSendCycles each, sent one after the other) and
    // the last one's latency bound it from below; the rest (how soon each
    // CPU takes its IPI) varies with what the CPUs were doing.
    CHECK(four >= one + 3 * timing::kIpiSendCycles + timing::kIpiLatency);
    CHECK(sixteen >= one + 15 * timing::kIpiSendCycles + timing::kIpiLatency);
    CHECK(sixteen > four);
    // CPU 2 spins 40,000 cycles with interrupts off from a tick just before
    // the operation: its stopper, and so everyone's RUN, waits for it.
    const Stop s = stop(4, true);
    INFO("spin from " << s.spin_start << ", CPU 2's stopper at " << s.entered2 << ", stop_machine " << s.cycles);
    REQUIRE(s.spin_start > 0);
    REQUIRE(s.spin_start < at);
    const uint64_t spin_end = s.spin_start + off;
    CHECK(s.entered2 >= spin_end);
    // Delayed by the rest of the spin after stop_machine began, plus the
    // unhindered protocol's own length and the end of the tick's handler
    // (under CONFIG_PREEMPT it may switch threads before interrupts are
    // back on): within a tenth of the spin.
    REQUIRE(s.began < spin_end);
    CHECK(s.cycles >= spin_end - s.began);
    CHECK(s.cycles <= spin_end - s.began + four + off / 10);
  }
}

TEST_CASE("protocol runs are the reference schedule's, for every protocol", "[kprobes][patching][reference]") {
  struct Case {
    Isa isa;
    Patching p;
  };
  for (const Case& c : {Case{Isa::rv64, Patching::patch_text}, Case{Isa::x86_64, Patching::text_poke},
                        Case{Isa::x86_64, Patching::text_poke_smp}})
    for (uint64_t seed : {1ull, 2ull}) {
      auto run = [&](bool reference) {
        KprobeRig rig(kernel_image(c.isa), 4, seed, StepMode::modern, 1, reference);
        rig.eng->set_patching(c.p);
        ProbeSession session(*rig.eng, nullptr);
        TraceHasher h;
        rig.m.events().add(&h);
        ProbeOpQueue q(session,
                       events::parse_probe_script("@200000 p:pf do_fork\n@260000 r:rf fib_recursive\n@400000 disable pf\n"
                                                  "@450000 kprobes-enabled 0\n@520000 kprobes-enabled 1\n@600000 -:pf\n",
                                                  "t", rig.eng->arch()),
                       1, "t");
        RunResult r = q.run(rig.m);
        REQUIRE(rig.passed(r));
        INFO(rig.text_diff(false));
        CHECK(rig.text_diff(false).find("fib_recursive") != std::string::npos);  // rf still armed at the end
        return std::make_pair(r.cycles, h.value());
      };
      INFO(isa_name(c.isa) << " " << patching_name(c.p) << " seed " << seed);
      CHECK(run(false) == run(true));
    }
}

namespace {

// Every fetch at the patch site, by what it executed: the old nop, the
// int3 (text_poke_bp's), the new jmp, or anything else (a torn mix).
struct SiteFetches : EventObserver {
  uint64_t site = 0;
  uint64_t old_insn = 0, new_insn = 0;  // little-endian, 5 bytes
  uint64_t olds = 0, int3s = 0, news = 0, torn = 0, pokes = 0;
  bool wants_insns() const override { return true; }
  void on_event(const Event& e) override {
    if (e.kind == EventKind::probe && e.text == "poke-int3") ++pokes;
    if (e.kind != EventKind::insn || e.a != site) return;
    const uint64_t five = e.b & 0xff'ffff'ffffull;
    if ((e.b & 0xff) == 0xcc)
      ++int3s;
    else if (five == old_insn)
      ++olds;
    else if (five == new_insn)
      ++news;
    else
      ++torn;
  }
};

}  // namespace

TEST_CASE("text_poke_bp turns a live 5-byte nop into a jmp: no CPU fetches a torn instruction, a CPU at the "
          "temporary int3 executes the new jmp by emulation",
          "[kprobes][patching]") {
  for (int cpus : {1, 4, 16}) {
    KprobeRig rig(kernel_image(Isa::x86_64), cpus, 9);
    SiteFetches f;
    f.site = rig.sym("ksim_patch_site");
    const uint64_t alt = rig.sym("ksim_patch_alt");
    REQUIRE(f.site);
    REQUIRE(alt);
    const int32_t rel = static_cast<int32_t>(alt - (f.site + 5));
    const std::vector<uint8_t> jmp = {0xe9, static_cast<uint8_t>(rel), static_cast<uint8_t>(rel >> 8),
                                      static_cast<uint8_t>(rel >> 16), static_cast<uint8_t>(rel >> 24)};
    f.old_insn = 0x00'441f0full;
    for (int i = 4; i >= 0; --i) f.new_insn = f.new_insn << 8 | jmp[static_cast<size_t>(i)];
    rig.m.events().add(&f);
    Protocol proto;
    rig.m.events().add(&proto);
    RunLimits lim;
    lim.cycle = 400'000;
    REQUIRE(rig.m.run(lim).end == RunResult::End::paused);
    rig.eng->begin_op(0);
    REQUIRE(rig.eng->text_poke_bp(f.site, jmp) == 0);
    rig.eng->end_op();
    RunResult r = rig.m.run();
    INFO("cpus " << cpus << ": " << r.reason << " olds " << f.olds << " int3s " << f.int3s << " news " << f.news
                 << " pokes " << f.pokes);
    REQUIRE(rig.passed(r));
    CHECK(f.torn == 0);
    CHECK(f.olds > 0);
    CHECK(f.news > 0);
    CHECK(f.int3s == f.pokes);  // every int3 reached went to the handler
    // The three writes, each followed by a sync on every other online CPU.
    const auto job = proto.job(0);
    CHECK(count(job, "sync_core") == 3u * static_cast<uint64_t>(cpus));
    // Every call that took the new path: the jmp, or its emulation at the int3.
    const uint64_t calls = rig.read<uint64_t>(rig.sym("ksim_patch_alt_calls"));
    CHECK(calls == f.news + f.pokes);
    uint8_t now[5];
    rig.m.bus().read_bytes(f.site, now, 5);
    CHECK(std::vector<uint8_t>(now, now + 5) == jmp);
  }
  // Refusals: not an instruction the handler emulates, a length mismatch.
  KprobeRig rig(kernel_image(Isa::x86_64), 1);
  const uint64_t site = rig.sym("ksim_patch_site");
  CHECK(rig.eng->text_poke_bp(site, {0x48, 0x89, 0xc0, 0x90, 0x90}) < 0);  // mov rax, rax; nop; nop
  CHECK(rig.eng->text_poke_bp(site, {0x90}) < 0);
  KprobeRig rv(kernel_image(Isa::rv64), 1);
  CHECK(rv.eng->text_poke_bp(rv.sym("do_fork"), {0x13, 0, 0, 0}) < 0);
}

TEST_CASE("unregistering waits for an RCU grace period made of the kernel's own quiescent states, which a CPU "
          "spinning with interrupts off holds up",
          "[kprobes][patching][rcu]") {
  int held_up = 0;
  for (Isa isa : {Isa::rv64, Isa::x86_64})
    for (bool spin : {false, true}) {
      Run r(isa, 4, kprobes::default_patching(isa));
      const uint64_t remove_at = 400'000, off = 40'000;
      r.op("p:pf do_fork", 300'000, 0);
      struct Irq : EventObserver {
        uint64_t from = 0, first = 0;
        void on_event(const Event& e) override {
          if (e.kind == EventKind::interrupt && e.cpu == 2 && e.cycle >= from && !first) first = e.cycle;
        }
      } irq;
      if (spin) irq.from = remove_at + 2'000;  // after the disarm: the spin meets the grace period
      r.op("-:pf", remove_at, 0);
      if (spin) {
        r.rig.m.events().add(&irq);
        r.irqoff(2, off, irq.from);
      }
      r.finish();
      INFO(isa_name(isa) << (spin ? " with CPU 2 spinning" : ""));
      REQUIRE(r.rig.passed(r.result));
      // The removal: disarmed through the protocol, then synchronize_rcu.
      const auto& ev = r.proto.ev;
      auto at = [&](const std::string& what) {
        for (size_t i = 0; i < ev.size(); ++i)
          if (ev[i].what == what && ev[i].cycle >= remove_at) return i;
        return ev.size();
      };
      const size_t sync = at("synchronize_rcu"), start = at("gp-start"), end = at("gp-end");
      REQUIRE(sync < ev.size());
      REQUIRE(start < ev.size());
      REQUIRE(end < ev.size());
      CHECK(sync <= start);
      CHECK(start < end);
      // Each of the 4 CPUs reported exactly one quiescent state in between.
      std::vector<int> qs(4, 0);
      for (size_t i = start; i < end; ++i)
        if (ev[i].what == "rcu-qs") ++qs[static_cast<size_t>(ev[i].cpu)];
      CHECK(qs == std::vector<int>{1, 1, 1, 1});
      CHECK(ev[end].c == ev[end].cycle - ev[start].cycle);  // its length
      CHECK(r.rig.eng->rcu().completed() >= 1);
      if (spin) {
        // CPU 2 takes no interrupt while it spins, so it reports nothing
        // then, and the grace period cannot end before its report. The
        // kernel records when the spin began.
        uint64_t began = 0;
        r.rig.m.bus().read_bytes(r.rig.sym("irqoff_spin_began") + 16, &began, 8);
        REQUIRE(began >= irq.from);
        const uint64_t spin_end = began + off;
        uint64_t qs2 = 0;
        for (size_t i = start; i < end; ++i)
          if (ev[i].what == "rcu-qs" && ev[i].cpu == 2) qs2 = ev[i].cycle;
        INFO("spin " << began << ".." << spin_end << ", grace period " << ev[start].cycle << ".." << ev[end].cycle
                     << ", cpu 2's report " << qs2);
        CHECK((qs2 <= began || qs2 >= spin_end));
        CHECK(ev[end].cycle >= qs2);
        if (ev[start].cycle < began && qs2 > began) CHECK(ev[end].cycle >= spin_end);  // it met the spin: held up
        // The spin held it up in at least one of the two ISAs' runs.
        held_up += ev[end].cycle >= spin_end;
      }
      CHECK(r.rig.text_diff(false).empty());
    }
  CHECK(held_up >= 1);
}

TEST_CASE("a removed kretprobe's instances are freed by call_rcu: each after a grace period that started once it "
          "was released (at the removal, or at its function's return)",
          "[kprobes][patching][rcu]") {
  for (Isa isa : {Isa::rv64, Isa::x86_64}) {
    INFO(isa_name(isa));
    Run r(isa, 4, kprobes::default_patching(isa));
    struct Obs : EventObserver {
      uint64_t removed_at = 0;
      std::vector<std::pair<uint64_t, uint64_t>> gps;  // (start, end)
      std::vector<uint64_t> frees, orphan_returns;
      uint64_t open = 0;
      void on_event(const Event& e) override {
        if (e.kind != EventKind::probe) return;
        const std::string w = e.text;
        if (w == "gp-start") open = e.cycle;
        if (w == "gp-end") gps.emplace_back(open, e.cycle);
        if (w == "kretprobe-inst-free") frees.push_back(e.cycle);
        if ((w == "kretprobe-return" || w == "rethook-return") && removed_at && e.cycle >= removed_at) orphan_returns.push_back(e.cycle);
      }
    } obs;
    r.rig.m.events().add(&obs);
    // fib_recursive recurses: instances are in flight when it is removed.
    r.op("r4:rf fib_recursive", 300'000, 0);
    obs.removed_at = 420'000;
    r.op("-:rf", obs.removed_at, 0);
    r.finish();
    REQUIRE(r.rig.passed(r.result));
    const EngineStats& st = r.rig.eng->stats();
    CHECK(st.instances_freed == 4);  // r4: four instances in all
    CHECK(st.instances_pending == 0);
    CHECK(st.rcu_violations == 0);
    // Freed during the run, each at the end of a grace period that began
    // after the removal.
    REQUIRE(obs.frees.size() == 4);
    for (uint64_t f : obs.frees) {
      bool covered = false;
      for (auto [b, e] : obs.gps) covered |= e == f && b >= obs.removed_at;
      CHECK(covered);
    }
    // The instances in flight returned after the removal (no handler), and
    // their frees come after those returns.
    CHECK(!obs.orphan_returns.empty());
    for (uint64_t ret : obs.orphan_returns) {
      size_t later = 0;
      for (uint64_t f : obs.frees) later += f > ret;
      CHECK(later >= 1);
    }
  }
}
