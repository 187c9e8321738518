// Differential test of the x86-64 core against the host CPU.
//
// Issue requirement: "For every supported arithmetic, logic, shift, rotate,
// bit, multiply/divide, compare, conditional and string instruction, run it
// natively on random and edge-case operands (all flag inputs too) and in
// the simulator, and compare registers, memory and defined flags. At least
// 100,000 cases per run of the suite, zero mismatches; seed and case
// printed on a failure. Count of instructions covered printed."
//
// Every case is one instruction, encoded with the Zydis encoder (or by hand
// where the encoding is fixed: cbw/cwd families, string instructions, the
// C1 shift form with count 1), with random and edge-case operand values,
// random CF PF AF ZF SF OF inputs (DF=0), and memory operands addressed
// through registers that point into a 4 KiB data buffer at kX86DataAddr.
// The case runs natively (support/x86_native.hpp) and through x86_exec
// (support/x86_exec.hpp); the test compares the outcome (ran to the end /
// exception vector), all 16 GPRs, the data buffer, and the flags the SDM
// defines for that instruction (undefined_flags() below). Registers whose
// value the SDM leaves undefined (BSF/BSR destination for a zero source)
// are not compared either. On an exception both sides must report the same
// vector and the state before the faulting instruction (x86 faults are
// precise), which is what #DE cases of DIV/IDIV check.
//
// Operand registers are chosen from the 15 GPRs other than RSP; registers
// that address memory are never data operands of the same instruction.
//
// What x86_exec has to do for this test to pass:
//   * run every form of all_forms() (a #UD where the host runs the
//     instruction is a mismatch, so nothing unsupported is skipped);
//   * on an exception: ok=false, `vector` the x86 vector (#DE = 0, both for
//     a zero divisor and for a quotient too large for the destination),
//     `state` the GPRs and RFLAGS before the faulting instruction, and the
//     data buffer copied back as memory was;
//   * leave RSP (in: kX86DataAddr + kX86DataSize, never an operand) and DF
//     (always 0) as they were; of RFLAGS only CF PF AF ZF SF OF and DF are
//     compared (IF, RF, TF and the reserved bits are free).
//
// Environment:
//   KSIM_DIFF_SEED=<n>     seed (decimal or 0x hex; default kDefaultSeed)
//   KSIM_DIFF_FORM=<text>  only forms whose name contains <text>
//   KSIM_DIFF_CASE=<i>     only case i of each selected form (to reproduce)
//   KSIM_DIFF_CASES=<n>    total number of cases (default kDefaultCases)
//   KSIM_DIFF_RELOCATE=1   place the native data buffer elsewhere and
//                          translate pointer registers (the fallback for a
//                          kX86DataAddr that is taken in this process, e.g.
//                          by AddressSanitizer's shadow memory)
// Each case draws from its own generator seeded from (seed, form, case), so
// a reported case reproduces alone with the three variables above.
//
// Cost: one x86_exec call per case. Measured on the reference host (2
// cores, Release): x86_exec ~3 us a case (it reuses one machine), the
// native side ~0.5 us, generating and comparing ~5 us; 200,000 cases take
// ~2.5 s (~11 s under AddressSanitizer + UBSan). Should x86_exec become
// much slower per call (e.g. a fresh machine each time: ~50 us, ~10 s),
// the remedy is batching: several cases in one snippet, each preceded by
// its own register loads (mov r64, imm64 for the 15 GPRs, push imm32 /
// popfq for the flags, with a stack in the data buffer) and followed by
// stores of the 16 GPRs and pushfq into a result area. That amortises the
// machine but loses the per-case exception report.
#include <Zydis/Zydis.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "cpu/hex.hpp"
#include "support/x86_exec.hpp"
#include "support/x86_native.hpp"

using namespace ksim::test;
using ksim::hex;

