// Code as CPUs see it (--code-model, docs/CODE_MODEL.md): two-CPU
// bare-metal guests on both ISAs where one CPU keeps calling a function
// and counts, in memory, which of two versions of it ran, while the other
// CPU (or the host, on its behalf) rewrites the function. The counts are
// the guest's own observations; the expected values follow from the
// architectures' rules (x86: until the CPU serialises; RV64: until it runs
// fence.i), from the expiry bound timing::kStaleCodeMaxCycles, and, under
// --code-model strict, from every CPU seeing the store at its next fetch.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "cpu/timing.hpp"
#include "mem/memory_map.hpp"
#include "sim/checkpoint.hpp"
#include "sim/events.hpp"
#include "sim/machine.hpp"
#include "sim/machine_profiles.hpp"
#include "support/kprobe_rig.hpp"
#include "support/ksim_cli.hpp"
#include "support/rv64_asm.hpp"

using namespace ksim;

namespace {

constexpr uint64_t kStale = timing::kStaleCodeMaxCycles;

// Guest memory, as offsets from the RAM base: the function both CPUs call,
// each CPU's code, and a data page apart from the code page. T[v] counts
// the calls that returned v; LAST[v] (T + 64) is the low 32 bits of the
// cycle counter read after the last call that returned v; OWN holds what
// CPU 0 saw.
constexpr uint64_t kFn = 0x1000, kCpu1 = 0x1100, kCpu0 = 0x1200, kT = 0x8000, kLast = kT + 64, kFlag = 0x8100,
                   kOwn = 0x8200;

// Collects the code model's events as they are produced.
struct CodeEvents : EventObserver {
  std::vector<Event> stale, sync, miss;
  void on_event(const Event& e) override {
    if (e.kind == EventKind::stale_fetch) stale.push_back(e);
    if (e.kind == EventKind::code_sync) sync.push_back(e);
    if (e.kind == EventKind::cache_miss) miss.push_back(e);
  }
};

// A two-CPU machine running one of the guests below.
struct Rig {
  Machine m;
  uint64_t base;
  CodeEvents ev;
  // `v2`: timing model v2 with the ISA's machine profile, whose I-caches
  // decide who holds old code (docs/CODE_MODEL.md, "Under timing v2").
  // `trace_cache`: cache_miss events too (v2 only).
  Rig(Isa isa, CodeModel model, bool reference = false, bool v2 = false, bool trace_cache = false)
      : m([&] {
          MachineConfig c;
          c.isa = isa;
          c.cpus = 2;
          c.ram_size = 1 << 20;
          c.max_cycles = 10'000'000;
          c.code_model = model;
          c.reference_schedule = reference;
          if (v2) {
            c.profile = load_machine_profile(default_machine_name(isa));
            c.memory_model = default_memory_model(isa);
            c.trace_cache = trace_cache;
          }
          return c;
        }()),
        base(isa == Isa::x86_64 ? memmap::kRamBaseX86 : memmap::kRamBase) {
    m.events().add(&ev, EventStream::Delivery::immediate);
  }
  void bytes(uint64_t off, const std::vector<uint8_t>& b) { m.bus().write_bytes(base + off, b.data(), b.size()); }
  void words(uint64_t off, const std::vector<uint32_t>& w) { m.bus().write_bytes(base + off, w.data(), w.size() * 4); }
  uint64_t q(uint64_t off) {
    uint64_t v = 0;
    m.bus().read_bytes(base + off, &v, 8);
    return v;
  }
  uint64_t count(int v) { return q(kT + 8 * v); }
  uint64_t last(int v) { return q(kLast + 8 * v) & 0xffffffff; }
  void flag() {
    uint8_t one = 1;
    m.bus().write_bytes(base + kFlag, &one, 1);
  }
  void run_to(uint64_t cycle) {
    const RunResult r = m.run(RunLimits{cycle});
    INFO(r.reason);
    REQUIRE(r.end == RunResult::End::paused);
  }
};

// --- x86 ---------------------------------------------------------------------

void le32(std::vector<uint8_t>& v, uint64_t x) {
  for (int i = 0; i < 4; ++i) v.push_back(static_cast<uint8_t>(x >> (8 * i)));
}
void call(std::vector<uint8_t>& v, uint64_t at, uint64_t target) {
  v.push_back(0xe8);
  le32(v, target - (at + v.size() + 4));
}

// fn: mov eax, 1; ret. Patching its immediate to 2 is the rewrite.
const std::vector<uint8_t> kX86Fn = {0xb8, 0x01, 0x00, 0x00, 0x00, 0xc3};

// CPU 1: call fn; count its result and note the time; if the flag is set,
// clear it and run cpuid (serialising); again.
std::vector<uint8_t> x86_cpu1(uint64_t b) {
  const uint64_t at = b + kCpu1;
  std::vector<uint8_t> v;
  call(v, at, b + kFn);
  v.insert(v.end(), {0x89, 0xc3});  // mov ebx, eax
  v.insert(v.end(), {0x48, 0x83, 0x04, 0xdd});  // add qword [rbx*8 + T], 1
  le32(v, b + kT);
  v.push_back(0x01);
  v.insert(v.end(), {0x0f, 0x31});  // rdtsc
  v.insert(v.end(), {0x89, 0x04, 0xdd});  // mov [rbx*8 + LAST], eax
  le32(v, b + kLast);
  v.insert(v.end(), {0x80, 0x3c, 0x25});  // cmp byte [FLAG], 0
  le32(v, b + kFlag);
  v.push_back(0x00);
  v.push_back(0x74);  // je back to the call
  v.push_back(static_cast<uint8_t>(-static_cast<int>(v.size() + 1)));
  v.insert(v.end(), {0xc6, 0x04, 0x25});  // mov byte [FLAG], 0
  le32(v, b + kFlag);
  v.push_back(0x00);
  v.insert(v.end(), {0x0f, 0xa2});  // cpuid
  v.push_back(0xeb);  // jmp back to the call
  v.push_back(static_cast<uint8_t>(-static_cast<int>(v.size() + 1)));
  return v;
}

// CPU 0: call fn (OWN[0]), wait a little, patch fn's immediate to 2, call
// it again (OWN[1]: its own store), spin.
std::vector<uint8_t> x86_cpu0(uint64_t b, bool patch = true) {
  const uint64_t at = b + kCpu0;
  std::vector<uint8_t> v;
  call(v, at, b + kFn);
  v.insert(v.end(), {0x89, 0x04, 0x25});  // mov [OWN], eax
  le32(v, b + kOwn);
  v.push_back(0xb9);  // mov ecx, 100
  le32(v, 100);
  v.insert(v.end(), {0xff, 0xc9, 0x75, 0xfc});  // dec ecx; jnz
  if (patch) {
    v.insert(v.end(), {0xc7, 0x04, 0x25});  // mov dword [fn + 1], 2
    le32(v, b + kFn + 1);
    le32(v, 2);
    call(v, at, b + kFn);
    v.insert(v.end(), {0x89, 0x04, 0x25});  // mov [OWN + 8], eax
    le32(v, b + kOwn + 8);
  }
  v.insert(v.end(), {0xeb, 0xfe});  // spin
  return v;
}

void load_x86(Rig& r, bool patch = true) {
  r.bytes(kFn, kX86Fn);
  r.bytes(kCpu1, x86_cpu1(r.base));
  r.bytes(kCpu0, x86_cpu0(r.base, patch));
  for (int c = 0; c < 2; ++c) {
    r.m.cpu(c).set_pc(r.base + (c ? kCpu1 : kCpu0));
    r.m.cpu(c).set_gpr(4, r.base + 0x6000 + 0x1000 * c);  // rsp
  }
}

// --- RV64 --------------------------------------------------------------------

namespace rv = ksim::test::rv;
constexpr uint32_t kLiA0_1 = rv::li(rv::a0, 1), kLiA0_2 = rv::li(rv::a0, 2), kRet = 0x00008067,
                   kFenceI = 0x0000100f;
constexpr uint32_t slli(uint32_t rd, uint32_t rs1, int sh) { return rv::I(sh, rs1, 1, rd, 0x13); }
constexpr uint32_t jal(uint32_t rd, int32_t off) { return rv::J(off, rd); }
constexpr uint32_t kMcycle = 0xb00;

// Hart 1: call fn; count its result and note the time; if the flag is set,
// clear it and run fence.i; again. s1 = T, s2 = FLAG.
std::vector<uint32_t> rv_hart1() {
  std::vector<uint32_t> v = {
      jal(rv::ra, static_cast<int32_t>(kFn - kCpu1)),
      slli(rv::t0, rv::a0, 3),
      rv::add(rv::t0, rv::t0, rv::s1),
      rv::ld(rv::t1, rv::t0, 0),
      rv::addi(rv::t1, rv::t1, 1),
      rv::sd(rv::t1, rv::t0, 0),
      rv::csrrs(rv::t3, kMcycle, rv::zero),
      rv::sd(rv::t3, rv::t0, 64),
      rv::lb(rv::t2, rv::s2, 0),
  };
  v.push_back(rv::B(-static_cast<int32_t>(4 * v.size()), rv::zero, rv::t2, 0));  // beq t2, zero, start
  v.push_back(rv::sb(rv::zero, rv::s2, 0));
  v.push_back(kFenceI);
  v.push_back(jal(rv::zero, -static_cast<int32_t>(4 * v.size())));
  return v;
}

// Hart 0: call fn (OWN[0]), wait, store the new first instruction (t4) at
// fn (s4), call it (OWN[1]: without fence.i), fence.i, call it (OWN[2]),
// spin. s3 = OWN.
std::vector<uint32_t> rv_hart0(bool patch = true) {
  std::vector<uint32_t> v = {jal(rv::ra, static_cast<int32_t>(kFn - kCpu0)), rv::sd(rv::a0, rv::s3, 0),
                             rv::li(rv::t0, 100), rv::addi(rv::t0, rv::t0, -1), rv::B(-4, rv::zero, rv::t0, 1)};
  auto call_fn = [&] { v.push_back(jal(rv::ra, static_cast<int32_t>(kFn - kCpu0 - 4 * v.size()))); };
  if (patch) {
    v.push_back(rv::sw(rv::t4, rv::s4, 0));
    call_fn();
    v.push_back(rv::sd(rv::a0, rv::s3, 8));
    v.push_back(kFenceI);
    call_fn();
    v.push_back(rv::sd(rv::a0, rv::s3, 16));
  }
  v.push_back(jal(rv::zero, 0));
  return v;
}

void load_rv64(Rig& r, bool patch = true) {
  r.words(kFn, {kLiA0_1, kRet});
  r.words(kCpu1, rv_hart1());
  r.words(kCpu0, rv_hart0(patch));
  for (int c = 0; c < 2; ++c) {
    Cpu& h = r.m.cpu(c);
    h.set_pc(r.base + (c ? kCpu1 : kCpu0));
    h.set_gpr(rv::s1, r.base + kT);
    h.set_gpr(rv::s2, r.base + kFlag);
    h.set_gpr(rv::s3, r.base + kOwn);
    h.set_gpr(rv::s4, r.base + kFn);
    h.set_gpr(rv::t4, kLiA0_2);
  }
}

void load(Rig& r, bool patch = true) {
  if (r.m.config().isa == Isa::x86_64)
    load_x86(r, patch);
  else
    load_rv64(r, patch);
}

}  // namespace

