// The x86 half of the kprobes engine (kprobes/x86/), exercised directly on a
// simulated x86 machine. Every probed instruction is run twice: once
// unprobed (the reference), once through the Arch the way the engine uses
// it (analyse, build_slot, arm the int3; on the hit save_and_mask, then
// emulate or step out of line, finish_step, restore). Registers, flags,
// RIP and memory must come out identical, in both step modes.
// Linux behaviour: docs/KPROBES_X86.md and the implementation notes,
// section 2 (x86 out-of-line execution).
#include <catch2/catch.hpp>

#include <cstring>
#include <functional>
#include <sstream>

#include "cpu/x86/x86_cpu.hpp"
#include "kprobes/arch.hpp"
#include "kprobes/x86/probe_class.hpp"
#include "mem/memory_map.hpp"
#include "sim/elf/symbols.hpp"
#include "sim/machine.hpp"

using namespace ksim;
using namespace ksim::kprobes;
namespace xa = ksim::kprobes::x86arch;

namespace {

constexpr uint64_t kBase = memmap::kRamBaseX86;
constexpr uint64_t kCode = kBase + 0x10000;  // the probed instruction
constexpr uint64_t kFill = 0x800;            // int3 on both sides: wherever the insn goes, it stops
constexpr uint64_t kData = kBase + 0x20000;  // what the instructions load and store
constexpr uint64_t kDataSize = 0x100;
constexpr uint64_t kSlot = kBase + 0x30000;  // the instruction slot
constexpr uint64_t kStack = kBase + 0x40000; // rsp at the start
constexpr uint64_t kStackWindow = 0x100;     // compared on both sides of rsp
constexpr uint64_t kPark = kBase + 0x50000;  // an int3 taken between the step and the restore
constexpr int kRax = 0, kRcx = 1, kRdx = 2, kRbx = 3, kRsp = 4, kRsi = 6, kRdi = 7, kR11 = 11, kR15 = 15;
constexpr uint64_t kFixed = x86::kFlagsFixed;

using Bytes = std::vector<uint8_t>;

void put32(Bytes& b, int64_t v) {
  const uint32_t u = static_cast<uint32_t>(v);
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(u >> (8 * i)));
}
// `prefix` followed by a disp32/rel32 that makes the instruction (of
// total length `len`, ending with `tail`) address `target` from kCode.
Bytes rel_to(Bytes prefix, uint64_t target, unsigned len, Bytes tail = {}) {
  Bytes b = std::move(prefix);
  put32(b, static_cast<int64_t>(target - (kCode + len)));
  b.insert(b.end(), tail.begin(), tail.end());
  REQUIRE(b.size() == len);
  return b;
}

// One probed-instruction scenario.
struct Case {
  std::string name;
  Bytes code;
  uint64_t gpr[16] = {};
  uint64_t rflags = kFixed;
  std::vector<uint64_t> stack;  // qwords at rsp, rsp+8, ...
  std::vector<uint64_t> data;   // qwords at kData
};

struct Outcome {
  std::string error;  // empty when the run ended where expected
  uint64_t gpr[16] = {};
  uint64_t rip = 0, rflags = 0;
  bool sti_shadow = false;  // the STI interrupt shadow when the run stopped
  Bytes stack, data;
};

std::string describe(const Outcome& o) {
  std::ostringstream s;
  s << std::hex;
  for (int i = 0; i < 16; ++i) s << "r" << i << "=" << o.gpr[i] << " ";
  s << "rip=" << o.rip << " rflags=" << o.rflags << " shadow=" << o.sti_shadow;
  return s.str();
}

// A one-CPU x86 machine with the case loaded and a trap hook the test sets.
struct Rig {
  Machine m{[] {
    MachineConfig c;
    c.isa = Isa::x86_64;
    c.ram_size = 1 << 20;
    c.max_cycles = 100'000;
    return c;
  }()};
  std::function<HookResult(const TrapInfo&)> on_trap;
  std::string error;
  bool shadow_at_stop = false;

  x86::X86Cpu& cpu() { return static_cast<x86::X86Cpu&>(m.cpu(0)); }
  Rig() {
    // The shadow is read inside the hook: the reference's stopping int3
    // consumes it once the hook returns.
    m.trap_hooks().add(0, [this](Cpu&, const TrapInfo& t) {
      const HookResult res = on_trap(t);
      if (res == HookResult::stop) shadow_at_stop = cpu().control().sti_shadow;
      return res;
    });
  }
  void load(const Case& c) {
    Bytes fill(2 * kFill, 0xcc);
    m.bus().write_bytes(kCode - kFill, fill.data(), fill.size());
    m.bus().write_bytes(kCode, c.code.data(), c.code.size());
    Bytes pattern(kDataSize);
    for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<uint8_t>(0xa5 ^ i);
    m.bus().write_bytes(kData, pattern.data(), pattern.size());
    m.bus().write_bytes(kData, c.data.data(), 8 * c.data.size());
    Bytes stack(2 * kStackWindow);
    for (size_t i = 0; i < stack.size(); ++i) stack[i] = static_cast<uint8_t>(0x5a ^ i);
    m.bus().write_bytes(kStack - kStackWindow, stack.data(), stack.size());
    m.bus().write_bytes(kStack, c.stack.data(), 8 * c.stack.size());
    auto& s = cpu().s;
    std::memcpy(s.gpr, c.gpr, sizeof s.gpr);
    s.gpr[kRsp] = kStack;
    s.rflags = c.rflags | kFixed;
    s.rip = kCode;
  }
  void write(uint64_t at, const uint8_t* b, size_t n) { m.bus().write_bytes(at, b, n); }
  Outcome run() {
    m.run();
    Outcome o;
    o.error = error;
    auto& s = cpu().s;
    std::memcpy(o.gpr, s.gpr, sizeof o.gpr);
    o.rip = s.rip;
    o.rflags = s.rflags;
    o.sti_shadow = shadow_at_stop;
    o.stack.resize(2 * kStackWindow);
    m.bus().read_bytes(kStack - kStackWindow, o.stack.data(), o.stack.size());
    o.data.resize(kDataSize);
    m.bus().read_bytes(kData, o.data.data(), o.data.size());
    return o;
  }
};

