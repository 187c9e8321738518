// Per-instruction semantics of the RV64 core, with the edge cases the
// Unprivileged ISA spells out (chapter numbers in each section).
#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>

#include "support/rv64_asm.hpp"
#include "support/rv64_machine.hpp"

using namespace ksim;
using namespace ksim::test;
using namespace ksim::test::rv;

namespace {
constexpr uint64_t kMin = 0x8000000000000000ull;

// Runs `code` with a1 = a, a2 = b and returns a0.
uint64_t run2(uint32_t insn, uint64_t a, uint64_t b) {
  Rv64Machine t;
  t.load({insn});
  t.x(a1) = a;
  t.x(a2) = b;
  auto r = t.run();
  REQUIRE(r.end == RunResult::End::hook_stop);
  return t.x(a0);
}
uint64_t rr(uint32_t f7, uint32_t f3, uint64_t a, uint64_t b) { return run2(op(f7, f3, a0, a1, a2), a, b); }
uint64_t rr32(uint32_t f7, uint32_t f3, uint64_t a, uint64_t b) { return run2(op32(f7, f3, a0, a1, a2), a, b); }
}  // namespace

TEST_CASE("RV64I register-register arithmetic and comparisons (ch. 2.4, 5.2)", "[rv64][isa]") {
  CHECK(rr(0x00, 0, 5, 7) == 12);                       // add
  CHECK(rr(0x20, 0, 5, 7) == uint64_t(-2));             // sub
  CHECK(rr(0x00, 2, uint64_t(-1), 1) == 1);             // slt signed
  CHECK(rr(0x00, 3, uint64_t(-1), 1) == 0);             // sltu
  CHECK(rr(0x00, 4, 0xff00, 0x0ff0) == 0xf0f0);         // xor
  CHECK(rr(0x00, 6, 0xff00, 0x0ff0) == 0xfff0);         // or
  CHECK(rr(0x00, 7, 0xff00, 0x0ff0) == 0x0f00);         // and
  CHECK(rr(0x00, 0, UINT64_MAX, 1) == 0);               // add wraps
}

TEST_CASE("Shifts use the low 6 bits of the amount, W shifts the low 5 (ch. 5.2)", "[rv64][isa]") {
  CHECK(rr(0x00, 1, 1, 64) == 1);                       // sll by 64 = by 0
  CHECK(rr(0x00, 1, 1, 65) == 2);                       // sll by 65 = by 1
  CHECK(rr(0x00, 5, kMin, 127) == 1);                   // srl by 127 = by 63
  CHECK(rr(0x20, 5, kMin, 63) == UINT64_MAX);           // sra fills with the sign
  CHECK(rr32(0x00, 1, 1, 32) == 1);                     // sllw by 32 = by 0
  CHECK(rr32(0x00, 1, 1, 31) == 0xffffffff80000000ull); // sllw result sign-extends
  CHECK(rr32(0x00, 5, 0xffffffff80000000ull, 4) == 0x08000000);  // srlw zero-fills bit 31
  CHECK(rr32(0x20, 5, 0x80000000, 4) == 0xfffffffff8000000ull);  // sraw uses bit 31 as sign
  CHECK(run2(I(63, a1, 1, a0, 0x13), 1, 0) == kMin);              // slli by 63
  CHECK(run2(I(0x400 | 3, a1, 5, a0, 0x13), kMin, 0) == 0xf000000000000000ull);  // srai
  CHECK(run2(I(31, a1, 1, a0, 0x1b), 1, 0) == 0xffffffff80000000ull);             // slliw
}

TEST_CASE("W operations sign-extend their 32-bit result (ch. 5.2)", "[rv64][isa]") {
  CHECK(rr32(0x00, 0, 0x7fffffff, 1) == 0xffffffff80000000ull);  // addw overflow
  CHECK(rr32(0x20, 0, 0, 1) == UINT64_MAX);                      // subw
  CHECK(rr32(0x00, 0, 0x1'0000'0001ull, 0) == 1);                // upper bits ignored
  CHECK(run2(I(-1, a1, 0, a0, 0x1b), 0x80000000, 0) == 0x7fffffff);  // addiw
  CHECK(run2(I(0, a1, 0, a0, 0x1b), 0x00000000ffffffffull, 0) == UINT64_MAX);  // sext.w
}

