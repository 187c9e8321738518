// RFLAGS results of the arithmetic and logic instructions (Intel SDM vol. 1,
// appendix A "EFLAGS Cross-Reference", and each instruction's "Flags
// Affected"). Values are computed at the operand size `bits`; inputs hold
// the operand zero-extended.
#pragma once
#include <cstdint>

#include "cpu/x86/x86_cpu.hpp"

namespace ksim::x86::flags {

inline uint64_t mask(unsigned bits) { return bits == 64 ? ~0ull : (1ull << bits) - 1; }

// Whether condition code `cc` (jcc/setcc/cmovcc, SDM order: O NO B NB Z NZ
// BE NBE S NS P NP L NL LE NLE; odd codes negate) holds in `f`. Shared by
// the interpreter and the kprobes engine's jcc emulation.
inline bool condition(uint8_t cc, uint64_t f) {
  bool r;
  switch ((cc >> 1) & 7) {
    case 0: r = f & kOF; break;
    case 1: r = f & kCF; break;
    case 2: r = f & kZF; break;
    case 3: r = (f & kCF) || (f & kZF); break;
    case 4: r = f & kSF; break;
    case 5: r = f & kPF; break;
    case 6: r = bool(f & kSF) != bool(f & kOF); break;
    default: r = (f & kZF) || (bool(f & kSF) != bool(f & kOF)); break;
  }
  return (cc & 1) ? !r : r;
}
inline uint64_t sign_bit(unsigned bits) { return 1ull << (bits - 1); }

// SF, ZF, PF of a result (PF: even parity of the low byte).
inline uint64_t szp(uint64_t r, unsigned bits) {
  r &= mask(bits);
  uint64_t f = 0;
  if (r == 0) f |= kZF;
  if (r & sign_bit(bits)) f |= kSF;
  if (!(__builtin_popcount(static_cast<unsigned>(r & 0xff)) & 1)) f |= kPF;
  return f;
}

// a + b + carry_in.
inline uint64_t add(uint64_t a, uint64_t b, uint64_t cin, uint64_t r, unsigned bits) {
  uint64_t f = szp(r, bits);
  const uint64_t m = mask(bits);
  a &= m; b &= m; r &= m;
  if (r < a || (cin && r == a)) f |= kCF;
  if ((~(a ^ b) & (a ^ r)) & sign_bit(bits)) f |= kOF;
  if ((a ^ b ^ r) & 0x10) f |= kAF;
  return f;
}

// a - b - borrow_in (also CMP).
inline uint64_t sub(uint64_t a, uint64_t b, uint64_t bin, uint64_t r, unsigned bits) {
  uint64_t f = szp(r, bits);
  const uint64_t m = mask(bits);
  a &= m; b &= m; r &= m;
  if (a < b || (bin && a == b)) f |= kCF;
  if (((a ^ b) & (a ^ r)) & sign_bit(bits)) f |= kOF;
  if ((a ^ b ^ r) & 0x10) f |= kAF;
  return f;
}

// AND/OR/XOR/TEST: CF = OF = 0; AF is undefined by the SDM and cleared here.
inline uint64_t logic(uint64_t r, unsigned bits) { return szp(r, bits); }

inline uint64_t sext(uint64_t v, unsigned bits) {
  if (bits == 64) return v;
  const uint64_t sb = 1ull << (bits - 1);
  v &= mask(bits);
  return (v ^ sb) - sb;
}

// SHL/SHR/SAR by a non-zero count `cnt` (already masked to 5 or 6 bits) of
// the zero-extended value `a`: the result, and all six arithmetic flags
// (AF cleared; OF for counts other than 1 computed like the 1-bit case from
// the last step; CF of SHL/SHR past the operand size: the last bit shifted
// out, counting shifted-in zeros). Shared by the precise and fast paths.
enum class Shift : uint8_t { shl, shr, sar };
inline uint64_t shift_result(Shift k, uint64_t a, uint64_t cnt, unsigned bits) {
  const uint64_t m = mask(bits);
  switch (k) {
    case Shift::shl: return cnt >= 64 ? 0 : (a << cnt) & m;
    case Shift::shr: return cnt >= 64 ? 0 : (a >> cnt) & m;
    default: {
      const uint64_t eff = cnt >= bits ? bits - 1 : cnt;
      return static_cast<uint64_t>(static_cast<int64_t>(sext(a, bits)) >> eff) & m;
    }
  }
}
inline uint64_t shift(Shift k, uint64_t a, uint64_t cnt, uint64_t r, unsigned bits) {
  const uint64_t m = mask(bits), sb = sign_bit(bits);
  uint64_t f = szp(r, bits);
  switch (k) {
    case Shift::shl: {
      const bool out = cnt <= bits ? (a >> (bits - cnt)) & 1 : 0;
      if (out) f |= kCF;
      if (bool(r & sb) != out) f |= kOF;
      break;
    }
    case Shift::shr: {
      const bool out = cnt <= bits ? (a >> (cnt - 1)) & 1 : 0;
      if (out) f |= kCF;
      if (cnt == 1 ? bool(a & sb) : bool(((a >> (cnt - 1)) & m) & sb)) f |= kOF;
      break;
    }
    default: {
      const int64_t sa = static_cast<int64_t>(sext(a, bits));
      const uint64_t eff = cnt >= bits ? bits - 1 : cnt;
      if ((static_cast<uint64_t>(sa >> (eff == cnt ? cnt - 1 : bits - 1))) & 1) f |= kCF;
      break;
    }
  }
  return f;
}

}  // namespace ksim::x86::flags