std::string trap_text(const TrapInfo& t) {
  std::ostringstream s;
  s << "unexpected trap: vector " << t.cause << " at 0x" << std::hex << t.pc;
  return s.str();
}

// The instruction executed in place: it runs, then the next int3 (from the
// fill) or #DB stops the machine with RIP where execution went.
Outcome run_reference(const Case& c) {
  Rig r;
  r.load(c);
  r.on_trap = [&](const TrapInfo& t) {
    if (t.interrupt || t.cause != x86::kBP) r.error = trap_text(t);
    return HookResult::stop;
  };
  return r.run();
}

// What the engine does: analyse and build the slot at registration, arm
// the int3; on the hit mask, emulate or step, fix up; let the CPU take one
// more int3 of its own (a trap between the step and the restore, as the
// step's end trap is in the engine), then restore and stop where the guest
// would carry on.
// With `boost`, a boostable instruction gets modern mode's boosted slot
// (the copy and a jmp back) and the hit jumps into it with the guest's
// flags back, as the engine's boosted hit does: no step trap.
Outcome run_probed(const Case& c, StepMode mode, ProbeInsn* analysed = nullptr, bool boost = false) {
  auto arch = make_x86_arch();
  Rig r;
  r.load(c);
  TextReader text = [&](uint64_t a, uint8_t* out, size_t n) { return r.m.bus().read_bytes(a, out, n); };
  ProbeInsn pi;
  std::string why;
  if (int err = arch->analyse(text, kCode, nullptr, mode, pi, why)) {
    Outcome o;
    o.error = std::string("analyse: ") + errno_name(err) + ": " + why;
    return o;
  }
  if (!boost && pi.boostable == 0) pi.boostable = -1;
  if (int err = arch->build_slot(pi, kSlot, mode, why)) {
    Outcome o;
    o.error = std::string("build_slot: ") + errno_name(err) + ": " + why;
    return o;
  }
  if (analysed) *analysed = pi;
  r.write(kSlot, pi.slot_bytes, pi.slot_len);
  r.write(kCode, pi.bp, pi.bp_len);

  const uint8_t int3 = 0xcc;
  r.write(kPark, &int3, 1);

  SavedFlags saved;
  enum { hit, stepping, parked, boosted } phase = hit;
  uint64_t resume = 0;
  auto park = [&](Cpu& cpu) {
    resume = cpu.pc();
    cpu.set_pc(kPark);
    phase = parked;
    return HookResult::handled;
  };
  r.on_trap = [&](const TrapInfo& t) {
    Cpu& cpu = r.m.cpu(0);
    switch (phase) {
      case hit:
        if (!arch->is_breakpoint_trap(t) || t.pc != kCode) break;
        saved = arch->save_and_mask(cpu);
        if (pi.kind == ProbeInsn::Kind::emulate) {
          if (!arch->emulate(cpu, r.m.bus(), pi, saved)) {
            r.error = "emulation faulted";
            return HookResult::stop;
          }
          return park(cpu);
        }
        if (pi.boostable == 1) {
          arch->restore(cpu, saved);
          cpu.set_pc(kSlot);
          phase = boosted;
          return HookResult::handled;
        }
        arch->begin_step(cpu, pi, kSlot);
        phase = stepping;
        return HookResult::handled;
      case boosted:
        // The guest's own next int3 (where the reference stops too).
        if (!arch->is_breakpoint_trap(t)) break;
        return HookResult::stop;
      case stepping:
        if (!arch->is_step_end(cpu, t, pi, kSlot)) break;
        arch->finish_step(cpu, r.m.bus(), pi, kSlot, saved);
        return park(cpu);
      case parked:
        if (!arch->is_breakpoint_trap(t) || t.pc != kPark) break;
        cpu.set_pc(resume);
        arch->restore(cpu, saved);
        return HookResult::stop;
    }
    r.error = "unexpected trap in phase " + std::to_string(phase) + ": " + trap_text(t);
    return HookResult::stop;
  };
  return r.run();
}

const char* mode_name(StepMode m) { return m == StepMode::classic ? "classic" : "modern"; }

