// What the guests give the kprobes engine, checked from the host side on
// both ISAs: kretprobe_trampoline and jprobe_return are never-probe
// functions made of breakpoints; the kernel's jprobe handlers, their logs
// and the ksim_kernel_abi table exist, and walking the table finds each
// CPU's current thread; the probe_bench guests run bench_target exactly
// bench_calls times and power off with status 0.
#include <catch2/catch.hpp>

#include <array>
#include <cstring>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "sim/elf/elf_image.hpp"
#include "sim/events.hpp"
#include "sim/machine.hpp"

using namespace ksim;

namespace {

struct Guest {
  const char* label;
  Isa isa;
  const char* path;  // under the build directory
};

const Guest kKernels[] = {
    {"rv64 preempt", Isa::rv64, "/workloads/rv64/kernel_preempt.elf"},
    {"rv64 nopreempt", Isa::rv64, "/workloads/rv64/kernel_nopreempt.elf"},
    {"x86 preempt", Isa::x86_64, "/workloads/x86/kernel_x86_preempt.elf"},
    {"x86 nopreempt", Isa::x86_64, "/workloads/x86/kernel_x86_nopreempt.elf"},
};
const Guest kBenches[] = {
    {"rv64 probe_bench", Isa::rv64, "/workloads/rv64/probe_bench_rv64.elf"},
    {"x86 probe_bench", Isa::x86_64, "/workloads/x86/probe_bench_x86.elf"},
};

constexpr uint64_t kBenchCalls = 100000;           // KSIM_PROBE_BENCH_CALLS
constexpr uint64_t kAbiMagic = 0x314942414d49534bull;  // "KSIMABI1"
constexpr int kThreadsPerCpu = 3;                  // CONFIG_THREADS_PER_CPU

// The ISA's breakpoint as the engine expects it: 32-bit ebreak, or int3.
std::vector<uint8_t> breakpoint(Isa isa) {
  if (isa == Isa::rv64) return {0x73, 0x00, 0x10, 0x00};
  return {0xcc};
}

struct Loaded {
  ElfImage image;
  Machine machine;
  Loaded(const Guest& g, int cpus = 1)
      : image(load_elf_file(std::string(KSIM_BINARY_DIR) + g.path, g.isa)), machine(config(g, cpus)) {
    machine.load(image);
  }
  static MachineConfig config(const Guest& g, int cpus) {
    MachineConfig cfg;
    cfg.isa = g.isa;
    cfg.cpus = cpus;
    return cfg;
  }
  const Symbol& sym(const char* name) const {
    const Symbol* s = machine.symbols().find(name);
    INFO("symbol " << name);
    REQUIRE(s);
    return *s;
  }
  std::vector<uint8_t> bytes(uint64_t addr, size_t n) {
    std::vector<uint8_t> v(n);
    REQUIRE(machine.bus().read_bytes(addr, v.data(), n));
    return v;
  }
  uint64_t u64(uint64_t addr) {
    uint64_t v = 0;
    REQUIRE(machine.bus().read_bytes(addr, &v, 8));
    return v;
  }
  uint32_t u32(uint64_t addr) {
    uint32_t v = 0;
    REQUIRE(machine.bus().read_bytes(addr, &v, 4));
    return v;
  }
  std::string cstr(uint64_t addr, size_t max) {
    std::vector<char> v(max);
    REQUIRE(machine.bus().read_bytes(addr, v.data(), max));
    return std::string(v.data(), strnlen(v.data(), max));
  }
  std::set<uint64_t> blacklist() {
    std::set<uint64_t> out;
    for (uint64_t a = sym("__start__kprobe_blacklist").addr; a < sym("__stop__kprobe_blacklist").addr; a += 8)
      out.insert(u64(a));
    return out;
  }
};

// A function made of two breakpoints, never probeable: in .kprobes.text and
// in the blacklist.
void check_breakpoint_stub(Loaded& l, Isa isa, const char* name) {
  INFO(name);
  const Symbol& s = l.sym(name);
  const std::vector<uint8_t> bp = breakpoint(isa);
  CHECK(s.kind == Symbol::Kind::function);
  CHECK(s.size == 2 * bp.size());
  CHECK(l.bytes(s.addr, bp.size()) == bp);
  CHECK(l.bytes(s.addr + bp.size(), bp.size()) == bp);
  CHECK(s.addr >= l.sym("__kprobes_text_start").addr);
  CHECK(s.addr + s.size <= l.sym("__kprobes_text_end").addr);
  CHECK(l.blacklist().count(s.addr) == 1);
}

void check_engine_areas(Loaded& l, Isa isa) {
  check_breakpoint_stub(l, isa, "kretprobe_trampoline");
  check_breakpoint_stub(l, isa, "jprobe_return");
  const uint64_t slots = l.sym("__kprobe_slots_start").addr;
  CHECK(l.sym("__kprobe_slots_end").addr - slots == 64 * 1024);
  CHECK(slots % 4096 == 0);
  CHECK(l.bytes(slots, breakpoint(isa).size()) == breakpoint(isa));
}

// The current thread of `cpu` as the host finds it through ksim_kernel_abi.
struct CurrentThread {
  bool set = false;
  std::string comm;
  uint32_t tid = 0;
};
CurrentThread current_thread(Loaded& l, int cpu) {
  const uint64_t abi = l.sym("ksim_kernel_abi").addr;
  const uint64_t percpu = l.u64(abi + 8), stride = l.u64(abi + 16), curr_off = l.u64(abi + 24);
  const uint64_t name_off = l.u64(abi + 32), tid_off = l.u64(abi + 40), name_size = l.u64(abi + 48);
  const uint64_t t = l.u64(percpu + uint64_t(cpu) * stride + curr_off);
  if (t == 0) return {};
  return {true, l.cstr(t + name_off, name_size), l.u32(t + tid_off)};
}

// Idle: swapper/<cpu>, tid 0; worker j: worker/<cpu>:<j>, tid 1 + cpu * 3 + j.
void check_thread_identity(const CurrentThread& t, int cpu) {
  INFO("cpu " << cpu << ": comm '" << t.comm << "', tid " << t.tid);
  REQUIRE(t.set);
  std::smatch m;
  if (t.comm == "swapper/" + std::to_string(cpu)) {
    CHECK(t.tid == 0);
  } else {
    REQUIRE(std::regex_match(t.comm, m, std::regex("worker/([0-9]+):([0-9]+)")));
    CHECK(std::stoi(m[1]) == cpu);
    const int j = std::stoi(m[2]);
    CHECK(j < kThreadsPerCpu);
    CHECK(t.tid == uint32_t(1 + cpu * kThreadsPerCpu + j));
  }
}

uint64_t bench_expected_result(uint64_t calls) {
  uint64_t acc = 0;  // probe_bench.c: acc += bench_target(i, acc)
  for (uint64_t i = 0; i < calls; ++i) acc += ((i << 3) ^ (acc >> 5)) + (i | 1) - (acc & 0xff);
  return acc;
}

// Counts the instructions executed at one address (every call's entry).
struct PcCounter : EventObserver {
  uint64_t pc = 0, hits = 0;
  void on_event(const Event& e) override { hits += e.kind == EventKind::insn && e.a == pc; }
  bool wants_insns() const override { return true; }
};

}  // namespace

