// The guest kernel on the deterministic SMP machine: same seed, same run;
// different seeds, different interleavings; the kernel's own checks pass
// everywhere; preemption only in the preempt image; checkpoints and
// stepping back on a busy 4-CPU machine.
#include <catch2/catch.hpp>

#include <memory>
#include <regex>
#include <set>
#include <string>

#include "sim/checkpoint.hpp"
#include "sim/timeline.hpp"

using namespace ksim;

namespace {

std::string kernel(bool preempt) {
  return std::string(KSIM_BINARY_DIR) + "/workloads/rv64/kernel_" + (preempt ? "preempt" : "nopreempt") + ".elf";
}

const ElfImage& image(bool preempt) {
  static const ElfImage pre = load_elf_file(kernel(true), Isa::rv64);
  static const ElfImage nopre = load_elf_file(kernel(false), Isa::rv64);
  return preempt ? pre : nopre;
}

// The order in which CPUs did observable things (who sent and took which
// IPI and interrupt, who printed), without the cycles: if two runs differ
// here, their interleavings differ.
struct Interleaving : EventObserver {
  std::string order;
  void on_event(const Event& e) override {
    if (e.kind == EventKind::ipi_send || e.kind == EventKind::ipi_recv || e.kind == EventKind::interrupt ||
        e.kind == EventKind::console)
      order += std::to_string(e.cpu) + event_kind_name(e.kind)[0] + ",";
  }
};

struct KernelRun {
  RunResult result;
  std::string console;
  uint64_t hash = 0;
  std::string order;
};

KernelRun run_kernel(bool preempt, int cpus, uint64_t seed, uint64_t quantum = 1) {
  MachineConfig cfg;
  cfg.cpus = cpus;
  cfg.seed = seed;
  cfg.quantum = quantum;
  Machine m(cfg);
  m.load(image(preempt));
  TraceHasher h;
  Interleaving il;
  m.events().add(&h);
  m.events().add(&il);
  KernelRun k;
  k.result = m.run();
  k.console = m.console();
  k.hash = h.value();
  k.order = il.order;
  return k;
}

uint64_t total(const std::string& console, const std::string& what) {
  // Sums "<n> <what>" over the per-CPU "done:" lines.
  std::regex re("\\] done: .*?([0-9]+) " + what);
  uint64_t sum = 0;
  for (std::sregex_iterator it(console.begin(), console.end(), re), end; it != end; ++it)
    sum += std::stoull((*it)[1]);
  return sum;
}

void require_passed(const KernelRun& k) {
  INFO(k.console);
  REQUIRE(k.result.end == RunResult::End::poweroff);
  REQUIRE(k.result.status == 0);
  REQUIRE_THAT(k.console, Catch::Contains("all work done"));
}

}  // namespace

TEST_CASE("Same seed, same trace hash; different seeds, different interleavings (20 seeds, 4 CPUs)",
          "[kernel][determinism]") {
  std::set<uint64_t> hashes;
  std::set<std::string> orders;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    KernelRun a = run_kernel(true, 4, seed);
    KernelRun b = run_kernel(true, 4, seed);
    INFO("seed " << seed);
    require_passed(a);
    require_passed(b);
    CHECK(a.hash == b.hash);
    CHECK(a.result.cycles == b.result.cycles);
    CHECK(a.order == b.order);
    CHECK(a.console == b.console);
    hashes.insert(a.hash);
    orders.insert(a.order);
  }
  CHECK(hashes.size() == 20);
  // Seeds reorder what the CPUs do, not only when: nearly every seed gives
  // its own interleaving.
  CHECK(orders.size() >= 18);
}

TEST_CASE("The spinlock-protected counter is exact under 8 CPUs", "[kernel]") {
  KernelRun k = run_kernel(true, 8, 11);
  require_passed(k);
  std::smatch m;
  REQUIRE(std::regex_search(k.console, m,
                            std::regex("([0-9]+) threads x ([0-9]+) iterations, .* counter ([0-9]+)")));
  const uint64_t threads = std::stoull(m[1]), iters = std::stoull(m[2]), counter = std::stoull(m[3]);
  CHECK(threads == 8 * 3);
  uint64_t expected = 0;  // each thread adds (i % 7) + 1 for i < iters (workload.c)
  for (uint64_t i = 0; i < iters; ++i) expected += i % 7 + 1;
  CHECK(counter == expected * threads);
}

TEST_CASE("Timer preemption moves threads off CPUs in the preempt image and never in nopreempt", "[kernel]") {
  for (uint64_t seed : {0, 5}) {
    KernelRun pre = run_kernel(true, 4, seed);
    KernelRun nopre = run_kernel(false, 4, seed);
    require_passed(pre);
    require_passed(nopre);
    INFO(pre.console << "\n---\n" << nopre.console);
    CHECK(total(pre.console, "preemptions") > 0);
    CHECK(total(nopre.console, "preemptions") == 0);
    // Both images switch threads (yield, sleep); only one is preemptive.
    CHECK(total(nopre.console, "switches") > 0);
  }
}

TEST_CASE("The kernel passes its own checks on 1, 2, 16 and 64 CPUs and with a coarse quantum", "[kernel]") {
  for (int cpus : {1, 2, 16, 64}) {
    INFO(cpus << " CPUs");
    require_passed(run_kernel(cpus % 2 == 0, cpus, 3, cpus > 8 ? 100 : 1));
  }
  require_passed(run_kernel(true, 4, 9, 1000));
}