// Runs `c` unprobed and probed in both modes and requires identical
// outcomes; classic mode steps everything, modern mode `modern_kind`.
void check_same_as_in_place(const Case& c, ProbeInsn::Kind modern_kind) {
  const Outcome ref = run_reference(c);
  INFO("case: " << c.name);
  REQUIRE(ref.error.empty());
  for (StepMode mode : {StepMode::modern, StepMode::classic}) {
    INFO("mode: " << mode_name(mode));
    ProbeInsn pi;
    const Outcome got = run_probed(c, mode, &pi);
    REQUIRE(got.error == "");
    CHECK(pi.kind == (mode == StepMode::classic ? ProbeInsn::Kind::step : modern_kind));
    INFO("reference: " << describe(ref));
    INFO("probed:    " << describe(got));
    for (int i = 0; i < 16; ++i) CHECK(got.gpr[i] == ref.gpr[i]);
    CHECK(got.rip == ref.rip);
    CHECK(got.rflags == ref.rflags);
    CHECK(got.sti_shadow == ref.sti_shadow);
    CHECK(got.stack == ref.stack);
    CHECK(got.data == ref.data);
  }
  // Boosted (modern mode builds the jump back when the instruction is
  // boostable): the same outcome with no step.
  ProbeInsn pi;
  const Outcome got = run_probed(c, StepMode::modern, &pi, true);
  if (pi.boostable != 1) return;
  INFO("mode: modern, boosted");
  REQUIRE(got.error == "");
  for (int i = 0; i < 16; ++i) CHECK(got.gpr[i] == ref.gpr[i]);
  CHECK(got.rip == ref.rip);
  CHECK(got.rflags == ref.rflags);
  CHECK(got.stack == ref.stack);
  CHECK(got.data == ref.data);
}

constexpr auto kEmu = ProbeInsn::Kind::emulate;
constexpr auto kStep = ProbeInsn::Kind::step;

Case make(std::string name, Bytes code) {
  Case c;
  c.name = std::move(name);
  c.code = std::move(code);
  return c;
}

}  // namespace

TEST_CASE("x86 kprobes: a RIP-relative load, store and lea run from the slot as in place",
          "[kprobes][x86arch]") {
  // __copy_instruction: newdisp = disp + addr - slot (notes section 2).
  Case load = make("mov rax, [rip+d]", rel_to({0x48, 0x8b, 0x05}, kData + 8, 7));
  load.data = {0x1111, 0x2222333344445555};
  check_same_as_in_place(load, kStep);
  Case store = make("mov [rip+d], rbx", rel_to({0x48, 0x89, 0x1d}, kData + 16, 7));
  store.gpr[kRbx] = 0xfeedfacecafebeef;
  check_same_as_in_place(store, kStep);
  check_same_as_in_place(make("lea rcx, [rip+d]", rel_to({0x48, 0x8d, 0x0d}, kData + 0x40, 7)), kStep);
  // The displacement sits before an immediate.
  Case add = make("add dword [rip+d], imm32", rel_to({0x81, 0x05}, kData + 8, 10, {0x78, 0x56, 0x34, 0x12}));
  add.data = {0, 0xfffffffff0000000};
  check_same_as_in_place(add, kStep);
  check_same_as_in_place(make("cmp byte [rip+d], 0x7f", rel_to({0x80, 0x3d}, kData + 3, 7, {0x7f})), kStep);

  // The slot holds the copy with its displacement moved, then (modern) an int3.
  ProbeInsn pi;
  REQUIRE(run_probed(load, StepMode::modern, &pi).error == "");
  int32_t disp;
  std::memcpy(&disp, pi.slot_bytes + 3, 4);
  CHECK(kSlot + 7 + static_cast<int64_t>(disp) == kData + 8);
  CHECK(pi.slot_len == 8);
  CHECK(pi.slot_bytes[7] == 0xcc);
  CHECK(pi.step_end == 7);
  REQUIRE(run_probed(load, StepMode::classic, &pi).error == "");
  CHECK(pi.slot_len == 7);
  CHECK(pi.step_end == -1);
}

TEST_CASE("x86 kprobes: relative calls and jumps", "[kprobes][x86arch]") {
  check_same_as_in_place(make("call rel32 forward", rel_to({0xe8}, kCode + 0x100, 5)), kEmu);
  check_same_as_in_place(make("call rel32 backward", rel_to({0xe8}, kCode - 0x200, 5)), kEmu);
  check_same_as_in_place(make("jmp rel32", rel_to({0xe9}, kCode + 0x321, 5)), kEmu);
  check_same_as_in_place(make("jmp rel8 backward", {0xeb, 0x80}), kEmu);
  check_same_as_in_place(make("jmp rel8 to itself + 2", {0xeb, 0x00}), kEmu);
}

TEST_CASE("x86 kprobes: every conditional branch, taken and not taken, short and near", "[kprobes][x86arch]") {
  using namespace x86;
  const uint64_t flag_sets[] = {0, kCF, kZF, kSF, kOF, kPF, kSF | kOF, kZF | kCF, kZF | kSF, kArith};
  for (uint8_t cc = 0; cc < 16; ++cc) {
    for (uint64_t f : flag_sets) {
      Case s = make("jcc rel8", {static_cast<uint8_t>(0x70 + cc), 0x30});
      s.rflags = f;
      check_same_as_in_place(s, kEmu);
      Case n = make("jcc rel32", rel_to({0x0f, static_cast<uint8_t>(0x80 + cc)}, kCode - 0x400, 6));
      n.rflags = f;
      check_same_as_in_place(n, kEmu);
    }
  }
  // Both outcomes really occur (the reference is not trivially one-sided).
  Case jz = make("jz", {0x74, 0x30});
  jz.rflags = kZF;
  CHECK(run_reference(jz).rip == kCode + 2 + 0x30);
  jz.rflags = 0;
  CHECK(run_reference(jz).rip == kCode + 2);
}

