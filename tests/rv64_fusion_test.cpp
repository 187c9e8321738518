// Fused instruction pairs (cpu/rv64/fusion_table.def, docs/PERFORMANCE.md
// "Where the time goes"): a pair runs as one fast handler, yet rewriting
// either half takes effect at the next fetch, and a pause or stop whose
// cycle falls between the halves stops exactly where the unfused
// interpreter (the precise loop that instruction tracing uses) stops.
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "cpu/timing.hpp"
#include "mem/ram.hpp"
#include "sim/events.hpp"
#include "support/rv64_asm.hpp"
#include "support/rv64_machine.hpp"

using namespace ksim;
using namespace ksim::test;
using namespace ksim::test::rv;

namespace {

constexpr uint32_t mul(uint32_t rd, uint32_t a, uint32_t b) { return op(1, 0, rd, a, b); }
constexpr uint32_t bne(uint32_t a, uint32_t b, int32_t off) { return B(off, b, a, 1); }
constexpr uint32_t beq(uint32_t a, uint32_t b, int32_t off) { return B(off, b, a, 0); }
constexpr uint32_t bltu(uint32_t a, uint32_t b, int32_t off) { return B(off, b, a, 6); }
constexpr uint32_t sub(uint32_t rd, uint32_t a, uint32_t b) { return op(0x20, 0, rd, a, b); }
constexpr uint32_t or_(uint32_t rd, uint32_t a, uint32_t b) { return op(0, 6, rd, a, b); }
constexpr uint32_t srli(uint32_t rd, uint32_t rs1, uint32_t sh) { return I(static_cast<int32_t>(sh), rs1, 5, rd, 0x13); }
constexpr uint32_t jalr(uint32_t rd, uint32_t rs1, int32_t imm) { return I(imm, rs1, 0, rd, 0x67); }
// Compressed: c.addi rd,imm and c.bnez rs1',off (rs1' one of x8..x15).
constexpr uint16_t c_addi(uint32_t rd, int32_t imm) {
  const uint32_t u = static_cast<uint32_t>(imm);
  return static_cast<uint16_t>((u >> 5 & 1) << 12 | rd << 7 | (u & 0x1f) << 2 | 0x1);
}
constexpr uint16_t c_bnez(uint32_t rs1, int32_t off) {
  const uint32_t u = static_cast<uint32_t>(off);
  return static_cast<uint16_t>(0x7 << 13 | (u >> 8 & 1) << 12 | (u >> 3 & 3) << 10 | (rs1 - 8) << 7 |
                               (u >> 6 & 3) << 5 | (u >> 1 & 3) << 3 | (u >> 5 & 1) << 2 | 0x1);
}

// Asking for instruction events makes the machine run the precise loop,
// one unfused instruction at a time.
struct InsnTrace : EventObserver {
  uint64_t insns = 0;
  void on_event(const Event& e) override { insns += e.kind == EventKind::insn; }
  bool wants_insns() const override { return true; }
};

// Bytes an entry's fast handler covers: 8 for a fused pair of two 32-bit
// instructions, 4 for a lone one.
uint8_t span_at(Rv64Machine& t, uint64_t pc) { return t.hart().fetch(pc).span; }

// Runs the machine `setup` prepares to its end twice, on the fast path and
// on the precise, unfused one, and checks that both end in the same state
// at the same cycle.
void check_same_as_unfused(const std::function<void(Rv64Machine&)>& setup) {
  Rv64Machine fast, precise;
  InsnTrace trace;
  precise.machine().events().add(&trace);
  setup(fast);
  setup(precise);
  REQUIRE(fast.run().end == RunResult::End::hook_stop);
  REQUIRE(precise.run().end == RunResult::End::hook_stop);
  CHECK(trace.insns == precise.hart().instret() + 1);  // the stopping ebreak is seen, not retired
  CHECK(fast.hart().pc() == precise.hart().pc());
  CHECK(fast.hart().cycle() == precise.hart().cycle());
  CHECK(fast.hart().instret() == precise.hart().instret());
  for (int r = 0; r < 32; ++r) CHECK(fast.x(r) == precise.x(r));
}

// Runs straight-line `code` (instruction k costs costs[k]), fused in groups
// of `group` instructions, paused at every cycle from the first to the
// last, fast and precise, and checks that each pause stops at the first
// instruction boundary at or after it, as the unfused interpreter does,
// and that resuming from there ends exactly as the whole run.
void check_pause_at_every_cycle(const std::vector<uint32_t>& code, const std::vector<uint64_t>& costs,
                                unsigned group) {
  // The boundaries of the unfused model: instruction k ends at ends[k].
  std::vector<uint64_t> ends;
  uint64_t sum = 0;
  for (uint64_t c : costs) ends.push_back(sum += c);

  auto setup = [&](Rv64Machine& t) {
    t.load(code);
    t.x(a2) = 1;
    t.x(a3) = Rv64Machine::kData;
    t.x(a4) = 3;
    t.write<uint64_t>(Rv64Machine::kData, 0x1234);
  };
  Rv64Machine whole;
  setup(whole);
  REQUIRE(whole.run().end == RunResult::End::hook_stop);
  REQUIRE(whole.hart().instret() == code.size());
  for (size_t k = 0; k < code.size(); k += group) REQUIRE(span_at(whole, Rv64Machine::kCode + 4 * k) == 4 * group);

  for (uint64_t pause = 1; pause <= sum; ++pause) {
    CAPTURE(pause);
    // The first boundary at or after the pause cycle.
    size_t k = 0;
    while (ends[k] < pause) ++k;

    Rv64Machine fast, precise;
    InsnTrace trace;
    precise.machine().events().add(&trace);
    setup(fast);
    setup(precise);
    REQUIRE(fast.hart().cycle() == 0);
    REQUIRE(fast.machine().run(RunLimits{pause, 0}).end == RunResult::End::paused);
    REQUIRE(precise.machine().run(RunLimits{pause, 0}).end == RunResult::End::paused);
    CHECK(fast.hart().cycle() == ends[k]);
    CHECK(fast.hart().instret() == k + 1);
    CHECK(fast.hart().pc() == Rv64Machine::kCode + 4 * (k + 1));
    CHECK(precise.hart().cycle() == ends[k]);
    CHECK(precise.hart().instret() == k + 1);
    CHECK(trace.insns == k + 1);
    for (int r = 0; r < 32; ++r) CHECK(fast.x(r) == precise.x(r));

    // Resuming from inside a group ends exactly as the whole run.
    precise.machine().events().remove(&trace);
    REQUIRE(fast.run().end == RunResult::End::hook_stop);
    CHECK(fast.hart().cycle() == whole.hart().cycle());
    CHECK(fast.hart().instret() == whole.hart().instret());
    for (int r = 0; r < 32; ++r) CHECK(fast.x(r) == whole.x(r));
  }
}

}  // namespace

