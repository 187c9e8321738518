// Each RV64 instruction class costs what cpu/timing.hpp says, on the fast
// path (run) and the precise path (single steps) alike. The cost of one
// instruction is measured as the difference between a run of 2N and a run
// of N copies, so the set-up and the final trap cancel out.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "cpu/timing.hpp"
#include "support/rv64_asm.hpp"
#include "support/rv64_machine.hpp"

using namespace ksim;
using namespace ksim::test;
using namespace ksim::test::rv;
using timing::Class;

namespace {

struct ClassCase {
  const char* what;
  uint32_t insn;
  uint64_t expected;  // cycles of one instruction, from cpu/timing.hpp
};

// Cycles of a run of `n` copies of `insn` after a fixed prologue (a0 points
// at a data word, t1 and t2 hold non-zero operands).
uint64_t cycles_of(uint32_t insn, int n, bool precise) {
  Rv64Machine m;
  // a0 = kData: lui sign-extends bit 31 (RAM starts at 0x8000_0000), so
  // the upper half is cleared with a shift pair.
  std::vector<uint32_t> code = {lui(a0, static_cast<uint32_t>(Rv64Machine::kData >> 12) & 0xfffff),
                                I(32, a0, 1, a0, 0x13), I(32, a0, 5, a0, 0x13), li(t1, 7), li(t2, 3)};
  for (int i = 0; i < n; ++i) code.push_back(insn);
  m.load(code);
  m.write<uint64_t>(Rv64Machine::kData, 5);
  if (precise) {
    while (m.machine().run(RunLimits{~uint64_t{0}, m.machine().steps() + 1}).end == RunResult::End::paused) {
    }
  } else {
    m.run();
  }
  return m.hart().cycle();
}

}  // namespace

TEST_CASE("every RV64 instruction class costs its cpu/timing.hpp cycles", "[timing][rv64]") {
  const uint32_t kFence = 0x0ff0000f;        // fence iorw, iorw
  const uint32_t kMscratch = 0x340;
  const ClassCase cases[] = {
      {"add (alu)", add(t0, t1, t2), timing::cycles(Class::alu)},
      {"lui (alu)", lui(t0, 5), timing::cycles(Class::alu)},
      {"mul", op(1, 0, t0, t1, t2), timing::cycles(Class::mul)},
      {"mulh (mul)", op(1, 1, t0, t1, t2), timing::cycles(Class::mul)},
      {"div", op(1, 4, t0, t1, t2), timing::cycles(Class::div)},
      {"remu (div)", op(1, 7, t0, t1, t2), timing::cycles(Class::div)},
      {"ld (load)", ld(t0, a0, 0), timing::cycles(Class::load)},
      {"lb (load)", lb(t0, a0, 0), timing::cycles(Class::load)},
      {"sd (store)", sd(t1, a0, 8), timing::cycles(Class::store)},
      {"beq not taken (branch)", B(4, t2, t1, 0), timing::cycles(Class::branch)},
      {"bne taken to the next instruction (branch + taken penalty)", B(4, t2, t1, 1),
       timing::cycles(Class::branch) + timing::kTakenPenalty},
      {"jal to the next instruction (jump)", J(4, zero), timing::cycles(Class::jump)},
      {"amoadd.d (atomic)", amo(0x00, 3, t0, a0, t1), timing::cycles(Class::atomic)},
      {"csrr mscratch (csr)", csrrs(t0, kMscratch, zero), timing::cycles(Class::csr)},
      {"fence", kFence, timing::cycles(Class::fence)},
      {"fence.i (fence)", fence_i, timing::cycles(Class::fence)},
  };
  // The model's published numbers (docs/TIMING.md), so that a change of the
  // constants themselves is seen here too.
  CHECK(timing::cycles(Class::alu) == 1);
  CHECK(timing::cycles(Class::mul) == 3);
  CHECK(timing::cycles(Class::div) == 20);
  CHECK(timing::cycles(Class::load) == 2);
  CHECK(timing::cycles(Class::store) == 1);
  CHECK(timing::cycles(Class::branch) == 1);
  CHECK(timing::kTakenPenalty == 1);
  CHECK(timing::cycles(Class::jump) == 2);
  CHECK(timing::cycles(Class::atomic) == 5);
  CHECK(timing::cycles(Class::csr) == 3);
  CHECK(timing::cycles(Class::fence) == 3);
  constexpr int kN = 16;
  for (const ClassCase& c : cases) {
    for (bool precise : {false, true}) {
      INFO(c.what << (precise ? ", precise path" : ", fast path"));
      const uint64_t one = cycles_of(c.insn, kN, precise), two = cycles_of(c.insn, 2 * kN, precise);
      CHECK(two - one == kN * c.expected);
    }
  }
}

TEST_CASE("an RV64 trap costs kTrapEntryCycles on top of the instruction", "[timing][rv64]") {
  // ecall in M-mode traps to mtvec; with mtvec at the stopping ebreak the
  // run ends right there: n ecalls that each trap cost n * entry cycles
  // (ecall does not retire, so no class cost).
  auto run = [](int n) {
    Rv64Machine m;
    std::vector<uint32_t> code;
    // mtvec = the instruction after the ecalls... each ecall traps to the
    // next one: build a chain where mtvec moves forward.
    for (int i = 0; i < n; ++i) {
      code.push_back(0);  // auipc t0, 0
      code.push_back(addi(t0, t0, 16));
      code.push_back(csrrw(zero, 0x305, t0));  // mtvec = the instruction after the ecall
      code.push_back(ecall);
    }
    for (int i = 0; i < n; ++i) code[static_cast<size_t>(4 * i)] = U(0, t0, 0x17);
    m.load(code);
    m.run();
    return m.hart().cycle();
  };
  const uint64_t one = run(4), two = run(8);
  // Per ecall: auipc (alu) + addi (alu) + csrw (csr) + the trap entry.
  CHECK(two - one == 4 * (2 * timing::cycles(Class::alu) + timing::cycles(Class::csr) + timing::kTrapEntryCycles));
}