namespace {

constexpr uint64_t kDefaultSeed = 0x6b73696d2d783836ull;  // "ksim-x86"
constexpr uint64_t kDefaultCases = 200'000;
constexpr uint64_t kRequiredCases = 100'000;
constexpr size_t kDataBytes = 4096;  // the part of the data buffer cases use
constexpr size_t kMaxExamples = 20;

// RFLAGS bits.
constexpr uint64_t kCF = 1ull << 0, kPF = 1ull << 2, kAF = 1ull << 4, kZF = 1ull << 6, kSF = 1ull << 7,
                   kDF = 1ull << 10, kOF = 1ull << 11;
constexpr uint64_t kArith = kCF | kPF | kAF | kZF | kSF | kOF;
constexpr uint64_t kCompared = kArith | kDF;  // what a case compares at most

// GPR numbers (hardware encoding order, as in X86State).
enum : int { RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI };
constexpr uint16_t bit(int r) { return static_cast<uint16_t>(1u << r); }
const char* const kGprNames[16] = {"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
                                   "r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15"};

// ---------------------------------------------------------------------------
// Flags the SDM leaves undefined, per instruction. Quotes are from the
// "Flags Affected" section of each instruction's page in the Intel SDM,
// Vol. 2 (AMD's APM agrees on every entry). Instructions not listed define
// every flag they touch and leave the rest unchanged, and both are compared:
//   ADD ADC SUB SBB CMP NEG XADD CMPXCHG CMPS SCAS: all six set by the result
//     (a REP-prefixed CMPS/SCAS with RCX=0 changes none);
//   INC DEC: CF unaffected, the other five set;
//   NOT BSWAP XCHG MOVZX MOVSX MOVSXD CBW CWDE CDQE CWD CDQ CQO SETcc CMOVcc
//     LEA MOVS STOS LODS: no flag affected.
// `count` is the masked count (& 0x3f for 64-bit operands, & 0x1f otherwise).
struct FlagFacts {
  unsigned bits = 0;
  uint64_t count = 0;
};

uint64_t undefined_flags(ZydisMnemonic m, const FlagFacts& f) {
  switch (m) {
    // AND, OR, XOR, TEST: "The OF and CF flags are cleared; the SF, ZF, and
    // PF flags are set according to the result. The state of the AF flag is
    // undefined."
    case ZYDIS_MNEMONIC_AND:
    case ZYDIS_MNEMONIC_OR:
    case ZYDIS_MNEMONIC_XOR:
    case ZYDIS_MNEMONIC_TEST:
      return kAF;
    // SAL/SAR/SHL/SHR: "The CF flag contains the value of the last bit
    // shifted out of the destination operand; it is undefined for SHL and
    // SHR instructions where the count is greater than or equal to the size
    // (in bits) of the destination operand. The OF flag is affected only for
    // 1-bit shifts; otherwise, it is undefined. The SF, ZF, and PF flags are
    // set according to the result. If the count is 0, the flags are not
    // affected. For a non-zero count, the AF flag is undefined."
    case ZYDIS_MNEMONIC_SHL:
    case ZYDIS_MNEMONIC_SHR:
    case ZYDIS_MNEMONIC_SAR: {
      if (f.count == 0) return 0;
      uint64_t u = kAF;
      if (f.count > 1) u |= kOF;
      if (m != ZYDIS_MNEMONIC_SAR && f.count >= f.bits) u |= kCF;
      return u;
    }
    // RCL/RCR/ROL/ROR: "If the masked count is 0, the flags are not
    // affected. If the masked count is 1, then the OF flag is affected,
    // otherwise (masked count is greater than 1) the OF flag is undefined.
    // The CF flag is affected when the masked count is non-zero. The SF, ZF,
    // AF, and PF flags are always unaffected."
    case ZYDIS_MNEMONIC_ROL:
    case ZYDIS_MNEMONIC_ROR:
    case ZYDIS_MNEMONIC_RCL:
    case ZYDIS_MNEMONIC_RCR:
      return f.count > 1 ? kOF : 0;
    // SHLD/SHRD: "If the count is 1 or greater, the CF flag is filled with
    // the last bit shifted out of the destination operand and the SF, ZF,
    // and PF flags are set according to the value of the result. For a 1-bit
    // shift, the OF flag is set if a sign change occurred; otherwise, it is
    // cleared. For shifts greater than 1 bit, the OF flag is undefined. If a
    // shift occurs, the AF flag is undefined. If the count operand is 0, the
    // flags are not affected. If the count is greater than the operand size,
    // the flags are undefined." (The destination is then undefined too, so
    // the generator never makes such counts: only 16-bit operands can.)
    case ZYDIS_MNEMONIC_SHLD:
    case ZYDIS_MNEMONIC_SHRD:
      if (f.count == 0) return 0;
      if (f.count > f.bits) return kArith;
      return kAF | (f.count > 1 ? kOF : 0);
    // MUL: "The OF and CF flags are set to 0 if the upper half of the result
    // is 0; otherwise, they are set to 1. The SF, ZF, AF, and PF flags are
    // undefined." IMUL (all three forms): "For the one operand form of the
    // instruction, the CF and OF flags are set when significant bits are
    // carried into the upper half of the result and cleared when the result
    // fits exactly in the lower half of the result. For the two- and
    // three-operand forms of the instruction, the CF and OF flags are set
    // when the result must be truncated to fit in the destination operand
    // size and cleared when the result fits exactly in the destination
    // operand size. The SF, ZF, AF, and PF flags are undefined."
    case ZYDIS_MNEMONIC_MUL:
    case ZYDIS_MNEMONIC_IMUL:
      return kSF | kZF | kAF | kPF;
    // DIV, IDIV: "The CF, OF, SF, ZF, AF, and PF flags are undefined."
    case ZYDIS_MNEMONIC_DIV:
    case ZYDIS_MNEMONIC_IDIV:
      return kArith;
    // BT, BTS, BTR, BTC: "The CF flag contains the value of the selected
    // bit. The ZF flag is unaffected. The OF, SF, AF, and PF flags are
    // undefined."
    case ZYDIS_MNEMONIC_BT:
    case ZYDIS_MNEMONIC_BTS:
    case ZYDIS_MNEMONIC_BTR:
    case ZYDIS_MNEMONIC_BTC:
      return kOF | kSF | kAF | kPF;
    // BSF, BSR: "The ZF flag is set to 1 if the source operand is 0;
    // otherwise, the ZF flag is cleared. The CF, OF, SF, AF, and PF flags
    // are undefined." And the destination: "If the content of the source
    // operand is 0, the content of the destination operand is undefined"
    // (AMD leaves it unchanged; Intel leaves it unchanged but clears bits
    // 63:32 of a 32-bit destination), so it is not compared then.
    case ZYDIS_MNEMONIC_BSF:
    case ZYDIS_MNEMONIC_BSR:
      return kCF | kOF | kSF | kAF | kPF;
    default:
      return 0;
  }
}

uint64_t compared_flags(ZydisMnemonic m, const FlagFacts& f = {}) { return kCompared & ~undefined_flags(m, f); }

// ---------------------------------------------------------------------------
// Random values.

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

struct Rng {
  std::mt19937_64 e;
  explicit Rng(uint64_t seed) : e(seed) {}
  uint64_t u() { return e(); }
  uint64_t below(uint64_t n) { return n == 0 ? 0 : e() % n; }
  bool chance(unsigned percent) { return below(100) < percent; }
  template <typename T>
  T pick(std::initializer_list<T> l) { return l.begin()[below(l.size())]; }
};

uint64_t mask(unsigned bits) { return bits >= 64 ? ~0ull : (1ull << bits) - 1; }
uint64_t sx(uint64_t v, unsigned bits) {
  if (bits >= 64) return v;
  const uint64_t m = 1ull << (bits - 1);
  return ((v & mask(bits)) ^ m) - m;
}

// Edge values of a `bits`-wide operand.
uint64_t edge(Rng& r, unsigned bits) {
  const uint64_t m = mask(bits), smax = m >> 1, smin = smax + 1, half = 1ull << (bits / 2);
  const uint64_t v[] = {0,          1,           2,          3,          m,          m - 1,      smax,
                        smax - 1,   smin,        smin + 1,   half,       half - 1,   half + 1,   0x7f,
                        0x80,       0xff,        0x100,      0x7fff,     0x8000,     0xffff,     0x10000,
                        0x7fffffff, 0x80000000,  0xffffffff, 1ull << 32, 0x5555555555555555ull,
                        0xaaaaaaaaaaaaaaaaull,   0x0123456789abcdefull};
  return v[r.below(sizeof v / sizeof v[0])] & m;
}

// A `bits`-wide operand value: edges, small positive and negative numbers,
// powers of two and their neighbours, or uniformly random bits.
uint64_t val(Rng& r, unsigned bits) {
  switch (r.below(8)) {
    case 0:
    case 1:
    case 2:
      return edge(r, bits);
    case 3:
      return r.below(17);
    case 4:
      return (0 - (1 + r.below(16))) & mask(bits);
    case 5:
      return ((1ull << r.below(bits)) + r.below(3) - 1) & mask(bits);
    default:
      return r.u() & mask(bits);
  }
}

// Input flags: any combination of the six, with all-clear and all-set
// more often than chance would give.
uint64_t random_flags(Rng& r) {
  switch (r.below(8)) {
    case 0: return 0x2;
    case 1: return 0x2 | kArith;
    default: return 0x2 | (r.u() & kArith);
  }
}

// Shift and rotate counts: around the operand size, the 5/6-bit masks, the
// RCL/RCR moduli (9, 17, 33, 65), or any byte.
uint64_t shift_count(Rng& r, unsigned bits) {
  if (r.chance(40)) return r.below(256);
  return r.pick<uint64_t>({0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255,
                           bits - 1, bits, bits + 1, 2 * bits, 2 * bits + 1});
}

// ---------------------------------------------------------------------------
// Cases and their construction.

struct Case {
  std::vector<uint8_t> code;
  X86State in;
  std::vector<uint8_t> data;
  uint64_t flag_mask = kCompared;  // RFLAGS bits compared
  uint16_t undef_regs = 0;         // GPRs not compared (undefined results)
  uint16_t ptr_regs = 0;           // GPRs holding data-buffer addresses
};

ZydisRegister zreg(int gpr, unsigned bits, bool high8 = false) {
  switch (bits) {
    case 8:
      if (high8) return static_cast<ZydisRegister>(ZYDIS_REGISTER_AH + gpr);
      if (gpr < 4) return static_cast<ZydisRegister>(ZYDIS_REGISTER_AL + gpr);
      if (gpr < 8) return static_cast<ZydisRegister>(ZYDIS_REGISTER_SPL + gpr - 4);
      return static_cast<ZydisRegister>(ZYDIS_REGISTER_R8B + gpr - 8);
    case 16: return static_cast<ZydisRegister>(ZYDIS_REGISTER_AX + gpr);
    case 32: return static_cast<ZydisRegister>(ZYDIS_REGISTER_EAX + gpr);
    default: return static_cast<ZydisRegister>(ZYDIS_REGISTER_RAX + gpr);
  }
}

struct Opnd {
  enum Kind { R, M, I } kind = R;
  unsigned bits = 0;
  // R
  int gpr = -1;
  bool high8 = false;
  // M
  size_t off = 0;  // where the operand lies in the data buffer
  int base = -1, index = -1;
  unsigned scale = 0, abits = 64;
  int64_t disp = 0;
  bool access = true;  // false for LEA
  // I
  uint64_t imm = 0;
};

// Builds one case: random registers, flags and data, then operands added in
// instruction order, then encode().
class Builder {
 public:
  // `implicit`: registers the instruction uses implicitly (never chosen as
  // a memory base or index).
  Builder(Rng& r, Case& c, uint16_t implicit = 0) : r_(r), c_(c), implicit_(implicit) {
    c.in = X86State{};
    for (auto& g : c.in.gpr) g = r.chance(50) ? r.u() : val(r, 64);
    c.in.gpr[RSP] = kX86DataAddr + kX86DataSize;  // never an operand
    c.in.rflags = random_flags(r);
    c.data.resize(kDataBytes);
    for (size_t i = 0; i < kDataBytes; i += 8) {
      const uint64_t v = r.u();
      std::memcpy(&c.data[i], &v, 8);
    }
    c.flag_mask = kCompared;
    c.undef_regs = 0;
    c.ptr_regs = 0;
    c.code.clear();
  }

  Rng& rng() { return r_; }
  Case& c() { return c_; }
  const std::vector<Opnd>& ops() const { return ops_; }