TEST_CASE("Multiply: low, high signed, high unsigned, high signed-unsigned (ch. 7.1)", "[rv64][isa][m]") {
  CHECK(rr(1, 0, 3, uint64_t(-4)) == uint64_t(-12));                   // mul
  CHECK(rr(1, 1, uint64_t(-1), uint64_t(-1)) == 0);                    // mulh (-1*-1 = 1)
  CHECK(rr(1, 1, kMin, kMin) == 0x4000000000000000ull);                // mulh
  CHECK(rr(1, 3, UINT64_MAX, UINT64_MAX) == UINT64_MAX - 1);           // mulhu
  CHECK(rr(1, 2, uint64_t(-1), UINT64_MAX) == UINT64_MAX);             // mulhsu: -1 * (2^64-1)
  CHECK(rr32(1, 0, 0x10000, 0x10000) == 0);                            // mulw keeps the low 32
  CHECK(rr32(1, 0, 0x7fffffff, 2) == 0xfffffffffffffffeull);           // mulw sign-extends
}

TEST_CASE("Division by zero and signed overflow follow table 7.1", "[rv64][isa][m]") {
  CHECK(rr(1, 4, 7, 0) == UINT64_MAX);          // div by 0 = -1
  CHECK(rr(1, 5, 7, 0) == UINT64_MAX);          // divu by 0 = 2^64-1
  CHECK(rr(1, 6, 7, 0) == 7);                   // rem by 0 = dividend
  CHECK(rr(1, 7, 7, 0) == 7);                   // remu by 0 = dividend
  CHECK(rr(1, 4, kMin, uint64_t(-1)) == kMin);  // div overflow = dividend
  CHECK(rr(1, 6, kMin, uint64_t(-1)) == 0);     // rem overflow = 0
  CHECK(rr(1, 4, uint64_t(-7), 2) == uint64_t(-3));  // rounds toward zero
  CHECK(rr(1, 6, uint64_t(-7), 2) == uint64_t(-1));  // remainder takes the dividend's sign
  CHECK(rr32(1, 4, 0x80000000, uint64_t(-1)) == 0xffffffff80000000ull);  // divw overflow
  CHECK(rr32(1, 6, 0x80000000, uint64_t(-1)) == 0);                      // remw overflow
  CHECK(rr32(1, 4, 5, 0) == UINT64_MAX);                                 // divw by 0
  CHECK(rr32(1, 5, 5, 0) == UINT64_MAX);                                 // divuw by 0 (sext of 2^32-1)
  CHECK(rr32(1, 7, 0x80000005, 0) == 0xffffffff80000005ull);             // remuw by 0: sext(dividend)
  CHECK(rr32(1, 6, 0xfffffff9, 0) == UINT64_MAX - 6);                    // remw by 0: sext(dividend)
}

TEST_CASE("Loads sign- or zero-extend; stores write only their width", "[rv64][isa]") {
  Rv64Machine t;
  t.write<uint64_t>(Rv64Machine::kData, 0x8899aabbccddeeffull);
  t.load({lb(a0, a1, 0), I(0, a1, 4, a2, 0x03) /*lbu*/, lh(a3, a1, 0), lw(a4, a1, 4), lwu(a5, a1, 4),
          ld(a6, a1, 0), sb(zero, a1, 8), sh(a1, a1, 10)});
  t.x(a1) = Rv64Machine::kData;
  t.write<uint64_t>(Rv64Machine::kData + 8, UINT64_MAX);
  t.run();
  CHECK(t.x(a0) == 0xffffffffffffffffull);
  CHECK(t.x(a2) == 0xff);
  CHECK(t.x(a3) == 0xffffffffffffeeffull);
  CHECK(t.x(a4) == 0xffffffff8899aabbull);
  CHECK(t.x(a5) == 0x8899aabbull);
  CHECK(t.x(a6) == 0x8899aabbccddeeffull);
  CHECK(t.read<uint64_t>(Rv64Machine::kData + 8) == 0xffffffff0000ff00ull);  // sb 0 at +8, sh 0x0000 at +10
}

TEST_CASE("Misaligned loads and stores to RAM are performed in hardware", "[rv64][isa]") {
  Rv64Machine t;
  t.load({sd(a2, a1, 3), ld(a0, a1, 3), lw(a3, a1, 5), lh(a4, a1, 4)});
  t.x(a1) = Rv64Machine::kData;
  t.x(a2) = 0x0123456789abcdefull;
  auto r = t.run();
  REQUIRE(r.end == RunResult::End::hook_stop);
  CHECK(t.x(a0) == 0x0123456789abcdefull);
  // Bytes from kData+3 (little-endian sd): ef cd ab 89 67 45 23 01.
  CHECK(t.x(a3) == 0x456789abull);          // lw at +5: ab 89 67 45
  CHECK(t.x(a4) == 0xffffffffffffabcdull);  // lh at +4: cd ab, sign-extended
}

