// The C extension: each 16-bit instruction is an abbreviation of a 32-bit
// one (RISC-V Unprivileged ISA, chapter "C" Standard Extension, tables
// 16.5-16.7 for RV64). Expanding lets compressed code share the decoder,
// semantics, timing and disassembly of the full-size instruction.
#include <cstdint>

#include "cpu/rv64/insn.hpp"

namespace ksim::rv64 {

namespace {

constexpr uint32_t bits(uint32_t v, int hi, int lo) { return (v >> lo) & ((1u << (hi - lo + 1)) - 1); }
constexpr int32_t sext(uint32_t v, int width) {
  return static_cast<int32_t>(v << (32 - width)) >> (32 - width);
}

// 32-bit encoders for the expansions.
constexpr uint32_t r_type(uint32_t f7, uint32_t rs2, uint32_t rs1, uint32_t f3, uint32_t rd, uint32_t opc) {
  return f7 << 25 | rs2 << 20 | rs1 << 15 | f3 << 12 | rd << 7 | opc;
}
constexpr uint32_t i_type(int32_t imm, uint32_t rs1, uint32_t f3, uint32_t rd, uint32_t opc) {
  return (static_cast<uint32_t>(imm) & 0xfff) << 20 | rs1 << 15 | f3 << 12 | rd << 7 | opc;
}
constexpr uint32_t s_type(int32_t imm, uint32_t rs2, uint32_t rs1, uint32_t f3, uint32_t opc) {
  uint32_t u = static_cast<uint32_t>(imm);
  return bits(u, 11, 5) << 25 | rs2 << 20 | rs1 << 15 | f3 << 12 | bits(u, 4, 0) << 7 | opc;
}
constexpr uint32_t b_type(int32_t imm, uint32_t rs2, uint32_t rs1, uint32_t f3) {
  uint32_t u = static_cast<uint32_t>(imm);
  return bits(u, 12, 12) << 31 | bits(u, 10, 5) << 25 | rs2 << 20 | rs1 << 15 | f3 << 12 |
         bits(u, 4, 1) << 8 | bits(u, 11, 11) << 7 | 0x63;
}
constexpr uint32_t j_type(int32_t imm, uint32_t rd) {
  uint32_t u = static_cast<uint32_t>(imm);
  return bits(u, 20, 20) << 31 | bits(u, 10, 1) << 21 | bits(u, 11, 11) << 20 | bits(u, 19, 12) << 12 |
         rd << 7 | 0x6f;
}

constexpr uint32_t kOpImm = 0x13, kOpImm32 = 0x1b, kOp = 0x33, kOp32 = 0x3b, kLoad = 0x03, kStore = 0x23;

// Register fields: rd'/rs1'/rs2' name x8..x15.
uint32_t rp(uint32_t c, int lo) { return 8 + bits(c, lo + 2, lo); }

uint32_t quadrant0(uint32_t c) {
  const uint32_t rdp = rp(c, 2), rs1p = rp(c, 7);
  switch (bits(c, 15, 13)) {
    case 0: {  // C.ADDI4SPN: addi rd', x2, nzuimm
      uint32_t imm = bits(c, 10, 7) << 6 | bits(c, 12, 11) << 4 | bits(c, 5, 5) << 3 | bits(c, 6, 6) << 2;
      if (imm == 0) return 0;  // reserved (and the all-zero illegal instruction)
      return i_type(static_cast<int32_t>(imm), 2, 0, rdp, kOpImm);
    }
    case 2: {  // C.LW
      uint32_t imm = bits(c, 5, 5) << 6 | bits(c, 12, 10) << 3 | bits(c, 6, 6) << 2;
      return i_type(static_cast<int32_t>(imm), rs1p, 2, rdp, kLoad);
    }
    case 3: {  // C.LD
      uint32_t imm = bits(c, 6, 5) << 6 | bits(c, 12, 10) << 3;
      return i_type(static_cast<int32_t>(imm), rs1p, 3, rdp, kLoad);
    }
    case 6: {  // C.SW
      uint32_t imm = bits(c, 5, 5) << 6 | bits(c, 12, 10) << 3 | bits(c, 6, 6) << 2;
      return s_type(static_cast<int32_t>(imm), rdp, rs1p, 2, kStore);
    }
    case 7: {  // C.SD
      uint32_t imm = bits(c, 6, 5) << 6 | bits(c, 12, 10) << 3;
      return s_type(static_cast<int32_t>(imm), rdp, rs1p, 3, kStore);
    }
    default:  // C.FLD, C.FSD (no D extension), reserved
      return 0;
  }
}

uint32_t quadrant1(uint32_t c) {
  const uint32_t rd = bits(c, 11, 7);
  const int32_t imm6 = sext(bits(c, 12, 12) << 5 | bits(c, 6, 2), 6);
  switch (bits(c, 15, 13)) {
    case 0:  // C.ADDI (C.NOP when rd = 0)
      return i_type(imm6, rd, 0, rd, kOpImm);
    case 1:  // C.ADDIW (RV64; rd = 0 reserved)
      if (rd == 0) return 0;
      return i_type(imm6, rd, 0, rd, kOpImm32);
    case 2:  // C.LI
      return i_type(imm6, 0, 0, rd, kOpImm);
    case 3:
      if (rd == 2) {  // C.ADDI16SP
        int32_t imm = sext(bits(c, 12, 12) << 9 | bits(c, 4, 3) << 7 | bits(c, 5, 5) << 6 |
                               bits(c, 2, 2) << 5 | bits(c, 6, 6) << 4, 10);
        if (imm == 0) return 0;
        return i_type(imm, 2, 0, 2, kOpImm);
      } else {  // C.LUI
        if (imm6 == 0) return 0;
        return (static_cast<uint32_t>(imm6) & 0xfffff) << 12 | rd << 7 | 0x37;
      }
    case 4: {
      const uint32_t rdp = rp(c, 7), rs2p = rp(c, 2);
      const uint32_t shamt = bits(c, 12, 12) << 5 | bits(c, 6, 2);
      switch (bits(c, 11, 10)) {
        case 0: return i_type(static_cast<int32_t>(shamt), rdp, 5, rdp, kOpImm);               // C.SRLI
        case 1: return i_type(static_cast<int32_t>(shamt | 0x400), rdp, 5, rdp, kOpImm);       // C.SRAI
        case 2: return i_type(imm6, rdp, 7, rdp, kOpImm);                                      // C.ANDI
        default:
          switch (bits(c, 12, 12) << 2 | bits(c, 6, 5)) {
            case 0: return r_type(0x20, rs2p, rdp, 0, rdp, kOp);    // C.SUB
            case 1: return r_type(0x00, rs2p, rdp, 4, rdp, kOp);    // C.XOR
            case 2: return r_type(0x00, rs2p, rdp, 6, rdp, kOp);    // C.OR
            case 3: return r_type(0x00, rs2p, rdp, 7, rdp, kOp);    // C.AND
            case 4: return r_type(0x20, rs2p, rdp, 0, rdp, kOp32);  // C.SUBW
            case 5: return r_type(0x00, rs2p, rdp, 0, rdp, kOp32);  // C.ADDW
            default: return 0;                                      // reserved
          }
      }
    }
    case 5: {  // C.J
      int32_t imm = sext(bits(c, 12, 12) << 11 | bits(c, 8, 8) << 10 | bits(c, 10, 9) << 8 |
                             bits(c, 6, 6) << 7 | bits(c, 7, 7) << 6 | bits(c, 2, 2) << 5 |
                             bits(c, 11, 11) << 4 | bits(c, 5, 3) << 1, 12);
      return j_type(imm, 0);
    }
    default: {  // 6: C.BEQZ, 7: C.BNEZ
      int32_t imm = sext(bits(c, 12, 12) << 8 | bits(c, 6, 5) << 6 | bits(c, 2, 2) << 5 |
                             bits(c, 11, 10) << 3 | bits(c, 4, 3) << 1, 9);
      return b_type(imm, 0, rp(c, 7), bits(c, 15, 13) == 6 ? 0 : 1);
    }
  }
}

uint32_t quadrant2(uint32_t c) {
  const uint32_t rd = bits(c, 11, 7), rs2 = bits(c, 6, 2);
  switch (bits(c, 15, 13)) {
    case 0: {  // C.SLLI
      uint32_t shamt = bits(c, 12, 12) << 5 | bits(c, 6, 2);
      return i_type(static_cast<int32_t>(shamt), rd, 1, rd, kOpImm);
    }
    case 2: {  // C.LWSP (rd = 0 reserved)
      if (rd == 0) return 0;
      uint32_t imm = bits(c, 3, 2) << 6 | bits(c, 12, 12) << 5 | bits(c, 6, 4) << 2;
      return i_type(static_cast<int32_t>(imm), 2, 2, rd, kLoad);
    }
    case 3: {  // C.LDSP (rd = 0 reserved)
      if (rd == 0) return 0;
      uint32_t imm = bits(c, 4, 2) << 6 | bits(c, 12, 12) << 5 | bits(c, 6, 5) << 3;
      return i_type(static_cast<int32_t>(imm), 2, 3, rd, kLoad);
    }
    case 4:
      if (bits(c, 12, 12) == 0) {
        if (rs2 == 0) return rd == 0 ? 0 : i_type(0, rd, 0, 0, 0x67);  // C.JR (rs1 = 0 reserved)
        return r_type(0, rs2, 0, 0, rd, kOp);                          // C.MV
      }
      if (rs2 == 0) {
        if (rd == 0) return 0x00100073;                                // C.EBREAK
        return i_type(0, rd, 0, 1, 0x67);                              // C.JALR
      }
      return r_type(0, rs2, rd, 0, rd, kOp);                           // C.ADD
    case 6: {  // C.SWSP
      uint32_t imm = bits(c, 8, 7) << 6 | bits(c, 12, 9) << 2;
      return s_type(static_cast<int32_t>(imm), rs2, 2, 2, kStore);
    }
    case 7: {  // C.SDSP
      uint32_t imm = bits(c, 9, 7) << 6 | bits(c, 12, 10) << 3;
      return s_type(static_cast<int32_t>(imm), rs2, 2, 3, kStore);
    }
    default:  // C.FLDSP, C.FSDSP (no D extension)
      return 0;
  }
}

}  // namespace

uint32_t expand_compressed(uint16_t c) {
  switch (c & 3) {
    case 0: return quadrant0(c);
    case 1: return quadrant1(c);
    case 2: return quadrant2(c);
    default: return 0;
  }
}

}  // namespace ksim::rv64
