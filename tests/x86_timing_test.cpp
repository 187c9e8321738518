// x86 timing behaviour: rep string instructions are interruptible between
// iterations (docs/X86.md, SDM vol. 1, 7.3.9.1), and --seed draws memory
// stalls on x86 as on RV64 (docs/TIMING.md, "Seeded perturbation").
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "cpu/timing.hpp"
#include "cpu/x86/x86_cpu.hpp"
#include "mem/memory_map.hpp"
#include "sim/elf/elf_image.hpp"
#include "sim/machine.hpp"
#include "support/x86_rig.hpp"

using namespace ksim;

namespace {

using test::X86Rig;
constexpr uint64_t kBase = X86Rig::kBase;
constexpr uint64_t kCode = X86Rig::kCode;
constexpr uint64_t kHandler = X86Rig::kHandler;
constexpr uint64_t kBuf = kBase + 0x10000;
constexpr int kVector = 0x40;
constexpr uint32_t kCount = 1000;

// The rig with one interrupt gate (kVector), recording interrupt events.
struct Rig : X86Rig {
  Rig() : X86Rig(EventKind::interrupt, {kVector}) {}
  std::vector<Event>& interrupts = events;
  std::vector<uint8_t> buf(size_t n) {
    std::vector<uint8_t> v(n);
    m.bus().read_bytes(kBuf, v.data(), n);
    return v;
  }
};

std::vector<uint8_t> cat(std::initializer_list<std::vector<uint8_t>> parts) {
  std::vector<uint8_t> out;
  for (const auto& p : parts)
    for (uint8_t b : p) out.push_back(b);
  return out;
}
std::vector<uint8_t> le32(uint32_t v) {
  return {static_cast<uint8_t>(v), static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v >> 16),
          static_cast<uint8_t>(v >> 24)};
}

// mov ecx, kCount; mov edi, kBuf; mov eax, 0xab  (3 instructions)
const std::vector<uint8_t> kSetup = cat({{0xb9}, le32(kCount), {0xbf}, le32(static_cast<uint32_t>(kBuf)), {0xb8},
                                         le32(0xab)});
const std::vector<uint8_t> kRepStosb = {0xf3, 0xaa};
const std::vector<uint8_t>& kFinish = test::kX86PowerOff;

}  // namespace

TEST_CASE("x86 rep stosb pauses between iterations at a run boundary with RIP on it and RCX counting down",
          "[x86][rep]") {
  Rig r;
  const uint64_t rep_at = kCode + kSetup.size();
  r.code(cat({kSetup, kRepStosb, kFinish}), kCode);
  // Three one-cycle moves, then iterations of the load-class cost each
  // (STOS is in the load class, cpu/timing.hpp): pause after 100 of them.
  const uint64_t per = timing::cycles(timing::Class::load);
  RunLimits lim;
  lim.cycle = 3 + 100 * per;
  REQUIRE(r.m.run(lim).end == RunResult::End::paused);
  CHECK(r.cpu().s.rip == rep_at);
  CHECK(r.cpu().s.gpr[1] == kCount - 100);
  CHECK(r.cpu().s.gpr[7] == kBuf + 100);
  CHECK(r.cpu().instret() == 3);  // nothing retired by the partial rep
  std::vector<uint8_t> b = r.buf(kCount + 1);
  CHECK(b[99] == 0xab);
  CHECK(b[100] == 0);
  // Resumed, it finishes where an uninterrupted one would: every byte,
  // RCX 0, one retirement, kCount iterations plus the retirement's cost.
  REQUIRE(r.m.run().end == RunResult::End::poweroff);
  b = r.buf(kCount + 1);
  CHECK(std::count(b.begin(), b.begin() + kCount, 0xab) == kCount);
  CHECK(b[kCount] == 0);
  CHECK(r.cpu().s.gpr[1] == 0);
  CHECK(r.cpu().s.gpr[7] == kBuf + kCount);
  CHECK(r.cpu().instret() == 3 + 1 + 2);  // setup, the rep, the finisher's two instructions
  // Each iteration costs `per`, the retirement `per` once more (docs/TIMING.md).
  CHECK(r.cpu().cycle() >= 3 + (kCount + 1) * per);
}

