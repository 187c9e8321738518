// The integer operations of RV64I and M as pure functions, one line each,
// named after the instructions (Unprivileged ISA chapters 2, 5 and 7).
// semantics.hpp binds each instruction-table row to one of these.
#pragma once
#include <cstdint>
#include <limits>

namespace ksim::rv64::ops {

using u64 = uint64_t;
using i64 = int64_t;
using u32 = uint32_t;
using i32 = int32_t;

inline u64 sext32(u64 v) { return static_cast<u64>(static_cast<i64>(static_cast<i32>(v))); }
inline i64 s(u64 v) { return static_cast<i64>(v); }

// RV64I: operands are rs1 and rs2 (or the immediate, already sign-extended).
// Register shifts use the low 6 bits of the amount, W shifts the low 5.
inline u64 add(u64 a, u64 b) { return a + b; }
inline u64 sub(u64 a, u64 b) { return a - b; }
inline u64 sll(u64 a, u64 b) { return a << (b & 63); }
inline u64 slt(u64 a, u64 b) { return s(a) < s(b); }
inline u64 sltu(u64 a, u64 b) { return a < b; }
inline u64 xor_(u64 a, u64 b) { return a ^ b; }
inline u64 srl(u64 a, u64 b) { return a >> (b & 63); }
inline u64 sra(u64 a, u64 b) { return static_cast<u64>(s(a) >> (b & 63)); }
inline u64 or_(u64 a, u64 b) { return a | b; }
inline u64 and_(u64 a, u64 b) { return a & b; }
inline u64 addw(u64 a, u64 b) { return sext32(a + b); }
inline u64 subw(u64 a, u64 b) { return sext32(a - b); }
inline u64 sllw(u64 a, u64 b) { return sext32(static_cast<u32>(a) << (b & 31)); }
inline u64 srlw(u64 a, u64 b) { return sext32(static_cast<u32>(a) >> (b & 31)); }
inline u64 sraw(u64 a, u64 b) { return static_cast<u64>(static_cast<i64>(static_cast<i32>(a) >> (b & 31))); }

// M: division by zero and signed overflow do not trap (table 7.1).
inline u64 mul(u64 a, u64 b) { return a * b; }
inline u64 mulh(u64 a, u64 b) { return static_cast<u64>((static_cast<__int128>(s(a)) * s(b)) >> 64); }
inline u64 mulhsu(u64 a, u64 b) {
  return static_cast<u64>((static_cast<__int128>(s(a)) * static_cast<__int128>(static_cast<unsigned __int128>(b))) >> 64);
}
inline u64 mulhu(u64 a, u64 b) { return static_cast<u64>((static_cast<unsigned __int128>(a) * b) >> 64); }
inline u64 div(u64 a, u64 b) {
  if (b == 0) return ~u64{0};
  if (s(a) == std::numeric_limits<i64>::min() && s(b) == -1) return a;
  return static_cast<u64>(s(a) / s(b));
}
inline u64 divu(u64 a, u64 b) { return b == 0 ? ~u64{0} : a / b; }
inline u64 rem(u64 a, u64 b) {
  if (b == 0) return a;
  if (s(a) == std::numeric_limits<i64>::min() && s(b) == -1) return 0;
  return static_cast<u64>(s(a) % s(b));
}
inline u64 remu(u64 a, u64 b) { return b == 0 ? a : a % b; }
inline u64 mulw(u64 a, u64 b) { return sext32(static_cast<u32>(a) * static_cast<u32>(b)); }
inline u64 divw(u64 a, u64 b) {
  i32 x = static_cast<i32>(a), y = static_cast<i32>(b);
  if (y == 0) return ~u64{0};
  if (x == std::numeric_limits<i32>::min() && y == -1) return sext32(static_cast<u32>(x));
  return static_cast<u64>(static_cast<i64>(x / y));
}
inline u64 divuw(u64 a, u64 b) {
  u32 x = static_cast<u32>(a), y = static_cast<u32>(b);
  return sext32(y == 0 ? ~u32{0} : x / y);
}
inline u64 remw(u64 a, u64 b) {
  i32 x = static_cast<i32>(a), y = static_cast<i32>(b);
  if (y == 0) return sext32(static_cast<u32>(x));
  if (x == std::numeric_limits<i32>::min() && y == -1) return 0;
  return static_cast<u64>(static_cast<i64>(x % y));
}
inline u64 remuw(u64 a, u64 b) {
  u32 x = static_cast<u32>(a), y = static_cast<u32>(b);
  return sext32(y == 0 ? x : x % y);
}

// Immediate shifts take the shift amount from the immediate as is.
inline u64 slli(u64 a, u64 sh) { return a << sh; }
inline u64 srli(u64 a, u64 sh) { return a >> sh; }
inline u64 srai(u64 a, u64 sh) { return static_cast<u64>(s(a) >> sh); }
inline u64 slliw(u64 a, u64 sh) { return sext32(static_cast<u32>(a) << sh); }
inline u64 srliw(u64 a, u64 sh) { return sext32(static_cast<u32>(a) >> sh); }
inline u64 sraiw(u64 a, u64 sh) { return static_cast<u64>(static_cast<i64>(static_cast<i32>(a) >> sh)); }

// Branch conditions.
inline bool beq(u64 a, u64 b) { return a == b; }
inline bool bne(u64 a, u64 b) { return a != b; }
inline bool blt(u64 a, u64 b) { return s(a) < s(b); }
inline bool bge(u64 a, u64 b) { return s(a) >= s(b); }
inline bool bltu(u64 a, u64 b) { return a < b; }
inline bool bgeu(u64 a, u64 b) { return a >= b; }

}  // namespace ksim::rv64::ops
