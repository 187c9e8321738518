// The x86-64 core: basic semantics, traps through the IDT, single-step.
#include <catch2/catch.hpp>

#include "support/x86_exec.hpp"

using namespace ksim::test;

namespace {
X86Result run(std::vector<uint8_t> code, X86State in = {}) {
  std::vector<uint8_t> data(64, 0);
  return x86_exec(code, in, data);
}
}  // namespace

TEST_CASE("x86: mov, add with flags, and 32-bit writes zero-extend", "[x86]") {
  X86State in;
  in.gpr[0] = 0xffffffffffffffffull;  // rax
  in.gpr[3] = 1;                       // rbx
  // add eax, ebx  (01 d8): 0xffffffff + 1 -> 0, CF=1 ZF=1, upper half cleared
  X86Result r = run({0x01, 0xd8}, in);
  REQUIRE(r.ok);
  CHECK(r.state.gpr[0] == 0);
  CHECK((r.state.rflags & 0x1) == 1);   // CF
  CHECK((r.state.rflags & 0x40) != 0);  // ZF
  // mov rax, 0x1122334455667788 (movabs); sub al, 0x89 -> borrow
  r = run({0x48, 0xb8, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0x2c, 0x89});
  REQUIRE(r.ok);
  CHECK(r.state.gpr[0] == 0x11223344556677ffull);
  CHECK((r.state.rflags & 0x1) == 1);
}

TEST_CASE("x86: an instruction outside the subset raises #UD and is named", "[x86]") {
  // addps xmm0, xmm1 (SSE): not modelled
  X86Result r = run({0x0f, 0x58, 0xc1});
  CHECK_FALSE(r.ok);
  CHECK(r.vector == 6);
}

TEST_CASE("x86: division by zero raises #DE", "[x86]") {
  X86State in;
  in.gpr[1] = 0;  // rcx
  X86Result r = run({0x48, 0xf7, 0xf1}, in);  // div rcx
  CHECK(r.vector == 0);
}
