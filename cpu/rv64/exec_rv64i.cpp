// Semantics of the RV64I base integer instructions (Unprivileged ISA,
// chapters 2 and 5).
#include "cpu/rv64/hart.hpp"
#include "cpu/rv64/semantics.hpp"

namespace ksim::rv64 {

namespace {
inline int64_t sext32(uint64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(v)); }

inline void take_branch(Hart& h, const Insn& i, bool taken) {
  if (taken) {
    h.s.pc += static_cast<int64_t>(i.imm);
    h.s.cycle += i.cycles + timing::kTakenPenalty;
    ++h.s.instret;
  } else {
    h.retire(i);
  }
}

template <typename T>
inline void load_op(Hart& h, const Insn& i) {
  T v;
  if (!h.load(h.s.x[i.rs1] + static_cast<int64_t>(i.imm), v)) return;
  h.s.x[i.rdw] = static_cast<uint64_t>(static_cast<std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>(v));
  h.retire(i);
}

// A store may overwrite its own decoded entry (self-modifying code), so the
// fields needed after the store are read first.
template <typename T>
inline void store_op(Hart& h, const Insn& i) {
  const uint8_t len = i.len, cycles = i.cycles;
  if (!h.store(h.s.x[i.rs1] + static_cast<int64_t>(i.imm), static_cast<T>(h.s.x[i.rs2]))) return;
  h.s.pc += len;
  h.s.cycle += cycles;
  ++h.s.instret;
}
}  // namespace

#define RS1 h.s.x[i.rs1]
#define RS2 h.s.x[i.rs2]
#define RD h.s.x[i.rdw]
#define IMM static_cast<int64_t>(i.imm)

void exec_lui(Hart& h, const Insn& i) { RD = IMM; h.retire(i); }
void exec_auipc(Hart& h, const Insn& i) { RD = h.s.pc + IMM; h.retire(i); }

void exec_jal(Hart& h, const Insn& i) {
  uint64_t link = h.s.pc + i.len;
  h.s.pc += IMM;
  RD = link;
  h.s.cycle += i.cycles;
  ++h.s.instret;
}
void exec_jalr(Hart& h, const Insn& i) {
  uint64_t target = (RS1 + IMM) & ~uint64_t{1};
  RD = h.s.pc + i.len;
  h.s.pc = target;
  h.s.cycle += i.cycles;
  ++h.s.instret;
}

void exec_beq(Hart& h, const Insn& i) { take_branch(h, i, RS1 == RS2); }
void exec_bne(Hart& h, const Insn& i) { take_branch(h, i, RS1 != RS2); }
void exec_blt(Hart& h, const Insn& i) { take_branch(h, i, static_cast<int64_t>(RS1) < static_cast<int64_t>(RS2)); }
void exec_bge(Hart& h, const Insn& i) { take_branch(h, i, static_cast<int64_t>(RS1) >= static_cast<int64_t>(RS2)); }
void exec_bltu(Hart& h, const Insn& i) { take_branch(h, i, RS1 < RS2); }
void exec_bgeu(Hart& h, const Insn& i) { take_branch(h, i, RS1 >= RS2); }

void exec_lb(Hart& h, const Insn& i) { load_op<int8_t>(h, i); }
void exec_lh(Hart& h, const Insn& i) { load_op<int16_t>(h, i); }
void exec_lw(Hart& h, const Insn& i) { load_op<int32_t>(h, i); }
void exec_ld(Hart& h, const Insn& i) { load_op<int64_t>(h, i); }
void exec_lbu(Hart& h, const Insn& i) { load_op<uint8_t>(h, i); }
void exec_lhu(Hart& h, const Insn& i) { load_op<uint16_t>(h, i); }
void exec_lwu(Hart& h, const Insn& i) { load_op<uint32_t>(h, i); }
void exec_sb(Hart& h, const Insn& i) { store_op<uint8_t>(h, i); }
void exec_sh(Hart& h, const Insn& i) { store_op<uint16_t>(h, i); }
void exec_sw(Hart& h, const Insn& i) { store_op<uint32_t>(h, i); }
void exec_sd(Hart& h, const Insn& i) { store_op<uint64_t>(h, i); }