TEST_CASE("The pairs these tests rely on are fused", "[rv64][fusion]") {
  // If fusion_table.def changes, these tests must be given other pairs.
  Rv64Machine t;
  t.load({addi(a0, a0, 1), addi(a1, a1, 1), ld(a2, a3, 0), addi(a0, a0, 1), mul(a2, a2, a4), add(a5, a5, a2),
          lui(t0, 5), addi(t0, t0, 7), sw(a2, a3, 8), addi(a1, a1, 1)});
  t.x(a3) = Rv64Machine::kData;
  REQUIRE(t.run().end == RunResult::End::hook_stop);
  for (uint64_t pair = 0; pair < 5; ++pair) CHECK(span_at(t, Rv64Machine::kCode + 8 * pair) == 8);
  CHECK(t.x(t0) == (5 << 12) + 7);
}

TEST_CASE("A guest store over the second half of a fused pair takes effect at the next fetch",
          "[rv64][fusion][decode-cache]") {
  // Strict code model: this is about the shared decode cache, which shows a
  // store at the next fetch; the relaxed model's fence.i rule is
  // code_model_test.cpp's.
  Rv64Machine t(1, CodeModel::strict);
  // Twice round a loop whose first pass rewrites the pair's second half:
  //  0: addi a0,a0,1   \ fused triple (nothing before it to pair with)
  //  4: addi a1,a1,1   |
  //  8: bne t1,t2,16   / (first pass only:)
  // 12: sw a2,4(a3)    rewrite the second half as addi a1,a1,100
  // 16: addi t1,t1,-1
  // 20: bnez t1, 0
  t.load({addi(a0, a0, 1), addi(a1, a1, 1), bne(t1, t2, 8), sw(a2, a3, 4), addi(t1, t1, -1), bne(t1, zero, -20)});
  t.x(a2) = addi(a1, a1, 100);
  t.x(a3) = Rv64Machine::kCode;
  t.x(t1) = t.x(t2) = 2;
  REQUIRE(t.run().end == RunResult::End::hook_stop);
  CHECK(t.x(a0) == 2);
  CHECK(t.x(a1) == 1 + 100);  // the first pass ran the old second half, the second the new one
  CHECK(span_at(t, Rv64Machine::kCode) == 12);  // fused again, with the new second instruction
}