TEST_CASE("IPIs are sent and received between CPUs, as events", "[kernel]") {
  MachineConfig cfg;
  cfg.cpus = 4;
  Machine m(cfg);
  m.load(image(true));
  struct Count : EventObserver {
    int sent = 0, received = 0;
    void on_event(const Event& e) override {
      sent += e.kind == EventKind::ipi_send;
      received += e.kind == EventKind::ipi_recv;
    }
  } c;
  m.events().add(&c);
  REQUIRE(m.run().end == RunResult::End::poweroff);
  // The kernel counts the IPIs the CPUs' handlers took ("N ipis received"
  // in its totals line), and each CPU the IPIs it sent (its "done:" line):
  // the machine's events must agree with the guest's own counts.
  const std::string& con = m.console();
  std::smatch got;
  REQUIRE(std::regex_search(con, got, std::regex(R"(totals: .* (\d+) ipis received)")));
  // One IPI escapes the counts: when the last CPU to report is not CPU 0,
  // it wakes CPU 0 after its own "done:" line (report_done in main.c), and
  // CPU 0 takes it after its report too.
  std::string last_done;
  const std::regex done_re(R"(\[cpu (\d+)\] done:)");
  for (std::sregex_iterator it(con.begin(), con.end(), done_re), end; it != end; ++it)
    last_done = (*it)[1];
  const int late = last_done == "0" ? 0 : 1;
  CHECK(c.received == std::stoi(got[1]) + late);
  CHECK(c.received > 0);
  CHECK(total(con, "ipis sent") + late == static_cast<uint64_t>(c.sent));
}

TEST_CASE("Checkpoint and restore of the 4-CPU kernel reproduce the rest of the run exactly", "[kernel][checkpoint]") {
  MachineConfig cfg;
  cfg.cpus = 4;
  cfg.seed = 17;
  Machine m(cfg);
  m.load(image(true));
  RunLimits half;
  half.cycle = 1'000'000;
  REQUIRE(m.run(half).end == RunResult::End::paused);
  const auto ckpt = save_checkpoint(m);
  TraceHasher h1;
  m.events().add(&h1);
  RunResult end1 = m.run();
  require_passed({end1, m.console(), 0, ""});

  Machine r(read_checkpoint_header(ckpt).config);
  restore_checkpoint(r, ckpt);
  TraceHasher h2;
  r.events().add(&h2);
  RunResult end2 = r.run();
  CHECK(end2.end == end1.end);
  CHECK(end2.cycles == end1.cycles);
  CHECK(end2.instret == end1.instret);
  CHECK(h2.value() == h1.value());
  CHECK(r.console() == m.console());
}

TEST_CASE("Step back by one step on the 4-CPU kernel lands on exactly the previous state", "[kernel][timeline]") {
  MachineConfig cfg;
  cfg.cpus = 4;
  cfg.seed = 2;
  Machine m(cfg);
  m.load(image(true));
  Timeline tl(m, 20'000);
  REQUIRE(tl.forward(123'457).end == RunResult::End::paused);
  const auto before = save_checkpoint(m);
  for (int i = 0; i < 3; ++i) {
    REQUIRE(tl.forward(1).end == RunResult::End::paused);
    REQUIRE(tl.back(1));
    CHECK(save_checkpoint(m) == before);
  }
}

TEST_CASE("The kernel's kprobe blacklist lists function starts, including the trap and panic paths", "[kernel]") {
  MachineConfig cfg;
  Machine m(cfg);
  m.load(image(true));
  const SymbolTable& syms = m.symbols();
  const Symbol* start = syms.find("__start__kprobe_blacklist");
  const Symbol* stop = syms.find("__stop__kprobe_blacklist");
  REQUIRE(start);
  REQUIRE(stop);
  REQUIRE(stop->addr > start->addr);
  REQUIRE((stop->addr - start->addr) % 8 == 0);
  std::set<std::string> listed;
  for (uint64_t a = start->addr; a < stop->addr; a += 8) {
    uint64_t fn = 0;
    REQUIRE(m.bus().read_bytes(a, &fn, 8));
    const Symbol* s = syms.containing(fn);
    INFO("blacklist entry 0x" << std::hex << fn);
    REQUIRE(s);
    CHECK(s->addr == fn);  // a function's first byte, as NOKPROBE_SYMBOL records
    listed.insert(s->name);
  }
  for (const char* must : {"rv64_handle_trap", "panic", "__schedule", "printk", "memcpy", "kretprobe_trampoline",
                           "jprobe_return"}) {
    INFO(must);
    CHECK(listed.count(must) == 1);
  }
  // The probe targets themselves are not blacklisted.
  for (const char* target : {"do_fork", "vfs_read", "sys_open", "fib_recursive", "do_sleepy_work", "counter_add"}) {
    INFO(target);
    CHECK(syms.find(target));
    CHECK(listed.count(target) == 0);
  }
  // Room for instruction slots: 64 KiB between the slot symbols.
  const Symbol* slots = syms.find("__kprobe_slots_start");
  const Symbol* slots_end = syms.find("__kprobe_slots_end");
  REQUIRE(slots);
  REQUIRE(slots_end);
  CHECK(slots_end->addr - slots->addr == 64 * 1024);
}
