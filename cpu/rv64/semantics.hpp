// Binds every row of insn_table.def to its semantics: `sem_<id>` provides
// `step` (the fast path) and `exec` (the precise path; see insn.hpp for
// the two). Most instructions are one of a few shapes (register-register,
// register-immediate, load, store, branch) over an operation from ops.hpp;
// the shapes are written once here, so the fast and precise paths cannot
// disagree about what an instruction computes.
#pragma once
#include <type_traits>

#include "cpu/rv64/hart.hpp"
#include "cpu/rv64/insn.hpp"
#include "cpu/rv64/ops.hpp"
#include "cpu/timing.hpp"

namespace ksim::rv64 {

using Op2 = uint64_t (*)(uint64_t, uint64_t);
using Cond = bool (*)(uint64_t, uint64_t);

// Sends an instruction to its precise semantics every time.
Next fast_go_precise(Hart& h, const Insn* i, ChainClock t);

// --- The fast path ----------------------------------------------------------
//
// Each shape below has a `step<kLen, kCycles>(h, i, t)`: it runs the
// instruction with the loop's state in registers, adds the instruction's
// tick (its cycles and one retired) to `t` (the handler's count of what it
// ran, which it then adds to the chain's clock: advance) and returns
// the next entry; or it returns nullptr, having changed
// nothing, when the instruction needs the precise path (a device, a fault,
// a store into a watched page, a target on another page). The handlers are
// written once over `step`: `fast_one` for one instruction, `fast_pair` and
// `fast_triple` for fused groups (fusion_table.def; instantiated in
// decode.cpp and fusion_triples.cpp). `kLen` is the instruction's length and
// `kCycles` its base cost (the timing class's cost from cpu/timing.hpp, the
// same number the decoder stores in Insn::cycles for the precise path):
// as template parameters neither is a load on the dispatch path, which
// together was worth about 1.9x on compute-bound code.
//
// A step never calls out of line on its common path: a handler that makes
// no call needs no stack frame and no register saves, which are otherwise
// a third of a branch's or store's host instructions.

// Ends a fast handler that needs the precise path after all: the loop
// runs `i` precisely (Hart::precise_ip).
[[gnu::always_inline]] inline Next go_precise(Hart& h, const Insn* i, ChainClock t) {
  h.precise_ip = i;
  return {nullptr, t};
}
// Advances the chain's clock `t` by `d`, the ticks of the instructions a
// handler ran, and says whether the chain goes on: the clock starts at
// minus the chain's length (Hart::loop_fast, chain_start), so the addition
// carries out exactly when the chain reaches its stop cycle, and the one
// test per dispatch is the carry of an addition the handler makes anyway
// (add; jc: no compare, no load of a limit). The limit is also the
// chain's length bound (Hart::kChainCycles).
[[gnu::always_inline]] inline bool advance(ChainClock& t, ChainClock d) { return !__builtin_add_overflow(t, d, &t); }
// The entry after `i` (one entry per halfword).
template <unsigned kLen>
inline const Insn* seq(const Insn* i) { return i + kLen / 2; }
// The target entry of a branch or JAL on the same page: one entry per
// halfword and imm is even, so the entry is imm * sizeof(Insn) / 2 bytes
// away (written so, it is one multiply-free scale of imm).
inline const Insn* jump_target(const Insn* i) {
  return reinterpret_cast<const Insn*>(reinterpret_cast<const char*>(i) +
                                       static_cast<int64_t>(i->imm) * static_cast<int64_t>(sizeof(Insn) / 2));
}

// One instruction, then straight into the next one's handler (threaded
// code). The call is written here in tail position, not in a helper,
// because GCC only turns it into a jump when it is directly in tail
// position in the handler's own body.
template <typename S, unsigned kLen, unsigned kCycles>
Next fast_one(Hart& h, const Insn* i, ChainClock t) {
  ChainClock d = 0;
  const Insn* n = S::template step<kLen, kCycles>(h, i, d);
  if (!n) [[unlikely]] return go_precise(h, i, t);
  if (advance(t, d)) [[likely]] return n->fast(h, n, t);
  return {n, t};
}

// fast_one for an instruction that may leave its I-cache line under timing
// v2 (Hart::decode_one installs it on the last instruction of a line and on
// jumps): when the next instruction is in another line, the hart fetches
// that line first; a miss ends the chain before it (the precise path
// charges the miss in exact order). Other instructions never leave their
// line, so they test nothing; fused groups never hold an edge instruction.
template <typename S, unsigned kLen, unsigned kCycles>
Next fast_one_edge(Hart& h, const Insn* i, ChainClock t) {
  ChainClock d = 0;
  const Insn* n = S::template step<kLen, kCycles>(h, i, d);
  if (!n) [[unlikely]] return go_precise(h, i, t);
  if (h.other_line(i, n) && !h.enter_line(n)) [[unlikely]] return go_precise(h, n, t + d);
  if (advance(t, d)) [[likely]] return n->fast(h, n, t);
  return {n, t};
}

// A fused pair (fusion_table.def): `A` at `i`, then `B` after it on the
// same page, in one handler, which saves a dispatch (the indirect jump and
// the stop test). The pair retires two instructions and charges exactly
// what they cost one by one. The hart must still stop at the first
// instruction boundary at or after its stop cycle, which may fall between
// the halves: a chain ends fusion::kMaxLeadCycles before the stop cycle
// (Hart::loop_fast), so A always ends before it and B is due; the last
// cycles before the stop run one dispatch at a time, a pair only when A
// ends before the stop. A is never a control transfer, so B always follows it, and cannot
// rewrite B (fusion_table.def); B's fields are read from B's own entry,
// which the decode cache resets together with this one (Insn::span).
template <typename A, unsigned kLenA, unsigned kCyclesA, typename B, unsigned kLenB, unsigned kCyclesB>
Next fast_pair(Hart& h, const Insn* i, ChainClock t) {
  ChainClock d = 0;
  const Insn* b = A::template step<kLenA, kCyclesA>(h, i, d);
  if (!b) [[unlikely]] return go_precise(h, i, t);
  const Insn* n = B::template step<kLenB, kCyclesB>(h, b, d);
  if (!n) [[unlikely]] return go_precise(h, b, t + d);
  if (advance(t, d)) [[likely]] return n->fast(h, n, t);
  return {n, t};
}

// A fused triple (fusion_table.def): `A`, `B` and `C` in a row on one
// page, as a pair with one more instruction, under the same rules: A and
// B are straight-line and cannot rewrite what follows them, each reads its
// own entry, a chain ends fusion::kMaxLeadCycles (the costliest A + B)
// before the stop, and near the stop a triple runs only when A and B both
// end before it.
template <typename A, unsigned kLenA, unsigned kCyclesA, typename B, unsigned kLenB, unsigned kCyclesB,
          typename C, unsigned kLenC, unsigned kCyclesC>
Next fast_triple(Hart& h, const Insn* i, ChainClock t) {
  ChainClock d = 0;
  const Insn* b = A::template step<kLenA, kCyclesA>(h, i, d);
  if (!b) [[unlikely]] return go_precise(h, i, t);
  const Insn* c = B::template step<kLenB, kCyclesB>(h, b, d);
  if (!c) [[unlikely]] return go_precise(h, b, t + d);
  const Insn* n = C::template step<kLenC, kCyclesC>(h, c, d);
  if (!n) [[unlikely]] return go_precise(h, c, t + d);
  if (advance(t, d)) [[likely]] return n->fast(h, n, t);
  return {n, t};
}

// rd = F(rs1, rs2)
template <Op2 F>
struct RegReg {
  template <unsigned kLen, unsigned kCycles>
  static const Insn* step(Hart& h, const Insn* i, ChainClock& t) {
    h.s.x[i->rdw] = F(h.s.x[i->rs1], h.s.x[i->rs2]);
    t += tick(kCycles);
    return seq<kLen>(i);
  }
  static void exec(Hart& h, const Insn& i) {
    h.s.x[i.rdw] = F(h.s.x[i.rs1], h.s.x[i.rs2]);
    h.retire(i);
  }
};

// rd = F(rs1, imm)
template <Op2 F>
struct RegImm {
  template <unsigned kLen, unsigned kCycles>
  static const Insn* step(Hart& h, const Insn* i, ChainClock& t) {
    h.s.x[i->rdw] = F(h.s.x[i->rs1], static_cast<uint64_t>(static_cast<int64_t>(i->imm)));
    t += tick(kCycles);
    return seq<kLen>(i);
  }
  static void exec(Hart& h, const Insn& i) {
    h.s.x[i.rdw] = F(h.s.x[i.rs1], static_cast<uint64_t>(static_cast<int64_t>(i.imm)));
    h.retire(i);
  }
};

// rd = extend(mem[rs1 + imm]); the fast path serves plain RAM only.
template <typename T>
struct Load {
  static uint64_t extend(T v) {
    if constexpr (std::is_signed_v<T>) return static_cast<uint64_t>(static_cast<int64_t>(v));
    else return static_cast<uint64_t>(v);
  }
  template <unsigned kLen, unsigned kCycles>
  static const Insn* step(Hart& h, const Insn* i, ChainClock& t) {
    T v;
    if (!h.load_ram(h.s.x[i->rs1] + static_cast<int64_t>(i->imm), v)) [[unlikely]] return nullptr;
    h.s.x[i->rdw] = extend(v);
    t += tick(kCycles) + (h.load_hit_extra<T>() << kRetiredBits);
    return seq<kLen>(i);
  }
  static void exec(Hart& h, const Insn& i) {
    T v;
    if (!h.load(h.s.x[i.rs1] + static_cast<int64_t>(i.imm), v)) return;
    h.s.x[i.rdw] = extend(v);
    h.retire(i);
  }
};

// mem[rs1 + imm] = rs2. The fast path serves RAM pages nobody watches; a
// store into a watched page (decoded code, an LR/SC reservation, tohost)
// takes the precise path, which notifies the watchers. The next entry is
// computed from the position of `i`, never from its contents, so a store
// that overwrites its own instruction is harmless.
template <typename T>
struct Store {
  template <unsigned kLen, unsigned kCycles>
  static const Insn* step(Hart& h, const Insn* i, ChainClock& t) {
    if (!h.store_ram_unwatched(h.s.x[i->rs1] + static_cast<int64_t>(i->imm), static_cast<T>(h.s.x[i->rs2])))
      [[unlikely]] return nullptr;
    t += tick(kCycles);
    return seq<kLen>(i);
  }
  static void exec(Hart& h, const Insn& i) {
    const uint8_t len = i.len, cycles = i.cycles;
    if (!h.store(h.s.x[i.rs1] + static_cast<int64_t>(i.imm), static_cast<T>(h.s.x[i.rs2]))) return;
    h.s.pc += len;
    h.s.cycle += cycles;
    ++h.s.instret;
  }
};

// if C(rs1, rs2) pc += imm; a taken branch costs the redirect penalty.
// The fast path only sees branches whose target is on the same page (the
// decoder gives the others fast_go_precise: Hart::decode_one), so the
// target entry is a constant distance away and the handler makes no call.
template <Cond C>
struct Branch {
  template <unsigned kLen, unsigned kCycles>
  static const Insn* step(Hart& h, const Insn* i, ChainClock& t) {
    if (C(h.s.x[i->rs1], h.s.x[i->rs2])) {
      t += tick(kCycles + timing::kTakenPenalty);
      return jump_target(i);
    }
    t += tick(kCycles);
    return seq<kLen>(i);
  }
  static void exec(Hart& h, const Insn& i) {
    if (C(h.s.x[i.rs1], h.s.x[i.rs2])) {
      h.s.pc += static_cast<int64_t>(i.imm);
      h.s.cycle += i.cycles + timing::kTakenPenalty;
      ++h.s.instret;
    } else {
      h.retire(i);
    }
  }
};

struct Lui {
  template <unsigned kLen, unsigned kCycles>
  static const Insn* step(Hart& h, const Insn* i, ChainClock& t) {
    h.s.x[i->rdw] = static_cast<uint64_t>(static_cast<int64_t>(i->imm));
    t += tick(kCycles);
    return seq<kLen>(i);
  }
  static void exec(Hart& h, const Insn& i) {
    h.s.x[i.rdw] = static_cast<uint64_t>(static_cast<int64_t>(i.imm));
    h.retire(i);
  }
};

struct Auipc {
  template <unsigned kLen, unsigned kCycles>
  static const Insn* step(Hart& h, const Insn* i, ChainClock& t) {
    h.s.x[i->rdw] = h.pc_of(i) + static_cast<int64_t>(i->imm);
    t += tick(kCycles);
    return seq<kLen>(i);
  }
  static void exec(Hart& h, const Insn& i) {
    h.s.x[i.rdw] = h.s.pc + static_cast<int64_t>(i.imm);
    h.retire(i);
  }
};

// Only JALs whose target is on the same page reach the fast path, as for
// branches.
struct Jal {
  template <unsigned kLen, unsigned kCycles>
  static const Insn* step(Hart& h, const Insn* i, ChainClock& t) {
    h.s.x[i->rdw] = h.pc_of(i) + kLen;
    t += tick(kCycles);
    return jump_target(i);
  }
  static void exec(Hart& h, const Insn& i) {
    uint64_t link = h.s.pc + i.len;
    h.s.pc += static_cast<int64_t>(i.imm);
    h.s.x[i.rdw] = link;
    h.s.cycle += i.cycles;
    ++h.s.instret;
  }
};

// The target is computed before rd is written: rd may equal rs1.
struct Jalr {
  template <unsigned kLen, unsigned kCycles>
  static const Insn* step(Hart& h, const Insn* i, ChainClock& t) {
    uint64_t target = (h.s.x[i->rs1] + static_cast<int64_t>(i->imm)) & ~uint64_t{1};
    const uint64_t link = h.pc_of(i) + kLen;
    const Insn* n = h.fetch_in_page(target);
    if (!n) [[unlikely]] {
      n = h.fetch_recent_page(target);
      if (!n) return nullptr;
    }
    h.s.x[i->rdw] = link;
    t += tick(kCycles);
    return n;
  }
  static void exec(Hart& h, const Insn& i) {
    uint64_t target = (h.s.x[i.rs1] + static_cast<int64_t>(i.imm)) & ~uint64_t{1};
    h.s.x[i.rdw] = h.s.pc + i.len;
    h.s.pc = target;
    h.s.cycle += i.cycles;
    ++h.s.instret;
  }
};

// Instructions that only have precise semantics (system, CSR, atomics).
template <ExecFn E>
struct PreciseOnly {
  template <unsigned kLen, unsigned kCycles>
  static const Insn* step(Hart&, const Insn*, ChainClock&) { return nullptr; }
  static constexpr ExecFn exec = E;
};

// Precise semantics defined in exec_system.cpp and exec_rv64a.cpp.
void exec_fence(Hart&, const Insn&);
void exec_fence_i(Hart&, const Insn&);
void exec_ecall(Hart&, const Insn&);
void exec_ebreak(Hart&, const Insn&);
void exec_mret(Hart&, const Insn&);
void exec_wfi(Hart&, const Insn&);
void exec_csrrw(Hart&, const Insn&);
void exec_csrrs(Hart&, const Insn&);
void exec_csrrc(Hart&, const Insn&);
void exec_csrrwi(Hart&, const Insn&);
void exec_csrrsi(Hart&, const Insn&);
void exec_csrrci(Hart&, const Insn&);
void exec_lr_w(Hart&, const Insn&);
void exec_lr_d(Hart&, const Insn&);
void exec_sc_w(Hart&, const Insn&);
void exec_sc_d(Hart&, const Insn&);
#define AMO_DECL(name) void exec_amo##name##_w(Hart&, const Insn&); void exec_amo##name##_d(Hart&, const Insn&);
AMO_DECL(swap) AMO_DECL(add) AMO_DECL(xor) AMO_DECL(and) AMO_DECL(or)
AMO_DECL(min) AMO_DECL(max) AMO_DECL(minu) AMO_DECL(maxu)
#undef AMO_DECL

// The interpreter's own entries.
void exec_illegal(Hart&, const Insn&);
void exec_fetch_fault(Hart&, const Insn&);
void exec_decode(Hart&, const Insn&);
void exec_sync_point(Hart&, const Insn&);
Next fast_decode(Hart&, const Insn*, ChainClock t);
void exec_page_end(Hart&, const Insn&);

// --- The binding: one alias per row of insn_table.def ----------------------
using sem_lui = Lui;
using sem_auipc = Auipc;
using sem_jal = Jal;
using sem_jalr = Jalr;
using sem_beq = Branch<ops::beq>;
using sem_bne = Branch<ops::bne>;
using sem_blt = Branch<ops::blt>;
using sem_bge = Branch<ops::bge>;
using sem_bltu = Branch<ops::bltu>;
using sem_bgeu = Branch<ops::bgeu>;
using sem_lb = Load<int8_t>;
using sem_lh = Load<int16_t>;
using sem_lw = Load<int32_t>;
using sem_ld = Load<int64_t>;
using sem_lbu = Load<uint8_t>;
using sem_lhu = Load<uint16_t>;
using sem_lwu = Load<uint32_t>;
using sem_sb = Store<uint8_t>;
using sem_sh = Store<uint16_t>;
using sem_sw = Store<uint32_t>;
using sem_sd = Store<uint64_t>;
using sem_addi = RegImm<ops::add>;
using sem_slti = RegImm<ops::slt>;
using sem_sltiu = RegImm<ops::sltu>;
using sem_xori = RegImm<ops::xor_>;
using sem_ori = RegImm<ops::or_>;
using sem_andi = RegImm<ops::and_>;
using sem_slli = RegImm<ops::slli>;
using sem_srli = RegImm<ops::srli>;
using sem_srai = RegImm<ops::srai>;
using sem_addiw = RegImm<ops::addw>;
using sem_slliw = RegImm<ops::slliw>;
using sem_srliw = RegImm<ops::srliw>;
using sem_sraiw = RegImm<ops::sraiw>;
using sem_add = RegReg<ops::add>;
using sem_sub = RegReg<ops::sub>;
using sem_sll = RegReg<ops::sll>;
using sem_slt = RegReg<ops::slt>;
using sem_sltu = RegReg<ops::sltu>;
using sem_xor_ = RegReg<ops::xor_>;
using sem_srl = RegReg<ops::srl>;
using sem_sra = RegReg<ops::sra>;
using sem_or_ = RegReg<ops::or_>;
using sem_and_ = RegReg<ops::and_>;
using sem_addw = RegReg<ops::addw>;
using sem_subw = RegReg<ops::subw>;
using sem_sllw = RegReg<ops::sllw>;
using sem_srlw = RegReg<ops::srlw>;
using sem_sraw = RegReg<ops::sraw>;
using sem_fence = PreciseOnly<exec_fence>;
using sem_fence_i = PreciseOnly<exec_fence_i>;
using sem_ecall = PreciseOnly<exec_ecall>;
using sem_ebreak = PreciseOnly<exec_ebreak>;
using sem_mret = PreciseOnly<exec_mret>;
using sem_wfi = PreciseOnly<exec_wfi>;
using sem_csrrw = PreciseOnly<exec_csrrw>;
using sem_csrrs = PreciseOnly<exec_csrrs>;
using sem_csrrc = PreciseOnly<exec_csrrc>;
using sem_csrrwi = PreciseOnly<exec_csrrwi>;
using sem_csrrsi = PreciseOnly<exec_csrrsi>;
using sem_csrrci = PreciseOnly<exec_csrrci>;
using sem_mul = RegReg<ops::mul>;
using sem_mulh = RegReg<ops::mulh>;
using sem_mulhsu = RegReg<ops::mulhsu>;
using sem_mulhu = RegReg<ops::mulhu>;
using sem_div = RegReg<ops::div>;
using sem_divu = RegReg<ops::divu>;
using sem_rem = RegReg<ops::rem>;
using sem_remu = RegReg<ops::remu>;
using sem_mulw = RegReg<ops::mulw>;
using sem_divw = RegReg<ops::divw>;
using sem_divuw = RegReg<ops::divuw>;
using sem_remw = RegReg<ops::remw>;
using sem_remuw = RegReg<ops::remuw>;
using sem_lr_w = PreciseOnly<exec_lr_w>;
using sem_sc_w = PreciseOnly<exec_sc_w>;
using sem_lr_d = PreciseOnly<exec_lr_d>;
using sem_sc_d = PreciseOnly<exec_sc_d>;
#define AMO_BIND(name)                                   \
  using sem_amo##name##_w = PreciseOnly<exec_amo##name##_w>; \
  using sem_amo##name##_d = PreciseOnly<exec_amo##name##_d>;
AMO_BIND(swap) AMO_BIND(add) AMO_BIND(xor) AMO_BIND(and) AMO_BIND(or)
AMO_BIND(min) AMO_BIND(max) AMO_BIND(minu) AMO_BIND(maxu)
#undef AMO_BIND

// Each row's semantics and base cost, by Op, for instantiating the fused
// handlers (decode.cpp, fusion_triples.cpp).
template <Op>
struct Row;
#define X(id, mn, mask, match, fmt, cls, probe)                            \
  template <>                                                              \
  struct Row<Op::id> {                                                     \
    using sem = sem_##id;                                                  \
    static constexpr unsigned cycles = timing::cycles(timing::Class::cls); \
  };
#include "cpu/rv64/insn_table.def"
#undef X

}  // namespace ksim::rv64
