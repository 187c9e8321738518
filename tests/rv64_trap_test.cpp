// Traps, interrupts, CSRs and privilege (RISC-V Privileged Architecture
// 1.12, chapter 3), the host trap hook chain, and decode-cache coherence.
#include <catch2/catch.hpp>

#include "cpu/rv64/csr_numbers.hpp"
#include "mem/memory_map.hpp"
#include "support/rv64_asm.hpp"
#include "support/rv64_machine.hpp"

using namespace ksim;
using namespace ksim::test;
using namespace ksim::test::rv;
namespace csr = ksim::rv64::csr;

namespace {
constexpr uint64_t kHandler = Rv64Machine::kCode + 0x800;

// A machine whose trap vector is a lone ebreak at kHandler where the run
// stops, so each test sees mcause/mepc/mtval of the first trap.
struct TrapRig {
  Rv64Machine t;
  explicit TrapRig(const std::vector<uint32_t>& code) {
    t.load(code);
    t.hart().s.mtvec = kHandler;
    t.machine().bus().write_bytes(kHandler, &rv::ebreak, 4);
    t.set_stop(kHandler);
  }
  RunResult run() { return t.run(); }
  rv64::State& s() { return t.hart().s; }
};
}  // namespace

TEST_CASE("ecall and ebreak: causes, mepc, mtval (priv. 3.1.15-3.1.16)", "[rv64][trap]") {
  TrapRig a({nop, ecall});
  a.run();
  CHECK(a.s().mcause == rv64::kEcallM);
  CHECK(a.s().mepc == Rv64Machine::kCode + 4);
  CHECK(a.s().mtval == 0);

  TrapRig b({nop, nop, ebreak});
  b.run();
  CHECK(b.s().mcause == rv64::kBreakpoint);
  CHECK(b.s().mepc == Rv64Machine::kCode + 8);
  CHECK(b.s().mtval == Rv64Machine::kCode + 8);
  CHECK(b.t.hart().instret() == 2);  // the trapping ebreak did not retire
}

TEST_CASE("Illegal instructions report their bits in mtval", "[rv64][trap]") {
  TrapRig a({0x00000000});
  a.run();
  CHECK(a.s().mcause == rv64::kIllegalInsn);
  CHECK(a.s().mtval == 0);

  const uint32_t bad_csr = csrrs(a0, 0x7c0, zero);  // no such CSR
  TrapRig b({bad_csr});
  b.run();
  CHECK(b.s().mcause == rv64::kIllegalInsn);
  CHECK(b.s().mtval == bad_csr);

  TrapRig c({csrrw(zero, csr::mhartid, a0)});  // read-only CSR written
  c.run();
  CHECK(c.s().mcause == rv64::kIllegalInsn);

  TrapRig d({0x10200073});  // sret: no S-mode
  d.run();
  CHECK(d.s().mcause == rv64::kIllegalInsn);
}