TEST_CASE("Kernel images: trampolines, jprobe handlers and logs, the ABI table", "[kernel][kprobes-guest]") {
  for (const Guest& g : kKernels) {
    INFO(g.label);
    Loaded l(g);
    check_engine_areas(l, g.isa);

    const std::set<uint64_t> bl = l.blacklist();
    for (const char* fn : {"jprobe_do_fork", "jprobe_vfs_read", "jprobe_sys_open", "jprobe_helper"}) {
      INFO(fn);
      const Symbol& s = l.sym(fn);
      CHECK(s.kind == Symbol::Kind::function);
      CHECK(s.size > 0);
      CHECK(bl.count(s.addr) == 0);
      CHECK(s.addr >= l.sym("__kprobes_text_end").addr);  // ordinary, probeable text
    }
    for (const char* log : {"jprobe_log_do_fork", "jprobe_log_vfs_read", "jprobe_log_sys_open"}) {
      INFO(log);
      CHECK(l.sym(log).size == 7 * 8);  // calls, last_args[6]
      CHECK(l.u64(l.sym(log).addr) == 0);
    }

    const Symbol& abi = l.sym("ksim_kernel_abi");
    REQUIRE(abi.size == 8 * 8);
    const Symbol& percpu = l.sym("percpu_areas");
    const uint64_t stride = l.u64(abi.addr + 16), curr = l.u64(abi.addr + 24);
    const uint64_t name = l.u64(abi.addr + 32), tid = l.u64(abi.addr + 40), name_size = l.u64(abi.addr + 48);
    CHECK(l.u64(abi.addr) == kAbiMagic);
    CHECK(l.u64(abi.addr + 8) == percpu.addr);
    CHECK(stride * 64 == percpu.size);  // CONFIG_MAX_CPUS areas
    CHECK(curr % 8 == 0);
    CHECK(curr + 8 <= stride);
    CHECK(name_size == 16);
    CHECK(tid % 4 == 0);
    CHECK((tid >= name + name_size || tid + 4 <= name));  // no overlap
    CHECK(name + name_size < stride);  // a struct thread is embedded in struct percpu (idle)
    CHECK(tid + 4 < stride);
    // The IPI request word (kprobes/patching.hpp sets IPI_KPROBES in it).
    const uint64_t ipi_pending = l.u64(abi.addr + 56);
    CHECK(ipi_pending % 4 == 0);
    CHECK(ipi_pending + 4 <= stride);
    CHECK((ipi_pending + 4 <= curr || ipi_pending >= curr + 8));
  }
}

