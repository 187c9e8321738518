// The instruction table and the decoder built on it.
#include <array>
#include <iterator>
#include <utility>
#include <vector>

#include "cpu/rv64/fusion.hpp"
#include "cpu/rv64/insn.hpp"
#include "cpu/rv64/semantics.hpp"

namespace ksim::rv64 {

using timing::Class;

// Constant-initialised (every entry is a constant expression), so no
// handler reads it before it is filled.
const std::array<OpInfo, kOps> kOpTable = {{
#define X(id, mn, mask, match, fmt, cls, probe) \
  {mn, mask, match, Format::fmt, Class::cls, Probe::probe, &fast_one<sem_##id, 4, timing::cycles(Class::cls)>, &fast_one<sem_##id, 2, timing::cycles(Class::cls)>, \
   &fast_one_edge<sem_##id, 4, timing::cycles(Class::cls)>, &fast_one_edge<sem_##id, 2, timing::cycles(Class::cls)>, sem_##id::exec},
#include "cpu/rv64/insn_table.def"
#undef X
    {"illegal", 0, 0, Format::NONE, Class::system, Probe::reject, &fast_go_precise, &fast_go_precise, &fast_go_precise, &fast_go_precise, &exec_illegal},
}};

namespace {

const auto& kTable = kOpTable;

// Rows grouped by major opcode (bits 6:0), so decoding scans a handful of
// candidates instead of the whole table.
struct OpcodeIndex {
  std::array<std::vector<Op>, 128> by_opcode;
  OpcodeIndex() {
    for (size_t i = 0; i + 1 < kTable.size(); ++i)
      by_opcode[kTable[i].match & 0x7f].push_back(static_cast<Op>(i));
  }
};
const OpcodeIndex& opcode_index() {
  static const OpcodeIndex index;
  return index;
}

constexpr uint32_t bits(uint32_t v, int hi, int lo) { return (v >> lo) & ((1u << (hi - lo + 1)) - 1); }
constexpr int32_t sext(uint32_t v, int width) {
  return static_cast<int32_t>(v << (32 - width)) >> (32 - width);
}

int32_t immediate(Format f, uint32_t raw) {
  switch (f) {
    case Format::I:
    case Format::LOAD:
    case Format::JALR:
      return sext(bits(raw, 31, 20), 12);
    case Format::SHIFT:
      return static_cast<int32_t>(bits(raw, 25, 20));
    case Format::STORE:
      return sext(bits(raw, 31, 25) << 5 | bits(raw, 11, 7), 12);
    case Format::B:
      return sext(bits(raw, 31, 31) << 12 | bits(raw, 7, 7) << 11 | bits(raw, 30, 25) << 5 |
                      bits(raw, 11, 8) << 1, 13);
    case Format::U:
      return static_cast<int32_t>(raw & 0xfffff000);
    case Format::J:
      return sext(bits(raw, 31, 31) << 20 | bits(raw, 19, 12) << 12 | bits(raw, 20, 20) << 11 |
                      bits(raw, 30, 21) << 1, 21);
    case Format::CSR:
    case Format::CSRI:
      return static_cast<int32_t>(bits(raw, 31, 20));
    case Format::FENCE:
      return static_cast<int32_t>(bits(raw, 31, 20));  // fm, pred, succ
    default:
      return 0;
  }
}

Insn make(Op op, uint32_t fields, uint32_t raw, uint8_t len) {
  const OpInfo& info = kTable[static_cast<size_t>(op)];
  Insn in{};
  in.fast = len == 4 ? info.fast : info.fast_compressed;
  in.exec = info.exec;
  in.op = op;
  in.len = len;
  in.span = len;
  in.raw = raw;
  in.cycles = timing::cycles(info.timing);
  if (op == Op::illegal) return in;
  in.imm = immediate(info.format, fields);
  in.rd = static_cast<uint8_t>(bits(fields, 11, 7));
  in.rdw = in.rd == 0 ? 32 : in.rd;
  in.rs1 = static_cast<uint8_t>(bits(fields, 19, 15));
  in.rs2 = static_cast<uint8_t>(bits(fields, 24, 20));
  return in;
}

Op lookup(uint32_t raw) {
  if ((raw & 3) != 3) return Op::illegal;
  for (Op op : opcode_index().by_opcode[raw & 0x7f]) {
    const OpInfo& info = kTable[static_cast<size_t>(op)];
    if ((raw & info.mask) == info.match) return op;
  }
  return Op::illegal;
}

// --- Fused pairs (fusion_table.def) -----------------------------------------

using fusion::kFirst;
using fusion::kFirsts;
using fusion::kSecond;
using fusion::kSeconds;

// The four handlers of a pair, indexed by (a is compressed) * 2 + (b is
// compressed).
using PairHandlers = std::array<FastFn, 4>;
template <Op A, Op B>
constexpr PairHandlers pair_handlers() {
  using RA = Row<A>;
  using RB = Row<B>;
  return {&fast_pair<typename RA::sem, 4, RA::cycles, typename RB::sem, 4, RB::cycles>,
          &fast_pair<typename RA::sem, 4, RA::cycles, typename RB::sem, 2, RB::cycles>,
          &fast_pair<typename RA::sem, 2, RA::cycles, typename RB::sem, 4, RB::cycles>,
          &fast_pair<typename RA::sem, 2, RA::cycles, typename RB::sem, 2, RB::cycles>};
}
template <size_t kA, size_t... kB>
constexpr std::array<PairHandlers, kSeconds> pair_row(std::index_sequence<kB...>) {
  return {pair_handlers<kFirst[kA], kSecond[kB]>()...};
}
template <size_t... kA>
constexpr std::array<std::array<PairHandlers, kSeconds>, kFirsts> pair_table(std::index_sequence<kA...>) {
  return {pair_row<kA>(std::make_index_sequence<kSeconds>{})...};
}
constexpr auto kPairs = pair_table(std::make_index_sequence<kFirsts>{});

// Position of each Op in kFirst and kSecond (-1: not there).
struct PairIndex {
  std::array<int8_t, static_cast<size_t>(Op::count_)> first, second;
  constexpr PairIndex() : first{}, second{} {
    first.fill(-1);
    second.fill(-1);
    for (size_t k = 0; k < kFirsts; ++k) first[static_cast<size_t>(kFirst[k])] = static_cast<int8_t>(k);
    for (size_t k = 0; k < kSeconds; ++k) second[static_cast<size_t>(kSecond[k])] = static_cast<int8_t>(k);
  }
};
constexpr PairIndex kPairIndex;

}  // namespace

FastFn fused_fast(const Insn& a, const Insn& b) {
  const int ia = kPairIndex.first[static_cast<size_t>(a.op)];
  const int ib = kPairIndex.second[static_cast<size_t>(b.op)];
  if (ia < 0 || ib < 0) return nullptr;
  return kPairs[static_cast<size_t>(ia)][static_cast<size_t>(ib)][(a.len == 2) * 2 + (b.len == 2)];
}

Insn decode32(uint32_t raw) { return make(lookup(raw), raw, raw, 4); }

Insn decode16(uint16_t raw) {
  uint32_t full = expand_compressed(raw);
  if (full == 0) return make(Op::illegal, 0, raw, 2);
  return make(lookup(full), full, raw, 2);
}

Insn decode(uint16_t low16, uint16_t high16) {
  if (is_compressed(low16)) return decode16(low16);
  return decode32(static_cast<uint32_t>(high16) << 16 | low16);
}

}  // namespace ksim::rv64