TEST_CASE("x86 kprobes: ret and ret imm16", "[kprobes][x86arch]") {
  Case ret = make("ret", {0xc3});
  ret.stack = {kCode + 0x40, 7, 8};
  check_same_as_in_place(ret, kEmu);
  Case reti = make("ret 0x18", {0xc2, 0x18, 0x00});
  reti.stack = {kCode - 0x33, 1, 2, 3, 4};
  check_same_as_in_place(reti, kEmu);
  CHECK(run_reference(reti).gpr[kRsp] == kStack + 8 + 0x18);
}

TEST_CASE("x86 kprobes: register-indirect call and jmp", "[kprobes][x86arch]") {
  Case call = make("call rax", {0xff, 0xd0});
  call.gpr[kRax] = kCode + 0x80;
  check_same_as_in_place(call, kEmu);
  Case call11 = make("call r11", {0x41, 0xff, 0xd3});
  call11.gpr[kR11] = kCode - 0x80;
  check_same_as_in_place(call11, kEmu);
  Case jmp = make("jmp rax", {0xff, 0xe0});
  jmp.gpr[kRax] = kCode + 0x10;
  check_same_as_in_place(jmp, kEmu);
  Case jmp15 = make("jmp r15", {0x41, 0xff, 0xe7});
  jmp15.gpr[kR15] = kCode + 0x7ff;
  check_same_as_in_place(jmp15, kEmu);
}

TEST_CASE("x86 kprobes: pushf and popf see and set the guest's own IF and TF", "[kprobes][x86arch]") {
  using namespace x86;
  for (uint64_t f : std::initializer_list<uint64_t>{kFixed, kIF | kCF | kZF, kIF | kDF | kOF | kAC, kArith}) {
    Case pushf = make("pushfq", {0x9c});
    pushf.rflags = f;
    check_same_as_in_place(pushf, kEmu);
  }
  // popf: IF off -> on, on -> off, arithmetic and DF from the stack, and a
  // popped TF (the guest starts tracing itself).
  struct {
    uint64_t before, popped;
  } pops[] = {{0, kIF | kCF}, {kIF | kZF, kSF | kDF}, {kIF, kIF | kArith}, {0, 0}, {kIF, kIF | kTF | kPF}};
  for (auto p : pops) {
    Case popf = make("popfq", {0x9d});
    popf.rflags = p.before;
    popf.stack = {p.popped | kFixed, 9};
    check_same_as_in_place(popf, kEmu);
  }
}

TEST_CASE("x86 kprobes: cli and sti survive restore, with STI's interrupt shadow", "[kprobes][x86arch]") {
  using namespace x86;
  for (uint64_t f : std::initializer_list<uint64_t>{0, kIF, kIF | kCF}) {
    Case cli = make("cli", {0xfa});
    cli.rflags = f;
    check_same_as_in_place(cli, kEmu);
    Case sti = make("sti", {0xfb});
    sti.rflags = f;
    check_same_as_in_place(sti, kEmu);
  }
  // After `sti` with IF clear the next instruction still runs before any
  // interrupt (SDM STI); with IF already set there is no shadow.
  for (StepMode mode : {StepMode::modern, StepMode::classic}) {
    Case sti = make("sti", {0xfb});
    sti.rflags = 0;
    const Outcome o = run_probed(sti, mode);
    CHECK((o.rflags & kIF) != 0);
    CHECK(o.sti_shadow);
    sti.rflags = kIF;
    CHECK_FALSE(run_probed(sti, mode).sti_shadow);
  }
}

TEST_CASE("x86 kprobes: plain instructions are stepped out of line in both modes", "[kprobes][x86arch]") {
  Case add = make("add rax, rbx", {0x48, 0x01, 0xd8});
  add.gpr[kRax] = 0x7fffffffffffffff;
  add.gpr[kRbx] = 1;
  check_same_as_in_place(add, kStep);
  Case imul = make("imul rcx, rdx, 0x1234", {0x48, 0x69, 0xca, 0x34, 0x12, 0x00, 0x00});
  imul.gpr[kRdx] = 0x123456789;
  check_same_as_in_place(imul, kStep);
  Case push = make("push rbx", {0x53});
  push.gpr[kRbx] = 0xabcdef;
  check_same_as_in_place(push, kStep);
  Case pop = make("pop rcx", {0x59});
  pop.stack = {0x1122334455667788};
  check_same_as_in_place(pop, kStep);
  Case movs = make("rep movsb", {0xf3, 0xa4});
  movs.gpr[kRsi] = kData;
  movs.gpr[kRdi] = kData + 0x40;
  movs.gpr[kRcx] = 9;
  movs.data = {0x0102030405060708, 0x1112131415161718};
  check_same_as_in_place(movs, kStep);
  Case mem = make("inc qword [rax+8]", {0x48, 0xff, 0x40, 0x08});
  mem.gpr[kRax] = kData;
  mem.data = {0, 0xffffffffffffffff};
  check_same_as_in_place(mem, kStep);
  Case flags = make("adc rax, [rsp]", {0x48, 0x13, 0x04, 0x24});
  flags.rflags = x86::kCF | x86::kIF;
  flags.stack = {5};
  check_same_as_in_place(flags, kStep);
}