TEST_CASE("x86 an interrupt lands between rep iterations; the handler returns into the rep, which completes",
          "[x86][rep][apic]") {
  Rig r;
  const uint32_t apic = 0xfee00000;
  // mov ebx, 0xFEE00000; SVR = 0x1ff (enabled); divide by 1; LVT timer:
  // one-shot, vector kVector; setup; sti; initial count 200; rep stosb.
  const std::vector<uint8_t> apic_setup = cat({{0xbb},
                                               le32(apic),
                                               {0xc7, 0x83, 0xf0, 0x00, 0x00, 0x00},
                                               le32(0x1ff),
                                               {0xc7, 0x83, 0xe0, 0x03, 0x00, 0x00},
                                               le32(0xb),
                                               {0xc7, 0x83, 0x20, 0x03, 0x00, 0x00},
                                               le32(kVector)});
  const std::vector<uint8_t> arm = cat({{0xfb, 0xc7, 0x83, 0x80, 0x03, 0x00, 0x00}, le32(200)});
  const std::vector<uint8_t> prog = cat({apic_setup, kSetup, arm, kRepStosb, kFinish});
  const uint64_t rep_at = kCode + prog.size() - kRepStosb.size() - kFinish.size();
  r.code(prog, kCode);
  // Handler: r10 = RCX, r11 = the saved RIP, r12 = one byte past what the
  // rep has stored so far; EOI; iretq.
  r.code({0x49, 0x89, 0xca,                                            // mov r10, rcx
          0x4c, 0x8b, 0x1c, 0x24,                                      // mov r11, [rsp]
          0x49, 0x89, 0xfc,                                            // mov r12, rdi
          0xc7, 0x83, 0xb0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // mov dword [rbx+0xb0], 0 (EOI)
          0x48, 0xcf},                                                 // iretq
         kHandler);
  REQUIRE(r.m.run().end == RunResult::End::poweroff);
  REQUIRE(r.interrupts.size() == 1);
  CHECK(r.interrupts[0].a == static_cast<uint64_t>(kVector));
  CHECK(r.interrupts[0].c == rep_at);                      // taken with RIP on the rep
  CHECK(r.cpu().s.gpr[11] == rep_at);                      // and that is the RIP pushed
  const uint64_t left = r.cpu().s.gpr[10];
  CHECK(left > 0);                                         // between iterations:
  CHECK(left < kCount);                                    // some done, some left
  CHECK(r.cpu().s.gpr[12] == kBuf + (kCount - left));     // RDI agreed with RCX
  // The timer was armed 200 cycles before it fired; the rep began a few
  // instructions after arming, so about (200 - few) / per iterations ran.
  const uint64_t per = timing::cycles(timing::Class::load);
  CHECK(kCount - left <= 200 / per);
  CHECK(kCount - left >= 200 / per - 5);
  // The final result is as without the interrupt.
  const std::vector<uint8_t> b = r.buf(kCount + 1);
  CHECK(std::count(b.begin(), b.begin() + kCount, 0xab) == kCount);
  CHECK(b[kCount] == 0);
  CHECK(r.cpu().s.gpr[1] == 0);
}

TEST_CASE("x86 --seed draws memory stalls: cycles differ from seed 0, results do not, and a seed repeats",
          "[x86][seed]") {
  const std::string elf = std::string(KSIM_BINARY_DIR) + "/workloads/x86/x86_sort_O2.elf";
  const ElfImage img = load_elf_file(elf, Isa::x86_64);
  struct Out {
    RunResult r;
    std::string console;
  };
  auto run = [&](uint64_t seed) {
    MachineConfig cfg;
    cfg.isa = Isa::x86_64;
    cfg.seed = seed;
    Machine m(cfg);
    m.load(img);
    Out o{m.run(), m.console()};
    return o;
  };
  const Out base = run(0), a = run(77), again = run(77), other = run(78);
  REQUIRE(base.r.end == RunResult::End::poweroff);
  REQUIRE(base.r.status == 0);
  for (const Out* o : {&a, &again, &other}) {
    REQUIRE(o->r.end == RunResult::End::poweroff);
    CHECK(o->r.status == 0);
    CHECK(o->console == base.console);    // the program computes the same
    CHECK(o->r.instret == base.r.instret);  // stalls retire nothing
  }
  CHECK(a.r.cycles > base.r.cycles);
  CHECK(again.r.cycles == a.r.cycles);
  CHECK(other.r.cycles != a.r.cycles);
  // The stalls cost what TIMING says: at least one cycle every
  // kStallIntervalMax cycles, at most kStallMax every kStallIntervalMin.
  const uint64_t extra = a.r.cycles - base.r.cycles;
  CHECK(extra >= base.r.cycles / timing::kStallIntervalMax);
  CHECK(extra <= timing::kStallMax * (a.r.cycles / timing::kStallIntervalMin + 1));
}

TEST_CASE("x86 each rep iteration is one step: stepping stops between iterations", "[x86][rep]") {
  Rig r;
  const uint64_t rep_at = kCode + kSetup.size();
  r.code(cat({kSetup, kRepStosb, kFinish}), kCode);
  // Three moves, then two iterations: five steps.
  RunLimits lim;
  lim.steps = 5;
  REQUIRE(r.m.run(lim).end == RunResult::End::paused);
  CHECK(r.m.steps() == 5);
  CHECK(r.cpu().s.rip == rep_at);
  CHECK(r.cpu().s.gpr[1] == kCount - 2);
  CHECK(r.cpu().instret() == 3);
  // Up to step 3 + kCount (RunLimits counts from the machine's start): the
  // last iteration retires the rep.
  lim.steps = 3 + kCount;
  REQUIRE(r.m.run(lim).end == RunResult::End::paused);
  CHECK(r.m.steps() == 3 + kCount);
  CHECK(r.cpu().s.rip == rep_at + kRepStosb.size());
  CHECK(r.cpu().s.gpr[1] == 0);
  CHECK(r.cpu().instret() == 4);
  REQUIRE(r.m.run().end == RunResult::End::poweroff);
}
