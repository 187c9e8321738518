// Decoded RV64 instructions and the instruction table that describes them.
#pragma once
#include <array>
#include <cstdint>
#include <span>

#include "cpu/timing.hpp"

namespace ksim::rv64 {

class Hart;
struct Insn;

// Every instruction has two entry points (see hart.hpp, "Two paths"):
//  - exec, the precise semantics: architectural state (pc, cycle, instret)
//    is up to date in Hart::s before the call and after it; may trap, touch
//    devices, change privilege. Used for anything unusual, for stepping and
//    for instruction tracing.
//  - fast, the common case with the loop's state in host registers: gets
//    the instruction and the chain's clock (below); it runs the
//    instruction and continues straight into the next one's `fast` (a tail
//    call: threaded code), until the chain's limit is reached. It returns
//    the next instruction and the clock, or {nullptr, clock} to ask the
//    loop to synchronise state and run `exec` instead (of the instruction
//    in Hart::precise_ip).
//
// The chain's clock is one host register holding two counts: cycles in the
// high bits, and instructions retired in the low kRetiredBits, so one
// addition per dispatch advances both (tick). It starts at minus the
// chain's length in cycles (Hart::chain_start), so the addition that
// reaches the chain's stop cycle carries out of the register, which is the
// chain's one test per dispatch; the loop reads what the chain ran as the
// difference from the start. A chain lasts at most Hart::kChainCycles
// cycles and every instruction costs at least one, so the retired count
// never carries into the cycles.
using ChainClock = uint64_t;
inline constexpr unsigned kRetiredBits = 16;
// What one instruction of `cycles` cycles adds to the clock.
constexpr ChainClock tick(uint64_t cycles) { return (cycles << kRetiredBits) + 1; }
constexpr uint64_t clock_cycles(ChainClock t) { return t >> kRetiredBits; }
constexpr uint64_t clock_retired(ChainClock t) { return t & ((uint64_t{1} << kRetiredBits) - 1); }

struct Next {
  const Insn* ip;
  ChainClock clock;
};
using ExecFn = void (*)(Hart&, const Insn&);
using FastFn = Next (*)(Hart&, const Insn*, ChainClock clock);

enum class Op : uint8_t {
#define X(id, mn, mask, match, fmt, cls, probe) id,
#include "cpu/rv64/insn_table.def"
#undef X
  illegal,   // not an RV64IMAC+Zicsr+Zifencei encoding
  count_
};
static_assert(static_cast<unsigned>(Op::count_) <= 256, "Op is stored in one byte");

// Operand layout, used by the disassembler.
enum class Format : uint8_t { R, I, SHIFT, LOAD, STORE, B, U, J, JALR, CSR, CSRI, AMO, LR, FENCE, NONE };

// How the kprobes engine may treat an instruction at a probepoint.
enum class Probe : uint8_t { step, simulate, reject };

struct OpInfo {
  const char* mnemonic;
  uint32_t mask, match;
  Format format;
  timing::Class timing;
  Probe probe;
  FastFn fast;             // for the 32-bit encoding
  FastFn fast_compressed;  // for a compressed encoding expanding to this row
  // The same for an instruction that may leave its I-cache line (timing
  // v2: the last of a line, a jump to another): they also fetch the line
  // they go to (fast_one_edge).
  FastFn fast_edge, fast_compressed_edge;
  ExecFn exec;
};

// The table, indexed by Op (decode.cpp). Inline: the interpreter loop
// reads it for every dispatch that runs a fused group's first instruction
// alone, which under exact SMP scheduling is most of them.
inline constexpr size_t kOps = static_cast<size_t>(Op::count_);
extern const std::array<OpInfo, kOps> kOpTable;
inline const OpInfo& op_info(Op op) { return kOpTable[static_cast<size_t>(op)]; }

// One pre-decoded instruction, 32 bytes; the decode cache holds one per
// halfword of a code page.
struct Insn {
  FastFn fast;       // common-case semantics (or the decode-on-first-use stub)
  ExecFn exec;       // precise semantics
  int32_t imm;       // sign-extended immediate; CSR number for CSR ops
  uint8_t rd;        // destination as encoded (0..31), for display
  uint8_t rdw;       // destination the interpreter writes: 32 (a sink) for x0
  uint8_t rs1, rs2;  // sources (for CSR*I, rs1 holds the 5-bit immediate)
  Op op;
  uint8_t span;      // bytes the fast handler runs: len, or all the
                     // instructions of a fused group (the decode cache
                     // resets the entry when any of them changes); 0 for
                     // the decode-me stub
  uint8_t len;       // 2 (compressed) or 4
  uint8_t cycles;    // base cost from the timing model
  uint32_t raw;      // the encoding as fetched (16 or 32 bits)
};
static_assert(sizeof(Insn) == 32, "the fast path computes PCs from entry offsets");

// Decodes a 32-bit encoding (len 4). Unknown encodings decode to Op::illegal.
Insn decode32(uint32_t raw);
// Decodes a 16-bit compressed encoding by expanding it to its 32-bit
// equivalent; the result keeps len 2 and the 16-bit raw bits.
Insn decode16(uint16_t raw);
// Decodes whichever form `low16` starts (low two bits != 11 => compressed).
// `high16` is only read for 32-bit instructions.
Insn decode(uint16_t low16, uint16_t high16);
inline bool is_compressed(uint16_t low16) { return (low16 & 3) != 3; }

// The fast handler of the fused pair `a` then `b` (b at a's address plus
// a.len, both decoded, on the same page; a branch or JAL `b` must have its
// target on that page too), or nullptr when fusion_table.def does not
// have the pair.
FastFn fused_fast(const Insn& a, const Insn& b);
// The same for the fused triple `a`, `b`, `c` (c after b as b after a).
FastFn fused_triple_fast(const Insn& a, const Insn& b, const Insn& c);

// Expands a compressed instruction to the 32-bit instruction it stands
// for; returns 0 for reserved or unsupported encodings (e.g. C.FLD).
uint32_t expand_compressed(uint16_t c);

}  // namespace ksim::rv64