TEST_CASE("x86 kprobes: a memory-indirect call or jmp is stepped and fixed up in classic mode only",
          "[kprobes][x86arch]") {
  // resume_execution: *tos = orig + (*tos - copy); RIP is already right.
  Case rip_call = make("call [rip+d]", rel_to({0xff, 0x15}, kData, 6));
  rip_call.data = {kCode + 0x100};
  Case reg_call = make("call [rax]", {0xff, 0x10});
  reg_call.gpr[kRax] = kData + 8;
  reg_call.data = {0, kCode - 0x100};
  Case rip_jmp = make("jmp [rip+d]", rel_to({0xff, 0x25}, kData + 16, 6));
  rip_jmp.data = {0, 0, kCode + 0x55};
  Case reg_jmp = make("jmp [rax+8]", {0xff, 0x60, 0x08});
  reg_jmp.gpr[kRax] = kData;
  reg_jmp.data = {0, kCode + 0x66};
  for (const Case* c : {&rip_call, &reg_call, &rip_jmp, &reg_jmp}) {
    INFO(c->name);
    const Outcome ref = run_reference(*c);
    REQUIRE(ref.error == "");
    const Outcome got = run_probed(*c, StepMode::classic);
    REQUIRE(got.error == "");
    for (int i = 0; i < 16; ++i) CHECK(got.gpr[i] == ref.gpr[i]);
    CHECK(got.rip == ref.rip);
    CHECK(got.rflags == ref.rflags);
    CHECK(got.stack == ref.stack);
    // Modern mode refuses them, as Linux's prepare_emulation does.
    const Outcome modern = run_probed(*c, StepMode::modern);
    CHECK(modern.error.find("analyse: EOPNOTSUPP") == 0);
    CHECK(modern.error.find("is not emulated") != std::string::npos);
  }
  // The call's return address really was fixed (not left pointing into the slot).
  const Outcome got = run_probed(rip_call, StepMode::classic);
  uint64_t ret;
  std::memcpy(&ret, got.stack.data() + kStackWindow - 8, 8);
  CHECK(ret == kCode + 6);
}

namespace {

struct Refused {
  int err;
  std::string why;
};

Refused analyse_bytes(const Bytes& code, StepMode mode, uint64_t at = kCode, const Symbol* func = nullptr,
                      std::function<void(Bus&)> tamper = nullptr) {
  Rig r;
  r.write(kCode, code.data(), code.size());
  auto arch = make_x86_arch();
  // The reader sees the text as it was before `tamper` (another probe's
  // int3, say) changed it.
  Bytes original(0x40);
  r.m.bus().read_bytes(kCode, original.data(), original.size());
  if (tamper) tamper(r.m.bus());
  TextReader text = [&](uint64_t a, uint8_t* out, size_t n) {
    if (!r.m.bus().read_bytes(a, out, n)) return false;
    for (size_t i = 0; i < n; ++i)
      if (a + i >= kCode && a + i < kCode + original.size()) out[i] = original[a + i - kCode];
    return true;
  };
  ProbeInsn pi;
  Refused res;
  res.err = arch->analyse(text, at, func, mode, pi, res.why);
  return res;
}

}  // namespace

TEST_CASE("x86 kprobes: refusals name the instruction and the reason", "[kprobes][x86arch]") {
  struct Row {
    Bytes code;
    int err;
    std::string why;
  } rows[] = {
      // __copy_instruction: int3 and the exception-masking mov ss (-EINVAL).
      {{0xcc}, -kEINVAL, "int3: a breakpoint cannot be probed"},
      {{0x8e, 0xd0}, -kEINVAL, "mov ss, ax: mov ss masks the single-step trap"},
      // prepare_emulation: iret, far transfers (-EOPNOTSUPP).
      {{0x48, 0xcf}, -kEOPNOTSUPP, "iretq: iret cannot run from a slot"},
      {{0xcb}, -kEOPNOTSUPP, "far return"},
      {{0xff, 0x2d, 0, 0, 0, 0}, -kEOPNOTSUPP, "far indirect jmp"},
      {{0xff, 0x1d, 0, 0, 0, 0}, -kEOPNOTSUPP, "far indirect call"},
      // ksim's own: software interrupts and hlt cannot be stepped sanely.
      {{0xcd, 0x80}, -kEOPNOTSUPP, "int 0x80: a software interrupt"},
      {{0xf4}, -kEOPNOTSUPP, "hlt: hlt would wait"},
      // Not in the CPU model: it raises #UD in place, so a probe must not run it.
      {{0x0f, 0x0b}, -kEOPNOTSUPP, "ud2: not supported by the simulated CPU"},
      {{0xe2, 0xfe}, -kEOPNOTSUPP, "not supported by the simulated CPU (it raises #UD)"},
      {{0x0f, 0x58, 0xc1}, -kEOPNOTSUPP, "addps xmm0, xmm1: not supported"},
      // Far jmp ptr16:32 does not exist in 64-bit mode.
      {{0xea, 0, 0, 0, 0, 0, 0}, -kEINVAL, "(bad) byte ea at 0x40010000: not a valid x86-64 instruction"},
  };
  for (const Row& row : rows) {
    for (StepMode mode : {StepMode::modern, StepMode::classic}) {
      INFO(row.why << " (" << mode_name(mode) << ")");
      const Refused r = analyse_bytes(row.code, mode);
      CHECK(r.err == row.err);
      CHECK(r.why.find(row.why) != std::string::npos);
      INFO("why: " << r.why);
      CHECK(r.why.find('\n') == std::string::npos);
    }
  }
}

