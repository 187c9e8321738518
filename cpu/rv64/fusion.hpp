// The fused pairs and triples of fusion_table.def as data: which rows may
// take which place in a fused group, and the one number the interpreter
// loop needs to keep stops exact with fused groups (kMaxLeadCycles).
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>

#include "cpu/rv64/insn.hpp"
#include "cpu/timing.hpp"

namespace ksim::rv64::fusion {

// fusion_table.def's lines: a row of insn_table.def and its place in a group.
enum class Place : uint8_t { first, second, triple_a, triple_b, triple_c };
struct Member {
  Place place;
  Op op;
};
inline constexpr Member kMembers[] = {
#define FIRST(id) {Place::first, Op::id},
#define SECOND(id) {Place::second, Op::id},
#define TRIPLE_A(id) {Place::triple_a, Op::id},
#define TRIPLE_B(id) {Place::triple_b, Op::id},
#define TRIPLE_C(id) {Place::triple_c, Op::id},
#include "cpu/rv64/fusion_table.def"
#undef FIRST
#undef SECOND
#undef TRIPLE_A
#undef TRIPLE_B
#undef TRIPLE_C
};
// The rows that may take place P, in table order.
template <Place P>
constexpr auto rows() {
  constexpr size_t n = [] {
    size_t k = 0;
    for (const Member& r : kMembers) k += r.place == P;
    return k;
  }();
  std::array<Op, n> ops{};
  size_t k = 0;
  for (const Member& r : kMembers)
    if (r.place == P) ops[k++] = r.op;
  return ops;
}
inline constexpr auto kFirst = rows<Place::first>();
inline constexpr auto kSecond = rows<Place::second>();
inline constexpr auto kTripleA = rows<Place::triple_a>();
inline constexpr auto kTripleB = rows<Place::triple_b>();
inline constexpr auto kTripleC = rows<Place::triple_c>();
inline constexpr size_t kFirsts = kFirst.size(), kSeconds = kSecond.size();
inline constexpr size_t kTripleAs = kTripleA.size(), kTripleBs = kTripleB.size(), kTripleCs = kTripleC.size();

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