void exec_addi(Hart& h, const Insn& i) { RD = RS1 + IMM; h.retire(i); }
void exec_slti(Hart& h, const Insn& i) { RD = static_cast<int64_t>(RS1) < IMM; h.retire(i); }
void exec_sltiu(Hart& h, const Insn& i) { RD = RS1 < static_cast<uint64_t>(IMM); h.retire(i); }
void exec_xori(Hart& h, const Insn& i) { RD = RS1 ^ IMM; h.retire(i); }
void exec_ori(Hart& h, const Insn& i) { RD = RS1 | IMM; h.retire(i); }
void exec_andi(Hart& h, const Insn& i) { RD = RS1 & IMM; h.retire(i); }
void exec_slli(Hart& h, const Insn& i) { RD = RS1 << i.imm; h.retire(i); }
void exec_srli(Hart& h, const Insn& i) { RD = RS1 >> i.imm; h.retire(i); }
void exec_srai(Hart& h, const Insn& i) { RD = static_cast<int64_t>(RS1) >> i.imm; h.retire(i); }
void exec_addiw(Hart& h, const Insn& i) { RD = sext32(RS1 + IMM); h.retire(i); }
void exec_slliw(Hart& h, const Insn& i) { RD = sext32(static_cast<uint32_t>(RS1) << i.imm); h.retire(i); }
void exec_srliw(Hart& h, const Insn& i) { RD = sext32(static_cast<uint32_t>(RS1) >> i.imm); h.retire(i); }
void exec_sraiw(Hart& h, const Insn& i) { RD = static_cast<int64_t>(static_cast<int32_t>(RS1) >> i.imm); h.retire(i); }

// Register shifts use the low 6 bits (W forms: 5 bits) of rs2.
void exec_add(Hart& h, const Insn& i) { RD = RS1 + RS2; h.retire(i); }
void exec_sub(Hart& h, const Insn& i) { RD = RS1 - RS2; h.retire(i); }
void exec_sll(Hart& h, const Insn& i) { RD = RS1 << (RS2 & 63); h.retire(i); }
void exec_slt(Hart& h, const Insn& i) { RD = static_cast<int64_t>(RS1) < static_cast<int64_t>(RS2); h.retire(i); }
void exec_sltu(Hart& h, const Insn& i) { RD = RS1 < RS2; h.retire(i); }
void exec_xor_(Hart& h, const Insn& i) { RD = RS1 ^ RS2; h.retire(i); }
void exec_srl(Hart& h, const Insn& i) { RD = RS1 >> (RS2 & 63); h.retire(i); }
void exec_sra(Hart& h, const Insn& i) { RD = static_cast<int64_t>(RS1) >> (RS2 & 63); h.retire(i); }
void exec_or_(Hart& h, const Insn& i) { RD = RS1 | RS2; h.retire(i); }
void exec_and_(Hart& h, const Insn& i) { RD = RS1 & RS2; h.retire(i); }
void exec_addw(Hart& h, const Insn& i) { RD = sext32(RS1 + RS2); h.retire(i); }
void exec_subw(Hart& h, const Insn& i) { RD = sext32(RS1 - RS2); h.retire(i); }
void exec_sllw(Hart& h, const Insn& i) { RD = sext32(static_cast<uint32_t>(RS1) << (RS2 & 31)); h.retire(i); }
void exec_srlw(Hart& h, const Insn& i) { RD = sext32(static_cast<uint32_t>(RS1) >> (RS2 & 31)); h.retire(i); }
void exec_sraw(Hart& h, const Insn& i) { RD = static_cast<int64_t>(static_cast<int32_t>(RS1) >> (RS2 & 31)); h.retire(i); }

}  // namespace ksim::rv64