TEST_CASE("x86 kprobes: an address inside an instruction of the function is -EILSEQ", "[kprobes][x86arch]") {
  // my_func: mov rax, rbx (3) ; mov rax, [rip+0x10] (7) ; ret
  const Bytes code = {0x48, 0x89, 0xd8, 0x48, 0x8b, 0x05, 0x10, 0x00, 0x00, 0x00, 0xc3};
  Symbol f;
  f.name = "my_func";
  f.addr = kCode;
  f.size = code.size();
  f.kind = Symbol::Kind::function;
  for (StepMode mode : {StepMode::modern, StepMode::classic}) {
    const Refused in = analyse_bytes(code, mode, kCode + 5, &f);
    CHECK(in.err == -kEILSEQ);
    CHECK(in.why ==
          "not an instruction boundary of my_func: 0x40010005 is inside `mov rax, [0x000000004001001A]` at "
          "0x40010003 (my_func+0x3)");
    CHECK(analyse_bytes(code, mode, kCode + 1, &f).err == -kEILSEQ);
    CHECK(analyse_bytes(code, mode, kCode + 3, &f).err == 0);
    CHECK(analyse_bytes(code, mode, kCode + 10, &f).err == 0);
    // Another probe's int3 at the function's start does not disturb the
    // walk: the TextReader hands back the original bytes.
    auto arm_first = [](Bus& b) {
      const uint8_t bp = 0xcc;
      b.write_bytes(kCode, &bp, 1);
    };
    CHECK(analyse_bytes(code, mode, kCode + 3, &f, arm_first).err == 0);
    CHECK(analyse_bytes(code, mode, kCode + 4, &f, arm_first).err == -kEILSEQ);
  }
}

TEST_CASE("x86 kprobes: a RIP-relative operand out of reach of the slot is -ERANGE", "[kprobes][x86arch]") {
  auto arch = make_x86_arch();
  Rig r;
  const Bytes code = rel_to({0x48, 0x8b, 0x05}, kData, 7);
  r.write(kCode, code.data(), code.size());
  TextReader text = [&](uint64_t a, uint8_t* out, size_t n) { return r.m.bus().read_bytes(a, out, n); };
  for (StepMode mode : {StepMode::modern, StepMode::classic}) {
    ProbeInsn pi;
    std::string why;
    REQUIRE(arch->analyse(text, kCode, nullptr, mode, pi, why) == 0);
    CHECK(pi.text == "mov rax, [0x0000000040020000]");
    CHECK(arch->build_slot(pi, kCode + 0x1'0000'0000ull, mode, why) == -kERANGE);
    CHECK(why.find("mov rax, [0x0000000040020000]: its RIP-relative operand cannot be reached from a slot at "
                   "0x140010000") == 0);
    CHECK(why.find("does not fit in 32 bits") != std::string::npos);
    // Just within reach: fine.
    CHECK(arch->build_slot(pi, kData + 0x7fff0000ull, mode, why) == 0);
  }
}

TEST_CASE("x86 kprobes: analyse fills the probe instruction", "[kprobes][x86arch]") {
  auto arch = make_x86_arch();
  const Bytes code = {0x48, 0x01, 0xd8};
  Rig r;
  r.write(kCode, code.data(), code.size());
  TextReader text = [&](uint64_t a, uint8_t* out, size_t n) { return r.m.bus().read_bytes(a, out, n); };
  ProbeInsn pi;
  std::string why;
  REQUIRE(arch->analyse(text, kCode, nullptr, StepMode::modern, pi, why) == 0);
  CHECK(pi.addr == kCode);
  CHECK(pi.len == 3);
  CHECK(std::memcmp(pi.orig, code.data(), 3) == 0);
  CHECK(pi.bp[0] == 0xcc);
  CHECK(pi.bp_len == 1);
  CHECK(pi.text == "add rax, rbx");
  CHECK(pi.kind == ProbeInsn::Kind::step);
  CHECK(arch->slot_size() == 16);
  CHECK(arch->isa() == Isa::x86_64);
}

TEST_CASE("x86 kprobes: loop and jrcxz emulation (decrement, then test)", "[kprobes][x86arch]") {
  // The CPU model lacks these, so analyse refuses them; their emulation is
  // still Linux's class and is checked here on a hand-made probe.
  auto arch = make_x86_arch();
  Rig r;
  auto& s = r.cpu().s;
  auto probe = [](uint8_t type, bool addr32) {
    ProbeInsn pi;
    pi.addr = kCode;
    pi.len = addr32 ? 3 : 2;
    pi.kind = ProbeInsn::Kind::emulate;
    xa::Facts f;
    f.flow = xa::Flow::loop;
    f.cond = type;
    f.addr32 = addr32;
    f.rel = -0x10;
    xa::pack(f, pi);
    return pi;
  };
  struct {
    uint8_t type;
    bool addr32;
    uint64_t rcx, flags;
    uint64_t rcx_after;
    bool taken;
  } rows[] = {
      {2, false, 1, 0, 0, false},                                    // loop: 1 -> 0, falls through
      {2, false, 2, 0, 1, true},                                     // loop: 2 -> 1, taken
      {2, false, 0, 0, ~0ull, true},                                 // loop: 0 -> -1, taken
      {0, false, 5, x86::kZF, 4, false},                             // loopne with ZF
      {0, false, 5, 0, 4, true},                                     // loopne without ZF
      {1, false, 5, x86::kZF, 4, true},                              // loope with ZF
      {1, false, 5, 0, 4, false},                                    // loope without ZF
      {3, false, 0, 0, 0, true},                                     // jrcxz, rcx = 0
      {3, false, 1ull << 32, 0, 1ull << 32, false},                  // jrcxz, rcx != 0
      {3, true, 1ull << 32, 0, 1ull << 32, true},                    // jecxz looks at ecx only
      {2, true, 0x100000001ull, 0, 0x100000000ull, false},           // loop with ecx
  };
  for (auto row : rows) {
    INFO("type " << int(row.type) << " rcx " << row.rcx);
    const ProbeInsn pi = probe(row.type, row.addr32);
    s.gpr[kRcx] = row.rcx;
    s.rflags = kFixed | row.flags;
    SavedFlags saved{};
    REQUIRE(arch->emulate(r.cpu(), r.m.bus(), pi, saved));
    CHECK(s.gpr[kRcx] == row.rcx_after);
    CHECK(s.rip == (row.taken ? kCode + pi.len - 0x10 : kCode + pi.len));
  }
}