  // A register operand of `bits` with a random value; `may_repeat` lets it
  // be a register an earlier operand already uses.
  Opnd reg(unsigned bits, bool may_repeat = false) {
    uint16_t avoid = bit(RSP) | addr_used_ | (may_repeat && r_.chance(30) ? 0 : data_used_);
    Opnd o;
    o.kind = Opnd::R;
    o.bits = bits;
    if (bits == 8 && r_.chance(20)) {  // AH CH DH BH
      o.gpr = pick_gpr(avoid, 4);
      o.high8 = o.gpr >= 0;
    }
    if (o.gpr < 0) o.gpr = pick_gpr(avoid, 16);
    if (o.gpr < 0) o.gpr = pick_gpr(bit(RSP) | addr_used_, 16);
    data_used_ |= bit(o.gpr);
    ops_.push_back(o);
    set(o, val(r_, bits));
    return o;
  }
  // A given register as an operand (value unchanged).
  Opnd fixed(int gpr, unsigned bits, bool high8 = false) {
    Opnd o;
    o.kind = Opnd::R;
    o.bits = bits;
    o.gpr = gpr;
    o.high8 = high8;
    data_used_ |= bit(gpr);
    ops_.push_back(o);
    return o;
  }
  // A memory operand of `bits` at an offset in [lo, hi] of the data buffer,
  // addressed [base + index*scale + disp] (index 1 time in 3).
  Opnd mem(unsigned bits, size_t lo = 0, size_t hi = kDataBytes - 8) {
    Opnd o;
    o.kind = Opnd::M;
    o.bits = bits;
    o.off = lo + r_.below(hi - lo + 1);
    const uint16_t avoid = bit(RSP) | data_used_ | addr_used_ | implicit_;
    o.base = pick_gpr(avoid, 16);
    if (r_.chance(33)) {
      o.index = pick_gpr(avoid | bit(o.base), 16);
      o.scale = 1u << r_.below(4);
    }
    o.disp = pick_disp();
    uint64_t index_val = 0;
    if (o.index >= 0) {
      index_val = r_.below(129) - 64;
      c_.in.gpr[o.index] = index_val;
      addr_used_ |= bit(o.index);
    }
    c_.in.gpr[o.base] = kX86DataAddr + o.off - o.disp - index_val * o.scale;
    addr_used_ |= bit(o.base);
    c_.ptr_regs |= bit(o.base);
    ops_.push_back(o);
    set(o, val(r_, bits));
    return o;
  }
  // An address for LEA: any registers (rsp excluded), any values; forms:
  // 0 [base+disp], 1 [base+index*scale+disp], 2 [index*scale+disp32],
  // 3 like 1 with 32-bit address size.
  Opnd lea_addr(int form) {
    Opnd o;
    o.kind = Opnd::M;
    o.access = false;
    o.abits = form == 3 ? 32 : 64;
    if (form != 2) o.base = pick_gpr(bit(RSP), 16);
    if (form != 0) {
      o.index = pick_gpr(bit(RSP), 16);
      o.scale = 1u << r_.below(4);
    }
    o.disp = form == 2 ? static_cast<int32_t>(r_.u()) : pick_disp();
    if (r_.chance(30) && o.base >= 0) c_.in.gpr[o.base] = val(r_, 64);
    if (r_.chance(30) && o.index >= 0) c_.in.gpr[o.index] = val(r_, 64);
    ops_.push_back(o);
    return o;
  }
  Opnd imm(uint64_t v, unsigned bits) {
    Opnd o;
    o.kind = Opnd::I;
    o.bits = bits;
    o.imm = v;
    ops_.push_back(o);
    return o;
  }

  uint64_t get(const Opnd& o) const {
    if (o.kind == Opnd::R) {
      const uint64_t g = c_.in.gpr[o.gpr];
      return o.high8 ? (g >> 8) & 0xff : g & mask(o.bits);
    }
    if (o.kind == Opnd::M) {
      uint64_t v = 0;
      std::memcpy(&v, &c_.data[o.off], o.bits / 8);
      return v;
    }
    return o.imm;
  }
  // Writes an operand's value (the rest of its register keeps its bits).
  void set(const Opnd& o, uint64_t v) {
    if (o.kind == Opnd::R) {
      uint64_t& g = c_.in.gpr[o.gpr];
      if (o.high8)
        g = (g & ~0xff00ull) | ((v & 0xff) << 8);
      else
        g = (g & ~mask(o.bits)) | (v & mask(o.bits));
    } else if (o.kind == Opnd::M) {
      std::memcpy(&c_.data[o.off], &v, o.bits / 8);
    }
  }

  // Encodes the operands with `m`; false if Zydis refuses the combination
  // (e.g. AH next to a REX prefix): the caller then draws a new case.
  bool encode(ZydisMnemonic m) {
    ZydisEncoderRequest req;
    std::memset(&req, 0, sizeof req);
    req.machine_mode = ZYDIS_MACHINE_MODE_LONG_64;
    req.mnemonic = m;
    req.operand_count = static_cast<ZyanU8>(ops_.size());
    for (size_t i = 0; i < ops_.size(); ++i) {
      const Opnd& o = ops_[i];
      ZydisEncoderOperand& e = req.operands[i];
      switch (o.kind) {
        case Opnd::R:
          e.type = ZYDIS_OPERAND_TYPE_REGISTER;
          e.reg.value = zreg(o.gpr, o.bits, o.high8);
          break;
        case Opnd::M:
          e.type = ZYDIS_OPERAND_TYPE_MEMORY;
          e.mem.base = o.base >= 0 ? zreg(o.base, o.abits) : ZYDIS_REGISTER_NONE;
          e.mem.index = o.index >= 0 ? zreg(o.index, o.abits) : ZYDIS_REGISTER_NONE;
          e.mem.scale = static_cast<ZyanU8>(o.index >= 0 ? o.scale : 0);
          e.mem.displacement = o.disp;
          // LEA's operand is sized by the address size for Zydis.
          e.mem.size = static_cast<ZyanU16>(o.access ? o.bits / 8 : o.abits / 8);
          break;
        case Opnd::I:
          e.type = ZYDIS_OPERAND_TYPE_IMMEDIATE;
          e.imm.s = static_cast<ZyanI64>(o.imm);
          break;
      }
    }
    uint8_t buf[ZYDIS_MAX_INSTRUCTION_LENGTH];
    ZyanUSize len = sizeof buf;
    if (!ZYAN_SUCCESS(ZydisEncoderEncodeInstruction(&req, buf, &len))) return false;
    c_.code.assign(buf, buf + len);
    return true;
  }

 private:
  // A random GPR below `limit` not in `avoid`, or -1.
  int pick_gpr(uint16_t avoid, int limit) {
    int choices[16];
    int n = 0;
    for (int g = 0; g < limit; ++g)
      if (!(avoid & bit(g))) choices[n++] = g;
    return n == 0 ? -1 : choices[r_.below(n)];
  }
  int64_t pick_disp() {
    switch (r_.below(4)) {
      case 0: return 0;
      case 1: return static_cast<int8_t>(r_.u());
      case 2: return static_cast<int64_t>(r_.below(4096)) - 2048;
      default: return static_cast<int32_t>(r_.u());
    }
  }

