// Fused instruction pairs (cpu/rv64/fusion_table.def, docs/PERFORMANCE.md
// "Where the time goes"): a pair runs as one fast handler, yet rewriting
// either half takes effect at the next fetch, and a pause or stop whose
// cycle falls between the halves stops exactly where the unfused
// interpreter (the precise loop that instruction tracing uses) stops.
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
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
  Rv64Machine t;
  // Twice round a loop whose first pass rewrites the pair's second half:
  //  0: addi a0,a0,1   \ fused pair (nothing before it to pair with)
  //  4: addi a1,a1,1   /
  //  8: bne t1,t2,16   (first pass only:)
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
  CHECK(span_at(t, Rv64Machine::kCode) == 8);  // fused again, with the new second half
}

TEST_CASE("A fused store that rewrites its own pair's second half runs the new second half",
          "[rv64][fusion][decode-cache]") {
  Rv64Machine t;
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
  for (size_t pair = 0; pair < code.size(); pair += 2) REQUIRE(span_at(whole, Rv64Machine::kCode + 4 * pair) == 8);

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

    // Resuming from the middle of a pair ends exactly as the whole run.
    precise.machine().events().remove(&trace);
    REQUIRE(fast.run().end == RunResult::End::hook_stop);
    CHECK(fast.hart().cycle() == whole.hart().cycle());
    CHECK(fast.hart().instret() == whole.hart().instret());
    for (int r = 0; r < 32; ++r) CHECK(fast.x(r) == whole.x(r));
  }
}