TEST_CASE("x0 stays zero whatever is written to it", "[rv64][isa]") {
  Rv64Machine t;
  t.load({li(zero, 5), add(a0, zero, zero), lui(zero, 0x12345), ld(zero, a1, 0)});
  t.x(a1) = Rv64Machine::kData;
  t.run();
  CHECK(t.hart().gpr(0) == 0);
  CHECK(t.x(a0) == 0);
}

TEST_CASE("Branches, JAL and JALR: targets, links, and bit 0 of JALR cleared (ch. 2.5)", "[rv64][isa]") {
  Rv64Machine t;
  // 0: beq a1,a2,+8 (taken) ; 4: li a0,1 (skipped) ; 8: jal ra,+8 ; 12: li a0,2 (skipped)
  // 16: auipc a3,0 ; 20: addi a3,a3,13 (odd target 16+13=29 -> 28) ; 24: jalr t0,0(a3)
  // 28: li a4,7
  t.load({B(8, a2, a1, 0), li(a0, 1), J(8, ra), li(a0, 2), U(0, a3, 0x17), addi(a3, a3, 13),
          I(0, a3, 0, t0, 0x67), li(a4, 7)});
  t.x(a1) = 5;
  t.x(a2) = 5;
  t.run();
  CHECK(t.x(a0) == 0);
  CHECK(t.x(ra) == Rv64Machine::kCode + 12);
  CHECK(t.x(t0) == Rv64Machine::kCode + 28);
  CHECK(t.x(a4) == 7);
}

TEST_CASE("LR/SC: success, failure code 1, and loss of the reservation (ch. 8.2)", "[rv64][isa][a]") {
  Rv64Machine t;
  t.load({
      lr_d(a0, a1),          // reserve
      sc_d(a2, a1, a3),      // succeeds: a2 = 0, mem = a3
      sc_d(a4, a1, a3),      // no reservation any more: fails with 1
      lr_w(a5, a1),          // reserve again
      sd(zero, a1, 0),       // a store to the granule breaks it
      sc_w(a6, a1, a3),      // fails
      sc_d(a7, a1, a3),      // SC without LR fails
  });
  t.x(a1) = Rv64Machine::kData;
  t.x(a3) = 0x1234;
  t.write<uint64_t>(Rv64Machine::kData, 99);
  t.run();
  CHECK(t.x(a0) == 99);
  CHECK(t.x(a2) == 0);
  CHECK(t.x(a4) == 1);
  CHECK(t.x(a6) == 1);
  CHECK(t.x(a7) == 1);
  CHECK(t.read<uint64_t>(Rv64Machine::kData) == 0);
}

TEST_CASE("A store by another hart breaks a reservation", "[rv64][isa][a]") {
  Rv64Machine t(2);
  auto& h0 = t.hart(0);
  t.write<uint64_t>(Rv64Machine::kData, 5);
  h0.reservations().set(0, Rv64Machine::kData);
  REQUIRE(h0.reservations().held(0));
  // Hart 1 (through the bus, as its store fast path would notify) writes the granule.
  uint64_t v = 6;
  t.machine().bus().write_bytes(Rv64Machine::kData + 4, &v, 4);
  CHECK_FALSE(h0.reservations().held(0));
}

