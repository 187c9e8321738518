// The fused pairs of fusion_table.def as data: which rows may be the first
// or the second half of a pair, and the one number the interpreter loop
// needs to keep stops exact with pairs (kMaxFirstCycles).
#pragma once
#include <algorithm>
#include <iterator>

#include "cpu/rv64/insn.hpp"
#include "cpu/timing.hpp"

namespace ksim::rv64::fusion {

inline constexpr Op kFirst[] = {
#define FIRST(id) Op::id,
#define SECOND(id)
#include "cpu/rv64/fusion_table.def"
#undef FIRST
#undef SECOND
};
inline constexpr Op kSecond[] = {
#define FIRST(id)
#define SECOND(id) Op::id,
#include "cpu/rv64/fusion_table.def"
#undef FIRST
#undef SECOND
};
inline constexpr size_t kFirsts = std::size(kFirst), kSeconds = std::size(kSecond);

// Base cost of each row, by Op.
inline constexpr timing::Class kClass[] = {
#define X(id, mn, mask, match, fmt, cls, probe) timing::Class::cls,
#include "cpu/rv64/insn_table.def"
#undef X
};

// The largest base cost of a first half. A chain of fast handlers ends at
// least this many cycles before the stop cycle (Hart::loop_fast), so a
// pair it enters always finishes its first half before the stop: the stop
// can never fall between the halves inside a chain.
inline constexpr uint64_t kMaxFirstCycles = [] {
  uint64_t m = 0;
  for (Op op : kFirst) m = std::max<uint64_t>(m, timing::cycles(kClass[static_cast<size_t>(op)]));
  return m;
}();

}  // namespace ksim::rv64::fusion