TEST_CASE("x86 kprobes: emulation that would touch a stack outside RAM fails untouched", "[kprobes][x86arch]") {
  auto arch = make_x86_arch();
  Rig r;
  const Bytes code = {0xe8, 0, 0, 0, 0, 0xc3};  // call +0 ; ret
  r.write(kCode, code.data(), code.size());
  TextReader text = [&](uint64_t a, uint8_t* out, size_t n) { return r.m.bus().read_bytes(a, out, n); };
  for (uint64_t at : {kCode, kCode + 5}) {
    ProbeInsn pi;
    std::string why;
    REQUIRE(arch->analyse(text, at, nullptr, StepMode::modern, pi, why) == 0);
    auto& s = r.cpu().s;
    s.gpr[kRsp] = 8;  // far below RAM
    s.rip = at;
    SavedFlags saved{};
    CHECK_FALSE(arch->emulate(r.cpu(), r.m.bus(), pi, saved));
    CHECK(s.gpr[kRsp] == 8);
    CHECK(s.rip == at);
  }
}

TEST_CASE("x86 kprobes: breakpoints, traps, saved flags", "[kprobes][x86arch]") {
  using namespace x86;
  auto arch = make_x86_arch();
  const uint8_t int3[4] = {0xcc, 0, 0, 0}, nop[4] = {0x90, 0xcc, 0, 0};
  CHECK(arch->is_breakpoint(int3));
  CHECK_FALSE(arch->is_breakpoint(nop));
  uint8_t bp[4] = {};
  CHECK(arch->breakpoint_bytes(bp) == 1);
  CHECK(bp[0] == 0xcc);
  CHECK(arch->is_breakpoint_trap(TrapInfo{3, 0, kCode, false}));
  CHECK_FALSE(arch->is_breakpoint_trap(TrapInfo{3, 0, kCode, true}));  // an interrupt on vector 3
  CHECK_FALSE(arch->is_breakpoint_trap(TrapInfo{1, 0, kCode, false}));
  CHECK(arch->is_single_step_trap(TrapInfo{1, 0, kCode, false}));
  CHECK_FALSE(arch->is_single_step_trap(TrapInfo{1, 0, kCode, true}));

  Rig r;
  auto& s = r.cpu().s;
  s.rflags = kFixed | kIF | kTF | kCF;
  const SavedFlags saved = arch->save_and_mask(r.cpu());
  CHECK(s.rflags == (kFixed | kCF));
  s.rflags |= kZF;
  arch->restore(r.cpu(), saved);
  CHECK(s.rflags == (kFixed | kIF | kTF | kCF | kZF));
}

TEST_CASE("x86 kprobes: is_step_end matches only this step's end", "[kprobes][x86arch]") {
  auto arch = make_x86_arch();
  Rig r;
  const Bytes code = {0x48, 0x01, 0xd8, 0x74, 0x10, 0xc3};  // add rax, rbx ; jz +0x10 ; ret
  r.write(kCode, code.data(), code.size());
  TextReader text = [&](uint64_t a, uint8_t* out, size_t n) { return r.m.bus().read_bytes(a, out, n); };
  ProbeInsn pi;
  std::string why;
  const Cpu& cpu = r.m.cpu(0);
  REQUIRE(arch->analyse(text, kCode, nullptr, StepMode::modern, pi, why) == 0);
  REQUIRE(arch->build_slot(pi, kSlot, StepMode::modern, why) == 0);
  CHECK(arch->is_step_end(cpu, TrapInfo{3, 0, kSlot + 3, false}, pi, kSlot));
  CHECK_FALSE(arch->is_step_end(cpu, TrapInfo{3, 0, kSlot + 4, false}, pi, kSlot));
  CHECK_FALSE(arch->is_step_end(cpu, TrapInfo{1, 0, kSlot + 3, false}, pi, kSlot));
  CHECK_FALSE(arch->is_step_end(cpu, TrapInfo{3, 0, kSlot + 3, true}, pi, kSlot));
  REQUIRE(arch->analyse(text, kCode, nullptr, StepMode::classic, pi, why) == 0);
  REQUIRE(arch->build_slot(pi, kSlot, StepMode::classic, why) == 0);
  CHECK(arch->is_step_end(cpu, TrapInfo{1, 0, kSlot + 3, false}, pi, kSlot));
  CHECK_FALSE(arch->is_step_end(cpu, TrapInfo{3, 0, kSlot + 3, false}, pi, kSlot));
  CHECK_FALSE(arch->is_step_end(cpu, TrapInfo{1, 0, kSlot + 9, false}, pi, kSlot));
  // A stepped jz ends at the slot's next instruction or its slot-relative target.
  REQUIRE(arch->analyse(text, kCode + 3, nullptr, StepMode::classic, pi, why) == 0);
  REQUIRE(arch->build_slot(pi, kSlot, StepMode::classic, why) == 0);
  CHECK(arch->is_step_end(cpu, TrapInfo{1, 0, kSlot + 2, false}, pi, kSlot));
  CHECK(arch->is_step_end(cpu, TrapInfo{1, 0, kSlot + 2 + 0x10, false}, pi, kSlot));
  CHECK_FALSE(arch->is_step_end(cpu, TrapInfo{1, 0, kSlot + 3, false}, pi, kSlot));
  // A stepped ret may end anywhere.
  REQUIRE(arch->analyse(text, kCode + 5, nullptr, StepMode::classic, pi, why) == 0);
  REQUIRE(arch->build_slot(pi, kSlot, StepMode::classic, why) == 0);
  CHECK(arch->is_step_end(cpu, TrapInfo{1, 0, 0x1234, false}, pi, kSlot));
}

