// The fused pairs and triples of fusion_table.def as data: which rows may
// take which place in a fused group, and the one number the interpreter
// loop needs to keep stops exact with fused groups (kMaxLeadCycles).
#pragma once
#include <algorithm>
#include <iterator>

#include "cpu/rv64/insn.hpp"
#include "cpu/timing.hpp"

namespace ksim::rv64::fusion {

#define FUSION_NONE(id)
#define FUSION_ROW(id) Op::id,
inline constexpr Op kFirst[] = {
#define FIRST FUSION_ROW
#define SECOND FUSION_NONE
#define TRIPLE_A FUSION_NONE
#define TRIPLE_B FUSION_NONE
#define TRIPLE_C FUSION_NONE
#include "cpu/rv64/fusion_table.def"
#undef FIRST
#undef SECOND
#undef TRIPLE_A
#undef TRIPLE_B
#undef TRIPLE_C
};
inline constexpr Op kSecond[] = {
#define FIRST FUSION_NONE
#define SECOND FUSION_ROW
#define TRIPLE_A FUSION_NONE
#define TRIPLE_B FUSION_NONE
#define TRIPLE_C FUSION_NONE
#include "cpu/rv64/fusion_table.def"
#undef FIRST
#undef SECOND
#undef TRIPLE_A
#undef TRIPLE_B
#undef TRIPLE_C
};
inline constexpr Op kTripleA[] = {
#define FIRST FUSION_NONE
#define SECOND FUSION_NONE
#define TRIPLE_A FUSION_ROW
#define TRIPLE_B FUSION_NONE
#define TRIPLE_C FUSION_NONE
#include "cpu/rv64/fusion_table.def"
#undef FIRST
#undef SECOND
#undef TRIPLE_A
#undef TRIPLE_B
#undef TRIPLE_C
};
inline constexpr Op kTripleB[] = {
#define FIRST FUSION_NONE
#define SECOND FUSION_NONE
#define TRIPLE_A FUSION_NONE
#define TRIPLE_B FUSION_ROW
#define TRIPLE_C FUSION_NONE
#include "cpu/rv64/fusion_table.def"
#undef FIRST
#undef SECOND
#undef TRIPLE_A
#undef TRIPLE_B
#undef TRIPLE_C
};
inline constexpr Op kTripleC[] = {
#define FIRST FUSION_NONE
#define SECOND FUSION_NONE
#define TRIPLE_A FUSION_NONE
#define TRIPLE_B FUSION_NONE
#define TRIPLE_C FUSION_ROW
#include "cpu/rv64/fusion_table.def"
#undef FIRST
#undef SECOND
#undef TRIPLE_A
#undef TRIPLE_B
#undef TRIPLE_C
};
#undef FUSION_NONE
#undef FUSION_ROW
inline constexpr size_t kFirsts = std::size(kFirst), kSeconds = std::size(kSecond);
inline constexpr size_t kTripleAs = std::size(kTripleA), kTripleBs = std::size(kTripleB),
                        kTripleCs = std::size(kTripleC);

// Base cost of each row, by Op.
inline constexpr timing::Class kClass[] = {
#define X(id, mn, mask, match, fmt, cls, probe) timing::Class::cls,
#include "cpu/rv64/insn_table.def"
#undef X
};
constexpr uint64_t cost(Op op) { return timing::cycles(kClass[static_cast<size_t>(op)]); }

// The largest base cost of the instructions of a fused group before its
// last one: a pair's first half, a triple's first two. A chain of fast
// handlers ends at least this many cycles before the stop cycle
// (Hart::loop_fast), so a group it enters always finishes all but its last
// instruction before the stop: the stop can never fall inside a group in a
// chain.
inline constexpr uint64_t kMaxLeadCycles = [] {
  uint64_t m = 0;
  for (Op op : kFirst) m = std::max(m, cost(op));
  for (Op a : kTripleA)
    for (Op b : kTripleB) m = std::max(m, cost(a) + cost(b));
  return m;
}();
static_assert(kMaxLeadCycles == 4, "fusion_table.def and its comments say 4");

}  // namespace ksim::rv64::fusion
