// x86 traps through the IDT: int3 and the trap flag push the architecturally
// correct frame, iretq restores it, #UD names the instruction (SDM vol. 3,
// chapter 6 and 17.3).
#include <catch2/catch.hpp>

#include <cstring>

#include "cpu/hex.hpp"
#include "cpu/x86/x86_cpu.hpp"
#include "mem/memory_map.hpp"
#include "sim/machine.hpp"
#include "support/x86_rig.hpp"

using namespace ksim;

namespace {

using test::X86Rig;
constexpr uint64_t kCode = X86Rig::kCode;
constexpr uint64_t kHandler = X86Rig::kHandler;
constexpr uint64_t kStackTop = X86Rig::kStackTop;

// The rig with every exception vector (0-31) a gate to kHandler, recording
// trap events.
struct Rig : X86Rig {
  Rig() : X86Rig(EventKind::trap, vectors()) {}
  std::vector<Event>& traps = events;
  static std::vector<int> vectors() {
    std::vector<int> v;
    for (int k = 0; k < 32; ++k) v.push_back(k);
    return v;
  }
};

// The handler writes 0x5555 to the finisher: the run ends right after the
// frame is pushed, and the test inspects it.
const std::vector<uint8_t>& kFinish = test::kX86PowerOff;

}  // namespace

TEST_CASE("x86 int3 pushes RIP after the int3 byte and the full 64-bit frame", "[x86][trap]") {
  Rig r;
  r.code({0x90, 0xcc, 0x90});  // nop; int3; nop
  r.code(kFinish, kHandler);
  r.cpu().s.rflags = 0x2 | x86::kCF;
  RunResult res = r.m.run();
  REQUIRE(res.end == RunResult::End::poweroff);
  const uint64_t sp = r.cpu().s.gpr[4];
  CHECK(sp == kStackTop - 40);
  CHECK(r.q(sp) == kCode + 2);          // RIP after int3
  CHECK(r.q(sp + 8) == 0x08);           // CS
  CHECK((r.q(sp + 16) & x86::kCF) != 0);  // RFLAGS as it was
  CHECK(r.q(sp + 24) == kStackTop);     // old RSP
  CHECK(r.q(sp + 32) == 0x10);          // SS
  CHECK((r.cpu().s.rflags & x86::kIF) == 0);
}

TEST_CASE("x86 trap flag: one #DB after the next instruction, RIP after it; iretq restores the frame",
          "[x86][trap]") {
  Rig r;
  // pushfq; or qword [rsp], 0x100 (TF); popfq; inc rdx; (trap here) inc rdx
  r.code({0x9c, 0x48, 0x81, 0x0c, 0x24, 0x00, 0x01, 0x00, 0x00, 0x9d, 0x48, 0xff, 0xc2, 0x48, 0xff, 0xc2});
  // Handler: clear TF in the saved RFLAGS, count in rbx, iretq.
  r.code({0x48, 0x81, 0x64, 0x24, 0x10, 0xff, 0xfe, 0xff, 0xff,  // and qword [rsp+16], ~0x100
          0x48, 0xff, 0xc3,                                    // inc rbx
          0x48, 0xcf},                                         // iretq
         kHandler);
  // After the second inc: power off.
  r.code(kFinish, kCode + 16);
  RunResult res = r.m.run();
  REQUIRE(res.end == RunResult::End::poweroff);
  CHECK(r.cpu().s.gpr[2] == 2);  // both incs ran
  // popfq set TF: #DB comes after the instruction following popfq (the first
  // inc), with RIP after it; the handler ran once.
  CHECK(r.cpu().s.gpr[3] == 1);
  REQUIRE(r.traps.size() == 1);
  CHECK(r.traps[0].a == x86::kDB);
  CHECK(r.traps[0].c == kCode + 13);  // reported at the instruction boundary after the first inc
  CHECK((r.cpu().s.rflags & x86::kTF) == 0);
  CHECK(r.cpu().s.gpr[4] == kStackTop);  // iretq restored RSP
}

TEST_CASE("x86 #UD names the unsupported instruction in the trap event", "[x86][trap]") {
  Rig r;
  r.code({0x0f, 0x58, 0xc1});  // addps xmm0, xmm1
  r.code(kFinish, kHandler);
  REQUIRE(r.m.run().end == RunResult::End::poweroff);
  REQUIRE(r.traps.size() == 1);
  CHECK(r.traps[0].a == x86::kUD);
  CHECK(r.traps[0].c == kCode);
  CHECK_THAT(r.traps[0].text, Catch::Contains("addps"));
  CHECK(r.q(r.cpu().s.gpr[4]) == kCode);  // #UD is a fault: RIP of the instruction
}