TEST_CASE("x86 kprobes: SysV arguments, return value and return address", "[kprobes][x86arch]") {
  auto arch = make_x86_arch();
  Rig r;
  auto& s = r.cpu().s;
  const int regs[6] = {kRdi, kRsi, kRdx, kRcx, 8, 9};
  for (int i = 0; i < 6; ++i) s.gpr[regs[i]] = 100 + i;
  s.gpr[kRsp] = kStack;
  const uint64_t frame[3] = {kCode + 0x44, 106, 107};  // return address, arg 7, arg 8
  r.write(kStack, reinterpret_cast<const uint8_t*>(frame), sizeof frame);
  for (int n = 1; n <= 8; ++n) {
    uint64_t v = 0;
    REQUIRE(arch->arg(r.m.cpu(0), r.m.bus(), n, v));
    CHECK(v == static_cast<uint64_t>(99 + n));
  }
  uint64_t v;
  CHECK_FALSE(arch->arg(r.m.cpu(0), r.m.bus(), 0, v));
  s.gpr[kRsp] = 8;  // outside RAM
  CHECK_FALSE(arch->arg(r.m.cpu(0), r.m.bus(), 7, v));
  CHECK_FALSE(arch->return_address(r.m.cpu(0), r.m.bus(), v));
  s.gpr[kRsp] = kStack;

  REQUIRE(arch->return_address(r.m.cpu(0), r.m.bus(), v));
  CHECK(v == kCode + 0x44);
  REQUIRE(arch->set_return_address(r.m.cpu(0), r.m.bus(), 0x4000'9999));
  REQUIRE(arch->return_address(r.m.cpu(0), r.m.bus(), v));
  CHECK(v == 0x4000'9999);
  CHECK(arch->sp_after_return(kStack) == kStack + 8);
  CHECK(arch->stack_pointer(r.m.cpu(0)) == kStack);
  s.gpr[kRax] = 42;
  CHECK(arch->retval(r.m.cpu(0)) == 42);
  arch->set_retval(r.m.cpu(0), 7);
  CHECK(s.gpr[kRax] == 7);
}

TEST_CASE("x86 kprobes: register names and snapshots", "[kprobes][x86arch]") {
  auto arch = make_x86_arch();
  const std::pair<const char*, int> names[] = {
      {"ax", 0},  {"cx", 1},  {"dx", 2},  {"bx", 3},  {"sp", 4},  {"bp", 5},   {"si", 6},   {"di", 7},
      {"rax", 0}, {"rcx", 1}, {"rdx", 2}, {"rbx", 3}, {"rsp", 4}, {"rbp", 5},  {"rsi", 6},  {"rdi", 7},
      {"r8", 8},  {"r9", 9},  {"r10", 10}, {"r15", 15}, {"ip", -2}, {"rip", -2}, {"a0", -1}, {"eax", -1},
      {"", -1},   {"r16", -1}, {"AX", -1}};
  for (auto [name, index] : names) {
    INFO(name);
    CHECK(arch->reg_index(name) == index);
  }

  Rig r;
  auto& s = r.cpu().s;
  for (int i = 0; i < 16; ++i) s.gpr[i] = 0x1000 + i;
  s.rip = kCode;
  s.rflags = kFixed | x86::kIF | x86::kCF;
  const RegSnapshot snap = arch->snapshot(r.m.cpu(0));
  CHECK(snap.gpr[15] == 0x100f);
  CHECK(snap.pc == kCode);
  CHECK(snap.flags == s.rflags);
  for (int i = 0; i < 16; ++i) s.gpr[i] = 0;
  s.rip = 0;
  s.rflags = kFixed;
  arch->restore_snapshot(r.m.cpu(0), snap);
  for (int i = 0; i < 16; ++i) CHECK(s.gpr[i] == 0x1000u + i);
  CHECK(s.rip == kCode);
  CHECK(s.rflags == (kFixed | x86::kIF | x86::kCF));
}