  Rng& r_;
  Case& c_;
  uint16_t implicit_;
  uint16_t data_used_ = 0, addr_used_ = 0;
  std::vector<Opnd> ops_;
};

// ---------------------------------------------------------------------------
// Instruction forms.

struct Form {
  std::string name;
  ZydisMnemonic mnemonic;  // what the generated bytes must decode to
  // Share of the cases: 1 for simple data movement (setcc, cmov, lea,
  // extensions, xchg), 2 for most, 4 where counts, dividends or repeat
  // counts add dimensions (shifts by imm8/cl, shld/shrd, div/idiv, rep).
  unsigned weight = 1;
  std::function<bool(Rng&, Case&)> gen;
};

std::string mnemonic_name(ZydisMnemonic m) {
  std::string s = ZydisMnemonicGetString(m);
  return s;
}
std::string sz(const char* kind, unsigned bits) { return kind + std::to_string(bits); }

// Register or memory operand by shape letter: 'r' register, 'm' memory.
Opnd rm(Builder& b, char shape, unsigned bits, bool may_repeat = false) {
  return shape == 'm' ? b.mem(bits) : b.reg(bits, may_repeat);
}

// An immediate for a `bits` operand: in int8 range half the time (the short
// sign-extended encodings), else any value the encoding allows (imm32
// sign-extended for 64-bit operands).
uint64_t imm_for(Rng& r, unsigned bits) {
  if (r.chance(50)) return sx(val(r, 8), 8);
  return bits == 64 ? sx(val(r, 32), 32) : sx(val(r, bits), bits);
}

void add_alu(std::vector<Form>& out) {
  const ZydisMnemonic mns[] = {ZYDIS_MNEMONIC_ADD, ZYDIS_MNEMONIC_ADC, ZYDIS_MNEMONIC_SUB, ZYDIS_MNEMONIC_SBB,
                               ZYDIS_MNEMONIC_AND, ZYDIS_MNEMONIC_OR,  ZYDIS_MNEMONIC_XOR, ZYDIS_MNEMONIC_CMP,
                               ZYDIS_MNEMONIC_TEST};
  for (ZydisMnemonic m : mns)
    for (unsigned bits : {8u, 16u, 32u, 64u})
      for (const char* shape : {"rr", "rm", "mr", "ri", "mi"}) {
        if (m == ZYDIS_MNEMONIC_TEST && shape[0] == 'r' && shape[1] == 'm') continue;  // no test r, r/m
        const char d = shape[0], s = shape[1];
        std::string name = mnemonic_name(m) + " " + sz(d == 'r' ? "r" : "m", bits) + ", " +
                           (s == 'i' ? std::string("imm") : sz(s == 'r' ? "r" : "m", bits));
        out.push_back({name, m, 2, [=](Rng& r, Case& c) {
                         Builder b(r, c);
                         rm(b, d, bits);
                         if (s == 'i')
                           b.imm(imm_for(r, bits), bits);
                         else
                           rm(b, s, bits, true);
                         if (!b.encode(m)) return false;
                         c.flag_mask = compared_flags(m);
                         return true;
                       }});
      }
}

void add_unary(std::vector<Form>& out) {
  for (ZydisMnemonic m : {ZYDIS_MNEMONIC_INC, ZYDIS_MNEMONIC_DEC, ZYDIS_MNEMONIC_NEG, ZYDIS_MNEMONIC_NOT})
    for (unsigned bits : {8u, 16u, 32u, 64u})
      for (char shape : {'r', 'm'}) {
        out.push_back({mnemonic_name(m) + " " + sz(shape == 'r' ? "r" : "m", bits), m, 2, [=](Rng& r, Case& c) {
                         Builder b(r, c);
                         rm(b, shape, bits);
                         if (!b.encode(m)) return false;
                         c.flag_mask = compared_flags(m);
                         return true;
                       }});
      }
}

void add_shifts(std::vector<Form>& out) {
  const ZydisMnemonic mns[] = {ZYDIS_MNEMONIC_SHL, ZYDIS_MNEMONIC_SHR, ZYDIS_MNEMONIC_SAR, ZYDIS_MNEMONIC_ROL,
                               ZYDIS_MNEMONIC_ROR, ZYDIS_MNEMONIC_RCL, ZYDIS_MNEMONIC_RCR};
  for (ZydisMnemonic m : mns)
    for (unsigned bits : {8u, 16u, 32u, 64u})
      for (char shape : {'r', 'm'})
        for (int how : {1, 2, 3}) {  // by 1 (D0/D1), by imm8 (C0/C1), by CL (D2/D3)
          std::string name = mnemonic_name(m) + " " + sz(shape == 'r' ? "r" : "m", bits) + ", " +
                             (how == 1 ? "1" : how == 2 ? "imm8" : "cl");
          out.push_back({name, m, how == 1 ? 2u : 4u, [=](Rng& r, Case& c) {
                           Builder b(r, c, how == 3 ? bit(RCX) : 0);
                           const Opnd d = rm(b, shape, bits);
                           uint64_t count = 1;
                           if (how == 1) {
                             b.imm(1, 8);
                             if (!b.encode(m)) return false;
                           } else if (how == 2) {
                             // Encoded with count 2 and patched: Zydis would
                             // pick the D0/D1 form for a count of 1.
                             b.imm(2, 8);
                             if (!b.encode(m)) return false;
                             count = shift_count(r, bits);
                             c.code.back() = static_cast<uint8_t>(count);
                           } else {
                             const Opnd cl = b.fixed(RCX, 8);
                             if (!b.encode(m)) return false;
                             if (!(d.kind == Opnd::R && d.gpr == RCX && !d.high8)) b.set(cl, shift_count(r, bits));
                             count = c.in.gpr[RCX] & 0xff;
                           }
                           c.flag_mask = compared_flags(m, {bits, count & (bits == 64 ? 63 : 31)});
                           return true;
                         }});
        }
}

void add_double_shifts(std::vector<Form>& out) {
  for (ZydisMnemonic m : {ZYDIS_MNEMONIC_SHLD, ZYDIS_MNEMONIC_SHRD})
    for (unsigned bits : {16u, 32u, 64u})
      for (char shape : {'r', 'm'})
        for (bool by_cl : {false, true}) {
          std::string name = mnemonic_name(m) + " " + sz(shape == 'r' ? "r" : "m", bits) + ", " + sz("r", bits) +
                             ", " + (by_cl ? "cl" : "imm8");
          out.push_back({name, m, 4, [=](Rng& r, Case& c) {
                           Builder b(r, c, by_cl ? bit(RCX) : 0);
                           rm(b, shape, bits);
                           b.reg(bits, true);
                           uint64_t count = shift_count(r, bits);
                           // A 16-bit count above 16 leaves the result undefined: keep to 0..16 (masked).
                           if (bits == 16 && (count & 31) > 16) count -= 16;
                           if (by_cl) {
                             const Opnd cl = b.fixed(RCX, 8);
                             bool cl_is_operand = false;
                             for (size_t i = 0; i + 1 < b.ops().size(); ++i)
                               if (b.ops()[i].kind == Opnd::R && b.ops()[i].gpr == RCX) cl_is_operand = true;
                             if (!cl_is_operand) b.set(cl, count);
                             count = c.in.gpr[RCX] & 0xff;
                             if (bits == 16 && (count & 31) > 16) return false;
                           } else {
                             b.imm(count, 8);
                           }
                           if (!b.encode(m)) return false;
                           c.flag_mask = compared_flags(m, {bits, count & (bits == 64 ? 63 : 31)});
                           return true;
                         }});
        }
}

// Steers DIV/IDIV operands: divide by zero, quotient overflow, or a
// dividend built from a chosen quotient, divisor and remainder.
void steer_division(Builder& b, const Opnd& src, unsigned bits, bool is_signed) {
  Rng& r = b.rng();
  const Opnd lo = bits == 8 ? Opnd{Opnd::R, 8, RAX, false} : Opnd{Opnd::R, bits, RAX, false};
  const Opnd hi = bits == 8 ? Opnd{Opnd::R, 8, RAX, true} : Opnd{Opnd::R, bits, RDX, false};
  const bool alias = src.kind == Opnd::R && (src.gpr == RAX || (bits > 8 && src.gpr == RDX));
  const uint64_t m = mask(bits);
  const unsigned mode = static_cast<unsigned>(r.below(100));
  if (mode < 8) {  // #DE: divisor 0
    b.set(src, 0);
    return;
  }
  if (mode < 16 || alias) return;  // random halves: mostly a quotient overflow (#DE)
  if (mode < 24) {                 // at the overflow limit
    if (is_signed) {
      // -2^(bits-1) / -1 overflows (#DE); +2^(bits-1) / -1 just fits.
      b.set(src, m);
      b.set(lo, (m >> 1) + 1);
      b.set(hi, r.chance(50) ? m : 0);
    } else {
      uint64_t d = val(r, bits);
      if (d == 0) d = 1;
      b.set(src, d);
      b.set(hi, d == m || r.chance(50) ? d : d + 1);  // hi >= d: the quotient does not fit
      b.set(lo, val(r, bits));
    }
    return;
  }
  // No overflow: dividend = q*d + rem, |rem| < |d|, rem with the dividend's sign.
  if (is_signed) {
    __int128 d = static_cast<int64_t>(sx(val(r, bits), bits));
    if (d == 0) d = r.chance(50) ? 1 : -1;
    const __int128 q = static_cast<int64_t>(sx(val(r, bits), bits));
    const __int128 prod = q * d;
    const unsigned __int128 dabs = d < 0 ? -static_cast<unsigned __int128>(d) : static_cast<unsigned __int128>(d);
    __int128 rem = static_cast<__int128>(static_cast<unsigned __int128>(r.u()) % dabs);
    if (prod < 0 || (prod == 0 && r.chance(50))) rem = -rem;
    const unsigned __int128 dividend = static_cast<unsigned __int128>(prod + rem);
    b.set(src, static_cast<uint64_t>(d));
    b.set(lo, static_cast<uint64_t>(dividend) & m);
    b.set(hi, static_cast<uint64_t>(dividend >> bits) & m);
  } else {
    uint64_t d = val(r, bits);
    if (d == 0) d = 1 + r.below(m);
    const uint64_t q = val(r, bits);
    const unsigned __int128 dividend = static_cast<unsigned __int128>(q) * d + r.u() % d;
    b.set(src, d);
    b.set(lo, static_cast<uint64_t>(dividend) & m);
    b.set(hi, static_cast<uint64_t>(dividend >> bits) & m);
  }
}

void add_muldiv(std::vector<Form>& out) {
  for (ZydisMnemonic m : {ZYDIS_MNEMONIC_MUL, ZYDIS_MNEMONIC_IMUL, ZYDIS_MNEMONIC_DIV, ZYDIS_MNEMONIC_IDIV})
    for (unsigned bits : {8u, 16u, 32u, 64u})
      for (char shape : {'r', 'm'}) {
        const bool div = m == ZYDIS_MNEMONIC_DIV || m == ZYDIS_MNEMONIC_IDIV;
        out.push_back({mnemonic_name(m) + " " + sz(shape == 'r' ? "r" : "m", bits), m, div ? 4u : 2u,
                       [=](Rng& r, Case& c) {
                         Builder b(r, c, bit(RAX) | bit(RDX));
                         const Opnd src = rm(b, shape, bits);
                         if (!b.encode(m)) return false;
                         if (div)
                           steer_division(b, src, bits, m == ZYDIS_MNEMONIC_IDIV);
                         else if (!(src.kind == Opnd::R && src.gpr == RAX))
                           b.set(Opnd{Opnd::R, bits, RAX, false}, val(r, bits));
                         c.flag_mask = compared_flags(m);
                         return true;
                       }});
      }
  // imul r, r/m and imul r, r/m, imm (imm8 sign-extended, or imm16/imm32).
  for (unsigned bits : {16u, 32u, 64u})
    for (char shape : {'r', 'm'})
      for (int ops : {2, 3, 4}) {
        std::string name = "imul " + sz("r", bits) + ", " + sz(shape == 'r' ? "r" : "m", bits) +
                           (ops == 3 ? ", imm8" : ops == 4 ? ", imm" : "");
        out.push_back({name, ZYDIS_MNEMONIC_IMUL, 2, [=](Rng& r, Case& c) {
                         Builder b(r, c);
                         b.reg(bits);
                         rm(b, shape, bits, true);
                         if (ops == 3) b.imm(sx(val(r, 8), 8), 8);
                         if (ops == 4) {
                           uint64_t v = bits == 16 ? sx(val(r, 16), 16) : sx(val(r, 32), 32);
                           if (static_cast<int64_t>(v) >= -128 && static_cast<int64_t>(v) <= 127) v += 0x1000;
                           b.imm(bits == 16 ? sx(v, 16) : sx(v, 32), bits == 16 ? 16 : 32);
                         }
                         if (!b.encode(ZYDIS_MNEMONIC_IMUL)) return false;
                         c.flag_mask = compared_flags(ZYDIS_MNEMONIC_IMUL);
                         return true;
                       }});
      }
}

void add_bits(std::vector<Form>& out) {
  for (ZydisMnemonic m : {ZYDIS_MNEMONIC_BT, ZYDIS_MNEMONIC_BTS, ZYDIS_MNEMONIC_BTR, ZYDIS_MNEMONIC_BTC})
    for (unsigned bits : {16u, 32u, 64u})
      for (const char* shape : {"rr", "ri", "mr", "mi"}) {
        const char d = shape[0], s = shape[1];
        std::string name = mnemonic_name(m) + " " + sz(d == 'r' ? "r" : "m", bits) + ", " +
                           (s == 'i' ? std::string("imm8") : sz("r", bits));
        out.push_back({name, m, 2, [=](Rng& r, Case& c) {
                         Builder b(r, c);
                         // Memory with a register offset can reach +-875 bytes around the operand.
                         const Opnd dst = d == 'm' ? (s == 'r' ? b.mem(bits, 1024, 3072) : b.mem(bits)) : b.reg(bits);
                         if (s == 'i') {
                           b.imm(r.chance(50) ? r.below(256) : r.pick<uint64_t>({0, bits - 1, bits, bits + 1, 255}), 8);
                         } else {
                           const Opnd off = b.reg(bits, d == 'r');
                           if (d == 'm' && !(off.kind == Opnd::R && off.gpr == dst.gpr))
                             b.set(off, r.chance(30) ? r.below(2 * bits) - bits : r.below(14001) - 7000);
                         }
                         if (!b.encode(m)) return false;
                         c.flag_mask = compared_flags(m);
                         return true;
                       }});
      }
  for (ZydisMnemonic m : {ZYDIS_MNEMONIC_BSF, ZYDIS_MNEMONIC_BSR})
    for (unsigned bits : {16u, 32u, 64u})
      for (char shape : {'r', 'm'}) {
        out.push_back({mnemonic_name(m) + " " + sz("r", bits) + ", " + sz(shape == 'r' ? "r" : "m", bits), m, 2,
                       [=](Rng& r, Case& c) {
                         Builder b(r, c);
                         const Opnd dst = b.reg(bits);
                         const Opnd src = rm(b, shape, bits, true);
                         if (r.chance(20))
                           b.set(src, 0);
                         else if (r.chance(30))
                           b.set(src, 1ull << r.below(bits));
                         if (!b.encode(m)) return false;
                         c.flag_mask = compared_flags(m);
                         if (b.get(src) == 0) c.undef_regs |= bit(dst.gpr);  // SDM: destination undefined
                         return true;
                       }});
      }
  // BSWAP: 32 and 64 bits (a 16-bit operand gives an undefined result).
  for (unsigned bits : {32u, 64u})
    out.push_back({"bswap " + sz("r", bits), ZYDIS_MNEMONIC_BSWAP, 1, [=](Rng& r, Case& c) {
                     Builder b(r, c);
                     b.reg(bits);
                     return b.encode(ZYDIS_MNEMONIC_BSWAP);
                   }});
}

void add_exchange(std::vector<Form>& out) {
  for (ZydisMnemonic m : {ZYDIS_MNEMONIC_XCHG, ZYDIS_MNEMONIC_CMPXCHG, ZYDIS_MNEMONIC_XADD})
    for (unsigned bits : {8u, 16u, 32u, 64u})
      for (char shape : {'r', 'm'}) {
        const bool cx = m == ZYDIS_MNEMONIC_CMPXCHG;
        out.push_back({mnemonic_name(m) + " " + sz(shape == 'r' ? "r" : "m", bits) + ", " + sz("r", bits), m,
                       m == ZYDIS_MNEMONIC_XCHG ? 1u : 2u, [=](Rng& r, Case& c) {
                         Builder b(r, c, cx ? bit(RAX) : 0);
                         const Opnd dst = rm(b, shape, bits);
                         const Opnd src = b.reg(bits, true);
                         if (!b.encode(m)) return false;
                         // cmpxchg: the accumulator equals the destination half of the time.
                         if (cx && r.chance(50)) b.set(Opnd{Opnd::R, bits, RAX, false}, b.get(dst));
                         (void)src;
                         c.flag_mask = compared_flags(m);
                         return true;
                       }});
      }
}

void add_moves(std::vector<Form>& out) {
  struct Ext {
    ZydisMnemonic m;
    unsigned dbits, sbits;
  };
  const Ext exts[] = {{ZYDIS_MNEMONIC_MOVZX, 16, 8},  {ZYDIS_MNEMONIC_MOVZX, 32, 8},  {ZYDIS_MNEMONIC_MOVZX, 64, 8},
                      {ZYDIS_MNEMONIC_MOVZX, 32, 16}, {ZYDIS_MNEMONIC_MOVZX, 64, 16}, {ZYDIS_MNEMONIC_MOVSX, 16, 8},
                      {ZYDIS_MNEMONIC_MOVSX, 32, 8},  {ZYDIS_MNEMONIC_MOVSX, 64, 8},  {ZYDIS_MNEMONIC_MOVSX, 32, 16},
                      {ZYDIS_MNEMONIC_MOVSX, 64, 16}, {ZYDIS_MNEMONIC_MOVSXD, 64, 32}};
  for (const Ext& e : exts)
    for (char shape : {'r', 'm'}) {
      out.push_back({mnemonic_name(e.m) + " " + sz("r", e.dbits) + ", " + sz(shape == 'r' ? "r" : "m", e.sbits), e.m, 1,
                     [=](Rng& r, Case& c) {
                       Builder b(r, c);
                       b.reg(e.dbits);
                       rm(b, shape, e.sbits, true);
                       if (!b.encode(e.m)) return false;
                       c.flag_mask = compared_flags(e.m);
                       return true;
                     }});
    }
  // Sign extensions of the accumulator (fixed encodings).
  struct Conv {
    ZydisMnemonic m;
    std::vector<uint8_t> bytes;
    unsigned bits;
  };
  const Conv convs[] = {{ZYDIS_MNEMONIC_CBW, {0x66, 0x98}, 8},  {ZYDIS_MNEMONIC_CWDE, {0x98}, 16},
                        {ZYDIS_MNEMONIC_CDQE, {0x48, 0x98}, 32}, {ZYDIS_MNEMONIC_CWD, {0x66, 0x99}, 16},
                        {ZYDIS_MNEMONIC_CDQ, {0x99}, 32},        {ZYDIS_MNEMONIC_CQO, {0x48, 0x99}, 64}};
  for (const Conv& cv : convs)
    out.push_back({mnemonic_name(cv.m), cv.m, 1, [=](Rng& r, Case& c) {
                     Builder b(r, c);
                     b.set(Opnd{Opnd::R, cv.bits, RAX, false}, val(r, cv.bits));
                     c.code = cv.bytes;
                     return true;
                   }});
}

void add_conditionals(std::vector<Form>& out) {
  const ZydisMnemonic sets[] = {
      ZYDIS_MNEMONIC_SETO, ZYDIS_MNEMONIC_SETNO, ZYDIS_MNEMONIC_SETB,  ZYDIS_MNEMONIC_SETNB,
      ZYDIS_MNEMONIC_SETZ, ZYDIS_MNEMONIC_SETNZ, ZYDIS_MNEMONIC_SETBE, ZYDIS_MNEMONIC_SETNBE,
      ZYDIS_MNEMONIC_SETS, ZYDIS_MNEMONIC_SETNS, ZYDIS_MNEMONIC_SETP,  ZYDIS_MNEMONIC_SETNP,
      ZYDIS_MNEMONIC_SETL, ZYDIS_MNEMONIC_SETNL, ZYDIS_MNEMONIC_SETLE, ZYDIS_MNEMONIC_SETNLE};
  const ZydisMnemonic cmovs[] = {
      ZYDIS_MNEMONIC_CMOVO, ZYDIS_MNEMONIC_CMOVNO, ZYDIS_MNEMONIC_CMOVB, ZYDIS_MNEMONIC_CMOVNB,
      ZYDIS_MNEMONIC_CMOVZ, ZYDIS_MNEMONIC_CMOVNZ, ZYDIS_MNEMONIC_CMOVBE, ZYDIS_MNEMONIC_CMOVNBE,
      ZYDIS_MNEMONIC_CMOVS, ZYDIS_MNEMONIC_CMOVNS, ZYDIS_MNEMONIC_CMOVP, ZYDIS_MNEMONIC_CMOVNP,
      ZYDIS_MNEMONIC_CMOVL, ZYDIS_MNEMONIC_CMOVNL, ZYDIS_MNEMONIC_CMOVLE, ZYDIS_MNEMONIC_CMOVNLE};
  for (ZydisMnemonic m : sets)
    for (char shape : {'r', 'm'})
      out.push_back({mnemonic_name(m) + " " + (shape == 'r' ? "r8" : "m8"), m, 1, [=](Rng& r, Case& c) {
                       Builder b(r, c);
                       rm(b, shape, 8);
                       return b.encode(m);
                     }});
  // A 32-bit cmov writes (zero-extends) its destination even when the
  // condition is false; the 32-bit forms check that.
  for (ZydisMnemonic m : cmovs)
    for (unsigned bits : {16u, 32u, 64u})
      for (char shape : {'r', 'm'})
        out.push_back({mnemonic_name(m) + " " + sz("r", bits) + ", " + sz(shape == 'r' ? "r" : "m", bits), m, 1,
                       [=](Rng& r, Case& c) {
                         Builder b(r, c);
                         b.reg(bits);
                         rm(b, shape, bits, true);
                         return b.encode(m);
                       }});
}

void add_lea(std::vector<Form>& out) {
  const char* const forms[] = {"[b+disp]", "[b+i*s+disp]", "[i*s+disp32]", "[b32+i32*s+disp] (addr32)"};
  for (unsigned bits : {16u, 32u, 64u})
    for (int f = 0; f < 4; ++f)
      out.push_back({"lea " + sz("r", bits) + ", " + forms[f], ZYDIS_MNEMONIC_LEA, 1, [=](Rng& r, Case& c) {
                       Builder b(r, c);
                       b.reg(bits);
                       b.lea_addr(f);
                       return b.encode(ZYDIS_MNEMONIC_LEA);
                     }});
}

// String instructions, encoded by hand: [F3|F2] [66] [REX.W] opcode.
void add_strings(std::vector<Form>& out) {
  struct Str {
    const char* name;
    uint8_t opcode;  // the byte form; +1 for word/dword/qword
    bool compares;
    ZydisMnemonic mn[4];  // b w d q
  };
  const Str strs[] = {
      {"movs", 0xa4, false, {ZYDIS_MNEMONIC_MOVSB, ZYDIS_MNEMONIC_MOVSW, ZYDIS_MNEMONIC_MOVSD, ZYDIS_MNEMONIC_MOVSQ}},
      {"cmps", 0xa6, true, {ZYDIS_MNEMONIC_CMPSB, ZYDIS_MNEMONIC_CMPSW, ZYDIS_MNEMONIC_CMPSD, ZYDIS_MNEMONIC_CMPSQ}},
      {"stos", 0xaa, false, {ZYDIS_MNEMONIC_STOSB, ZYDIS_MNEMONIC_STOSW, ZYDIS_MNEMONIC_STOSD, ZYDIS_MNEMONIC_STOSQ}},
      {"lods", 0xac, false, {ZYDIS_MNEMONIC_LODSB, ZYDIS_MNEMONIC_LODSW, ZYDIS_MNEMONIC_LODSD, ZYDIS_MNEMONIC_LODSQ}},
      {"scas", 0xae, true, {ZYDIS_MNEMONIC_SCASB, ZYDIS_MNEMONIC_SCASW, ZYDIS_MNEMONIC_SCASD, ZYDIS_MNEMONIC_SCASQ}},
  };
  constexpr uint64_t kMaxCount = 48;
  for (const Str& s : strs)
    for (int w = 0; w < 4; ++w)
      for (int rep : {0, 0xf3, 0xf2}) {
        if (rep == 0xf2 && !s.compares) continue;
        const unsigned esz = 1u << w;
        std::string name = std::string(rep == 0xf3 ? (s.compares ? "repe " : "rep ") : rep == 0xf2 ? "repne " : "") +
                           s.name + "bwdq"[w];
        out.push_back({name, s.mn[w], rep ? 4u : 2u, [=](Rng& r, Case& c) {
                         Builder b(r, c);
                         c.code.clear();
                         if (rep) c.code.push_back(static_cast<uint8_t>(rep));
                         if (esz == 2) c.code.push_back(0x66);
                         if (esz == 8) c.code.push_back(0x48);
                         c.code.push_back(static_cast<uint8_t>(s.opcode + (esz > 1)));
                         uint64_t n = 0;  // rcx for rep: 0..3 often, else up to kMaxCount
                         if (rep) n = r.chance(30) ? r.below(4) : r.below(kMaxCount + 1);
                         const size_t span = (kMaxCount + 2) * 8;
                         const size_t src = r.below(kDataBytes - span);
                         size_t dst = r.below(kDataBytes - span);
                         if (r.chance(20)) {  // overlapping source and destination
                           const int64_t d = static_cast<int64_t>(src) + static_cast<int64_t>(r.below(65)) - 32;
                           dst = static_cast<size_t>(std::clamp<int64_t>(d, 0, kDataBytes - span));
                         }
                         c.in.gpr[RSI] = kX86DataAddr + src;
                         c.in.gpr[RDI] = kX86DataAddr + dst;
                         c.ptr_regs = bit(RSI) | bit(RDI);
                         if (rep) c.in.gpr[RCX] = n;
                         const uint64_t m = mask(8 * esz);
                         auto elem = [&](size_t at, uint64_t i) {
                           uint64_t v = 0;
                           std::memcpy(&v, &c.data[at + i * esz], esz);
                           return v;
                         };
                         auto put = [&](size_t at, uint64_t i, uint64_t v) {
                           std::memcpy(&c.data[at + i * esz], &v, esz);
                         };
                         // Steer compares so that repe/repne stop at an interesting element.
                         const uint64_t len = std::max<uint64_t>(n, 1);
                         const uint64_t k = r.below(len + 1);
                         const bool steer = r.chance(75);
                         if (s.compares && steer) {
                           const bool scas = s.opcode == 0xae;
                           const uint64_t acc = c.in.gpr[RAX] & m;
                           for (uint64_t i = 0; i < len + 1; ++i) {
                             const uint64_t other = scas ? acc : elem(src, i);
                             if (rep == 0xf2) {  // all different but element k
                               if (i == k) put(dst, i, other);
                               else if (elem(dst, i) == other) put(dst, i, other ^ (1ull << r.below(8 * esz)));
                             } else {  // all equal but element k
                               if (i != k) put(dst, i, other);
                               else if (r.chance(50)) put(dst, i, (other + 1 + r.below(m)) & m);
                             }
                           }
                         }
                         c.flag_mask = compared_flags(s.mn[w]);
                         return true;
                       }});
      }
}

std::vector<Form> all_forms() {
  std::vector<Form> f;
  add_alu(f);
  add_unary(f);
  add_shifts(f);
  add_double_shifts(f);
  add_muldiv(f);
  add_bits(f);
  add_exchange(f);
  add_moves(f);
  add_conditionals(f);
  add_lea(f);
  add_strings(f);
  return f;
}

// ---------------------------------------------------------------------------
// Decoding, comparing, reporting.

struct Zy {
  ZydisDecoder dec;
  ZydisFormatter fmt;
  Zy() {
    ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
    ZydisFormatterInit(&fmt, ZYDIS_FORMATTER_STYLE_INTEL);
  }
  // Decodes `code`; false unless it is exactly one instruction.
  bool decode(const std::vector<uint8_t>& code, ZydisDecodedInstruction& insn,
              ZydisDecodedOperand* ops = nullptr) const {
    ZydisDecodedOperand local[ZYDIS_MAX_OPERAND_COUNT];
    if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, code.data(), code.size(), &insn, ops ? ops : local))) return false;
    return insn.length == code.size();
  }
  std::string text(const std::vector<uint8_t>& code) const {
    ZydisDecodedInstruction insn;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    if (!decode(code, insn, ops)) return "(undecodable)";
    char buf[256];
    if (!ZYAN_SUCCESS(ZydisFormatterFormatInstruction(&fmt, &insn, ops, insn.operand_count_visible, buf, sizeof buf,
                                                      kX86CodeAddr, nullptr)))
      return "(unformattable)";
    return buf;
  }
};