TEST_CASE("A fused store that rewrites its own pair's second half runs the new second half",
          "[rv64][fusion][decode-cache]") {
  // Strict code model: this is about the shared decode cache, which shows a
  // store at the next fetch; the relaxed model's fence.i rule is
  // code_model_test.cpp's.
  Rv64Machine t(1, CodeModel::strict);
  //  0: sw a2,4(a3)    \ fused pair
  //  4: addi a1,a1,1   /
  t.load({sw(a2, a3, 4), addi(a1, a1, 1)});
  t.x(a2) = addi(a1, a1, 100);
  t.x(a3) = Rv64Machine::kData;  // first a store to data, which leaves the pair as it is
  REQUIRE(t.run().end == RunResult::End::hook_stop);
  REQUIRE(span_at(t, Rv64Machine::kCode) == 8);
  REQUIRE(t.x(a1) == 1);

  t.x(a3) = Rv64Machine::kCode;  // now over the pair's second half
  t.hart().set_pc(Rv64Machine::kCode);
  const uint64_t cycle = t.hart().cycle();
  REQUIRE(t.run().end == RunResult::End::hook_stop);
  CHECK(t.x(a1) == 1 + 100);
  CHECK(t.read<uint32_t>(Rv64Machine::kCode + 4) == addi(a1, a1, 100));
  using timing::Class;
  CHECK(t.hart().cycle() ==
        cycle + timing::cycles(Class::store) + timing::cycles(Class::alu) + timing::kTrapEntryCycles);
}

TEST_CASE("A breakpoint the host writes over the second half of a fused pair is hit (as kprobes arms one)",
          "[rv64][fusion][decode-cache]") {
  Rv64Machine t;
  const uint64_t a_pc = Rv64Machine::kCode, b_pc = a_pc + 4;
  t.load({addi(a0, a0, 1), addi(a1, a1, 1)});
  REQUIRE(t.run().end == RunResult::End::hook_stop);
  REQUIRE(span_at(t, a_pc) == 8);
  REQUIRE(t.x(a0) == 1);
  REQUIRE(t.x(a1) == 1);

  t.machine().bus().write_bytes(b_pc, &ebreak, 4);
  t.set_stop(b_pc);
  t.hart().set_pc(a_pc);
  const uint64_t cycle = t.hart().cycle(), instret = t.hart().instret();
  REQUIRE(t.run().end == RunResult::End::hook_stop);
  CHECK(t.hart().pc() == b_pc);
  CHECK(t.x(a0) == 2);                       // the first half ran
  CHECK(t.x(a1) == 1);                       // the old second half did not
  CHECK(t.hart().instret() == instret + 1);  // only the first half retired
  CHECK(t.hart().cycle() == cycle + timing::cycles(timing::Class::alu) + timing::kTrapEntryCycles);
}

TEST_CASE("Rewriting what follows a fused pair's second half, itself fused with it, resets both pairs",
          "[rv64][fusion][decode-cache]") {
  Rv64Machine t;
  const uint64_t a_pc = Rv64Machine::kCode, b_pc = a_pc + 4, c_pc = a_pc + 8;
  t.load({addi(a0, a0, 1), addi(a1, a1, 1), addi(a2, a2, 1)});
  REQUIRE(t.run().end == RunResult::End::hook_stop);  // fuses a+b
  t.hart().set_pc(b_pc);
  REQUIRE(t.run().end == RunResult::End::hook_stop);  // a jump to b: fuses b+c as well
  REQUIRE(span_at(t, a_pc) == 8);
  REQUIRE(span_at(t, b_pc) == 8);
  REQUIRE(t.x(a1) == 2);
  REQUIRE(t.x(a2) == 2);

  // The a+b pair reads b's entry, which rewriting c resets.
  const uint32_t newer = addi(a2, a2, 100);
  t.machine().bus().write_bytes(c_pc, &newer, 4);
  t.hart().set_pc(a_pc);
  REQUIRE(t.run().end == RunResult::End::hook_stop);
  CHECK(t.x(a0) == 2);
  CHECK(t.x(a1) == 3);
  CHECK(t.x(a2) == 102);
  CHECK(t.x(zero) == 0);
}