TEST_CASE("The ABI table finds each CPU's current thread in a running kernel", "[kernel][kprobes-guest]") {
  for (const Guest& g : kKernels) {
    INFO(g.label);
    Loaded l(g, 4);
    // Before boot nothing is set up: curr is NULL everywhere.
    for (int c = 0; c < 4; ++c) CHECK(!current_thread(l, c).set);
    // Mid-run (workers busy), then at the end (CPU 0 powers off from idle).
    std::set<std::string> seen;
    for (uint64_t cycle = 300'000; cycle <= 900'000; cycle += 150'000) {
      RunLimits lim;
      lim.cycle = cycle;
      REQUIRE(l.machine.run(lim).end == RunResult::End::paused);
      for (int c = 0; c < 4; ++c) {
        CurrentThread t = current_thread(l, c);
        check_thread_identity(t, c);
        seen.insert(t.comm);
      }
    }
    CHECK(seen.size() > 4);  // not only the idle contexts
    const RunResult r = l.machine.run();
    INFO(l.machine.console());
    REQUIRE(r.end == RunResult::End::poweroff);
    REQUIRE(r.status == 0);
    CurrentThread t0 = current_thread(l, 0);
    CHECK(t0.comm == "swapper/0");
    CHECK(t0.tid == 0);
  }
}

TEST_CASE("probe_bench: the engine's areas, and bench_target runs bench_calls times", "[kernel][kprobes-guest]") {
  for (const Guest& g : kBenches) {
    INFO(g.label);
    Loaded l(g);
    check_engine_areas(l, g.isa);
    for (const char* fn : {"bench_target", "jprobe_bench_target"}) {
      INFO(fn);
      CHECK(l.sym(fn).kind == Symbol::Kind::function);
      CHECK(l.sym(fn).addr >= l.sym("__kprobes_text_end").addr);
    }
    CHECK(l.sym("bench_calls").kind == Symbol::Kind::object);
    CHECK(l.u64(l.sym("bench_calls").addr) == kBenchCalls);

    PcCounter count;
    count.pc = l.sym("bench_target").addr;
    l.machine.events().add(&count);
    const RunResult r = l.machine.run();
    INFO(l.machine.console());
    REQUIRE(r.end == RunResult::End::poweroff);
    CHECK(r.status == 0);
    CHECK(count.hits == kBenchCalls);
    CHECK(l.u64(l.sym("bench_result").addr) == bench_expected_result(kBenchCalls));
    CHECK_THAT(l.machine.console(), Catch::Contains("probe_bench: 100000 calls of bench_target"));
  }
}

TEST_CASE("probe_bench: the host may change bench_calls before the run", "[kernel][kprobes-guest]") {
  for (const Guest& g : kBenches) {
    INFO(g.label);
    Loaded l(g);
    const uint64_t calls = 1234;
    REQUIRE(l.machine.bus().write_bytes(l.sym("bench_calls").addr, &calls, 8));
    PcCounter count;
    count.pc = l.sym("bench_target").addr;
    l.machine.events().add(&count);
    REQUIRE(l.machine.run().end == RunResult::End::poweroff);
    CHECK(count.hits == calls);
    CHECK(l.u64(l.sym("bench_result").addr) == bench_expected_result(calls));
  }
}