std::string bytes_hex(const std::vector<uint8_t>& v) {
  std::string s;
  char b[4];
  for (uint8_t x : v) {
    std::snprintf(b, sizeof b, "%02x ", x);
    s += b;
  }
  if (!s.empty()) s.pop_back();
  return s;
}
std::string flag_names(uint64_t f) {
  std::string s;
  const struct {
    uint64_t bit;
    const char* name;
  } names[] = {{kCF, "CF"}, {kPF, "PF"}, {kAF, "AF"}, {kZF, "ZF"}, {kSF, "SF"}, {kDF, "DF"}, {kOF, "OF"}};
  for (auto& n : names)
    if (f & n.bit) s += std::string(s.empty() ? "" : " ") + n.name;
  return s.empty() ? "-" : s;
}
std::string outcome(const X86Result& r) {
  return r.ok ? "ran to the end" : ("vector " + (r.vector == ~0ull ? std::string("none") : std::to_string(r.vector)) +
                                    " (" + r.error + ")");
}

// Differences between the native and the simulated result ("" if none).
std::string compare(const Case& c, const X86Result& n, const std::vector<uint8_t>& nd, const X86Result& s,
                    const std::vector<uint8_t>& sd) {
  std::string d;
  if (n.ok != s.ok || (!n.ok && n.vector != s.vector)) {
    d += "  outcome: native " + outcome(n) + ", simulator " + outcome(s) + "\n";
    if (n.ok || s.ok) return d;  // one side has no final state to compare
  }
  for (int i = 0; i < 16; ++i) {
    if (c.undef_regs & bit(i)) continue;
    if (n.state.gpr[i] != s.state.gpr[i])
      d += std::string("  ") + kGprNames[i] + ": native " + hex(n.state.gpr[i]) + ", simulator " +
           hex(s.state.gpr[i]) + "\n";
  }
  const uint64_t fd = (n.state.rflags ^ s.state.rflags) & c.flag_mask;
  if (fd)
    d += "  flags " + flag_names(fd) + ": native [" + flag_names(n.state.rflags & c.flag_mask) + "], simulator [" +
         flag_names(s.state.rflags & c.flag_mask) + "] (compared: " + flag_names(c.flag_mask) + ")\n";
  if (nd != sd) {
    int shown = 0;
    for (size_t i = 0; i < nd.size() && i < sd.size(); ++i)
      if (nd[i] != sd[i] && shown++ < 8) {
        char b[96];
        std::snprintf(b, sizeof b, "  memory +0x%zx (%s): was %02x, native %02x, simulator %02x\n", i,
                      hex(kX86DataAddr + i).c_str(), c.data[i], nd[i], sd[i]);
        d += b;
      }
    if (nd.size() != sd.size()) d += "  memory: simulator returned " + std::to_string(sd.size()) + " bytes\n";
  }
  return d;
}