TEST_CASE("Pairs are fused only within a page, and rewriting the second half works on either side of a page end",
          "[rv64][fusion][decode-cache]") {
  const uint64_t page_end = Rv64Machine::kCode + kPageSize;
  struct Case {
    uint64_t a_pc;
    uint8_t span;  // expected: fused inside the page, not across its end
  };
  for (Case c : {Case{page_end - 8, 8}, Case{page_end - 4, 4}}) {
    CAPTURE(c.a_pc - Rv64Machine::kCode);
    Rv64Machine t;
    t.load({addi(a0, a0, 1), addi(a1, a1, 1)}, c.a_pc);
    REQUIRE(t.run().end == RunResult::End::hook_stop);
    CHECK(span_at(t, c.a_pc) == c.span);
    CHECK(t.x(a1) == 1);

    const uint32_t newer = addi(a1, a1, 100);
    t.machine().bus().write_bytes(c.a_pc + 4, &newer, 4);
    t.hart().set_pc(c.a_pc);
    REQUIRE(t.run().end == RunResult::End::hook_stop);
    CHECK(t.x(a0) == 2);
    CHECK(t.x(a1) == 101);
  }
}

TEST_CASE("Branches and JAL to another page, and a fused loop end, cost what the timing model says",
          "[rv64][fusion]") {
  Rv64Machine t;
  const uint64_t page_end = Rv64Machine::kCode + kPageSize;
  //  end-8:      jal x0, L            (to the next page)
  //  end-4:      ebreak               (the stop)
  //  end+8:  L:  addi a0,a0,1         \ fused loop end
  //  end+12:     bne a0,a1,L          /
  //  end+16:     beq x0,x0,end-4      (back to the first page)
  t.load({J(16, zero)}, page_end - 8);
  const std::array<uint32_t, 3> far_code = {addi(a0, a0, 1), bne(a0, a1, -4), beq(zero, zero, -20)};
  t.machine().bus().write_bytes(page_end + 8, far_code.data(), sizeof far_code);
  t.x(a1) = 3;
  REQUIRE(t.run().end == RunResult::End::hook_stop);
  CHECK(t.x(a0) == 3);
  CHECK(span_at(t, page_end + 8) == 8);
  using timing::Class;
  const uint64_t taken = timing::cycles(Class::branch) + timing::kTakenPenalty;
  const uint64_t expect = timing::cycles(Class::jump)                  // jal
                          + 3 * timing::cycles(Class::alu)             // addi x3
                          + 2 * taken + timing::cycles(Class::branch)  // bne: taken twice, then not
                          + taken;                                     // beq back
  CHECK(t.hart().instret() == 1 + 3 + 3 + 1);
  CHECK(t.hart().cycle() == expect + timing::kTrapEntryCycles);  // plus the stopping ebreak's trap
}

TEST_CASE("A pause at any cycle, including between the halves of a fused pair, stops where the unfused loop does",
          "[rv64][fusion][machine]") {
  // Straight-line groups of three fused pairs whose first halves cost 2, 3
  // and 1 cycles, so every pause cycle in range lands on a boundary, inside
  // a first half, or between the halves of a pair.
  std::vector<uint32_t> code;
  std::vector<uint64_t> costs;
  using timing::Class;
  for (int g = 0; g < 12; ++g) {
    code.insert(code.end(), {ld(a1, a3, 0), addi(a0, a0, 1), mul(a2, a2, a4), add(a5, a5, a2), lui(t0, 5),
                             addi(t0, t0, g)});
    costs.insert(costs.end(), {timing::cycles(Class::load), timing::cycles(Class::alu), timing::cycles(Class::mul),
                               timing::cycles(Class::alu), timing::cycles(Class::alu), timing::cycles(Class::alu)});
  }
  check_pause_at_every_cycle(code, costs, 2);
}

// --- Fused triples (fusion_table.def, TRIPLE_A/B/C) --------------------------

