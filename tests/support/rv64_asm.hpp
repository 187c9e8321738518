// A tiny RV64 encoder for tests: enough to write instruction sequences
// inline without an assembler. Field layouts from the Unprivileged ISA,
// section 2.3 ("Immediate Encoding Variants").
#pragma once
#include <cstdint>

namespace ksim::test::rv {

enum Reg : uint32_t {
  zero, ra, sp, gp, tp, t0, t1, t2, s0, s1, a0, a1, a2, a3, a4, a5, a6, a7,
  s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, t3, t4, t5, t6
};

constexpr uint32_t R(uint32_t f7, uint32_t rs2, uint32_t rs1, uint32_t f3, uint32_t rd, uint32_t op) {
  return f7 << 25 | rs2 << 20 | rs1 << 15 | f3 << 12 | rd << 7 | op;
}
constexpr uint32_t I(int32_t imm, uint32_t rs1, uint32_t f3, uint32_t rd, uint32_t op) {
  return (static_cast<uint32_t>(imm) & 0xfff) << 20 | rs1 << 15 | f3 << 12 | rd << 7 | op;
}
constexpr uint32_t S(int32_t imm, uint32_t rs2, uint32_t rs1, uint32_t f3) {
  uint32_t u = static_cast<uint32_t>(imm);
  return (u >> 5 & 0x7f) << 25 | rs2 << 20 | rs1 << 15 | f3 << 12 | (u & 0x1f) << 7 | 0x23;
}
constexpr uint32_t B(int32_t imm, uint32_t rs2, uint32_t rs1, uint32_t f3) {
  uint32_t u = static_cast<uint32_t>(imm);
  return (u >> 12 & 1) << 31 | (u >> 5 & 0x3f) << 25 | rs2 << 20 | rs1 << 15 | f3 << 12 | (u >> 1 & 0xf) << 8 |
         (u >> 11 & 1) << 7 | 0x63;
}
constexpr uint32_t U(uint32_t imm20, uint32_t rd, uint32_t op) { return imm20 << 12 | rd << 7 | op; }
constexpr uint32_t J(int32_t imm, uint32_t rd) {
  uint32_t u = static_cast<uint32_t>(imm);
  return (u >> 20 & 1) << 31 | (u >> 1 & 0x3ff) << 21 | (u >> 11 & 1) << 20 | (u >> 12 & 0xff) << 12 | rd << 7 | 0x6f;
}

// Common instructions.
constexpr uint32_t addi(uint32_t rd, uint32_t rs1, int32_t imm) { return I(imm, rs1, 0, rd, 0x13); }
constexpr uint32_t li(uint32_t rd, int32_t imm) { return addi(rd, zero, imm); }
constexpr uint32_t lui(uint32_t rd, uint32_t imm20) { return U(imm20, rd, 0x37); }
constexpr uint32_t add(uint32_t rd, uint32_t a, uint32_t b) { return R(0, b, a, 0, rd, 0x33); }
constexpr uint32_t op(uint32_t f7, uint32_t f3, uint32_t rd, uint32_t a, uint32_t b) { return R(f7, b, a, f3, rd, 0x33); }
constexpr uint32_t op32(uint32_t f7, uint32_t f3, uint32_t rd, uint32_t a, uint32_t b) { return R(f7, b, a, f3, rd, 0x3b); }
constexpr uint32_t ld(uint32_t rd, uint32_t rs1, int32_t imm) { return I(imm, rs1, 3, rd, 0x03); }
constexpr uint32_t lw(uint32_t rd, uint32_t rs1, int32_t imm) { return I(imm, rs1, 2, rd, 0x03); }
constexpr uint32_t lwu(uint32_t rd, uint32_t rs1, int32_t imm) { return I(imm, rs1, 6, rd, 0x03); }
constexpr uint32_t lh(uint32_t rd, uint32_t rs1, int32_t imm) { return I(imm, rs1, 1, rd, 0x03); }
constexpr uint32_t lb(uint32_t rd, uint32_t rs1, int32_t imm) { return I(imm, rs1, 0, rd, 0x03); }
constexpr uint32_t sd(uint32_t rs2, uint32_t rs1, int32_t imm) { return S(imm, rs2, rs1, 3); }
constexpr uint32_t sw(uint32_t rs2, uint32_t rs1, int32_t imm) { return S(imm, rs2, rs1, 2); }
constexpr uint32_t sh(uint32_t rs2, uint32_t rs1, int32_t imm) { return S(imm, rs2, rs1, 1); }
constexpr uint32_t sb(uint32_t rs2, uint32_t rs1, int32_t imm) { return S(imm, rs2, rs1, 0); }
constexpr uint32_t csrrw(uint32_t rd, uint32_t csr, uint32_t rs1) { return csr << 20 | rs1 << 15 | 1 << 12 | rd << 7 | 0x73; }
constexpr uint32_t csrrs(uint32_t rd, uint32_t csr, uint32_t rs1) { return csr << 20 | rs1 << 15 | 2 << 12 | rd << 7 | 0x73; }
constexpr uint32_t csrrc(uint32_t rd, uint32_t csr, uint32_t rs1) { return csr << 20 | rs1 << 15 | 3 << 12 | rd << 7 | 0x73; }
constexpr uint32_t csrrwi(uint32_t rd, uint32_t csr, uint32_t uimm) { return csr << 20 | uimm << 15 | 5 << 12 | rd << 7 | 0x73; }
constexpr uint32_t amo(uint32_t f5, uint32_t f3, uint32_t rd, uint32_t addr, uint32_t src) {
  return f5 << 27 | src << 20 | addr << 15 | f3 << 12 | rd << 7 | 0x2f;
}
constexpr uint32_t lr_d(uint32_t rd, uint32_t addr) { return amo(0x02, 3, rd, addr, 0); }
constexpr uint32_t sc_d(uint32_t rd, uint32_t addr, uint32_t src) { return amo(0x03, 3, rd, addr, src); }
constexpr uint32_t lr_w(uint32_t rd, uint32_t addr) { return amo(0x02, 2, rd, addr, 0); }
constexpr uint32_t sc_w(uint32_t rd, uint32_t addr, uint32_t src) { return amo(0x03, 2, rd, addr, src); }
constexpr uint32_t ecall = 0x00000073, ebreak = 0x00100073, mret = 0x30200073, wfi = 0x10500073;
constexpr uint32_t fence_i = 0x0000100f, nop = 0x00000013;

}  // namespace ksim::test::rv