std::string state_text(const X86State& st, const X86State* base = nullptr) {
  std::string s;
  int col = 0;
  for (int i = 0; i < 16; ++i) {
    if (base && base->gpr[i] == st.gpr[i]) continue;
    char b[48];
    std::snprintf(b, sizeof b, "%s=%016" PRIx64 "%s", kGprNames[i], st.gpr[i], ++col % 4 == 0 ? "\n    " : "  ");
    s += b;
  }
  if (base && col == 0) s += "(gprs unchanged)  ";
  return s + "rflags=" + hex(st.rflags) + " [" + flag_names(st.rflags & kCompared) + "]";
}

uint64_t env_u64(const char* name, uint64_t def, bool* set = nullptr) {
  const char* v = std::getenv(name);
  if (set) *set = v != nullptr && *v;
  if (v == nullptr || !*v) return def;
  return std::strtoull(v, nullptr, 0);
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAsan = true;
#else
constexpr bool kAsan = false;
#endif
#else
constexpr bool kAsan = false;
#endif

}  // namespace

TEST_CASE("x86 differential test against the host CPU", "[x86][diff]") {
  bool seed_set = false, count_set = false, case_set = false;
  const uint64_t seed = env_u64("KSIM_DIFF_SEED", kDefaultSeed, &seed_set);
  const uint64_t target = env_u64("KSIM_DIFF_CASES", kDefaultCases, &count_set);
  const uint64_t only_case = env_u64("KSIM_DIFF_CASE", 0, &case_set);
  const char* filter_env = std::getenv("KSIM_DIFF_FORM");
  const std::string filter = filter_env ? filter_env : "";
  const bool force_reloc = env_u64("KSIM_DIFF_RELOCATE", 0) != 0;

  // Under AddressSanitizer, kX86DataAddr may be inside ASan's shadow
  // memory: the native buffer then goes elsewhere and pointer registers
  // are translated. Otherwise the buffer must be at kX86DataAddr.
  X86Native native(force_reloc ? X86Native::Placement::anywhere
                   : kAsan     ? X86Native::Placement::anywhere_if_taken
                               : X86Native::Placement::fixed);
  if (!native.ok()) FAIL("native executor: " << native.error());
  if (native.relocated())
    std::printf("x86 differential: native data buffer at %s instead of %s (%s); pointer registers translated\n",
                hex(native.data_base()).c_str(), hex(kX86DataAddr).c_str(),
                force_reloc ? "KSIM_DIFF_RELOCATE" : native.map_error().c_str());

  const std::vector<Form> forms = all_forms();
  uint64_t weight_sum = 0;
  for (const Form& f : forms) weight_sum += f.weight;
  const Zy zy;

  uint64_t cases = 0, mismatches = 0;
  size_t forms_run = 0;
  std::set<std::string> mnemonics;
  std::vector<std::string> examples;
  std::vector<std::string> bad_forms;
  double native_s = 0, sim_s = 0;
  using Clock = std::chrono::steady_clock;

  for (size_t fi = 0; fi < forms.size(); ++fi) {
    const Form& form = forms[fi];
    if (!filter.empty() && form.name.find(filter) == std::string::npos) continue;
    const uint64_t n = std::max<uint64_t>(1, (target * form.weight + weight_sum - 1) / weight_sum);
    uint64_t form_mismatches = 0, form_cases = 0;
    ++forms_run;
    for (uint64_t ci = 0; ci < n; ++ci) {
      if (case_set && ci != only_case) continue;
      Rng r(splitmix64(seed ^ splitmix64((static_cast<uint64_t>(fi) << 32) | ci)));
      Case c;
      int tries = 0;
      while (!form.gen(r, c))
        if (++tries == 1000) FAIL("form " << form.name << ": the generator cannot encode a case");
      ZydisDecodedInstruction insn;
      const bool decoded = zy.decode(c.code, insn);
      // (xchg rax, rax and xchg ax, ax encode as 48 90 / 66 90: nop.)
      if (!decoded || !(insn.mnemonic == form.mnemonic || (form.mnemonic == ZYDIS_MNEMONIC_XCHG &&
                                                           insn.mnemonic == ZYDIS_MNEMONIC_NOP)))
        FAIL("form " << form.name << " case " << ci << ": generated bytes " << bytes_hex(c.code)
                     << " are not one instruction of mnemonic " << mnemonic_name(form.mnemonic));
      mnemonics.insert(mnemonic_name(form.mnemonic));

      std::vector<uint8_t> nd = c.data, sd = c.data;
      const auto t0 = Clock::now();
      const X86Result nr = native.run(c.code, c.in, nd, c.ptr_regs);
      const auto t1 = Clock::now();
      const X86Result sr = x86_exec(c.code, c.in, sd);
      const auto t2 = Clock::now();
      native_s += std::chrono::duration<double>(t1 - t0).count();
      sim_s += std::chrono::duration<double>(t2 - t1).count();
      ++cases;
      ++form_cases;

      const std::string diff = compare(c, nr, nd, sr, sd);
      if (diff.empty()) continue;
      ++mismatches;
      if (form_mismatches++ < 2 && examples.size() < kMaxExamples) {
        std::string e = "mismatch: form \"" + form.name + "\" case " + std::to_string(ci) + ", seed " + hex(seed) +
                        "\n  rerun: KSIM_DIFF_SEED=" + hex(seed) + " KSIM_DIFF_FORM='" + form.name +
                        "' KSIM_DIFF_CASE=" + std::to_string(ci) + " ksim_tests '[x86][diff]'\n" +
                        "  insn: " + zy.text(c.code) + "   (" + bytes_hex(c.code) + ")\n" +
                        "  in:        " + state_text(c.in) + "\n" +
                        "  native:    " + (nr.ok ? state_text(nr.state, &c.in) : outcome(nr)) + "\n" +
                        "  simulator: " + (sr.ok ? state_text(sr.state, &c.in) : outcome(sr)) + "\n" + diff;
        std::printf("%s", e.c_str());
        examples.push_back(std::move(e));
      }
    }
    if (form_mismatches)
      bad_forms.push_back(form.name + " (" + std::to_string(form_mismatches) + "/" + std::to_string(form_cases) + ")");
  }

  if (!bad_forms.empty()) {
    std::string s = "x86 differential: forms with mismatches:";
    for (const auto& b : bad_forms) s += "\n  " + b;
    std::printf("%s\n", s.c_str());
  }
  std::printf("x86 differential: %" PRIu64 " cases, %zu instruction forms, %zu mnemonics, %" PRIu64
              " mismatches (seed %s)\n",
              cases, forms_run, mnemonics.size(), mismatches, hex(seed).c_str());
  std::printf("x86 differential: native %.2f s, simulator %.2f s\n", native_s, sim_s);
  std::fflush(stdout);

  std::string first;
  for (size_t i = 0; i < examples.size() && i < 3; ++i) first += examples[i];
  INFO("seed " << hex(seed) << "; first mismatches:\n" << first);
  CHECK(mismatches == 0);
  if (filter.empty() && !case_set && !count_set) CHECK(cases >= kRequiredCases);
  (void)seed_set;
}