TEST_CASE("Fused triples close loops and calls with the state and cycles of the unfused instructions",
          "[rv64][fusion]") {
  //  0: ld a4,0(a3)        \ pair
  //  4: addi a3,a3,8       /
  //  8: mul a4,a4,a5       \ triple closing the loop (taken 3 times)
  // 12: add a2,a2,a4       |
  // 16: bne a3,a6,0        /
  // 20: addi a0,a0,1       \ triple closing the loop (taken 4 times)
  // 24: addi a1,a1,-1      |
  // 28: bltu zero,a1,20    /
  // 32: sd a2,32(a3)       \ triple: a call
  // 36: addi t0,t0,5       |
  // 40: jal ra,56          /
  // 44: srli t1,a2,3       \ triple after the return
  // 48: or t1,t1,a0        | (or is a B row)
  // 52: jal zero,68        /  to the stop
  // 56: addi t2,t2,7       \ the callee: a triple ending in a return
  // 60: sub t3,t3,t2       |
  // 64: jalr zero,0(ra)    /
  // 68: ebreak (the stop)
  const std::vector<uint32_t> code = {ld(a4, a3, 0),   addi(a3, a3, 8),  mul(a4, a4, a5),  add(a2, a2, a4),
                                      bne(a3, a6, -16), addi(a0, a0, 1), addi(a1, a1, -1), bltu(zero, a1, -8),
                                      sd(a2, a3, 32),  addi(t0, t0, 5),  J(16, ra),        srli(t1, a2, 3),
                                      or_(t1, t1, a0), J(16, zero),      addi(t2, t2, 7),  sub(t3, t3, t2),
                                      jalr(zero, ra, 0)};
  auto setup = [&](Rv64Machine& t) {
    t.load(code);
    t.x(a3) = Rv64Machine::kData;
    t.x(a6) = Rv64Machine::kData + 32;
    t.x(a5) = 7;
    t.x(a1) = 5;
    for (uint64_t k = 0; k < 4; ++k) t.write<uint64_t>(Rv64Machine::kData + 8 * k, 100 + k);
  };
  check_same_as_unfused(setup);

  Rv64Machine t;
  setup(t);
  REQUIRE(t.run().end == RunResult::End::hook_stop);
  for (uint64_t at : {8, 20, 32, 44, 56}) {
    CAPTURE(at);
    CHECK(span_at(t, Rv64Machine::kCode + at) == 12);
  }
  CHECK(span_at(t, Rv64Machine::kCode) == 8);
  CHECK(t.x(a2) == 7 * (100 + 101 + 102 + 103));
  CHECK(t.read<uint64_t>(Rv64Machine::kData + 64) == t.x(a2));
  CHECK(t.x(a0) == 5);
  CHECK(t.x(t3) == static_cast<uint64_t>(-7));
  CHECK(t.x(t1) == ((t.x(a2) >> 3) | 5));
  CHECK(t.x(ra) == Rv64Machine::kCode + 44);
}

TEST_CASE("A fused triple of mixed lengths (compressed first and last) runs like the unfused instructions",
          "[rv64][fusion]") {
  //  0: c.addi a0,1        \ triple of lengths 2, 4, 2
  //  2: addi a1,a1,-1      |
  //  6: c.bnez a1,0        /  (taken 5 times)
  //  8: ebreak (the stop)
  std::vector<uint8_t> bytes;
  auto put16 = [&](uint16_t h) {
    bytes.push_back(static_cast<uint8_t>(h));
    bytes.push_back(static_cast<uint8_t>(h >> 8));
  };
  put16(c_addi(a0, 1));
  const uint32_t mid = addi(a1, a1, -1);
  put16(static_cast<uint16_t>(mid));
  put16(static_cast<uint16_t>(mid >> 16));
  put16(c_bnez(a1, -6));
  auto setup = [&](Rv64Machine& t) {
    t.load_bytes(bytes);
    t.x(a1) = 6;
  };
  check_same_as_unfused(setup);
  Rv64Machine t;
  setup(t);
  REQUIRE(t.run().end == RunResult::End::hook_stop);
  CHECK(span_at(t, Rv64Machine::kCode) == 8);
  CHECK(t.x(a0) == 6);
  CHECK(t.x(a1) == 0);
}

TEST_CASE("A branch into the middle of a fused triple runs from there", "[rv64][fusion]") {
  //  0: addi a0,a0,1       \ triple, entered once
  //  4: addi a1,a1,1       |
  //  8: bne a1,a2,4        /  back into its middle (which is then a pair)
  // 12: ebreak (the stop)
  const std::vector<uint32_t> code = {addi(a0, a0, 1), addi(a1, a1, 1), bne(a1, a2, -4)};
  auto setup = [&](Rv64Machine& t) {
    t.load(code);
    t.x(a2) = 10;
  };
  check_same_as_unfused(setup);
  Rv64Machine t;
  setup(t);
  REQUIRE(t.run().end == RunResult::End::hook_stop);
  CHECK(span_at(t, Rv64Machine::kCode) == 12);
  CHECK(span_at(t, Rv64Machine::kCode + 4) == 8);
  CHECK(t.x(a0) == 1);
  CHECK(t.x(a1) == 10);
}

