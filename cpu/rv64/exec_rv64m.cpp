// Semantics of the M extension (Unprivileged ISA, chapter 7). Division by
// zero and signed overflow do not trap: the results are those of table 7.1.
#include <limits>

#include "cpu/rv64/hart.hpp"
#include "cpu/rv64/semantics.hpp"

namespace ksim::rv64 {

namespace {
using i64 = int64_t;
using u64 = uint64_t;
using i128 = __int128;
using u128 = unsigned __int128;
constexpr i64 kMin64 = std::numeric_limits<i64>::min();
constexpr int32_t kMin32 = std::numeric_limits<int32_t>::min();
inline u64 sext32(uint32_t v) { return static_cast<u64>(static_cast<i64>(static_cast<int32_t>(v))); }
}  // namespace

#define RS1 h.s.x[i.rs1]
#define RS2 h.s.x[i.rs2]
#define RD h.s.x[i.rdw]

void exec_mul(Hart& h, const Insn& i) { RD = RS1 * RS2; h.retire(i); }
void exec_mulh(Hart& h, const Insn& i) {
  RD = static_cast<u64>((static_cast<i128>(static_cast<i64>(RS1)) * static_cast<i64>(RS2)) >> 64);
  h.retire(i);
}
void exec_mulhsu(Hart& h, const Insn& i) {
  RD = static_cast<u64>((static_cast<i128>(static_cast<i64>(RS1)) * static_cast<i128>(static_cast<u128>(RS2))) >> 64);
  h.retire(i);
}
void exec_mulhu(Hart& h, const Insn& i) {
  RD = static_cast<u64>((static_cast<u128>(RS1) * RS2) >> 64);
  h.retire(i);
}
void exec_div(Hart& h, const Insn& i) {
  i64 a = static_cast<i64>(RS1), b = static_cast<i64>(RS2);
  RD = b == 0 ? ~u64{0} : (a == kMin64 && b == -1) ? static_cast<u64>(a) : static_cast<u64>(a / b);
  h.retire(i);
}
void exec_divu(Hart& h, const Insn& i) {
  RD = RS2 == 0 ? ~u64{0} : RS1 / RS2;
  h.retire(i);
}
void exec_rem(Hart& h, const Insn& i) {
  i64 a = static_cast<i64>(RS1), b = static_cast<i64>(RS2);
  RD = b == 0 ? static_cast<u64>(a) : (a == kMin64 && b == -1) ? 0 : static_cast<u64>(a % b);
  h.retire(i);
}
void exec_remu(Hart& h, const Insn& i) {
  RD = RS2 == 0 ? RS1 : RS1 % RS2;
  h.retire(i);
}
void exec_mulw(Hart& h, const Insn& i) {
  RD = sext32(static_cast<uint32_t>(RS1) * static_cast<uint32_t>(RS2));
  h.retire(i);
}
void exec_divw(Hart& h, const Insn& i) {
  int32_t a = static_cast<int32_t>(RS1), b = static_cast<int32_t>(RS2);
  int32_t q = b == 0 ? -1 : (a == kMin32 && b == -1) ? a : a / b;
  RD = static_cast<u64>(static_cast<i64>(q));
  h.retire(i);
}
void exec_divuw(Hart& h, const Insn& i) {
  uint32_t a = static_cast<uint32_t>(RS1), b = static_cast<uint32_t>(RS2);
  RD = sext32(b == 0 ? ~0u : a / b);
  h.retire(i);
}
void exec_remw(Hart& h, const Insn& i) {
  int32_t a = static_cast<int32_t>(RS1), b = static_cast<int32_t>(RS2);
  int32_t r = b == 0 ? a : (a == kMin32 && b == -1) ? 0 : a % b;
  RD = static_cast<u64>(static_cast<i64>(r));
  h.retire(i);
}
void exec_remuw(Hart& h, const Insn& i) {
  uint32_t a = static_cast<uint32_t>(RS1), b = static_cast<uint32_t>(RS2);
  RD = sext32(b == 0 ? a : a % b);
  h.retire(i);
}

}  // namespace ksim::rv64
