// Each x86 instruction class costs what cpu/timing.hpp says (classes per
// mnemonic: cpu/x86/decode.cpp, docs/TIMING.md), on the fast path (run) and
// the precise path (single steps) alike. One instruction's cost is the
// difference between a run of 2N and a run of N copies, so the set-up and
// the final trap cancel out.
#include <catch2/catch.hpp>

#include <vector>

#include "cpu/timing.hpp"
#include "mem/memory_map.hpp"
#include "sim/machine.hpp"

using namespace ksim;
using timing::Class;

namespace {

constexpr uint64_t kCode = memmap::kRamBaseX86 + 0x1000;
constexpr uint64_t kData = memmap::kRamBaseX86 + 0x10000;
constexpr uint64_t kStack = memmap::kRamBaseX86 + 0x40000;

using Bytes = std::vector<uint8_t>;

// Cycles of `prologue`, then `n` copies of `insn`, then int3 (which a hook
// turns into the end of the run).
uint64_t cycles_of(const Bytes& prologue, const Bytes& insn, int n, bool precise) {
  MachineConfig cfg;
  cfg.isa = Isa::x86_64;
  Machine m(cfg);
  Bytes code = prologue;
  for (int i = 0; i < n; ++i) code.insert(code.end(), insn.begin(), insn.end());
  code.push_back(0xcc);
  m.bus().write_bytes(kCode, code.data(), code.size());
  const uint64_t five = 5;
  m.bus().write_bytes(kData, &five, 8);
  m.trap_hooks().add(0, [&m](Cpu&, const TrapInfo& t) {
    if (t.interrupt || t.cause != 3) return HookResult::pass;
    m.request_stop("end of the snippet");
    return HookResult::stop;
  });
  Cpu& c = m.cpu(0);
  c.set_pc(kCode);
  c.set_gpr(4, kStack);  // rsp
  c.set_gpr(6, kData);   // rsi
  c.set_gpr(0, 100);     // rax
  c.set_gpr(3, 3);       // rbx (a divisor)
  if (precise) {
    while (m.run(RunLimits{~uint64_t{0}, m.steps() + 1}).end == RunResult::End::paused) {
    }
  } else {
    m.run();
  }
  return c.cycle();
}

struct ClassCase {
  const char* what;
  Bytes prologue, insn;
  uint64_t expected;
};

}  // namespace

TEST_CASE("every x86 instruction class costs its cpu/timing.hpp cycles", "[timing][x86]") {
  const Bytes none;
  const Bytes zf_clear = {0x31, 0xc0, 0xff, 0xc0};  // xor eax, eax; inc eax: ZF = 0
  const ClassCase cases[] = {
      {"add rax, rbx (alu)", none, {0x48, 0x01, 0xd8}, timing::cycles(Class::alu)},
      {"mov rax, [rsi] (alu: mov with a memory operand)", none, {0x48, 0x8b, 0x06}, timing::cycles(Class::alu)},
      {"nop (alu)", none, {0x90}, timing::cycles(Class::alu)},
      {"imul rax, rbx (mul)", none, {0x48, 0x0f, 0xaf, 0xc3}, timing::cycles(Class::mul)},
      {"div rbx (div)", {0x31, 0xd2}, {0x48, 0xf7, 0xf3, 0x31, 0xd2},  // div rbx; xor edx, edx (alu)
       timing::cycles(Class::div) + timing::cycles(Class::alu)},
      {"push rax (store)", none, {0x50}, timing::cycles(Class::store)},
      {"pop rcx (load)", none, {0x59}, timing::cycles(Class::load)},
      {"jmp to the next instruction (jump)", none, {0xeb, 0x00}, timing::cycles(Class::jump)},
      {"jz not taken (branch)", zf_clear, {0x74, 0x00}, timing::cycles(Class::branch)},
      {"jnz taken to the next instruction (branch + taken penalty)", zf_clear, {0x75, 0x00},
       timing::cycles(Class::branch) + timing::kTakenPenalty},
      {"lock xadd [rsi], rax (atomic)", none, {0xf0, 0x48, 0x0f, 0xc1, 0x06}, timing::cycles(Class::atomic)},
      {"cpuid (csr)", none, {0x0f, 0xa2}, timing::cycles(Class::csr)},
  };
  constexpr int kN = 16;
  for (const ClassCase& c : cases) {
    for (bool precise : {false, true}) {
      INFO(c.what << (precise ? ", precise path" : ", fast path"));
      const uint64_t one = cycles_of(c.prologue, c.insn, kN, precise);
      const uint64_t two = cycles_of(c.prologue, c.insn, 2 * kN, precise);
      CHECK(two - one == kN * c.expected);
    }
  }
}
