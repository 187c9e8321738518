// The fused triples of fusion_table.def: eight handlers per triple (one per
// combination of lengths), instantiated here rather than beside the pairs
// in decode.cpp so the two tables compile in parallel.
#include <array>
#include <utility>

#include "cpu/rv64/fusion.hpp"
#include "cpu/rv64/insn.hpp"
#include "cpu/rv64/semantics.hpp"

namespace ksim::rv64 {

namespace {

using fusion::kTripleA;
using fusion::kTripleAs;
using fusion::kTripleB;
using fusion::kTripleBs;
using fusion::kTripleC;
using fusion::kTripleCs;

// The eight handlers of a triple, indexed by (a is compressed) * 4 +
// (b is compressed) * 2 + (c is compressed).
using TripleHandlers = std::array<FastFn, 8>;
template <Op A, Op B, Op C, size_t... kK>
constexpr TripleHandlers triple_handlers(std::index_sequence<kK...>) {
  using RA = Row<A>;
  using RB = Row<B>;
  using RC = Row<C>;
  return {&fast_triple<typename RA::sem, (kK & 4) ? 2 : 4, RA::cycles, typename RB::sem, (kK & 2) ? 2 : 4,
                       RB::cycles, typename RC::sem, (kK & 1) ? 2 : 4, RC::cycles>...};
}
template <size_t kA, size_t kB, size_t... kC>
constexpr std::array<TripleHandlers, kTripleCs> triple_c(std::index_sequence<kC...>) {
  return {triple_handlers<kTripleA[kA], kTripleB[kB], kTripleC[kC]>(std::make_index_sequence<8>{})...};
}
template <size_t kA, size_t... kB>
constexpr std::array<std::array<TripleHandlers, kTripleCs>, kTripleBs> triple_b(std::index_sequence<kB...>) {
  return {triple_c<kA, kB>(std::make_index_sequence<kTripleCs>{})...};
}
template <size_t... kA>
constexpr auto triple_table(std::index_sequence<kA...>) {
  return std::array<std::array<std::array<TripleHandlers, kTripleCs>, kTripleBs>, kTripleAs>{
      triple_b<kA>(std::make_index_sequence<kTripleBs>{})...};
}
constexpr auto kTriples = triple_table(std::make_index_sequence<kTripleAs>{});

// Position of each Op in each list (-1: not there).
struct TripleIndex {
  std::array<int8_t, static_cast<size_t>(Op::count_)> a, b, c;
  constexpr TripleIndex() : a{}, b{}, c{} {
    a.fill(-1);
    b.fill(-1);
    c.fill(-1);
    for (size_t k = 0; k < kTripleAs; ++k) a[static_cast<size_t>(kTripleA[k])] = static_cast<int8_t>(k);
    for (size_t k = 0; k < kTripleBs; ++k) b[static_cast<size_t>(kTripleB[k])] = static_cast<int8_t>(k);
    for (size_t k = 0; k < kTripleCs; ++k) c[static_cast<size_t>(kTripleC[k])] = static_cast<int8_t>(k);
  }
};
constexpr TripleIndex kTripleIndex;

}  // namespace

FastFn fused_triple_fast(const Insn& a, const Insn& b, const Insn& c) {
  const int ia = kTripleIndex.a[static_cast<size_t>(a.op)];
  const int ib = kTripleIndex.b[static_cast<size_t>(b.op)];
  const int ic = kTripleIndex.c[static_cast<size_t>(c.op)];
  if (ia < 0 || ib < 0 || ic < 0) return nullptr;
  return kTriples[static_cast<size_t>(ia)][static_cast<size_t>(ib)][static_cast<size_t>(ic)]
                 [(a.len == 2) * 4 + (b.len == 2) * 2 + (c.len == 2)];
}

}  // namespace ksim::rv64