// The native side itself, on answers known in advance (no simulator).
TEST_CASE("x86 native executor: known answers", "[x86][diff]") {
  X86Native native(kAsan ? X86Native::Placement::anywhere_if_taken : X86Native::Placement::fixed);
  if (!native.ok()) FAIL("native executor: " << native.error());
  std::vector<uint8_t> data(64, 0);
  X86State in;
  for (int i = 0; i < 16; ++i) in.gpr[i] = 0x1111111111111111ull * static_cast<uint64_t>(i);
  in.gpr[RSP] = kX86DataAddr + kX86DataSize;

  // nop: every register and every input flag passes through unchanged.
  in.rflags = 0x2 | kArith;
  X86Result r = native.run({0x90}, in, data);
  REQUIRE(r.ok);
  for (int i = 0; i < 16; ++i) CHECK(r.state.gpr[i] == in.gpr[i]);
  CHECK((r.state.rflags & kCompared) == kArith);

  // add rax, rcx: 1 + 2 = 3 (PF: two bits set), the other flags clear.
  X86State a = in;
  a.gpr[RAX] = 1;
  a.gpr[RCX] = 2;
  r = native.run({0x48, 0x01, 0xc8}, a, data);
  REQUIRE(r.ok);
  CHECK(r.state.gpr[RAX] == 3);
  CHECK((r.state.rflags & kCompared) == kPF);

  // add eax, ecx: 0xffffffff + 1 = 0, zero-extended; CF PF AF ZF.
  a.gpr[RAX] = 0xdeadbeefffffffffull;
  a.gpr[RCX] = 1;
  a.rflags = 0x2;
  r = native.run({0x01, 0xc8}, a, data);
  REQUIRE(r.ok);
  CHECK(r.state.gpr[RAX] == 0);
  CHECK((r.state.rflags & kCompared) == (kCF | kPF | kAF | kZF));

  // push rax; pop rdx: RSP comes back where it was.
  r = native.run({0x50, 0x5a}, in, data);
  REQUIRE(r.ok);
  CHECK(r.state.gpr[RDX] == in.gpr[RAX]);
  CHECK(r.state.gpr[RSP] == in.gpr[RSP]);

  // mov [rbx+8], rax: memory goes through the data buffer.
  a = in;
  a.gpr[RBX] = kX86DataAddr;
  a.gpr[RAX] = 0x0123456789abcdefull;
  r = native.run({0x48, 0x89, 0x43, 0x08}, a, data, bit(RBX));
  REQUIRE(r.ok);
  uint64_t stored = 0;
  std::memcpy(&stored, &data[8], 8);
  CHECK(stored == a.gpr[RAX]);

  // div rcx by zero: #DE (vector 0), registers as before the instruction.
  a = in;
  a.gpr[RCX] = 0;
  r = native.run({0x48, 0xf7, 0xf1}, a, data);
  CHECK_FALSE(r.ok);
  CHECK(r.vector == 0);
  for (int i = 0; i < 16; ++i) CHECK(r.state.gpr[i] == a.gpr[i]);

  // ud2: #UD (vector 6); int3: #BP (vector 3); and the executor still works.
  r = native.run({0x0f, 0x0b}, in, data);
  CHECK_FALSE(r.ok);
  CHECK(r.vector == 6);
  r = native.run({0xcc}, in, data);
  CHECK_FALSE(r.ok);
  CHECK(r.vector == 3);
  r = native.run({0x90}, in, data);
  CHECK(r.ok);
}