TEST_CASE("A guest store over the last instruction of a fused triple takes effect at the next fetch",
          "[rv64][fusion][decode-cache]") {
  // Twice round a loop whose first pass rewrites the triple's branch:
  //  0: addi a0,a0,1   \ fused triple
  //  4: addi a1,a1,1   |
  //  8: bne t1,t2,16   /  not taken in the first pass, then rewritten as
  //                       addi a1,a1,100 (the old branch would be taken)
  // 12: sw a2,8(a3)
  // 16: addi t1,t1,-1
  // 20: bnez t1, 0
  const std::vector<uint32_t> code = {addi(a0, a0, 1),   addi(a1, a1, 1),    bne(t1, t2, 8),
                                      sw(a2, a3, 8),     addi(t1, t1, -1),  bne(t1, zero, -20)};
  auto setup = [&](Rv64Machine& t) {
    t.load(code);
    t.x(a2) = addi(a1, a1, 100);
    t.x(a3) = Rv64Machine::kCode;
    t.x(t1) = t.x(t2) = 2;
  };
  check_same_as_unfused(setup);
  // Strict code model: this is about the shared decode cache, which shows a
  // store at the next fetch; the relaxed model's fence.i rule is
  // code_model_test.cpp's.
  Rv64Machine t(1, CodeModel::strict);
  setup(t);
  REQUIRE(t.run().end == RunResult::End::hook_stop);
  CHECK(t.x(a0) == 2);
  CHECK(t.x(a1) == 2 + 100);                   // the second pass ran the new third instruction
  CHECK(span_at(t, Rv64Machine::kCode) == 8);  // no branch to end a triple now: a pair
}

TEST_CASE("A breakpoint the host writes over the middle or the end of a fused triple is hit",
          "[rv64][fusion][decode-cache]") {
  for (uint64_t at : {4, 8}) {
    CAPTURE(at);
    Rv64Machine t;
    const uint64_t a_pc = Rv64Machine::kCode;
    t.load({addi(a0, a0, 1), addi(a1, a1, 1), beq(zero, zero, 4)});
    REQUIRE(t.run().end == RunResult::End::hook_stop);
    REQUIRE(span_at(t, a_pc) == 12);

    t.machine().bus().write_bytes(a_pc + at, &ebreak, 4);
    t.set_stop(a_pc + at);
    t.hart().set_pc(a_pc);
    const uint64_t cycle = t.hart().cycle(), instret = t.hart().instret();
    REQUIRE(t.run().end == RunResult::End::hook_stop);
    CHECK(t.hart().pc() == a_pc + at);
    CHECK(t.x(a0) == 2);
    CHECK(t.x(a1) == (at == 8 ? 2 : 1));
    CHECK(t.hart().instret() == instret + at / 4);
    CHECK(t.hart().cycle() == cycle + at / 4 * timing::cycles(timing::Class::alu) + timing::kTrapEntryCycles);
  }
}

TEST_CASE("A pause at any cycle, including inside a fused triple, stops where the unfused loop does",
          "[rv64][fusion][machine]") {
  // Straight-line triples (their branches are not taken; the JAL jumps to
  // the next instruction) whose first two instructions cost 4, 3 and 2
  // cycles, the first the most any triple's do (fusion::kMaxLeadCycles).
  std::vector<uint32_t> code;
  std::vector<uint64_t> costs;
  using timing::Class;
  const uint64_t alu = timing::cycles(Class::alu), br = timing::cycles(Class::branch);
  for (int g = 0; g < 8; ++g) {
    code.insert(code.end(), {mul(a2, a2, a4), add(a5, a5, a2), bne(zero, zero, 64), lw(a1, a3, 0), sub(a6, a6, a1),
                             beq(a4, zero, 64), sd(a5, a3, 8), addi(t0, t0, g), J(4, ra)});
    costs.insert(costs.end(), {timing::cycles(Class::mul), alu, br, timing::cycles(Class::load), alu, br,
                               timing::cycles(Class::store), alu, timing::cycles(Class::jump)});
  }
  check_pause_at_every_cycle(code, costs, 3);
}
