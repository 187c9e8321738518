// The x86 core's fast path: handlers specialised per operation, operand
// form and operand size, run from the compact Fast entries of the decode
// cache (cpu/x86/insn.hpp) with the loop's state in host registers, and
// make_fast(), which picks an instruction's handler from its decoded Insn.
// The model is the RV64 core's (cpu/rv64/semantics.hpp); the x86
// specifics are lazy flags (X86Cpu::lazy_*) and variable-length entries.
//
// Every handler computes exactly what the instruction's precise semantics
// (semantics.cpp) compute, from the same flag functions (flags.hpp), and
// charges the same Insn::cycles; it hands back to the precise path, before
// changing any state, whenever the instruction needs more than registers
// and plain RAM (a device, a fault). Instructions without a handler (system
// instructions, string instructions, rare forms) always hand back. The
// differential test (tests/x86_diff_test.cpp) runs through this path.
//
// Included by x86_cpu.cpp only.
#pragma once
#include <Zydis/Zydis.h>

#include <array>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "cpu/timing.hpp"
#include "cpu/x86/flags.hpp"
#include "cpu/x86/semantics.hpp"
#include "cpu/x86/x86_cpu.hpp"

namespace ksim::x86 {

namespace fast {

// Every handler ends the same way: with `n` the next entry, `c` the new
// cycle and `r` the chain's retired count, either tail-call the next
// handler or end the chain. The call is written in each handler's own body
// (through KSIM_X86_NEXT), because GCC only turns it into a jump when it is
// directly in tail position there.
[[gnu::always_inline]] inline bool keep_going(X86Cpu& cpu, uint64_t cyc, uint64_t r) {
  if (cyc < cpu.stop_cycle() && r < X86Cpu::kChainLength) [[likely]] return true;
  cpu.chain_retired = r;
  return false;
}
[[gnu::always_inline]] inline FastNext go_precise(X86Cpu& cpu, const Fast* f, uint64_t cyc, uint64_t r) {
  cpu.chain_retired = r;
  cpu.precise_ip = f;
  return {nullptr, cyc};
}
#define KSIM_X86_NEXT(n, cyc, r)                                         \
  do {                                                                   \
    ++(r);                                                               \
    if (keep_going(cpu, (cyc), (r))) return (n)->fn(cpu, (n), (cyc), (r)); \
    return {(n), (cyc)};                                                 \
  } while (0)
// The same after `f`, which may leave its I-cache line (timing v2: flagged
// X86Cpu::kEdge): the next instruction's line is fetched first, and a miss
// ends the chain before it (the precise path charges it). One test of a
// byte of `f`'s entry for every other instruction.
#define KSIM_X86_NEXT_AFTER(f, n, cyc, r)                                                          \
  do {                                                                                         \
    if ((f)->pad[0] && cpu.other_line((f), (n)) && !cpu.enter_line(n)) [[unlikely]]            \
      return go_precise(cpu, (n), (cyc), (r) + 1);                                             \
    KSIM_X86_NEXT(n, cyc, r);                                                                           \
  } while (0)
// After a jump off the current page: always another line.
#define KSIM_X86_NEXT_FAR(n, cyc, r)                                                               \
  do {                                                                                         \
    if (cpu.iline_bytes() && !cpu.enter_line(n)) [[unlikely]] return go_precise(cpu, (n), (cyc), (r) + 1); \
    KSIM_X86_NEXT(n, cyc, r);                                                                           \
  } while (0)

template <unsigned S> struct Word;
template <> struct Word<1> { using T = uint8_t; };
template <> struct Word<2> { using T = uint16_t; };
template <> struct Word<4> { using T = uint32_t; };
template <> struct Word<8> { using T = uint64_t; };

template <unsigned S>
constexpr uint64_t kMask = S == 8 ? ~0ull : (1ull << (8 * S)) - 1;

template <unsigned S>
[[gnu::always_inline]] inline uint64_t rd(const X86Cpu& cpu, uint8_t r) { return cpu.s.gpr[r] & kMask<S>; }
// Register writes as reg_write: 32-bit writes zero-extend, 8/16-bit merge.
template <unsigned S>
[[gnu::always_inline]] inline void wr(X86Cpu& cpu, uint8_t r, uint64_t v) {
  uint64_t& g = cpu.s.gpr[r];
  if constexpr (S == 8) g = v;
  else if constexpr (S == 4) g = v & 0xffffffff;
  else g = (g & ~kMask<S>) | (v & kMask<S>);
}
// gpr[base] + (gpr[index] << shift) + disp, without branches: an absent
// register is masked to zero.
[[gnu::always_inline]] inline uint64_t ea(const X86Cpu& cpu, const Fast* f) {
  return static_cast<uint64_t>(static_cast<int64_t>(f->disp)) +
         (cpu.s.gpr[f->base] & (0 - static_cast<uint64_t>(f->amode & 1))) +
         ((cpu.s.gpr[f->index] & (0 - static_cast<uint64_t>((f->amode >> 1) & 1))) << f->shift);
}
template <unsigned S>
[[gnu::always_inline]] inline bool ld(X86Cpu& cpu, uint64_t addr, uint64_t& v) {
  typename Word<S>::T t;
  if (!cpu.load_ram(addr, t)) return false;
  v = t;
  return true;
}
// 0: not RAM, 1: stored, 2: stored into a page with listeners (the caller
// tail-calls notify_and_next).
template <unsigned S>
[[gnu::always_inline]] inline int st(X86Cpu& cpu, uint64_t addr, uint64_t v) {
  return cpu.store_ram_quiet(addr, static_cast<typename Word<S>::T>(v));
}
// The lazy record (X86Cpu::lazy_op: which fields each operation uses).
[[gnu::always_inline]] inline void lazy(X86Cpu& cpu, uint8_t op, unsigned bits, uint64_t a, uint64_t b, uint64_t r) {
  cpu.lazy_op = op;
  cpu.lazy_bits = static_cast<uint8_t>(bits);
  cpu.lazy_a = a;
  cpu.lazy_b = b;
  cpu.lazy_r = r;
}
[[gnu::always_inline]] inline void lazy_ab(X86Cpu& cpu, uint8_t op, unsigned bits, uint64_t a, uint64_t b) {
  cpu.lazy_op = op;
  cpu.lazy_bits = static_cast<uint8_t>(bits);
  cpu.lazy_a = a;
  cpu.lazy_b = b;
}
[[gnu::always_inline]] inline void lazy_result(X86Cpu& cpu, uint8_t op, unsigned bits, uint64_t r) {
  cpu.lazy_op = op;
  cpu.lazy_bits = static_cast<uint8_t>(bits);
  cpu.lazy_r = r;
}
// CF as the lazy record says (INC/DEC must keep it), or -1 when the record
// must be materialised first (rerun_materialised).
[[gnu::always_inline]] inline int lazy_cf(const X86Cpu& cpu) {
  switch (cpu.lazy_op) {
    case X86Cpu::kLazyNone: return (cpu.s.rflags & kCF) ? 1 : 0;
    case X86Cpu::kLazyAdd: return ((cpu.lazy_a + cpu.lazy_b) & flags::mask(cpu.lazy_bits)) < cpu.lazy_a;
    case X86Cpu::kLazySub: return cpu.lazy_a < cpu.lazy_b;
    case X86Cpu::kLazyLogic: return 0;
    case X86Cpu::kLazyInc: case X86Cpu::kLazyDec: case X86Cpu::kLazyMul: return cpu.lazy_b ? 1 : 0;
    default: return -1;
  }
}

// Out-of-line tails. Handlers tail-call these for their rare cases instead
// of calling out: a call anywhere in a handler makes the compiler save and
// restore callee-saved registers in every execution of it.
//
// The record must be materialised before `f` can run: do it, run `f` again.
[[gnu::noinline]] inline FastNext rerun_materialised(X86Cpu& cpu, const Fast* f, uint64_t cyc, uint64_t r) {
  cpu.materialise_flags();
  return f->fn(cpu, f, cyc, r);
}
// A jump to `rip` off a page the CPU has not run recently, or outside RAM.
[[gnu::noinline]] inline FastNext continue_far(X86Cpu& cpu, uint64_t rip, uint64_t cyc, uint64_t r) {
  const Fast* n = cpu.fast_at(rip);
  KSIM_X86_NEXT_FAR(n, cyc, r);
}
// A jump to `rip` off the current page (the instruction is done: `cyc`
// includes it, `r` does not yet count it). A recent page is found with no
// call, so this stays a leaf.
[[gnu::noinline]] inline FastNext continue_at(X86Cpu& cpu, uint64_t rip, uint64_t cyc, uint64_t r) {
  const Fast* n = cpu.fast_recent(rip);
  if (!n) [[unlikely]] return continue_far(cpu, rip, cyc, r);
  KSIM_X86_NEXT_FAR(n, cyc, r);
}
// MOV's load when it is not plain RAM (a device, such as the kprobes
// engine's optprobe port that every detour buffer loads from, or a page
// this CPU may not read yet while running ahead): exec_mov's precise
// semantics (mem_read, which may fault or stop at a sync point; the
// register; retire) without the trip out of the fast loop and back, which
// cost more than the rest of a jump-optimized probe's guest instructions
// together. Same results as handing back: loop_as would run the same
// semantics from the same state, and does nothing else on the way for a
// CPU that was in the fast loop (no step budget, no tracing, no TF, no
// STI shadow, no stale view); anything that ends the slice sets stop_ to
// 0, which the fast loop checks next.
// The entry is read before the access, which may reset it (a put-back of
// a CPU ahead, whose undo resets the code it takes back).
template <unsigned S>
[[gnu::noinline]] FastNext load_precise(X86Cpu& cpu, const Fast* f, uint64_t cyc, uint64_t r) {
  cpu.enter_precise(f, cyc, r);
  const Fast copy = *f;
  uint64_t v;
  if (cpu.mem_read(ea(cpu, &copy), S, v)) {
    wr<S>(cpu, copy.dst, v);
    cpu.retire_fast(&copy);
  }
  return cpu.leave_precise();
}
// `f` stored into a page with listeners (the decode cache): notify them,
// which may reset entries (`f`'s own included: its length and cost are
// read first), and go on with the next instruction. `cyc` is the cycle
// before `f`.
[[gnu::noinline]] inline FastNext notify_and_next(X86Cpu& cpu, const Fast* f, uint64_t cyc, uint64_t r, uint64_t addr,
                                                  uint64_t size) {
  const Fast* n = f + f->len;
  const uint64_t nc = cyc + f->cycles;
  cpu.notify_store(addr, static_cast<unsigned>(size), cyc);
  // (The store may have taken the line being executed from this CPU's
  // I-cache, timing v2: the next instruction fetches it again.)
  KSIM_X86_NEXT_FAR(n, nc, r);
}
// The entry after `f`. Handlers are instantiated for the common lengths of
// their encodings (kLen), and kLen 0 reads the length from the entry: with
// a constant the chain of entry addresses does not wait for a load. On
// BM_X86SortO2 this took jcc alone from about 320 to 345 MIPS, and every
// handler below from there to about 370 (docs/PERFORMANCE.md).
template <unsigned kLen>
[[gnu::always_inline]] inline const Fast* next(const Fast* f) { return f + (kLen ? kLen : f->len); }
[[gnu::always_inline]] inline uint64_t pc_next(const X86Cpu& cpu, const Fast* f) { return cpu.pc_of(f) + f->len; }

// --- Binary ALU operations --------------------------------------------------
enum class Alu : uint8_t { add, sub, and_, or_, xor_, cmp, test };
enum class Form : uint8_t { rr, ri, rm, mr, mi };

template <Alu K, unsigned S>
[[gnu::always_inline]] inline uint64_t alu(X86Cpu& cpu, uint64_t a, uint64_t b) {
  constexpr unsigned bits = 8 * S;
  uint64_t r;
  if constexpr (K == Alu::add) {
    r = (a + b) & kMask<S>;
    lazy_ab(cpu, X86Cpu::kLazyAdd, bits, a, b);
  } else if constexpr (K == Alu::sub || K == Alu::cmp) {
    r = (a - b) & kMask<S>;
    lazy_ab(cpu, X86Cpu::kLazySub, bits, a, b);
  } else {
    r = K == Alu::or_ ? (a | b) : K == Alu::xor_ ? (a ^ b) : (a & b);
    lazy_result(cpu, X86Cpu::kLazyLogic, bits, r);
  }
  return r;
}

template <Alu K, Form F, unsigned S, unsigned kLen>
FastNext alu_fast(X86Cpu& cpu, const Fast* f, uint64_t cyc, uint64_t r) {
  constexpr bool writes = K != Alu::cmp && K != Alu::test;
  const Fast* n = next<kLen>(f);
  if constexpr (F == Form::rr || F == Form::ri || F == Form::rm) {
    const uint64_t a = rd<S>(cpu, f->dst);
    uint64_t b;
    if constexpr (F == Form::rr) b = rd<S>(cpu, f->src);
    else if constexpr (F == Form::ri) b = static_cast<uint64_t>(f->imm) & kMask<S>;
    else if (!ld<S>(cpu, ea(cpu, f), b)) [[unlikely]] return go_precise(cpu, f, cyc, r);
    const uint64_t res = alu<K, S>(cpu, a, b);
    if constexpr (writes) wr<S>(cpu, f->dst, res);
  } else {
    const uint64_t addr = ea(cpu, f);
    uint64_t a;
    if (!ld<S>(cpu, addr, a)) [[unlikely]] return go_precise(cpu, f, cyc, r);
    // Whether the store will be allowed is known before anything changes
    // (the flags record included): a store the precise path must make
    // (exact SMP's page grants) re-runs the whole instruction there.
    if constexpr (writes) {
      if (!cpu.store_quiet_ok(addr, S)) [[unlikely]] {
        cpu.uncount_l1_hit();  // the precise path reads it again
        return go_precise(cpu, f, cyc, r);
      }
    }
    const uint64_t b = F == Form::mr ? rd<S>(cpu, f->src) : static_cast<uint64_t>(f->imm) & kMask<S>;
    const uint64_t res = alu<K, S>(cpu, a, b);
    if constexpr (writes) {
      if (st<S>(cpu, addr, res) == 2) [[unlikely]] return notify_and_next(cpu, f, cyc, r, addr, S);  // checked above
    }
  }
  cyc += f->cycles;
  KSIM_X86_NEXT_AFTER(f, n, cyc, r);
}

// INC DEC NEG NOT on a register.
enum class Unary : uint8_t { inc, dec, neg, not_ };
template <Unary K, unsigned S>
FastNext unary_fast(X86Cpu& cpu, const Fast* f, uint64_t cyc, uint64_t r) {
  const Fast* n = f + f->len;
  const uint64_t a = rd<S>(cpu, f->dst);
  uint64_t res;
  if constexpr (K == Unary::inc || K == Unary::dec) {
    const int cf = lazy_cf(cpu);
    if (cf < 0) [[unlikely]] return rerun_materialised(cpu, f, cyc, r);
    res = (K == Unary::inc ? a + 1 : a - 1) & kMask<S>;
    lazy_ab(cpu, K == Unary::inc ? X86Cpu::kLazyInc : X86Cpu::kLazyDec, 8 * S, a, static_cast<uint64_t>(cf));
  } else if constexpr (K == Unary::neg) {
    res = (0 - a) & kMask<S>;
    lazy_ab(cpu, X86Cpu::kLazySub, 8 * S, 0, a);
  } else {
    res = ~a & kMask<S>;
  }
  wr<S>(cpu, f->dst, res);
  cyc += f->cycles;
  KSIM_X86_NEXT_AFTER(f, n, cyc, r);
}

// --- Moves ------------------------------------------------------------------
template <Form F, unsigned S, unsigned kLen>
FastNext mov_fast(X86Cpu& cpu, const Fast* f, uint64_t cyc, uint64_t r) {
  const Fast* n = next<kLen>(f);
  if constexpr (F == Form::rr) {
    wr<S>(cpu, f->dst, rd<S>(cpu, f->src));
  } else if constexpr (F == Form::ri) {
    wr<S>(cpu, f->dst, static_cast<uint64_t>(f->imm));
  } else if constexpr (F == Form::rm) {
    uint64_t v;
    if (!ld<S>(cpu, ea(cpu, f), v)) [[unlikely]] return load_precise<S>(cpu, f, cyc, r);
    wr<S>(cpu, f->dst, v);
  } else {
    const uint64_t v = F == Form::mr ? rd<S>(cpu, f->src) : static_cast<uint64_t>(f->imm);
    const uint64_t addr = ea(cpu, f);
    const int stored = st<S>(cpu, addr, v);
    if (stored != 1) [[unlikely]] {
      if (stored == 0) return go_precise(cpu, f, cyc, r);
      return notify_and_next(cpu, f, cyc, r, addr, S);
    }
  }
  cyc += f->cycles;
  KSIM_X86_NEXT_AFTER(f, n, cyc, r);
}

// MOVZX / MOVSX / MOVSXD: destination size D, source size S.
template <bool kSigned, bool kMem, unsigned D, unsigned S, unsigned kLen>
FastNext movx_fast(X86Cpu& cpu, const Fast* f, uint64_t cyc, uint64_t r) {
  const Fast* n = next<kLen>(f);
  uint64_t v;
  if constexpr (kMem) {
    if (!ld<S>(cpu, ea(cpu, f), v)) [[unlikely]] return go_precise(cpu, f, cyc, r);
  } else {
    v = rd<S>(cpu, f->src);
  }
  if constexpr (kSigned) v = flags::sext(v, 8 * S);
  wr<D>(cpu, f->dst, v & kMask<D>);
  cyc += f->cycles;
  KSIM_X86_NEXT_AFTER(f, n, cyc, r);
}

template <unsigned S, unsigned kLen>
FastNext lea_fast(X86Cpu& cpu, const Fast* f, uint64_t cyc, uint64_t r) {
  const Fast* n = next<kLen>(f);
  wr<S>(cpu, f->dst, ea(cpu, f));
  cyc += f->cycles;
  KSIM_X86_NEXT_AFTER(f, n, cyc, r);
}

// CBW/CWDE/CDQE (kToDx false) and CWD/CDQ/CQO (true) at operand size S.
template <bool kToDx, unsigned S>
FastNext widen_fast(X86Cpu& cpu, const Fast* f, uint64_t cyc, uint64_t r) {
  const Fast* n = f + f->len;
  if constexpr (kToDx) wr<S>(cpu, 2, (cpu.s.gpr[0] & flags::sign_bit(8 * S)) ? kMask<S> : 0);
  else wr<S>(cpu, 0, flags::sext(cpu.s.gpr[0], 4 * S) & kMask<S>);
  cyc += f->cycles;
  KSIM_X86_NEXT_AFTER(f, n, cyc, r);
}

template <unsigned S>
FastNext bswap_fast(X86Cpu& cpu, const Fast* f, uint64_t cyc, uint64_t r) {
  const Fast* n = f + f->len;
  const uint64_t v = cpu.s.gpr[f->dst];
  wr<S>(cpu, f->dst, S == 8 ? __builtin_bswap64(v) : __builtin_bswap32(static_cast<uint32_t>(v)));
  cyc += f->cycles;
  KSIM_X86_NEXT_AFTER(f, n, cyc, r);
}

inline FastNext nop_fast(X86Cpu& cpu, const Fast* f, uint64_t cyc, uint64_t r) {
  const Fast* n = f + f->len;
  cyc += f->cycles;
  KSIM_X86_NEXT_AFTER(f, n, cyc, r);
}

// --- Conditional operations -------------------------------------------------
// Condition `CC` (SDM order) straight from the lazy record, for the
// records compiled code tests most: after CMP/SUB (inputs zero-extended at
// the operand size) CF is "a < b" and SF != OF is "a < b signed", since the
// subtraction is exact in the wider type; after a logic op CF = OF = 0.
// Without a record, from s.rflags. Returns 1 or 0, or -1 when the record
// must be materialised first (PF, OF after CMP, other records: the caller
// tail-calls rerun_materialised, and the result is the same by
// construction).
template <unsigned CC>
[[gnu::always_inline]] inline int cond(const X86Cpu& cpu) {
  constexpr unsigned g = (CC >> 1) & 7;
  const uint8_t op = cpu.lazy_op;
  const unsigned sh = 64u - cpu.lazy_bits;
  bool v;
  if (op == X86Cpu::kLazySub && g != 0 && g != 5) {
    const uint64_t a = cpu.lazy_a, b = cpu.lazy_b;
    const int64_t sa = static_cast<int64_t>(a << sh) >> sh, sb = static_cast<int64_t>(b << sh) >> sh;
    if constexpr (g == 1) v = a < b;
    else if constexpr (g == 2) v = a == b;
    else if constexpr (g == 3) v = a <= b;
    else if constexpr (g == 4) v = static_cast<int64_t>((a - b) << sh) < 0;
    else if constexpr (g == 6) v = sa < sb;
    else v = sa <= sb;
  } else if (op == X86Cpu::kLazyLogic && g != 5) {
    const int64_t r = static_cast<int64_t>(cpu.lazy_r << sh);  // sign bit at bit 63
    if constexpr (g == 0 || g == 1) v = false;
    else if constexpr (g == 2 || g == 3) v = r == 0;
    else if constexpr (g == 4 || g == 6) v = r < 0;
    else v = r <= 0;
  } else if (op == X86Cpu::kLazyNone) {
    return flags::condition(CC, cpu.s.rflags);
  } else {
    return -1;
  }
  return (CC & 1) ? !v : v;
}

template <bool kMem, unsigned S, unsigned CC>
FastNext cmov_fast(X86Cpu& cpu, const Fast* f, uint64_t cyc, uint64_t r) {
  const Fast* n = f + f->len;
  const int c = cond<CC>(cpu);
  if (c < 0) [[unlikely]] return rerun_materialised(cpu, f, cyc, r);
  uint64_t v;
  if constexpr (kMem) {
    if (!ld<S>(cpu, ea(cpu, f), v)) [[unlikely]] return go_precise(cpu, f, cyc, r);  // read either way
  } else {
    v = rd<S>(cpu, f->src);
  }
  if (c) wr<S>(cpu, f->dst, v);
  else if constexpr (S == 4) wr<4>(cpu, f->dst, rd<4>(cpu, f->dst));  // a 32-bit CMOV always zero-extends
  cyc += f->cycles;
  KSIM_X86_NEXT_AFTER(f, n, cyc, r);
}

template <bool kMem, unsigned CC>
FastNext setcc_fast(X86Cpu& cpu, const Fast* f, uint64_t cyc, uint64_t r) {
  const Fast* n = f + f->len;
  const int c = cond<CC>(cpu);
  if (c < 0) [[unlikely]] return rerun_materialised(cpu, f, cyc, r);
  const uint64_t v = static_cast<uint64_t>(c);
  if constexpr (kMem) {
    const uint64_t addr = ea(cpu, f);
    const int stored = st<1>(cpu, addr, v);
    if (stored != 1) [[unlikely]] {
      if (stored == 0) return go_precise(cpu, f, cyc, r);
      return notify_and_next(cpu, f, cyc, r, addr, 1);
    }
  } else {
    wr<1>(cpu, f->dst, v);
  }
  cyc += f->cycles;
  KSIM_X86_NEXT_AFTER(f, n, cyc, r);
}

// --- Multiply ---------------------------------------------------------------
// IMUL with two or three operands: destination dst, sources (dst or src or
// memory) and (src, memory or imm). kForm: rr (dst *= src), rm (dst *=
// mem), ri (dst = src * imm), mi (dst = mem * imm).
template <Form F, unsigned S>
FastNext imul_fast(X86Cpu& cpu, const Fast* f, uint64_t cyc, uint64_t r) {
  constexpr unsigned bits = 8 * S;
  const Fast* n = f + f->len;
  int64_t x, y;
  if constexpr (F == Form::rr) {
    x = static_cast<int64_t>(flags::sext(rd<S>(cpu, f->dst), bits));
    y = static_cast<int64_t>(flags::sext(rd<S>(cpu, f->src), bits));
  } else if constexpr (F == Form::ri) {
    x = static_cast<int64_t>(flags::sext(rd<S>(cpu, f->src), bits));
    y = f->imm;
  } else {
    uint64_t v;
    if (!ld<S>(cpu, ea(cpu, f), v)) [[unlikely]] return go_precise(cpu, f, cyc, r);
    if constexpr (F == Form::rm) {
      x = static_cast<int64_t>(flags::sext(rd<S>(cpu, f->dst), bits));
      y = static_cast<int64_t>(flags::sext(v, bits));
    } else {
      x = static_cast<int64_t>(flags::sext(v, bits));
      y = f->imm;
    }
  }
  const __int128 p = static_cast<__int128>(x) * y;
  const uint64_t lo = static_cast<uint64_t>(p) & kMask<S>;
  wr<S>(cpu, f->dst, lo);
  const bool overflow = static_cast<__int128>(static_cast<int64_t>(flags::sext(lo, bits))) != p;
  lazy(cpu, X86Cpu::kLazyMul, bits, 0, overflow ? 1 : 0, lo);
  cyc += f->cycles;
  KSIM_X86_NEXT_AFTER(f, n, cyc, r);
}

// --- Shifts and rotates on a register -----------------------------------------
// kCl: the count is CL, else the immediate. A masked count of 0 changes
// nothing but still writes (zero-extends) a 32-bit destination.
enum class Sh : uint8_t { shl, shr, sar, rol, ror };
template <Sh K, bool kCl, unsigned S, unsigned kLen>
FastNext shift_fast(X86Cpu& cpu, const Fast* f, uint64_t cyc, uint64_t r) {
  constexpr unsigned bits = 8 * S;
  const Fast* n = next<kLen>(f);
  const uint64_t a = rd<S>(cpu, f->dst);
  const uint64_t cnt = (kCl ? cpu.s.gpr[1] : static_cast<uint64_t>(f->imm)) & (S == 8 ? 63 : 31);
  if (cnt == 0) {
    wr<S>(cpu, f->dst, a);
  } else if constexpr (K == Sh::shl || K == Sh::shr || K == Sh::sar) {
    constexpr flags::Shift k = K == Sh::shl ? flags::Shift::shl : K == Sh::shr ? flags::Shift::shr : flags::Shift::sar;
    constexpr uint8_t op = K == Sh::shl ? X86Cpu::kLazyShl : K == Sh::shr ? X86Cpu::kLazyShr : X86Cpu::kLazySar;
    const uint64_t res = flags::shift_result(k, a, cnt, bits);
    wr<S>(cpu, f->dst, res);
    lazy(cpu, op, bits, a, cnt, res);
  } else {
    // Rotates change CF and OF only: recorded beside the lazy record of
    // the other flags (X86Cpu::kLazyRotated), which stays as it is.
    constexpr uint64_t m = kMask<S>, sb = 1ull << (bits - 1);
    const unsigned k = static_cast<unsigned>(cnt % bits);
    uint64_t res, fl = 0;
    if constexpr (K == Sh::rol) {
      res = k ? ((a << k) | (a >> (bits - k))) & m : a;
      if (res & 1) fl |= kCF;
      if (bool(res & sb) != bool(res & 1)) fl |= kOF;
    } else {
      res = k ? ((a >> k) | (a << (bits - k))) & m : a;
      if (res & sb) fl |= kCF;
      if (bool(res & sb) != bool(res & (sb >> 1))) fl |= kOF;
    }
    wr<S>(cpu, f->dst, res);
    cpu.lazy_cfof = fl;
    cpu.lazy_op |= X86Cpu::kLazyRotated;
  }
  cyc += f->cycles;
  KSIM_X86_NEXT_AFTER(f, n, cyc, r);
}

// --- Stack and control transfer ---------------------------------------------
template <Form F, unsigned kLen>  // rr: push a register, ri: push an immediate, rm: push memory
FastNext push_fast(X86Cpu& cpu, const Fast* f, uint64_t cyc, uint64_t r) {
  const Fast* n = next<kLen>(f);
  uint64_t v;
  if constexpr (F == Form::rr) v = cpu.s.gpr[f->dst];  // one operand: in dst
  else if constexpr (F == Form::ri) v = static_cast<uint64_t>(f->imm);
  else if (!ld<8>(cpu, ea(cpu, f), v)) [[unlikely]] return go_precise(cpu, f, cyc, r);
  // A stack in a page with listeners (code) is left to the precise path.
  const uint64_t sp = cpu.s.gpr[4] - 8;
  if (cpu.flagged_ram(sp, 8) || st<8>(cpu, sp, v) == 0) [[unlikely]] {
    if constexpr (F == Form::rm) cpu.uncount_l1_hit();  // the precise path reads it again
    return go_precise(cpu, f, cyc, r);
  }
  cpu.s.gpr[4] = sp;
  cyc += f->cycles;
  KSIM_X86_NEXT_AFTER(f, n, cyc, r);
}

template <unsigned kLen>
FastNext pop_fast(X86Cpu& cpu, const Fast* f, uint64_t cyc, uint64_t r) {
  const Fast* n = next<kLen>(f);
  uint64_t v;
  if (!ld<8>(cpu, cpu.s.gpr[4], v)) [[unlikely]] return go_precise(cpu, f, cyc, r);
  cpu.s.gpr[4] += 8;
  cpu.s.gpr[f->dst] = v;  // after the increment: POP RSP loads RSP
  cyc += f->cycles;
  KSIM_X86_NEXT_AFTER(f, n, cyc, r);
}

// JMP and CALL: rel (ri), register (rr), memory (rm).
template <bool kCall, Form F>
FastNext jump_fast(X86Cpu& cpu, const Fast* f, uint64_t cyc, uint64_t r) {
  const uint64_t next = pc_next(cpu, f);
  uint64_t t;
  if constexpr (F == Form::ri) t = next + static_cast<uint64_t>(f->imm);  // (a call needs `next` anyway)
  else if constexpr (F == Form::rr) t = cpu.s.gpr[f->dst];  // one operand: in dst
  else if (!ld<8>(cpu, ea(cpu, f), t)) [[unlikely]] return go_precise(cpu, f, cyc, r);
  if constexpr (kCall) {
    const uint64_t sp = cpu.s.gpr[4] - 8;
    if (cpu.flagged_ram(sp, 8) || st<8>(cpu, sp, next) == 0) [[unlikely]] {
      if constexpr (F == Form::rm) cpu.uncount_l1_hit();  // the precise path reads it again
      return go_precise(cpu, f, cyc, r);
    }
    cpu.s.gpr[4] = sp;
  }
  cyc += f->cycles;
  const Fast* n = cpu.fast_in_page(t);
  if (!n) [[unlikely]] return continue_at(cpu, t, cyc, r);
  KSIM_X86_NEXT_AFTER(f, n, cyc, r);
}

inline FastNext ret_fast(X86Cpu& cpu, const Fast* f, uint64_t cyc, uint64_t r) {
  uint64_t t;
  if (!ld<8>(cpu, cpu.s.gpr[4], t)) [[unlikely]] return go_precise(cpu, f, cyc, r);
  cpu.s.gpr[4] += 8 + (static_cast<uint64_t>(f->imm) & 0xffff);
  cyc += f->cycles;
  const Fast* n = cpu.fast_in_page(t);
  if (!n) [[unlikely]] return continue_at(cpu, t, cyc, r);
  KSIM_X86_NEXT_AFTER(f, n, cyc, r);
}

// kLen: the instruction's length when it is one of the two jcc encodings
// (2: rel8, 6: rel32), so the fall-through entry is a constant offset and
// the chain of entry addresses does not wait for a load; 0: from the entry.
template <unsigned CC, unsigned kLen>
FastNext jcc_fast(X86Cpu& cpu, const Fast* f, uint64_t cyc, uint64_t r) {
  const int c = cond<CC>(cpu);
  if (c < 0) [[unlikely]] return rerun_materialised(cpu, f, cyc, r);
  const Fast* n;
  if (c) {
    const uint64_t target = pc_next(cpu, f) + static_cast<uint64_t>(f->imm);
    cyc += f->cycles + timing::kTakenPenalty;
    n = cpu.fast_in_page(target);
    if (!n) [[unlikely]] return continue_at(cpu, target, cyc, r);
  } else {
    n = f + (kLen ? kLen : f->len);
    cyc += f->cycles;
  }
  KSIM_X86_NEXT_AFTER(f, n, cyc, r);
}

template <unsigned kLen, size_t... I>
constexpr std::array<FastFn, 16> jcc_table(std::index_sequence<I...>) {
  return {&jcc_fast<I, kLen>...};
}
inline constexpr std::array<FastFn, 16> kJcc = jcc_table<0>(std::make_index_sequence<16>{});
inline constexpr std::array<FastFn, 16> kJcc2 = jcc_table<2>(std::make_index_sequence<16>{});
inline constexpr std::array<FastFn, 16> kJcc6 = jcc_table<6>(std::make_index_sequence<16>{});

// CMOVcc and SETcc by condition (cond<CC> has no switch on it).
template <bool kMem, unsigned S, size_t... I>
constexpr std::array<FastFn, 16> cmov_table(std::index_sequence<I...>) {
  return {&cmov_fast<kMem, S, I>...};
}
template <bool kMem, size_t... I>
constexpr std::array<FastFn, 16> setcc_table(std::index_sequence<I...>) {
  return {&setcc_fast<kMem, I>...};
}
template <bool kMem, unsigned S>
inline constexpr std::array<FastFn, 16> kCmov = cmov_table<kMem, S>(std::make_index_sequence<16>{});
template <bool kMem>
inline constexpr std::array<FastFn, 16> kSetcc = setcc_table<kMem>(std::make_index_sequence<16>{});

}  // namespace fast

// Hands the instruction to the precise path (every entry without a handler).
inline FastNext fast_go_precise(X86Cpu& cpu, const Fast* f, uint64_t cyc, uint64_t r) {
  return fast::go_precise(cpu, f, cyc, r);
}
// A not yet decoded entry: decode it (both forms), then run it.
inline FastNext fast_decode(X86Cpu& cpu, const Fast* f, uint64_t cyc, uint64_t r) {
  // Under exact SMP, decoding may put back a CPU that ran ahead, which
  // needs this CPU's exact clock: the precise path has it.
  if (cpu.owners().enabled()) return fast::go_precise(cpu, f, cyc, r);
  cpu.decode_fast(f);
  return f->fn(cpu, f, cyc, r);
}
// A guard entry past the end of a page: continue on the next page.
inline FastNext fast_next_page(X86Cpu& cpu, const Fast* f, uint64_t cyc, uint64_t r) {
  const Fast* n = cpu.fast_at(cpu.pc_of(f));
  return n->fn(cpu, n, cyc, r);
}

namespace fast {

// What make_fast needs to know about an operand.
enum class K : uint8_t { none, r, i, m, bad };
inline K kind_of(const Operand& o) {
  switch (o.kind) {
    case OpKind::reg: return o.high8 ? K::bad : K::r;
    case OpKind::imm: return K::i;
    case OpKind::mem: return (o.seg != kSegNone || o.addr32) ? K::bad : K::m;
    default: return K::none;
  }
}

// Handler families H<S, kLen> by operand size and length: lengths 2 to 8
// get their own instances at sizes 1, 4 and 8 (the common ones), everything
// else reads the length from the entry.
template <template <unsigned, unsigned> class H, unsigned S>
FastFn by_len(unsigned len) {
  switch (len) {
    case 2: return H<S, 2>::fn;
    case 3: return H<S, 3>::fn;
    case 4: return H<S, 4>::fn;
    case 5: return H<S, 5>::fn;
    case 6: return H<S, 6>::fn;
    case 7: return H<S, 7>::fn;
    case 8: return H<S, 8>::fn;
    default: return H<S, 0>::fn;
  }
}
template <template <unsigned, unsigned> class H>
FastFn by_size(unsigned s, unsigned len) {
  switch (s) {
    case 1: return by_len<H, 1>(len);
    case 2: return H<2, 0>::fn;
    case 4: return by_len<H, 4>(len);
    case 8: return by_len<H, 8>(len);
    default: return nullptr;
  }
}
template <template <unsigned> class H>
FastFn by_size(unsigned s) {
  switch (s) {
    case 1: return H<1>::fn;
    case 2: return H<2>::fn;
    case 4: return H<4>::fn;
    case 8: return H<8>::fn;
    default: return nullptr;
  }
}
template <Alu A, Form F> struct AluH { template <unsigned S, unsigned L> struct T { static constexpr FastFn fn = &alu_fast<A, F, S, L>; }; };
template <Unary U> struct UnH { template <unsigned S> struct T { static constexpr FastFn fn = &unary_fast<U, S>; }; };
template <Form F> struct MovH { template <unsigned S, unsigned L> struct T { static constexpr FastFn fn = &mov_fast<F, S, L>; }; };
template <Form F> struct ImulH { template <unsigned S> struct T { static constexpr FastFn fn = &imul_fast<F, S>; }; };
template <Sh X, bool C> struct ShH { template <unsigned S, unsigned L> struct T { static constexpr FastFn fn = &shift_fast<X, C, S, L>; }; };
template <unsigned S, unsigned L> struct LeaH { static constexpr FastFn fn = &lea_fast<S, L>; };
template <bool G, bool M, unsigned D, unsigned S> struct MovxH { template <unsigned, unsigned L> struct T { static constexpr FastFn fn = &movx_fast<G, M, D, S, L>; }; };

template <Alu A>
FastFn alu_fn(Form f, unsigned s, unsigned len) {
  switch (f) {
    case Form::rr: return by_size<AluH<A, Form::rr>::template T>(s, len);
    case Form::ri: return by_size<AluH<A, Form::ri>::template T>(s, len);
    case Form::rm: return by_size<AluH<A, Form::rm>::template T>(s, len);
    case Form::mr: return by_size<AluH<A, Form::mr>::template T>(s, len);
    default: return by_size<AluH<A, Form::mi>::template T>(s, len);
  }
}
template <bool kSigned, bool kMem>
FastFn movx_fn(unsigned d, unsigned s, unsigned len) {
  if (s == 1 && d == 2) return &movx_fast<kSigned, kMem, 2, 1, 0>;
  if (s == 1 && d == 4) return by_len<MovxH<kSigned, kMem, 4, 1>::template T, 4>(len);
  if (s == 1 && d == 8) return by_len<MovxH<kSigned, kMem, 8, 1>::template T, 8>(len);
  if (s == 2 && d == 4) return by_len<MovxH<kSigned, kMem, 4, 2>::template T, 4>(len);
  if (s == 2 && d == 8) return by_len<MovxH<kSigned, kMem, 8, 2>::template T, 8>(len);
  if (s == 4 && d == 8) return by_len<MovxH<kSigned, kMem, 8, 4>::template T, 8>(len);
  return nullptr;
}
template <Sh X>
FastFn shift_fn(bool cl, unsigned s, unsigned len) {
  return cl ? by_size<ShH<X, true>::template T>(s, len) : by_size<ShH<X, false>::template T>(s, len);
}

}  // namespace fast

// The fast entry of a decoded instruction at `rip`: the handler for its
// operation and operand form, or the hand-back for everything else.
inline Fast make_fast(const Insn& in, uint64_t rip) {
  using namespace fast;
  Fast f;
  f.fn = &fast_go_precise;
  f.len = in.len;
  f.cycles = in.cycles;
  f.cc = in.cond;
  if (!in.exec) return f;
  K k[3] = {K::none, K::none, K::none};
  unsigned mems = 0;
  for (unsigned j = 0; j < in.nops; ++j) {
    k[j] = kind_of(in.op[j]);
    if (k[j] == K::bad) return f;
    const Operand& o = in.op[j];
    if (k[j] == K::r) {
      if (j == 0) f.dst = o.reg;
      else f.src = o.reg;
    } else if (k[j] == K::i) {
      f.imm = o.disp;
    } else if (k[j] == K::m) {
      ++mems;
      int64_t disp = o.disp;
      f.amode = 0;
      if (o.base == kRip) disp += static_cast<int64_t>(rip + in.len);  // fixed: the entry is per address
      else if (o.base != kNoReg) { f.base = o.base; f.amode |= 1; }
      if (o.index != kNoReg) {
        f.index = o.index;
        f.amode |= 2;
        f.shift = static_cast<uint8_t>(o.scale == 8 ? 3 : o.scale == 4 ? 2 : o.scale == 2 ? 1 : 0);
      }
      if (disp != static_cast<int32_t>(disp)) return f;
      f.disp = static_cast<int32_t>(disp);
    }
  }
  if (mems > 1) return f;
  const unsigned s0 = in.nops ? in.op[0].size : 0;
  const unsigned s1 = in.nops > 1 ? in.op[1].size : 0;
  auto form2 = [&]() -> int {  // binary forms: dst op0, src op1
    if (in.nops != 2) return -1;
    if (k[0] == K::r && k[1] == K::r) return static_cast<int>(Form::rr);
    if (k[0] == K::r && k[1] == K::i) return static_cast<int>(Form::ri);
    if (k[0] == K::r && k[1] == K::m) return static_cast<int>(Form::rm);
    if (k[0] == K::m && k[1] == K::r) return static_cast<int>(Form::mr);
    if (k[0] == K::m && k[1] == K::i) return static_cast<int>(Form::mi);
    return -1;
  };
  FastFn fn = nullptr;
  const ExecFn e = in.exec;
  auto alu_any = [&](auto tag) {
    const int fm = form2();
    if (fm < 0 || (in.op[1].size != s0 && k[1] != K::i)) return;
    fn = alu_fn<decltype(tag)::value>(static_cast<Form>(fm), s0, in.len);
  };
  if (e == exec_add) alu_any(std::integral_constant<Alu, Alu::add>{});
  else if (e == exec_sub) alu_any(std::integral_constant<Alu, Alu::sub>{});
  else if (e == exec_and) alu_any(std::integral_constant<Alu, Alu::and_>{});
  else if (e == exec_or) alu_any(std::integral_constant<Alu, Alu::or_>{});
  else if (e == exec_xor) alu_any(std::integral_constant<Alu, Alu::xor_>{});
  else if (e == exec_cmp) alu_any(std::integral_constant<Alu, Alu::cmp>{});
  else if (e == exec_test) alu_any(std::integral_constant<Alu, Alu::test>{});
  else if ((e == exec_inc || e == exec_dec || e == exec_neg || e == exec_not) && in.nops == 1 && k[0] == K::r) {
    fn = e == exec_inc   ? by_size<UnH<Unary::inc>::template T>(s0)
         : e == exec_dec ? by_size<UnH<Unary::dec>::template T>(s0)
         : e == exec_neg ? by_size<UnH<Unary::neg>::template T>(s0)
                         : by_size<UnH<Unary::not_>::template T>(s0);
  } else if (e == exec_mov) {
    const int fm = form2();
    if (fm >= 0 && (k[1] == K::i || s1 == s0)) {
      switch (static_cast<Form>(fm)) {
        case Form::rr: fn = by_size<MovH<Form::rr>::template T>(s0, in.len); break;
        case Form::ri: fn = by_size<MovH<Form::ri>::template T>(s0, in.len); break;
        case Form::rm: fn = by_size<MovH<Form::rm>::template T>(s0, in.len); break;
        case Form::mr: fn = by_size<MovH<Form::mr>::template T>(s0, in.len); break;
        case Form::mi: fn = by_size<MovH<Form::mi>::template T>(s0, in.len); break;
      }
    }
  } else if ((e == exec_movzx || e == exec_movsx) && in.nops == 2 && k[0] == K::r && (k[1] == K::r || k[1] == K::m)) {
    const bool sgn = e == exec_movsx, mem = k[1] == K::m;
    fn = sgn ? (mem ? movx_fn<true, true>(s0, s1, in.len) : movx_fn<true, false>(s0, s1, in.len))
             : (mem ? movx_fn<false, true>(s0, s1, in.len) : movx_fn<false, false>(s0, s1, in.len));
    if (!fn && s0 == s1) {  // MOVSXD r32, r/m32 and the like: a plain move
      fn = mem ? by_size<MovH<Form::rm>::template T>(s0, 0) : by_size<MovH<Form::rr>::template T>(s0, 0);
    }
  } else if (e == exec_lea && in.nops == 2 && k[0] == K::r && k[1] == K::m && (s0 == 4 || s0 == 8)) {
    fn = s0 == 8 ? by_len<LeaH, 8>(in.len) : by_len<LeaH, 4>(in.len);
  } else if (e == exec_cbw || e == exec_cwd) {
    const bool dx = e == exec_cwd;
    switch (in.opsize) {
      case 2: fn = dx ? &widen_fast<true, 2> : &widen_fast<false, 2>; break;
      case 4: fn = dx ? &widen_fast<true, 4> : &widen_fast<false, 4>; break;
      case 8: fn = dx ? &widen_fast<true, 8> : &widen_fast<false, 8>; break;
      default: break;
    }
  } else if (e == exec_bswap && in.nops == 1 && k[0] == K::r && (s0 == 4 || s0 == 8)) {
    fn = s0 == 8 ? &bswap_fast<8> : &bswap_fast<4>;
  } else if (e == exec_nop) {
    fn = &nop_fast;
  } else if (e == exec_cmovcc && in.nops == 2 && k[0] == K::r && (k[1] == K::r || k[1] == K::m) && s0 == s1) {
    const bool mem = k[1] == K::m;
    const unsigned cc = in.cond & 15;
    switch (s0) {
      case 2: fn = mem ? kCmov<true, 2>[cc] : kCmov<false, 2>[cc]; break;
      case 4: fn = mem ? kCmov<true, 4>[cc] : kCmov<false, 4>[cc]; break;
      case 8: fn = mem ? kCmov<true, 8>[cc] : kCmov<false, 8>[cc]; break;
      default: break;
    }
  } else if (e == exec_setcc && in.nops == 1 && s0 == 1) {
    if (k[0] == K::r) fn = kSetcc<false>[in.cond & 15];
    else if (k[0] == K::m) fn = kSetcc<true>[in.cond & 15];
  } else if (e == exec_imul && (in.nops == 2 || in.nops == 3) && k[0] == K::r && (s0 == 4 || s0 == 8 || s0 == 2)) {
    if (in.nops == 2 && k[1] == K::r && s1 == s0) fn = by_size<ImulH<Form::rr>::template T>(s0);
    else if (in.nops == 2 && k[1] == K::m && s1 == s0) fn = by_size<ImulH<Form::rm>::template T>(s0);
    else if (in.nops == 3 && k[2] == K::i && k[1] == K::r && s1 == s0) fn = by_size<ImulH<Form::ri>::template T>(s0);
    else if (in.nops == 3 && k[2] == K::i && k[1] == K::m && s1 == s0) fn = by_size<ImulH<Form::mi>::template T>(s0);
  } else if (e == exec_shift && k[0] == K::r) {
    bool cl = false, ok = true;
    if (in.nops == 1) f.imm = 1;
    else if (in.nops == 2 && k[1] == K::r && in.op[1].reg == 1 && in.op[1].size == 1) cl = true;
    else if (!(in.nops == 2 && k[1] == K::i)) ok = false;
    if (ok) {
      switch (in.mnemonic) {
        case ZYDIS_MNEMONIC_SHL: fn = shift_fn<Sh::shl>(cl, s0, in.len); break;
        case ZYDIS_MNEMONIC_SHR: fn = shift_fn<Sh::shr>(cl, s0, in.len); break;
        case ZYDIS_MNEMONIC_SAR: fn = shift_fn<Sh::sar>(cl, s0, in.len); break;
        case ZYDIS_MNEMONIC_ROL: fn = shift_fn<Sh::rol>(cl, s0, in.len); break;
        case ZYDIS_MNEMONIC_ROR: fn = shift_fn<Sh::ror>(cl, s0, in.len); break;
        default: break;  // RCL/RCR: precise
      }
    }
  } else if (e == exec_push && in.nops == 1 && in.opsize == 8) {
    if (k[0] == K::r && s0 == 8) fn = in.len == 1 ? &push_fast<Form::rr, 1> : &push_fast<Form::rr, 0>;
    else if (k[0] == K::i) fn = &push_fast<Form::ri, 0>;
    else if (k[0] == K::m && s0 == 8) fn = &push_fast<Form::rm, 0>;
  } else if (e == exec_pop && in.nops == 1 && k[0] == K::r && s0 == 8) {
    fn = in.len == 1 ? &pop_fast<1> : &pop_fast<0>;
  } else if ((e == exec_jmp || e == exec_call) && in.nops == 1) {
    const bool call = e == exec_call;
    if (k[0] == K::i) fn = call ? &jump_fast<true, Form::ri> : &jump_fast<false, Form::ri>;
    else if (k[0] == K::r && s0 == 8) fn = call ? &jump_fast<true, Form::rr> : &jump_fast<false, Form::rr>;
    else if (k[0] == K::m && s0 == 8) fn = call ? &jump_fast<true, Form::rm> : &jump_fast<false, Form::rm>;
  } else if (e == exec_ret) {
    if (in.nops == 0) { fn = &ret_fast; f.imm = 0; }
    else if (in.nops == 1 && k[0] == K::i) fn = &ret_fast;
  } else if (e == exec_jcc && in.nops == 1 && k[0] == K::i) {
    fn = (in.len == 2 ? kJcc2 : in.len == 6 ? kJcc6 : kJcc)[in.cond & 15];
  }
  if (fn) f.fn = fn;
  return f;
}

#undef KSIM_X86_NEXT
#undef KSIM_X86_NEXT_AFTER
#undef KSIM_X86_NEXT_FAR

}  // namespace ksim::x86