TEST_CASE("code model x86: another CPU runs the old instruction until it serialises (cpuid); the storing CPU sees "
          "its own store at once",
          "[code_model]") {
  Rig r(Isa::x86_64, CodeModel::relaxed);
  load(r);
  r.run_to(2'000);
  CHECK(r.q(kOwn) == 1);
  CHECK(r.q(kOwn + 8) == 2);  // CPU 0's own store
  CHECK(r.count(1) > 20);
  CHECK(r.count(2) == 0);
  CHECK(r.m.cpu(1).code_view_stale());
  CHECK_FALSE(r.m.cpu(0).code_view_stale());
  // One stale fetch reported, on CPU 1, at fn, of CPU 0's store.
  REQUIRE(r.ev.stale.size() == 1);
  CHECK(r.ev.stale[0].cpu == 1);
  CHECK(r.ev.stale[0].a == r.base + kFn);
  CHECK(r.ev.stale[0].c == 0);
  const uint64_t stored = r.ev.stale[0].b;
  CHECK(stored > 0);
  CHECK(stored < 2'000);
  // Still old long after the store, with nothing serialising.
  r.run_to(stored + kStale / 2);
  CHECK(r.count(2) == 0);
  CHECK(r.ev.sync.empty());
  // cpuid: from the next call on, the new instruction.
  const uint64_t old_calls = r.count(1);
  r.flag();
  r.run_to(stored + kStale / 2 + 2'000);
  CHECK(r.count(2) > 20);
  CHECK(r.count(1) <= old_calls + 1);  // the call in flight when the flag was set
  CHECK_FALSE(r.m.cpu(1).code_view_stale());
  REQUIRE(r.ev.sync.size() == 1);
  CHECK(r.ev.sync[0].cpu == 1);
  CHECK(r.ev.sync[0].a == 1);
  CHECK(r.ev.stale.size() == 1);
}

TEST_CASE("code model RV64: every hart, the storing one included, runs the old instruction until its fence.i",
          "[code_model]") {
  Rig r(Isa::rv64, CodeModel::relaxed);
  load(r);
  r.run_to(2'000);
  CHECK(r.q(kOwn) == 1);
  CHECK(r.q(kOwn + 8) == 1);   // its own store, before its fence.i
  CHECK(r.q(kOwn + 16) == 2);  // after it
  CHECK(r.count(1) > 20);
  CHECK(r.count(2) == 0);
  CHECK(r.m.cpu(1).code_view_stale());
  CHECK_FALSE(r.m.cpu(0).code_view_stale());
  // Both harts fetched the old bytes once reported; hart 0 synced once.
  REQUIRE(r.ev.stale.size() == 2);
  for (const Event& e : r.ev.stale) {
    CHECK(e.a == r.base + kFn);
    CHECK(e.c == 0);
  }
  REQUIRE(r.ev.sync.size() == 1);
  CHECK(r.ev.sync[0].cpu == 0);
  const uint64_t stored = r.ev.stale[0].b;
  r.run_to(stored + kStale / 2);
  CHECK(r.count(2) == 0);
  const uint64_t old_calls = r.count(1);
  r.flag();
  r.run_to(stored + kStale / 2 + 2'000);
  CHECK(r.count(2) > 20);
  CHECK(r.count(1) <= old_calls + 1);
  CHECK_FALSE(r.m.cpu(1).code_view_stale());
  REQUIRE(r.ev.sync.size() == 2);
  CHECK(r.ev.sync[1].cpu == 1);
  CHECK(r.ev.sync[1].a == 1);
}

TEST_CASE("code model strict: every CPU sees the store at its next fetch, nobody is ever stale", "[code_model]") {
  const Isa isa = GENERATE(Isa::x86_64, Isa::rv64);
  INFO(isa_name(isa));
  Rig r(isa, CodeModel::strict);
  load(r);
  r.run_to(2'000);
  CHECK(r.q(kOwn) == 1);
  CHECK(r.q(kOwn + 8) == 2);
  if (isa == Isa::rv64) CHECK(r.q(kOwn + 16) == 2);
  CHECK(r.count(1) > 0);
  CHECK(r.count(2) > 20);
  // Once CPU 1 saw 2 it never saw 1 again: its last 1 precedes its first 2
  // (the last 1 is at most one loop before the store reached it).
  CHECK(r.last(1) < r.last(2));
  CHECK_FALSE(r.m.cpu(0).code_view_stale());
  CHECK_FALSE(r.m.cpu(1).code_view_stale());
  CHECK(r.ev.stale.empty());
  CHECK(r.ev.sync.empty());
}

TEST_CASE("code model: with nothing serialising, a stale view ends at the store's cycle plus kStaleCodeMaxCycles",
          "[code_model]") {
  const Isa isa = GENERATE(Isa::x86_64, Isa::rv64);
  INFO(isa_name(isa));
  Rig r(isa, CodeModel::relaxed);
  // CPU 1 spins on a jump to itself at fn (2 cycles a fetch); the host, as
  // CPU 0, turns the jump into a read of the cycle counter, which the
  // instructions after it store at LAST: the cycle of CPU 1's first fetch
  // that sees the store.
  const uint64_t fn = r.base + kFn;
  std::vector<uint8_t> patch;
  if (isa == Isa::x86_64) {
    std::vector<uint8_t> code = {0xeb, 0xfe, 0x89, 0x04, 0x25};  // spin; mov [LAST], eax
    le32(code, r.base + kLast);
    code.insert(code.end(), {0xeb, 0xfe});
    r.bytes(kFn, code);
    r.bytes(kCpu0, {0xeb, 0xfe});
    patch = {0x0f, 0x31};  // rdtsc
  } else {
    r.words(kFn, {jal(rv::zero, 0), rv::sd(rv::t3, rv::s5, 0), jal(rv::zero, 0)});
    r.words(kCpu0, {jal(rv::zero, 0)});
    const uint32_t csrr = rv::csrrs(rv::t3, kMcycle, rv::zero);
    patch.resize(4);
    std::memcpy(patch.data(), &csrr, 4);
    r.m.cpu(1).set_gpr(rv::s5, r.base + kLast);
  }
  r.m.cpu(0).set_pc(r.base + kCpu0);
  r.m.cpu(1).set_pc(fn);
  r.run_to(1'000);
  const uint64_t stored = r.m.cpu(0).cycle();
  r.m.bus().write_bytes(fn, patch.data(), patch.size(), Accessor{0, stored});
  CHECK(r.m.cpu(1).code_view_stale());
  CHECK(r.m.cpu(0).code_view_stale() == (isa == Isa::rv64));  // x86: its own store
  r.run_to(stored + kStale - 1);
  CHECK(r.last(0) == 0);
  CHECK(r.m.cpu(1).code_view_stale());
  r.run_to(stored + kStale + 100);
  CHECK_FALSE(r.m.cpu(1).code_view_stale());
  // Its first fetch at or after the bound, and none before it.
  CHECK(r.last(0) >= stored + kStale);
  CHECK(r.last(0) < stored + kStale + 2);
  CHECK(r.ev.sync.empty());  // expiry is no synchronisation
}

TEST_CASE("code model: serialize_code(), fetch_view() and code_view_stale() as documented", "[code_model]") {
  const Isa isa = GENERATE(Isa::x86_64, Isa::rv64);
  INFO(isa_name(isa));
  for (CodeModel model : {CodeModel::relaxed, CodeModel::strict}) {
    Rig r(isa, model);
    load(r, false);
    r.run_to(1'000);  // fn has been executed: its page is a code page
    const uint64_t fn = r.base + kFn;
    uint8_t before[8], seen[8], now[8];
    REQUIRE(r.m.bus().read_bytes(fn, before, 8));
    // The host rewrites fn's first 4 bytes as CPU 0.
    const uint8_t patch[4] = {0x90, 0x90, 0x90, 0x90};
    r.m.bus().write_bytes(fn, patch, 4, Accessor{0, r.m.cpu(0).cycle()});
    REQUIRE(r.m.bus().read_bytes(fn, now, 8));
    const bool relaxed = model == CodeModel::relaxed;
    for (int c = 0; c < 2; ++c) {
      Cpu& cpu = r.m.cpu(c);
      const bool stale = relaxed && (c == 1 || isa == Isa::rv64);
      CHECK(cpu.code_view_stale() == stale);
      REQUIRE(cpu.fetch_view(fn, seen, 8) == 8);
      CHECK(std::memcmp(seen, stale ? before : now, 8) == 0);
      // A view over a range's edge: the old bytes where the store was.
      REQUIRE(cpu.fetch_view(fn + 2, seen, 4) == 4);
      CHECK(std::memcmp(seen, stale ? before + 2 : now + 2, 4) == 0);
      cpu.serialize_code();
      CHECK_FALSE(cpu.code_view_stale());
      REQUIRE(cpu.fetch_view(fn, seen, 8) == 8);
      CHECK(std::memcmp(seen, now, 8) == 0);
    }
    // One code_sync per CPU that had a view, with the one store it dropped.
    CHECK(r.ev.sync.size() == (!relaxed ? 0u : isa == Isa::rv64 ? 2u : 1u));
    for (const Event& e : r.ev.sync) CHECK(e.a == 1);
    // Outside RAM nothing; at its end, what is left.
    uint8_t buf[16];
    CHECK(r.m.cpu(0).fetch_view(r.base - 16, buf, 16) == 0);
    CHECK(r.m.cpu(0).fetch_view(r.base + r.m.config().ram_size - 4, buf, 16) == 4);
  }
}

TEST_CASE("code model: the same bytes rewritten, data beside code, or a write by no CPU leave no stale view",
          "[code_model]") {
  const Isa isa = GENERATE(Isa::x86_64, Isa::rv64);
  Rig r(isa, CodeModel::relaxed);
  // An image whose code segment holds fn and both CPUs' code; the rest of
  // the page is data.
  ElfImage img;
  img.isa = isa;
  img.entry = r.base + kFn;
  ElfSegment text;
  text.paddr = text.vaddr = r.base + kFn;
  text.memsz = 0x300;
  text.readable = text.executable = true;
  img.segments.push_back(text);
  r.m.load(img);
  load(r, false);
  r.run_to(1'000);
  const uint64_t fn = r.base + kFn;
  uint8_t b[4];
  REQUIRE(r.m.bus().read_bytes(fn, b, 4));
  r.m.bus().write_bytes(fn, b, 4, Accessor{0, r.m.cpu(0).cycle()});  // the same bytes
  CHECK_FALSE(r.m.cpu(1).code_view_stale());
  // Bytes of the code page outside the image's code (data beside code): no
  // CPU holds a copy of them, on either ISA.
  const uint64_t data = r.base + kFn + 0x800;
  const uint64_t v = 0x1234'5678'9abc'def0ull;
  r.m.bus().write_bytes(data, &v, 8, Accessor{0, r.m.cpu(0).cycle()});
  CHECK_FALSE(r.m.cpu(0).code_view_stale());
  CHECK_FALSE(r.m.cpu(1).code_view_stale());
  // The same store over the code does make CPU 1 stale.
  r.m.bus().write_bytes(fn, &v, 4, Accessor{0, r.m.cpu(0).cycle()});
  CHECK(r.m.cpu(1).code_view_stale());
  r.m.cpu(0).serialize_code();
  r.m.cpu(1).serialize_code();
  const uint8_t nops[4] = {0x13, 0x00, 0x00, 0x00};
  r.m.bus().write_bytes(fn, nops, 4);  // no CPU (Accessor -1): visible to all
  CHECK_FALSE(r.m.cpu(0).code_view_stale());
  CHECK_FALSE(r.m.cpu(1).code_view_stale());
}

TEST_CASE("code model: a stale view is machine state: running ahead and the reference schedule agree, and a "
          "checkpoint keeps it",
          "[code_model][run_ahead]") {
  const Isa isa = GENERATE(Isa::x86_64, Isa::rv64);
  INFO(isa_name(isa));
  // What the guest and the events say after CPU 1 served a stale view for
  // a while and then synchronised.
  auto outcome = [](Rig& r) {
    std::vector<uint64_t> out;
    for (uint64_t off : {kT + 8, kT + 16, kLast + 8, kLast + 16, kOwn, kOwn + 8, kOwn + 16}) out.push_back(r.q(off));
    for (const Event& e : r.ev.stale) out.insert(out.end(), {e.cycle, static_cast<uint64_t>(e.cpu), e.a, e.b});
    for (const Event& e : r.ev.sync) out.insert(out.end(), {e.cycle, static_cast<uint64_t>(e.cpu), e.a});
    return out;
  };
  std::vector<uint64_t> seen[2];
  std::vector<uint8_t> ckpt;
  for (int reference = 0; reference < 2; ++reference) {
    Rig r(isa, CodeModel::relaxed, reference);
    load(r);
    r.run_to(20'000);
    REQUIRE(r.m.cpu(1).code_view_stale());
    if (!reference) ckpt = save_checkpoint(r.m);
    r.flag();
    r.run_to(30'000);
    seen[reference] = outcome(r);
  }
  CHECK(seen[0] == seen[1]);
  // Restored mid-view: CPU 1 is still stale and goes on as the original.
  Rig back(isa, CodeModel::relaxed);
  restore_checkpoint(back.m, ckpt);
  CHECK(back.m.cpu(1).code_view_stale());
  CHECK(back.count(2) == 0);
  back.flag();
  back.run_to(30'000);
  // The events before the checkpoint went to the first rig's observer.
  std::vector<uint64_t> tail = outcome(back);
  CHECK(std::vector<uint64_t>(seen[0].begin(), seen[0].begin() + 7) == std::vector<uint64_t>(tail.begin(), tail.begin() + 7));
  REQUIRE(back.ev.sync.size() == 1);
  CHECK(back.ev.sync[0].cpu == 1);
  // A strict machine refuses the relaxed checkpoint.
  Rig strict(isa, CodeModel::strict);
  CHECK_THROWS(restore_checkpoint(strict.m, ckpt));
}

TEST_CASE("code model: ksim run --code-model", "[code_model][cli]") {
  // No store into code in the default run: both models give the same run.
  const test::ProcessResult relaxed = test::run_ksim({"run", "-q", "--cpus", "2"});
  const test::ProcessResult strict = test::run_ksim({"run", "-q", "--cpus", "2", "--code-model", "strict"});
  REQUIRE(relaxed.status == 0);
  REQUIRE(strict.status == 0);
  auto hash = [](const std::string& out) { return out.substr(out.rfind("trace-hash: ")); };
  CHECK(hash(relaxed.out) == hash(strict.out));
  const test::ProcessResult bad = test::run_ksim({"run", "--code-model", "sloppy"});
  CHECK(bad.status == 2);
  CHECK(bad.err.find("--code-model must be relaxed or strict") != std::string::npos);
}

TEST_CASE("code model: the guest kernels keep their checks with probes armed and removed mid-run", "[code_model][kprobes]") {
  const Isa isa = GENERATE(Isa::x86_64, Isa::rv64);
  const int cpus = GENERATE(1, 4);
  INFO(isa_name(isa) << " cpus " << cpus);
  test::KprobeRig rig(test::kernel_image(isa), cpus);
  REQUIRE(rig.m.config().code_model == CodeModel::relaxed);  // the default
  // Arm do_fork and vfs_read after the kernel has run them (their pages are
  // code pages, so arming is a store into code that CPUs may not see yet),
  // and remove them later.
  RunResult r = rig.m.run(RunLimits{400'000});
  REQUIRE(r.end == RunResult::End::paused);
  kprobes::Kprobe fork, read;
  fork.addr = rig.sym("do_fork");
  read.addr = rig.sym("vfs_read");
  REQUIRE(rig.eng->register_kprobe(fork) == 0);
  REQUIRE(rig.eng->register_kprobe(read) == 0);
  r = rig.m.run(RunLimits{1'500'000});
  REQUIRE(r.end == RunResult::End::paused);
  rig.eng->unregister_kprobe(fork);
  rig.eng->unregister_kprobe(read);
  r = rig.m.run();
  INFO(r.reason);
  CHECK(rig.passed(r));
  CHECK(rig.text_diff(false).empty());
}

// --- Under timing v2: the instruction caches decide ---------------------------
//
// docs/CODE_MODEL.md, "Under timing v2": a U54 hart holds old code while
// its L1I holds the line (FU540 §4.1: the I-cache is not coherent, FENCE.I
// synchronises), with no expiry; an x86 CPU's I-cache loses the line to the
// store (SDM vol. 3A §11.6), and only the rest of the 16-byte fetch block
// holding its PC stays old until it fetches on or jumps.

TEST_CASE("code model, timing v2, RV64: a hart whose I-cache holds the function runs the old instruction until its "
          "fence.i, however long",
          "[code_model][icache]") {
  Rig r(Isa::rv64, CodeModel::relaxed, false, true);
  load(r);
  r.run_to(3'000);
  CHECK(r.q(kOwn) == 1);
  CHECK(r.q(kOwn + 8) == 1);   // the storing hart holds the line too
  CHECK(r.q(kOwn + 16) == 2);  // after its fence.i
  CHECK(r.count(1) > 20);
  CHECK(r.count(2) == 0);
  REQUIRE(r.ev.stale.size() == 2);
  const uint64_t stored = r.ev.stale[0].b;
  // Three times timing v1's bound later: still the old instruction, and
  // the line is still in hart 1's L1I.
  r.run_to(stored + 3 * kStale);
  CHECK(r.count(2) == 0);
  CHECK(r.m.cpu(1).code_view_stale());
  CHECK(r.m.memory_system()->l1i_holds(1, r.base + kFn));
  const uint64_t old_calls = r.count(1);
  r.flag();
  r.run_to(stored + 3 * kStale + 3'000);
  CHECK(r.count(2) > 20);
  CHECK(r.count(1) <= old_calls + 1);
  CHECK_FALSE(r.m.cpu(1).code_view_stale());
  // fence.i flushed hart 1's I-cache: it fetched its lines again.
  CHECK(r.m.memory_system()->stats(1).l1i_misses >= 3);
}

TEST_CASE("code model, timing v2, RV64: a store leaves old code only with the harts whose I-cache holds its line",
          "[code_model][icache]") {
  Rig r(Isa::rv64, CodeModel::relaxed, false, true);
  r.words(kFn, {jal(rv::zero, 0)});    // hart 1 spins in fn's line
  r.words(kCpu0, {jal(rv::zero, 0)});  // hart 0 in its own
  r.m.cpu(0).set_pc(r.base + kCpu0);
  r.m.cpu(1).set_pc(r.base + kFn);
  r.run_to(1'000);
  const uint32_t nop = rv::addi(rv::zero, rv::zero, 0);
  // A line of the page nobody fetched: nobody keeps its old bytes.
  r.m.bus().write_bytes(r.base + kFn + 0x80, &nop, 4, Accessor{0, r.m.cpu(0).cycle()});
  CHECK_FALSE(r.m.cpu(0).code_view_stale());
  CHECK_FALSE(r.m.cpu(1).code_view_stale());
  // fn's line: hart 1 holds it, hart 0 (the storer) does not.
  r.m.bus().write_bytes(r.base + kFn + 4, &nop, 4, Accessor{0, r.m.cpu(0).cycle()});
  CHECK(r.m.cpu(1).code_view_stale());
  CHECK_FALSE(r.m.cpu(0).code_view_stale());
  CHECK(r.m.memory_system()->l1i_holds(1, r.base + kFn));
  CHECK_FALSE(r.m.memory_system()->l1i_holds(0, r.base + kFn));
}

TEST_CASE("code model, timing v2, RV64: a hart whose I-cache evicts the line fetches the new code without fence.i",
          "[code_model][icache]") {
  Rig r(Isa::rv64, CodeModel::relaxed, false, true);
  // Hart 1: call fn, count, then call 16 functions (`ret`) whose lines map
  // to fn's I-cache set (4 KiB apart: 64 sets of 64 bytes), twice the
  // ways; again. Hart 0 patches fn as in the other guests.
  constexpr uint64_t kEvict = 0x20000;
  std::vector<uint32_t> v = {
      jal(rv::ra, static_cast<int32_t>(kFn - kCpu1)), slli(rv::t0, rv::a0, 3), rv::add(rv::t0, rv::t0, rv::s1),
      rv::ld(rv::t1, rv::t0, 0), rv::addi(rv::t1, rv::t1, 1), rv::sd(rv::t1, rv::t0, 0)};
  for (uint64_t k = 0; k < 16; ++k) {
    const uint64_t at = kCpu1 + 4 * v.size();
    v.push_back(jal(rv::ra, static_cast<int32_t>(kEvict + 0x1000 * k - at)));
    r.words(kEvict + 0x1000 * k, {kRet});
  }
  v.push_back(jal(rv::zero, -static_cast<int32_t>(4 * v.size())));
  r.words(kFn, {kLiA0_1, kRet});
  r.words(kCpu1, v);
  r.words(kCpu0, rv_hart0());
  for (int c = 0; c < 2; ++c) {
    Cpu& h = r.m.cpu(c);
    h.set_pc(r.base + (c ? kCpu1 : kCpu0));
    h.set_gpr(rv::s1, r.base + kT);
    h.set_gpr(rv::s3, r.base + kOwn);
    h.set_gpr(rv::s4, r.base + kFn);
    h.set_gpr(rv::t4, kLiA0_2);
  }
  r.run_to(200'000);
  CHECK(r.q(kOwn + 16) == 2);
  CHECK(r.count(1) > 0);
  CHECK(r.count(2) > 100);  // fn's line was evicted and fetched again
  CHECK_FALSE(r.m.cpu(1).code_view_stale());
  for (const Event& e : r.ev.sync) CHECK(e.cpu == 0);  // hart 1 never synchronised
  CHECK(r.m.memory_system()->stats(1).l1i_misses > 16);
}

TEST_CASE("code model, timing v2, x86: another CPU fetches the new instruction at its next call without "
          "serialising (its I-cache snoops the store)",
          "[code_model][icache]") {
  Rig r(Isa::x86_64, CodeModel::relaxed, false, true);
  load(r);
  r.run_to(4'000);
  CHECK(r.q(kOwn) == 1);
  CHECK(r.q(kOwn + 8) == 2);
  CHECK(r.count(1) > 0);
  CHECK(r.count(2) > 20);
  CHECK(r.last(1) < r.last(2));
  CHECK(r.ev.sync.empty());  // nobody serialised
  CHECK_FALSE(r.m.cpu(1).code_view_stale());
  // The store took the line from CPU 1's I-cache.
  CHECK(r.m.memory_system()->stats(1).l1i_invalidations >= 1);
}

TEST_CASE("code model, timing v2, x86: bytes already fetched ahead of the PC stay old until the CPU fetches on or "
          "jumps",
          "[code_model][icache]") {
  Rig r(Isa::x86_64, CodeModel::relaxed, false, true);
  // CPU 1 spins on a jump to itself at fn; the host, as CPU 0, turns the
  // jump into rdtsc, which the instructions after it store at LAST.
  const uint64_t fn = r.base + kFn;
  std::vector<uint8_t> code = {0xeb, 0xfe, 0x89, 0x04, 0x25};  // spin; mov [LAST], eax
  le32(code, r.base + kLast);
  code.insert(code.end(), {0xeb, 0xfe});
  r.bytes(kFn, code);
  r.bytes(kCpu0, {0xeb, 0xfe});
  r.m.cpu(0).set_pc(r.base + kCpu0);
  r.m.cpu(1).set_pc(fn);
  r.run_to(1'000);
  const uint64_t stored = r.m.cpu(0).cycle();
  const uint8_t rdtsc[2] = {0x0f, 0x31};
  r.m.bus().write_bytes(fn, rdtsc, 2, Accessor{0, stored});
  // CPU 1's PC is in the fetch block the store changed: it holds the old
  // jump, runs it once (one stale fetch), and the jump fetches anew.
  CHECK(r.m.cpu(1).code_view_stale());
  r.run_to(stored + 1'000);
  CHECK_FALSE(r.m.cpu(1).code_view_stale());
  REQUIRE(r.ev.stale.size() == 1);
  CHECK(r.ev.stale[0].cpu == 1);
  INFO("cpu 1 at " << std::hex << r.m.cpu(1).pc() << std::dec << " instret " << r.m.cpu(1).instret() << " cycle " << r.m.cpu(1).cycle());
  CHECK(r.last(0) > stored);
  CHECK(r.last(0) < stored + 400);  // a jump and an I-cache miss to memory, not timing v1's 50,000 cycles
  CHECK(r.ev.sync.empty());
}

TEST_CASE("timing v2, RV64: straight-line code misses the I-cache once per line, each miss the profile's memory "
          "latency beyond an I-cache hit",
          "[code_model][icache]") {
  Rig r(Isa::rv64, CodeModel::relaxed, false, true, true);
  // Hart 0 at 0x10000: 1024 nops (64 lines), then twice: read mcycle,
  // store it at LAST (s5), and go round again; then spin. Hart 1 spins.
  constexpr uint64_t kCode = 0x10000;
  std::vector<uint32_t> v(1024, rv::addi(rv::zero, rv::zero, 0));
  v.push_back(rv::csrrs(rv::t3, kMcycle, rv::zero));
  v.push_back(rv::sd(rv::t3, rv::s5, 0));
  v.push_back(rv::addi(rv::s5, rv::s5, 8));
  v.push_back(rv::addi(rv::s6, rv::s6, -1));
  v.push_back(rv::B(8, rv::zero, rv::s6, 0));  // beq s6, zero, +8
  v.push_back(jal(rv::zero, -static_cast<int32_t>(4 * v.size())));
  v.push_back(jal(rv::zero, 0));
  r.words(kCode, v);
  r.words(kCpu1, {jal(rv::zero, 0)});
  r.m.cpu(0).set_pc(r.base + kCode);
  r.m.cpu(0).set_gpr(rv::s5, r.base + kLast);
  r.m.cpu(0).set_gpr(rv::s6, 2);
  r.m.cpu(1).set_pc(r.base + kCpu1);
  r.run_to(20'000);
  const MachineProfile& p = r.m.memory_system()->profile();
  // 65 lines (the nops' 64 and the line of the rest), each first fetched
  // from memory: the first pass's 1024 nops and its 65 misses.
  CHECK(r.m.memory_system()->stats(0).l1i_misses == 65);
  CHECK(r.last(0) == 1024 * timing::cycles(timing::Class::alu) + 65 * (p.memory_latency - p.l1i_latency));
  // The second pass hits every line: the same nops, no miss.
  CHECK(r.last(1) - r.last(0) < 1024 * timing::cycles(timing::Class::alu) + 64);
  // --trace-cache's events name those 65 lines, in order, each from
  // memory, each at the cycle its first instruction starts: line k after
  // 16k nops and k misses before it.
  std::vector<Event> fetches;
  for (const Event& e : r.ev.miss)
    if (e.cpu == 0 && e.b == kMissFetch) fetches.push_back(e);
  REQUIRE(fetches.size() == 65);
  for (uint64_t k = 0; k < 65; ++k) {
    CHECK(fetches[k].a == r.base + kCode + 64 * k);
    CHECK(fetches[k].c == kFromMemory);
    CHECK(fetches[k].cycle == 16 * k * timing::cycles(timing::Class::alu) + k * (p.memory_latency - p.l1i_latency));
  }
}

TEST_CASE("code model, timing v2: running ahead and the reference schedule agree on stores into code", "[code_model][icache][run_ahead]") {
  const Isa isa = GENERATE(Isa::x86_64, Isa::rv64);
  INFO(isa_name(isa));
  std::vector<uint64_t> seen[2];
  for (int reference = 0; reference < 2; ++reference) {
    Rig r(isa, CodeModel::relaxed, reference == 1, true);
    load(r);
    r.run_to(20'000);
    r.flag();
    r.run_to(40'000);
    std::vector<uint64_t>& out = seen[reference];
    for (uint64_t off : {kT + 8, kT + 16, kLast + 8, kLast + 16, kOwn, kOwn + 8, kOwn + 16}) out.push_back(r.q(off));
    for (int c = 0; c < 2; ++c) {
      const CacheStats& st = r.m.memory_system()->stats(c);
      out.insert(out.end(), {r.m.cpu(c).cycle(), r.m.cpu(c).instret(), r.m.cpu(c).l1i_hits(), st.l1i_misses,
                             st.l1_misses, st.l1i_invalidations});
    }
    for (const Event& e : r.ev.stale) out.insert(out.end(), {e.cycle, static_cast<uint64_t>(e.cpu), e.a, e.b});
    for (const Event& e : r.ev.sync) out.insert(out.end(), {e.cycle, static_cast<uint64_t>(e.cpu), e.a});
  }
  CHECK(seen[0] == seen[1]);
}

// One x86 CPU (which never runs ahead, so its stores into code pages stay
// on the fast path) storing into the line it executes: every store takes
// the line from its I-cache (SDM vol. 3A §11.6), and the next instruction
// misses, on the fast path as on the precise one.
TEST_CASE("code model, timing v2, x86: a CPU storing into the line it runs fetches it again each time", "[code_model][icache]") {
  uint64_t mid[2] = {}, misses[2] = {};
  for (int reference = 0; reference < 2; ++reference) {
    MachineConfig c;
    c.isa = Isa::x86_64;
    c.cpus = 1;
    c.ram_size = 1 << 20;
    c.reference_schedule = reference == 1;
    c.profile = load_machine_profile("xeon-e5410");
    c.memory_model = MemoryModel::tso;
    Machine m(c);
    const uint64_t at = memmap::kRamBaseX86 + kFn;
    // loop: mov [rip+data], eax; inc eax; cmp eax, 1000; jne loop; spin; data
    std::vector<uint8_t> v = {0x89, 0x05, 0, 0, 0, 0, 0xff, 0xc0, 0x3d, 0xe8, 0x03, 0x00, 0x00, 0x75, 0xf1, 0xeb, 0xfe,
                              0x00, 0x00, 0x00, 0x00};
    const int32_t disp = static_cast<int32_t>((at + 17) - (at + 6));
    std::memcpy(&v[2], &disp, 4);
    m.bus().write_bytes(at, v.data(), v.size());
    m.cpu(0).set_pc(at);
    // Half-way through the loop: how far it got is what its fetches cost.
    REQUIRE(m.run(RunLimits{8'000}).end == RunResult::End::paused);
    mid[reference] = m.cpu(0).instret();
    CHECK(m.cpu(0).gpr(0) > 100);
    CHECK(m.cpu(0).gpr(0) < 1000);
    REQUIRE(m.run(RunLimits{200'000}).end == RunResult::End::paused);
    CHECK(m.cpu(0).pc() == at + 15);  // at the spin: the loop ran 1000 times
    misses[reference] = m.memory_system()->stats(0).l1i_misses;
  }
  CHECK(misses[0] >= 1000);
  CHECK(misses[0] == misses[1]);
  CHECK(mid[0] == mid[1]);
}