TEST_CASE("AMOs return the old value and store the combination (ch. 8.4)", "[rv64][isa][a]") {
  struct Case { uint32_t f5; uint32_t f3; uint64_t mem, src, expect_mem, expect_rd; };
  const Case cases[] = {
      {0x01, 3, 5, 9, 9, 5},                                            // amoswap.d
      {0x00, 3, 5, 9, 14, 5},                                           // amoadd.d
      {0x04, 3, 0b1100, 0b1010, 0b0110, 0b1100},                        // amoxor.d
      {0x0c, 3, 0b1100, 0b1010, 0b1000, 0b1100},                        // amoand.d
      {0x08, 3, 0b1100, 0b1010, 0b1110, 0b1100},                        // amoor.d
      {0x10, 3, uint64_t(-1), 1, uint64_t(-1), uint64_t(-1)},           // amomin.d signed
      {0x14, 3, uint64_t(-1), 1, 1, uint64_t(-1)},                      // amomax.d
      {0x18, 3, uint64_t(-1), 1, 1, uint64_t(-1)},                      // amominu.d
      {0x1c, 3, uint64_t(-1), 1, uint64_t(-1), uint64_t(-1)},           // amomaxu.d
      {0x00, 2, 0x7fffffff, 1, 0x80000000, 0x7fffffff},                 // amoadd.w
      {0x01, 2, 0x80000000, 3, 3, 0xffffffff80000000ull},               // amoswap.w sign-extends old
      {0x10, 2, 0x80000000, 1, 0x80000000, 0xffffffff80000000ull},      // amomin.w signed 32-bit
      {0x18, 2, 0x80000000, 1, 1, 0xffffffff80000000ull},               // amominu.w
  };
  for (const auto& c : cases) {
    Rv64Machine t;
    t.write<uint64_t>(Rv64Machine::kData, c.f3 == 2 ? (c.mem & 0xffffffff) | 0xabcd000000000000ull : c.mem);
    t.load({amo(c.f5, c.f3, a0, a1, a2)});
    t.x(a1) = Rv64Machine::kData;
    t.x(a2) = c.src;
    t.run();
    INFO("funct5 " << c.f5 << " width " << c.f3);
    CHECK(t.x(a0) == c.expect_rd);
    if (c.f3 == 3) {
      CHECK(t.read<uint64_t>(Rv64Machine::kData) == c.expect_mem);
    } else {
      CHECK(t.read<uint32_t>(Rv64Machine::kData) == uint32_t(c.expect_mem));
      CHECK(t.read<uint32_t>(Rv64Machine::kData + 4) == 0xabcd0000u);  // neighbour untouched
    }
  }
}

TEST_CASE("Misaligned atomics raise address-misaligned; atomics outside RAM fault", "[rv64][isa][a]") {
  auto trap_of = [](uint32_t insn, uint64_t addr) {
    Rv64Machine t;
    t.hart().s.mtvec = Rv64Machine::kCode + 0x100;
    t.load({insn});
    t.machine().bus().write_bytes(Rv64Machine::kCode + 0x100, &rv::ebreak, 4);
    t.set_stop(Rv64Machine::kCode + 0x100);
    t.x(a1) = addr;
    t.run();
    return std::pair{t.hart().s.mcause, t.hart().s.mtval};
  };
  CHECK(trap_of(amo(0x00, 3, a0, a1, a2), Rv64Machine::kData + 4) == std::pair{uint64_t(6), Rv64Machine::kData + 4});
  CHECK(trap_of(lr_w(a0, a1), Rv64Machine::kData + 2) == std::pair{uint64_t(4), Rv64Machine::kData + 2});
  CHECK(trap_of(amo(0x00, 2, a0, a1, a2), 0x10000000) == std::pair{uint64_t(7), uint64_t(0x10000000)});
}

TEST_CASE("Compressed instructions execute like their expansions (ch. 16)", "[rv64][isa][c]") {
  Rv64Machine t;
  // c.li a0,-3 ; c.addi a0,5 ; c.mv a1,a0 ; c.add a1,a0 ; c.slli a1,4 ; c.addiw a0,-1 ;
  // c.sub (s0 -= s1) ; c.lui a2,0x1f ; c.srai s0,1 ; c.andi s1,6 ; c.addi16sp sp,-32 ; c.sdsp a1,8(sp) ;
  // c.ldsp a3,8(sp) ; c.beqz a4,+4 (taken over the next c.nop)
  std::vector<uint16_t> code = {0x5575, 0x0515, 0x85aa, 0x95aa, 0x0592, 0x357d, 0x8c05, 0x667d,
                                0x8405, 0x8899, 0x713d, 0xe42e, 0x66a2, 0xc311, 0x0001, 0x0001};
  std::vector<uint8_t> bytes(code.size() * 2);
  std::memcpy(bytes.data(), code.data(), bytes.size());
  t.load_bytes(bytes);
  t.x(s0) = 100;
  t.x(s1) = 0x37;
  t.x(sp) = Rv64Machine::kData + 0x100;
  t.x(a4) = 0;
  auto r = t.run();
  REQUIRE(r.end == RunResult::End::hook_stop);
  CHECK(t.x(a0) == 1);             // -3 + 5 - 1
  CHECK(t.x(a1) == 64);            // (2 + 2) << 4
  CHECK(t.x(s0) == (100 - 0x37) / 2);
  CHECK(t.x(s1) == (0x37 & 6));
  CHECK(t.x(a2) == 0x1f000);
  CHECK(t.x(sp) == Rv64Machine::kData + 0x100 - 32);
  CHECK(t.x(a3) == 64);
  CHECK(t.hart().instret() == 15);  // the skipped c.nop did not run
}
