// Semantics of the supported x86-64 subset (Intel SDM vol. 2). Where the
// SDM leaves a flag undefined, ksim's choice is noted (docs/X86.md lists
// them all).
#include <Zydis/Zydis.h>

#include "cpu/timing.hpp"
#include "cpu/x86/flags.hpp"
#include "cpu/x86/semantics.hpp"
#include "cpu/x86/x86_cpu.hpp"

namespace ksim::x86 {

namespace {

using flags::mask;
using flags::sign_bit;

inline unsigned bits_of(const Operand& o) { return o.size * 8u; }
using flags::sext;
inline void set_flags(X86Cpu& c, uint64_t which, uint64_t values) {
  c.s.rflags = (c.s.rflags & ~which) | (values & which);
}
inline bool cf(const X86Cpu& c) { return c.s.rflags & kCF; }

// The double-width results of MUL/IMUL/DIV/IDIV: AH:AL for byte operands
// (AX), otherwise rDX:rAX at the operand size.
void write_pair(X86Cpu& c, unsigned bits, uint64_t hi, uint64_t lo) {
  if (bits == 8) {
    c.s.gpr[0] = (c.s.gpr[0] & ~0xffffull) | ((hi & 0xff) << 8) | (lo & 0xff);
    return;
  }
  Operand rax{OpKind::reg, static_cast<uint8_t>(bits / 8), 0, false, 0, 0, 0, 0, 0};
  Operand rdx = rax;
  rdx.reg = 2;
  c.reg_write(rax, lo);
  c.reg_write(rdx, hi);
}

// The 16 conditions (cpu/x86/flags.hpp).
bool condition(const X86Cpu& c, uint8_t cc) { return flags::condition(cc, c.s.rflags); }

// Binary ALU operations on op[0] op= op[1].
enum class Alu { add, adc, sub, sbb, and_, or_, xor_, cmp, test };
void alu(X86Cpu& c, const Insn& i, Alu kind) {
  const Operand& d = i.op[0];
  const unsigned bits = bits_of(d);
  uint64_t a, b;
  if (!c.read(i, d, a) || !c.read(i, i.op[1], b)) return;
  b &= mask(bits);
  uint64_t r = 0, f = 0;
  const uint64_t cin = (kind == Alu::adc || kind == Alu::sbb) && cf(c) ? 1 : 0;
  switch (kind) {
    case Alu::add: case Alu::adc: r = a + b + cin; f = flags::add(a, b, cin, r, bits); break;
    case Alu::sub: case Alu::sbb: case Alu::cmp: r = a - b - cin; f = flags::sub(a, b, cin, r, bits); break;
    case Alu::and_: case Alu::test: r = a & b; f = flags::logic(r, bits); break;
    case Alu::or_: r = a | b; f = flags::logic(r, bits); break;
    case Alu::xor_: r = a ^ b; f = flags::logic(r, bits); break;
  }
  if (kind != Alu::cmp && kind != Alu::test && !c.write(i, d, r & mask(bits))) return;
  set_flags(c, kArith, f);
  c.retire(i);
}

}  // namespace

void exec_add(X86Cpu& c, const Insn& i) { alu(c, i, Alu::add); }
void exec_adc(X86Cpu& c, const Insn& i) { alu(c, i, Alu::adc); }
void exec_sub(X86Cpu& c, const Insn& i) { alu(c, i, Alu::sub); }
void exec_sbb(X86Cpu& c, const Insn& i) { alu(c, i, Alu::sbb); }
void exec_and(X86Cpu& c, const Insn& i) { alu(c, i, Alu::and_); }
void exec_or(X86Cpu& c, const Insn& i) { alu(c, i, Alu::or_); }
void exec_xor(X86Cpu& c, const Insn& i) { alu(c, i, Alu::xor_); }
void exec_cmp(X86Cpu& c, const Insn& i) { alu(c, i, Alu::cmp); }
void exec_test(X86Cpu& c, const Insn& i) { alu(c, i, Alu::test); }

// INC/DEC leave CF alone.
void exec_inc(X86Cpu& c, const Insn& i) {
  uint64_t a;
  const unsigned bits = bits_of(i.op[0]);
  if (!c.read(i, i.op[0], a)) return;
  uint64_t r = a + 1;
  if (!c.write(i, i.op[0], r & mask(bits))) return;
  set_flags(c, kArith & ~kCF, flags::add(a, 1, 0, r, bits));
  c.retire(i);
}
void exec_dec(X86Cpu& c, const Insn& i) {
  uint64_t a;
  const unsigned bits = bits_of(i.op[0]);
  if (!c.read(i, i.op[0], a)) return;
  uint64_t r = a - 1;
  if (!c.write(i, i.op[0], r & mask(bits))) return;
  set_flags(c, kArith & ~kCF, flags::sub(a, 1, 0, r, bits));
  c.retire(i);
}
void exec_neg(X86Cpu& c, const Insn& i) {
  uint64_t a;
  const unsigned bits = bits_of(i.op[0]);
  if (!c.read(i, i.op[0], a)) return;
  uint64_t r = (0 - a) & mask(bits);
  if (!c.write(i, i.op[0], r)) return;
  uint64_t f = flags::sub(0, a, 0, r, bits);  // CF = (a != 0), OF = (a == min)
  set_flags(c, kArith, f);
  c.retire(i);
}
void exec_not(X86Cpu& c, const Insn& i) {
  uint64_t a;
  if (!c.read(i, i.op[0], a) || !c.write(i, i.op[0], ~a & mask(bits_of(i.op[0])))) return;
  c.retire(i);
}

void exec_mov(X86Cpu& c, const Insn& i) {
  uint64_t v;
  if (!c.read(i, i.op[1], v) || !c.write(i, i.op[0], v & mask(bits_of(i.op[0])))) return;
  c.retire(i);
}
void exec_movzx(X86Cpu& c, const Insn& i) {
  uint64_t v;
  if (!c.read(i, i.op[1], v) || !c.write(i, i.op[0], v & mask(bits_of(i.op[1])))) return;
  c.retire(i);
}
void exec_movsx(X86Cpu& c, const Insn& i) {
  uint64_t v;
  if (!c.read(i, i.op[1], v)) return;
  if (!c.write(i, i.op[0], sext(v, bits_of(i.op[1])) & mask(bits_of(i.op[0])))) return;
  c.retire(i);
}
void exec_lea(X86Cpu& c, const Insn& i) {
  c.reg_write(i.op[0], c.effective_address(i, i.op[1]) & mask(bits_of(i.op[0])));
  c.retire(i);
}
void exec_xchg(X86Cpu& c, const Insn& i) {
  uint64_t a, b;
  if (!c.read(i, i.op[0], a) || !c.read(i, i.op[1], b)) return;
  if (!c.write(i, i.op[0], b) || !c.write(i, i.op[1], a)) return;
  c.retire(i);
}
void exec_bswap(X86Cpu& c, const Insn& i) {
  uint64_t v = c.reg_read(i.op[0]);
  v = i.op[0].size == 8 ? __builtin_bswap64(v) : __builtin_bswap32(static_cast<uint32_t>(v));
  c.reg_write(i.op[0], v);
  c.retire(i);
}
// CBW/CWDE/CDQE: sign-extend the lower half of rAX into rAX.
void exec_cbw(X86Cpu& c, const Insn& i) {
  const unsigned bits = i.opsize * 8u;
  Operand rax{OpKind::reg, i.opsize, 0, false, 0, 0, 0, 0, 0};
  c.reg_write(rax, sext(c.s.gpr[0], bits / 2) & mask(bits));
  c.retire(i);
}
// CWD/CDQ/CQO: rDX = sign of rAX.
void exec_cwd(X86Cpu& c, const Insn& i) {
  const unsigned bits = i.opsize * 8u;
  Operand rdx{OpKind::reg, i.opsize, 2, false, 0, 0, 0, 0, 0};
  c.reg_write(rdx, (c.s.gpr[0] & sign_bit(bits)) ? mask(bits) : 0);
  c.retire(i);
}
void exec_setcc(X86Cpu& c, const Insn& i) {
  if (!c.write(i, i.op[0], condition(c, i.cond) ? 1 : 0)) return;
  c.retire(i);
}
// A 32-bit CMOV writes (zero-extends) its destination even when the
// condition is false (SDM CMOVcc, "64-bit mode").
void exec_cmovcc(X86Cpu& c, const Insn& i) {
  uint64_t v;
  if (!c.read(i, i.op[1], v)) return;  // the source is read either way
  if (condition(c, i.cond)) c.reg_write(i.op[0], v);
  else if (i.op[0].size == 4) c.reg_write(i.op[0], c.reg_read(i.op[0]));
  c.retire(i);
}

// BT/BTS/BTR/BTC: CF = the bit; OF SF AF PF undefined (left unchanged
// here), ZF unchanged. A register bit offset on a memory operand addresses
// the bit string beyond the operand (signed).
void exec_bt(X86Cpu& c, const Insn& i) {
  const Operand& d = i.op[0];
  const unsigned bits = bits_of(d);
  uint64_t off;
  if (!c.read(i, i.op[1], off)) return;
  Operand target = d;
  if (d.kind == OpKind::mem && i.op[1].kind == OpKind::reg) {
    int64_t soff = static_cast<int64_t>(sext(off, bits_of(i.op[1])));
    int64_t words = soff >= 0 ? soff / bits : -((-soff + bits - 1) / bits);
    target.disp += words * static_cast<int64_t>(d.size);
    off = static_cast<uint64_t>(soff - words * static_cast<int64_t>(bits));
  } else {
    off &= bits - 1;
  }
  uint64_t v;
  if (!c.read(i, target, v)) return;
  const uint64_t bit = 1ull << off;
  const bool old = v & bit;
  uint64_t nv = v;
  switch (i.mnemonic) {
    case ZYDIS_MNEMONIC_BTS: nv = v | bit; break;
    case ZYDIS_MNEMONIC_BTR: nv = v & ~bit; break;
    case ZYDIS_MNEMONIC_BTC: nv = v ^ bit; break;
    default: break;
  }
  if (i.mnemonic != ZYDIS_MNEMONIC_BT && !c.write(i, target, nv)) return;
  set_flags(c, kCF, old ? uint64_t{kCF} : 0);
  c.retire(i);
}
// BSF/BSR: a zero source sets ZF and leaves the destination unchanged (as
// AMD documents; Intel leaves it undefined); CF OF SF AF PF undefined and
// left unchanged here.
namespace {
void bit_scan(X86Cpu& c, const Insn& i, bool reverse) {
  uint64_t v;
  if (!c.read(i, i.op[1], v)) return;
  v &= mask(bits_of(i.op[1]));
  if (v == 0) {
    set_flags(c, kZF, kZF);
  } else {
    c.reg_write(i.op[0], static_cast<uint64_t>(reverse ? 63 - __builtin_clzll(v) : __builtin_ctzll(v)));
    set_flags(c, kZF, 0);
  }
  c.retire(i);
}
}  // namespace
void exec_bsf(X86Cpu& c, const Insn& i) { bit_scan(c, i, false); }
void exec_bsr(X86Cpu& c, const Insn& i) { bit_scan(c, i, true); }
void exec_flagop(X86Cpu& c, const Insn& i) {
  switch (i.mnemonic) {
    case ZYDIS_MNEMONIC_CLC: c.s.rflags &= ~kCF; break;
    case ZYDIS_MNEMONIC_STC: c.s.rflags |= kCF; break;
    case ZYDIS_MNEMONIC_CMC: c.s.rflags ^= kCF; break;
    case ZYDIS_MNEMONIC_CLD: c.s.rflags &= ~kDF; break;
    case ZYDIS_MNEMONIC_STD: c.s.rflags |= kDF; break;
    default: break;
  }
  c.retire(i);
}
void exec_nop(X86Cpu& c, const Insn& i) { c.retire(i); }
// MFENCE waits for the store buffer (timing v2 under tso or rvwmo); LFENCE
// and SFENCE order nothing TSO does not already order.
void exec_mfence(X86Cpu& c, const Insn& i) {
  if (!c.stores_visible()) return;  // runs again once they are
  c.retire(i);
}

// Shifts and rotates (SDM SAL/SAR/SHL/SHR, RCL/RCR/ROL/ROR). The count is
// masked to 5 bits (6 for 64-bit operands); a masked count of 0 changes
// nothing, flags included. Undefined results, and ksim's choice:
//  - OF for counts other than 1: computed as for a count of 1 from the last
//    step (shifts) / from the final result (rotates);
//  - AF after a non-zero shift: cleared;
//  - CF of SHL/SHR when the count is >= the operand size (8/16-bit): the
//    last bit shifted out, counting shifted-in zeros.
void exec_shift(X86Cpu& c, const Insn& i) {
  const Operand& d = i.op[0];
  const unsigned bits = bits_of(d);
  uint64_t a, cnt = 1;
  if (!c.read(i, d, a)) return;
  if (i.nops > 1 && !c.read(i, i.op[1], cnt)) return;
  cnt &= bits == 64 ? 63 : 31;
  if (cnt == 0) {  // nothing changes, but a 32-bit register destination is still written (zero-extended)
    if (!c.write(i, d, a)) return;
    c.retire(i);
    return;
  }
  const uint64_t m = mask(bits), sb = sign_bit(bits);
  uint64_t r = 0, f = c.s.rflags;
  auto setf = [&](uint64_t bit, bool on) { f = on ? (f | bit) : (f & ~bit); };
  switch (i.mnemonic) {
    case ZYDIS_MNEMONIC_SHL: case ZYDIS_MNEMONIC_SHR: case ZYDIS_MNEMONIC_SAR: {
      const flags::Shift k = i.mnemonic == ZYDIS_MNEMONIC_SHL   ? flags::Shift::shl
                             : i.mnemonic == ZYDIS_MNEMONIC_SHR ? flags::Shift::shr
                                                                : flags::Shift::sar;
      r = flags::shift_result(k, a, cnt, bits);
      f = (f & ~kArith) | flags::shift(k, a, cnt, r, bits);
      break;
    }
    case ZYDIS_MNEMONIC_ROL: case ZYDIS_MNEMONIC_ROR: {
      const unsigned n = static_cast<unsigned>(cnt % bits);
      if (i.mnemonic == ZYDIS_MNEMONIC_ROL) {
        r = n ? ((a << n) | (a >> (bits - n))) & m : a;
        setf(kCF, r & 1);
        setf(kOF, bool(r & sb) != bool(r & 1));
      } else {
        r = n ? ((a >> n) | (a << (bits - n))) & m : a;
        setf(kCF, r & sb);
        setf(kOF, bool(r & sb) != bool(r & (sb >> 1)));
      }
      break;
    }
    default: {  // RCL, RCR: rotate through CF, (bits + 1)-bit rotation
      const unsigned n = static_cast<unsigned>(cnt % (bits + 1));
      unsigned __int128 wide = (static_cast<unsigned __int128>(cf(c) ? 1 : 0) << bits) | a;  // CF:value
      const unsigned w = bits + 1;
      const unsigned __int128 wm = (static_cast<unsigned __int128>(1) << w) - 1;
      if (i.mnemonic == ZYDIS_MNEMONIC_RCL) {
        wide = n ? ((wide << n) | (wide >> (w - n))) & wm : wide;
        r = static_cast<uint64_t>(wide) & m;
        const bool ncf = static_cast<bool>((wide >> bits) & 1);
        setf(kCF, ncf);
        setf(kOF, bool(r & sb) != ncf);
      } else {
        const bool ocf = cf(c);
        wide = n ? ((wide >> n) | (wide << (w - n))) & wm : wide;
        r = static_cast<uint64_t>(wide) & m;
        setf(kCF, static_cast<bool>((wide >> bits) & 1));
        setf(kOF, n == 1 ? (bool(a & sb) != ocf) : (bool(r & sb) != bool(r & (sb >> 1))));
      }
      break;
    }
  }
  if (!c.write(i, d, r)) return;
  c.s.rflags = f;
  c.retire(i);
}

// SHLD/SHRD: a count above the operand size (16-bit forms) leaves the
// result and flags undefined in the SDM; ksim shifts through the
// concatenation as if it were wider.
void exec_shld(X86Cpu& c, const Insn& i) {
  const Operand& d = i.op[0];
  const unsigned bits = bits_of(d);
  uint64_t a, b, cnt;
  if (!c.read(i, d, a) || !c.read(i, i.op[1], b) || !c.read(i, i.op[2], cnt)) return;
  cnt &= bits == 64 ? 63 : 31;
  if (cnt == 0) {
    if (!c.write(i, d, a)) return;
    c.retire(i);
    return;
  }
  const uint64_t m = mask(bits), sb = sign_bit(bits);
  unsigned __int128 r128;
  uint64_t r;
  bool out;
  if (i.mnemonic == ZYDIS_MNEMONIC_SHLD) {
    unsigned __int128 cat = (static_cast<unsigned __int128>(a) << bits) | b;  // dest:src
    r128 = cat << cnt;
    r = static_cast<uint64_t>(r128 >> bits) & m;
    out = static_cast<bool>((cat >> (2 * bits - cnt)) & 1);
  } else {
    unsigned __int128 cat = (static_cast<unsigned __int128>(b) << bits) | a;  // src:dest
    r128 = cat >> cnt;
    r = static_cast<uint64_t>(r128) & m;
    out = static_cast<bool>((cat >> (cnt - 1)) & 1);
  }
  if (!c.write(i, d, r)) return;
  uint64_t f = (c.s.rflags & ~(kCF | kOF | kSF | kZF | kPF | kAF)) | flags::szp(r, bits);
  if (out) f |= kCF;
  if (bool(r & sb) != bool(a & sb)) f |= kOF;
  c.s.rflags = f;
  c.retire(i);
}

// MUL/IMUL: CF = OF = the result does not fit the destination; SF ZF AF PF
// are undefined (ksim: SF/ZF/PF from the low half, AF cleared).
void exec_mul(X86Cpu& c, const Insn& i) {
  const unsigned bits = bits_of(i.op[0]);
  uint64_t b;
  if (!c.read(i, i.op[0], b)) return;
  const uint64_t a = c.s.gpr[0] & mask(bits);
  unsigned __int128 p = static_cast<unsigned __int128>(a) * (b & mask(bits));
  uint64_t lo = static_cast<uint64_t>(p) & mask(bits);
  uint64_t hi = bits == 64 ? static_cast<uint64_t>(p >> 64) : static_cast<uint64_t>(p >> bits) & mask(bits);
  write_pair(c, bits, hi, lo);
  uint64_t f = flags::szp(lo, bits);
  if (hi) f |= kCF | kOF;
  set_flags(c, kArith, f);
  c.retire(i);
}
void exec_imul(X86Cpu& c, const Insn& i) {
  const unsigned bits = bits_of(i.op[0]);
  if (i.nops == 1) {
    uint64_t b;
    if (!c.read(i, i.op[0], b)) return;
    __int128 p = static_cast<__int128>(static_cast<int64_t>(sext(c.s.gpr[0], bits))) *
                 static_cast<int64_t>(sext(b, bits));
    uint64_t lo = static_cast<uint64_t>(p) & mask(bits);
    uint64_t hi = static_cast<uint64_t>(p >> bits) & mask(bits);
    if (bits == 64) hi = static_cast<uint64_t>(p >> 64);
    write_pair(c, bits, hi, lo);
    uint64_t f = flags::szp(lo, bits);
    if (static_cast<__int128>(static_cast<int64_t>(sext(lo, bits))) != p) f |= kCF | kOF;
    set_flags(c, kArith, f);
    c.retire(i);
    return;
  }
  uint64_t x, y;
  const Operand& src1 = i.nops == 2 ? i.op[0] : i.op[1];
  const Operand& src2 = i.nops == 2 ? i.op[1] : i.op[2];
  if (!c.read(i, src1, x) || !c.read(i, src2, y)) return;
  __int128 p = static_cast<__int128>(static_cast<int64_t>(sext(x, bits))) *
               static_cast<int64_t>(sext(y, bits_of(src2) ? std::min(bits_of(src2), bits) : bits));
  if (src2.kind == OpKind::imm) p = static_cast<__int128>(static_cast<int64_t>(sext(x, bits))) * src2.disp;
  uint64_t lo = static_cast<uint64_t>(p) & mask(bits);
  c.reg_write(i.op[0], lo);
  uint64_t f = flags::szp(lo, bits);
  if (static_cast<__int128>(static_cast<int64_t>(sext(lo, bits))) != p) f |= kCF | kOF;
  set_flags(c, kArith, f);
  c.retire(i);
}

// DIV/IDIV: #DE on a zero divisor or a quotient that does not fit; all six
// arithmetic flags are undefined (left unchanged here).
void exec_div(X86Cpu& c, const Insn& i) {
  const unsigned bits = bits_of(i.op[0]);
  uint64_t d;
  if (!c.read(i, i.op[0], d)) return;
  d &= mask(bits);
  const bool is_signed = i.mnemonic == ZYDIS_MNEMONIC_IDIV;
  unsigned __int128 n;
  if (bits == 8) n = c.s.gpr[0] & 0xffff;
  else if (bits == 64) n = (static_cast<unsigned __int128>(c.s.gpr[2]) << 64) | c.s.gpr[0];
  else n = ((static_cast<unsigned __int128>(c.s.gpr[2] & mask(bits))) << bits) | (c.s.gpr[0] & mask(bits));
  if (d == 0) { c.raise(kDE, "divide by zero"); return; }
  uint64_t q, r;
  if (!is_signed) {
    unsigned __int128 qq = n / d;
    if (qq > mask(bits)) { c.raise(kDE, "quotient overflow"); return; }
    q = static_cast<uint64_t>(qq);
    r = static_cast<uint64_t>(n % d);
  } else {
    const unsigned nbits = 2 * bits;
    __int128 sn;
    if (nbits == 128) sn = static_cast<__int128>(n);
    else {
      unsigned __int128 sbit = static_cast<unsigned __int128>(1) << (nbits - 1);
      sn = static_cast<__int128>((n ^ sbit) - sbit);
    }
    const int64_t sd = static_cast<int64_t>(sext(d, bits));
    // INT128_MIN / -1 cannot be computed; it always overflows anyway.
    if (nbits == 128 && sd == -1 && n == (static_cast<unsigned __int128>(1) << 127)) { c.raise(kDE, "quotient overflow"); return; }
    __int128 qq = sn / sd, rr = sn % sd;
    const __int128 lo = -(static_cast<__int128>(1) << (bits - 1)), hi = (static_cast<__int128>(1) << (bits - 1)) - 1;
    if (qq < lo || qq > hi) { c.raise(kDE, "quotient overflow"); return; }
    q = static_cast<uint64_t>(qq) & mask(bits);
    r = static_cast<uint64_t>(rr) & mask(bits);
  }
  write_pair(c, bits, r, q);
  c.retire(i);
}

// CMPXCHG: compare rAX with the destination; flags as CMP rAX, dest.
void exec_cmpxchg(X86Cpu& c, const Insn& i) {
  const unsigned bits = bits_of(i.op[0]);
  uint64_t d, src;
  if (!c.read(i, i.op[0], d) || !c.read(i, i.op[1], src)) return;
  const uint64_t a = c.s.gpr[0] & mask(bits);
  const uint64_t f = flags::sub(a, d, 0, a - d, bits);
  Operand rax{OpKind::reg, static_cast<uint8_t>(bits / 8), 0, false, 0, 0, 0, 0, 0};
  if (a == d) {
    if (!c.write(i, i.op[0], src)) return;
  } else {
    // A memory destination is written back unchanged (a locked cycle always
    // writes); a register destination is not written at all (so a 32-bit
    // one is not zero-extended), and rAX takes the destination's value.
    if (i.op[0].kind == OpKind::mem && !c.write(i, i.op[0], d)) return;
    c.reg_write(rax, d);
  }
  set_flags(c, kArith, f);
  c.retire(i);
}
void exec_xadd(X86Cpu& c, const Insn& i) {
  const unsigned bits = bits_of(i.op[0]);
  uint64_t d, s;
  if (!c.read(i, i.op[0], d) || !c.read(i, i.op[1], s)) return;
  uint64_t r = d + s;
  // SRC <- DEST, then DEST <- sum: with one register for both, the sum wins.
  if (i.op[0].kind == OpKind::mem) {
    if (!c.write(i, i.op[0], r & mask(bits))) return;
    c.reg_write(i.op[1], d);
  } else {
    c.reg_write(i.op[1], d);
    c.reg_write(i.op[0], r & mask(bits));
  }
  set_flags(c, kArith, flags::add(d, s, 0, r, bits));
  c.retire(i);
}

void exec_push(X86Cpu& c, const Insn& i) {
  uint64_t v;
  if (!c.read(i, i.op[0], v)) return;
  if (i.op[0].kind == OpKind::imm) v = static_cast<uint64_t>(i.op[0].disp);
  if (!c.push(v)) return;
  c.retire(i);
}
void exec_pop(X86Cpu& c, const Insn& i) {
  uint64_t v;
  if (!c.pop(v)) return;
  if (!c.write(i, i.op[0], v)) { c.s.gpr[4] -= 8; return; }
  c.retire(i);
}
void exec_pushfq(X86Cpu& c, const Insn& i) {
  // RF and VM read as 0 in the pushed image.
  if (!c.push(c.s.rflags & ~kRF)) return;
  c.retire(i);
}
void exec_popfq(X86Cpu& c, const Insn& i) {
  uint64_t v;
  if (!c.pop(v)) return;
  c.s.rflags = (c.s.rflags & ~kFlagsWritable) | (v & kFlagsWritable) | kFlagsFixed;
  c.retire(i);
  c.interrupts_changed();
}
void exec_leave(X86Cpu& c, const Insn& i) {
  const uint64_t old_rsp = c.s.gpr[4];
  c.s.gpr[4] = c.s.gpr[5];
  uint64_t v;
  if (!c.pop(v)) { c.s.gpr[4] = old_rsp; return; }
  c.s.gpr[5] = v;
  c.retire(i);
}

// Control transfer. Relative targets: Zydis gives the displacement.
namespace {
bool target_of(X86Cpu& c, const Insn& i, uint64_t& t) {
  const Operand& o = i.op[0];
  if (o.kind == OpKind::imm) {
    t = c.s.rip + i.len + static_cast<uint64_t>(o.disp);
    return true;
  }
  return c.read(i, o, t);
}
}  // namespace
void exec_jmp(X86Cpu& c, const Insn& i) {
  uint64_t t;
  if (!target_of(c, i, t)) return;
  c.s.rip = t;
  c.s.cycle += i.cycles;
  ++c.s.instret;
}
void exec_call(X86Cpu& c, const Insn& i) {
  uint64_t t;
  if (!target_of(c, i, t)) return;
  if (!c.push(c.s.rip + i.len)) return;
  c.s.rip = t;
  c.s.cycle += i.cycles;
  ++c.s.instret;
}
void exec_ret(X86Cpu& c, const Insn& i) {
  uint64_t t;
  if (!c.pop(t)) return;
  if (i.nops && i.op[0].kind == OpKind::imm) c.s.gpr[4] += static_cast<uint64_t>(i.op[0].disp) & 0xffff;
  c.s.rip = t;
  c.s.cycle += i.cycles;
  ++c.s.instret;
}
void exec_jcc(X86Cpu& c, const Insn& i) {
  if (condition(c, i.cond)) {
    c.s.rip += i.len + static_cast<uint64_t>(i.op[0].disp);
    c.s.cycle += i.cycles + timing::kTakenPenalty;
    ++c.s.instret;
  } else {
    c.retire(i);
  }
}

// String instructions: element size from the mnemonic's operand width; DF
// selects the direction. With a REP prefix each call runs one iteration,
// as hardware does (SDM vol. 1, 7.3.9.1: a repeated string instruction is
// interruptible between iterations, with RIP still on the instruction and
// rCX counting what is left): an iteration costs the instruction's cycles
// and is a step of its own; the instruction retires (and costs its cycles
// once more) when rCX reaches 0 or REPE/REPNE's ZF test ends it, or at once
// if rCX is 0 to begin with. Interrupts and the end of a scheduling slot
// can therefore come between iterations (docs/X86.md).
void exec_string(X86Cpu& c, const Insn& i) {
  const unsigned size = i.opsize;
  const int64_t step = (c.s.rflags & kDF) ? -static_cast<int64_t>(size) : static_cast<int64_t>(size);
  const bool rep = i.rep != 0;
  const bool compares = i.mnemonic == ZYDIS_MNEMONIC_CMPSB || i.mnemonic == ZYDIS_MNEMONIC_CMPSW ||
                        i.mnemonic == ZYDIS_MNEMONIC_CMPSD || i.mnemonic == ZYDIS_MNEMONIC_CMPSQ ||
                        i.mnemonic == ZYDIS_MNEMONIC_SCASB || i.mnemonic == ZYDIS_MNEMONIC_SCASW ||
                        i.mnemonic == ZYDIS_MNEMONIC_SCASD || i.mnemonic == ZYDIS_MNEMONIC_SCASQ;
  uint64_t& rsi = c.s.gpr[6];
  uint64_t& rdi = c.s.gpr[7];
  uint64_t& rcx = c.s.gpr[1];
  Operand rax{OpKind::reg, static_cast<uint8_t>(size), 0, false, 0, 0, 0, 0, 0};
  if (rep && rcx == 0) {
    c.retire(i);
    return;
  }
  uint64_t a = 0, b = 0;
  switch (i.mnemonic) {
    case ZYDIS_MNEMONIC_MOVSB: case ZYDIS_MNEMONIC_MOVSW: case ZYDIS_MNEMONIC_MOVSD: case ZYDIS_MNEMONIC_MOVSQ:
      if (!c.mem_read(rsi, size, a) || !c.mem_write(rdi, size, a)) return;
      rsi += step;
      rdi += step;
      break;
    case ZYDIS_MNEMONIC_STOSB: case ZYDIS_MNEMONIC_STOSW: case ZYDIS_MNEMONIC_STOSD: case ZYDIS_MNEMONIC_STOSQ:
      if (!c.mem_write(rdi, size, c.reg_read(rax))) return;
      rdi += step;
      break;
    case ZYDIS_MNEMONIC_LODSB: case ZYDIS_MNEMONIC_LODSW: case ZYDIS_MNEMONIC_LODSD: case ZYDIS_MNEMONIC_LODSQ:
      if (!c.mem_read(rsi, size, a)) return;
      c.reg_write(rax, a);
      rsi += step;
      break;
    case ZYDIS_MNEMONIC_CMPSB: case ZYDIS_MNEMONIC_CMPSW: case ZYDIS_MNEMONIC_CMPSD: case ZYDIS_MNEMONIC_CMPSQ:
      if (!c.mem_read(rsi, size, a) || !c.mem_read(rdi, size, b)) return;
      set_flags(c, kArith, flags::sub(a, b, 0, a - b, size * 8));
      rsi += step;
      rdi += step;
      break;
    default:  // SCAS
      if (!c.mem_read(rdi, size, b)) return;
      a = c.reg_read(rax);
      set_flags(c, kArith, flags::sub(a, b, 0, a - b, size * 8));
      rdi += step;
      break;
  }
  if (rep) {
    --rcx;
    c.s.cycle += i.cycles;
    bool done = rcx == 0;
    if (compares) {
      const bool zf = c.s.rflags & kZF;
      if ((i.rep == kRep && !zf) || (i.rep == kRepne && zf)) done = true;
    }
    if (!done) {
      c.rep_iteration();
      return;
    }
  }
  c.retire(i);
}

// System instructions.
void exec_int3(X86Cpu& c, const Insn& i) { c.deliver(kBP, c.s.rip + i.len, false); }
void exec_int(X86Cpu& c, const Insn& i) {
  c.deliver(static_cast<uint8_t>(i.op[0].disp & 0xff), c.s.rip + i.len, false);
}
void exec_iretq(X86Cpu& c, const Insn& i) { c.do_iretq(i); }
void exec_lidt(X86Cpu& c, const Insn& i) {
  uint64_t addr = c.effective_address(i, i.op[0]), limit, base;
  if (!c.mem_read(addr, 2, limit) || !c.mem_read(addr + 2, 8, base)) return;
  c.s.idt_limit = static_cast<uint16_t>(limit);
  c.s.idt_base = base;
  c.retire(i);
  c.serialize_code();  // LIDT serialises (SDM vol. 3A, "Serializing Instructions")
}
void exec_cli(X86Cpu& c, const Insn& i) {
  c.s.rflags &= ~kIF;
  c.retire(i);
}
void exec_sti(X86Cpu& c, const Insn& i) { c.do_sti(i); }
void exec_hlt(X86Cpu& c, const Insn& i) { c.do_hlt(i); }

// A small deterministic CPUID: vendor "KsimKsimKsim", family 6, no
// SSE/AVX/BMI, the local APIC id in leaf 1.
void exec_cpuid(X86Cpu& c, const Insn& i) {
  const uint32_t leaf = static_cast<uint32_t>(c.s.gpr[0]);
  uint32_t a = 0, b = 0, cc = 0, d = 0;
  if (leaf == 0) {
    a = 1;
    b = 0x6d69734b;  // "Ksim"
    d = 0x6d69734b;
    cc = 0x6d69734b;
  } else if (leaf == 1) {
    a = 0x000006f1;                                  // family 6
    b = c.irq().apic_id(c.id()) << 24;
    d = (1u << 0) | (1u << 4) | (1u << 5) | (1u << 8) | (1u << 9) | (1u << 15);  // FPU TSC MSR CX8 APIC CMOV
  }
  c.s.gpr[0] = a;
  c.s.gpr[3] = b;
  c.s.gpr[1] = cc;
  c.s.gpr[2] = d;
  c.retire(i);
  c.serialize_code();  // the non-privileged serialising instruction (sync_core)
}
void exec_rdtsc(X86Cpu& c, const Insn& i) {
  c.s.gpr[0] = c.s.cycle & 0xffffffff;
  c.s.gpr[2] = c.s.cycle >> 32;
  c.retire(i);
}
void exec_rdmsr(X86Cpu& c, const Insn& i) {
  bool ok;
  uint64_t v = c.msr_read(static_cast<uint32_t>(c.s.gpr[1]), ok);
  if (!ok) { c.raise(kGP, "rdmsr of an unmodelled MSR", true, 0); return; }
  c.s.gpr[0] = v & 0xffffffff;
  c.s.gpr[2] = v >> 32;
  c.retire(i);
}
void exec_wrmsr(X86Cpu& c, const Insn& i) {
  uint64_t v = (c.s.gpr[2] << 32) | (c.s.gpr[0] & 0xffffffff);
  if (!c.msr_write(static_cast<uint32_t>(c.s.gpr[1]), v)) { c.raise(kGP, "wrmsr of an unmodelled MSR", true, 0); return; }
  c.retire(i);
  c.serialize_code();  // WRMSR serialises (the model has no non-serialising MSR writes)
}
// #UD: an instruction outside the modelled subset (or UD2). The event names
// it, so nothing is ever silently mis-executed.
void exec_ud(X86Cpu& c, const Insn&) { c.raise(kUD, "unsupported instruction: " + c.insn_text(c.s.rip)); }

}  // namespace ksim::x86