// Issue 22: the crash report named the last trap of the loop, not the
// instruction that started it.
TEST_CASE("x86 a handler that faults is a trap loop, reported from the trap that started it", "[x86][trap]") {
  Rig r;
  r.code({0x0f, 0x58, 0xc1});  // addps xmm0, xmm1: #UD
  r.code({0x0f, 0x58, 0xc1}, kHandler);  // and the #UD handler the same
  const RunResult res = r.m.run();
  REQUIRE(res.end == RunResult::End::crash);
  CHECK_THAT(res.reason, Catch::Contains("unhandled trap loop: vector 6 at rip " + hex(kCode) + " ("));
  CHECK_THAT(res.reason, Catch::Contains("addps"));
  CHECK_THAT(res.reason, Catch::Contains(", then 8 more with no instruction retired, the last vector 6 at rip " +
                                         hex(kHandler)));
}

TEST_CASE("x86 stores into executed code take effect at the next fetch", "[x86][decode-cache]") {
  Rig r;
  // loop twice over "target: add ebx, 1"; the first pass patches the
  // immediate to 0x10 (mov byte [target+2], 0x10).
  //  0: mov ecx, 2
  //  5: target: add ebx, 1            (83 c3 01)
  //  8: mov byte [rip + (5+2) - 15], 0x10   (c6 05 f8 ff ff ff 10) -> addr 15-8=7 = target+2
  // 15: dec ecx ; jnz target
  r.code({0xb9, 0x02, 0x00, 0x00, 0x00, 0x83, 0xc3, 0x01, 0xc6, 0x05, 0xf8, 0xff, 0xff, 0xff, 0x10, 0xff, 0xc9,
          0x75, 0xf2});
  r.code(kFinish, kCode + 19);
  REQUIRE(r.m.run().end == RunResult::End::poweroff);
  CHECK(r.cpu().s.gpr[3] == 0x11);  // 1 on the first pass, 0x10 on the second
}

TEST_CASE("x86 cpuid, rdtsc and the FS/GS base MSRs", "[x86]") {
  Rig r;
  // xor eax,eax; cpuid; mov r8, rbx; rdtsc; mov r9, rax;
  // mov ecx, 0xC0000100; mov eax, 0x1234; xor edx, edx; wrmsr; xor eax, eax; rdmsr
  r.code({0x31, 0xc0, 0x0f, 0xa2, 0x49, 0x89, 0xd8, 0x0f, 0x31, 0x49, 0x89, 0xc1, 0xb9, 0x00, 0x01, 0x00, 0xc0,
          0xb8, 0x34, 0x12, 0x00, 0x00, 0x31, 0xd2, 0x0f, 0x30, 0x31, 0xc0, 0x0f, 0x32, 0x49, 0x89, 0xc2});
  r.code(kFinish, kCode + 33);
  REQUIRE(r.m.run().end == RunResult::End::poweroff);
  CHECK(r.cpu().s.gpr[8] == 0x6d69734b);  // "Ksim"
  CHECK(r.cpu().s.gpr[9] > 0);            // the cycle count
  CHECK(r.cpu().s.gpr[9] < 100);
  CHECK(r.cpu().s.gpr[10] == 0x1234);
  CHECK(r.cpu().s.fs_base == 0x1234);
}

TEST_CASE("x86 #GP from an access to an unmapped address pushes error code 0 below RIP", "[x86][trap]") {
  Rig r;
  // mov rax, [0x2000_0000] (nothing there)
  r.code({0x48, 0x8b, 0x04, 0x25, 0x00, 0x00, 0x00, 0x20});
  r.code(kFinish, kHandler);
  REQUIRE(r.m.run().end == RunResult::End::poweroff);
  REQUIRE(r.traps.size() == 1);
  CHECK(r.traps[0].a == x86::kGP);
  const uint64_t sp = r.cpu().s.gpr[4];
  CHECK(sp == kStackTop - 48);
  CHECK(r.q(sp) == 0);          // error code
  CHECK(r.q(sp + 8) == kCode);  // RIP of the faulting instruction
  CHECK(r.q(sp + 16) == 0x08);  // CS
}

TEST_CASE("x86 HLT with only a blocked interrupt pending is a hang the machine reports, not a host loop",
          "[x86][apic]") {
  Rig r;
  // The APIC is software-disabled at reset: a self-IPI stays pending but is
  // never delivered. mov eax, 0x40040 (self, vector 0x40); mov ecx, 0xFEE00300;
  // mov [rcx], eax; sti; hlt
  r.code({0xb8, 0x40, 0x00, 0x04, 0x00, 0xb9, 0x00, 0x03, 0xe0, 0xfe, 0x89, 0x01, 0xfb, 0xf4});
  RunResult res = r.m.run();
  CHECK(res.end == RunResult::End::crash);
  CHECK_THAT(res.reason, Catch::Contains("waiting for an interrupt"));
}