TEST_CASE("Accesses outside RAM and devices raise access faults with the address", "[rv64][trap]") {
  TrapRig a({ld(a0, a1, 0)});
  a.t.x(a1) = 0x40000000;
  a.run();
  CHECK(a.s().mcause == rv64::kLoadAccessFault);
  CHECK(a.s().mtval == 0x40000000);

  TrapRig b({sw(a0, a1, 0)});
  b.t.x(a1) = 0xffff'ffff'ffff'fff0ull;
  b.run();
  CHECK(b.s().mcause == rv64::kStoreAccessFault);
  CHECK(b.s().mtval == 0xffff'ffff'ffff'fff0ull);

  // A jump out of RAM writes the link register, then the fetch faults at the target.
  TrapRig c({I(0, a1, 0, ra, 0x67)});
  c.t.x(a1) = 0x40000000;
  c.run();
  CHECK(c.s().mcause == rv64::kInsnAccessFault);
  CHECK(c.s().mepc == 0x40000000);
  CHECK(c.s().mtval == 0x40000000);
  CHECK(c.t.x(ra) == Rv64Machine::kCode + 4);

  // Misaligned access to a device: address-misaligned, not a crash.
  TrapRig d({lw(a0, a1, 1)});
  d.t.x(a1) = memmap::kClintBase;
  d.run();
  CHECK(d.s().mcause == rv64::kLoadMisaligned);
}

TEST_CASE("mret drops to U-mode; U-mode cannot touch machine CSRs; ecall from U is cause 8", "[rv64][trap]") {
  const uint64_t user = Rv64Machine::kCode + 0x100;
  TrapRig a({csrrw(zero, csr::mepc, a1), mret});
  a.t.x(a1) = user;
  a.t.machine().bus().write_bytes(user, &rv::ecall, 4);
  a.run();
  CHECK(a.s().mcause == rv64::kEcallU);
  CHECK(a.s().mepc == user);
  CHECK(((a.s().mstatus & rv64::kMstatusMPP) >> 11) == 0);  // came from U

  TrapRig b({csrrw(zero, csr::mepc, a1), mret});
  b.t.x(a1) = user;
  uint32_t read_mstatus = csrrs(a0, csr::mstatus, zero);
  b.t.machine().bus().write_bytes(user, &read_mstatus, 4);
  b.run();
  CHECK(b.s().mcause == rv64::kIllegalInsn);
  CHECK(b.s().mtval == read_mstatus);
}

TEST_CASE("U-mode counter reads follow mcounteren", "[rv64][trap][csr]") {
  const uint64_t user = Rv64Machine::kCode + 0x100;
  uint32_t prog[] = {csrrs(a0, csr::instret, zero), csrrs(a2, csr::cycle, zero)};
  TrapRig a({csrrwi(zero, csr::mcounteren, 4 /* IR only */), csrrw(zero, csr::mepc, a1), mret});
  a.t.x(a1) = user;
  a.t.machine().bus().write_bytes(user, prog, sizeof prog);
  a.run();
  CHECK(a.s().mcause == rv64::kIllegalInsn);           // cycle refused
  CHECK(a.s().mepc == user + 4);                        // instret allowed
}

TEST_CASE("CSR reset values and WARL behaviour", "[rv64][csr]") {
  Rv64Machine t;
  t.load({csrrs(a0, csr::misa, zero), csrrs(a1, csr::mhartid, zero), csrrs(a2, csr::mstatus, zero),
          // MPP=01 (S) is not a supported mode: reads back as U
          lui(t0, 1), csrrs(zero, csr::mstatus, t0), csrrs(a3, csr::mstatus, zero),
          // mtvec: bit 1 is never set
          li(t1, 0x102), addi(t1, t1, 0), csrrw(zero, csr::mtvec, t1), csrrs(a4, csr::mtvec, zero),
          // misa is read-only (writes ignored), mvendorid reads 0
          csrrw(zero, csr::misa, zero), csrrs(a5, csr::misa, zero), csrrs(a6, csr::mvendorid, zero),
          // minstret written: reads back the value (its own increment suppressed)
          csrrwi(zero, csr::minstret, 0), csrrs(a7, csr::minstret, zero)});
  t.x(a6) = 99;
  auto r = t.run();
  REQUIRE(r.end == RunResult::End::hook_stop);
  const uint64_t misa = t.x(a0);
  CHECK(misa >> 62 == 2);
  for (char ext : {'I', 'M', 'A', 'C', 'U'}) CHECK((misa >> (ext - 'A') & 1) == 1);
  for (char ext : {'S', 'F', 'D'}) CHECK((misa >> (ext - 'A') & 1) == 0);
  CHECK(t.x(a1) == 0);
  CHECK(((t.x(a2) >> 32) & 3) == 2);  // UXL = 64-bit
  CHECK(((t.x(a3) >> 11) & 3) == 0);
  CHECK(t.x(a4) == 0x100);
  CHECK(t.x(a5) == misa);
  CHECK(t.x(a6) == 0);
  CHECK(t.x(a7) == 0);
}

TEST_CASE("Timer interrupt is taken at mtimecmp, vectored through mtvec", "[rv64][irq]") {
  Rv64Machine t;
  const uint64_t handler = Rv64Machine::kCode + 0x400;
  // mtimecmp = 50 ticks; enable MTIE and MIE; spin.
  t.load({csrrw(zero, csr::mie, a2), csrrw(zero, csr::mtvec, a3), sd(a1, a4, 0), csrrs(zero, csr::mstatus, a5),
          J(0, zero)});
  t.x(a1) = 50;
  t.x(a2) = rv64::kMTIP;
  t.x(a3) = handler | 1;  // vectored
  t.x(a4) = memmap::kClintBase + memmap::kClintMtimecmp;
  t.x(a5) = rv64::kMstatusMIE;
  uint32_t brk = rv::ebreak;
  t.machine().bus().write_bytes(handler + 4 * 7, &brk, 4);
  t.set_stop(handler + 4 * 7);
  auto r = t.run();
  REQUIRE(r.end == RunResult::End::hook_stop);
  CHECK(t.hart().s.mcause == (1ull << 63 | 7));
  CHECK(t.hart().s.mepc == Rv64Machine::kCode + 16);  // the spin loop
  // Taken at the first instruction boundary at or after cycle 50 * divider.
  CHECK(t.hart().cycle() >= 50 * timing::kTimebaseDivider);
  CHECK(t.hart().cycle() < 50 * timing::kTimebaseDivider + 20);
  CHECK((t.hart().s.mstatus & rv64::kMstatusMIE) == 0);
  CHECK((t.hart().s.mstatus & rv64::kMstatusMPIE) != 0);
}

TEST_CASE("WFI idles until the timer fires, then the interrupt is taken after it", "[rv64][irq]") {
  Rv64Machine t;
  const uint64_t handler = Rv64Machine::kCode + 0x400;
  t.load({csrrw(zero, csr::mie, a2), csrrw(zero, csr::mtvec, a3), sd(a1, a4, 0), csrrs(zero, csr::mstatus, a5),
          wfi, J(0, zero)});
  t.x(a1) = 100000;
  t.x(a2) = rv64::kMTIP;
  t.x(a3) = handler;
  t.x(a4) = memmap::kClintBase + memmap::kClintMtimecmp;
  t.x(a5) = rv64::kMstatusMIE;
  t.machine().bus().write_bytes(handler, &rv::ebreak, 4);
  t.set_stop(handler);
  auto r = t.run();
  REQUIRE(r.end == RunResult::End::hook_stop);
  CHECK(t.hart().s.mepc == Rv64Machine::kCode + 20);  // after the wfi
  CHECK(t.hart().instret() == 5);                      // idling retired nothing
  CHECK(t.hart().cycle() >= 100000 * timing::kTimebaseDivider);
}

TEST_CASE("WFI with nothing to wake the hart is reported as a guest crash", "[rv64][irq]") {
  Rv64Machine t;
  t.load({wfi});
  auto r = t.run();
  CHECK(r.end == RunResult::End::crash);
  CHECK_THAT(r.reason, Catch::Contains("waiting for an interrupt"));
}

TEST_CASE("A trap vector that faults is a trap loop: the run stops as a crash", "[rv64][trap]") {
  Rv64Machine t;
  t.load({ecall});
  t.hart().s.mtvec = 0x40000000;  // nothing there
  auto r = t.run();
  CHECK(r.end == RunResult::End::crash);
  CHECK_THAT(r.reason, Catch::Contains("trap loop"));
}

TEST_CASE("The trap hook chain sees traps first and may consume them", "[rv64][trap][hooks]") {
  Rv64Machine t;
  int seen = 0;
  // Priority -1 runs before the harness's stop hook (priority 0).
  t.machine().trap_hooks().add(-1, [&](Cpu& c, const TrapInfo& ti) {
    if (ti.cause == rv64::kEcallM) {
      ++seen;
      c.set_pc(c.pc() + 4);  // emulate: skip the ecall
      c.set_gpr(a0, 42);
      return HookResult::handled;
    }
    return HookResult::pass;
  });
  t.load({ecall, addi(a0, a0, 1)});
  auto r = t.run();
  REQUIRE(r.end == RunResult::End::hook_stop);
  CHECK(seen == 1);
  CHECK(t.x(a0) == 43);
  CHECK(t.hart().s.mcause == 0);  // the guest never saw the trap
}

TEST_CASE("Stores into executed code take effect at the next fetch (decode cache coherence)", "[rv64][decode-cache]") {
  // Strict code model: this is about the shared decode cache, which shows a
  // store at the next fetch; the relaxed model's fence.i rule is
  // code_model_test.cpp's.
  Rv64Machine t(1, CodeModel::strict);
  // Loop twice over "target": the first pass rewrites target to "addi a0,a0,100".
  //  0: li a0,0      4: li t1,2
  //  8: target: addi a0,a0,1
  // 12: sw a2,8(a3) (overwrite target)    16: addi t1,t1,-1   20: bnez t1, target
  t.load({li(a0, 0), li(t1, 2), addi(a0, a0, 1), sw(a2, a3, 8), addi(t1, t1, -1), B(-12, zero, t1, 1)});
  t.x(a2) = addi(a0, a0, 100);
  t.x(a3) = Rv64Machine::kCode;
  t.run();
  CHECK(t.x(a0) == 101);
}

TEST_CASE("A 32-bit instruction crossing a page boundary is decoded and invalidated correctly", "[rv64][decode-cache]") {
  Rv64Machine t;
  const uint64_t at = Rv64Machine::kCode + 0x1000 - 2;  // straddles two pages
  t.load({addi(a0, a0, 5)}, at);
  t.run();
  CHECK(t.x(a0) == 5);
  // Rewrite only the upper half (in the second page): imm 5 -> imm 7 lives in bits 31:20.
  uint32_t newer = addi(a0, a0, 7);
  uint16_t hi = static_cast<uint16_t>(newer >> 16);
  t.machine().bus().write_bytes(at + 2, &hi, 2);
  t.hart().set_pc(at);
  t.run();
  CHECK(t.x(a0) == 12);
}
