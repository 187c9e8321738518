// The x86 fast path's lazy flags against the host CPU (docs/X86.md, "The
// interpreter"). The differential test runs one instruction per case, so
// the flags it checks come from a fresh record materialised at the hand-back;
// here a flag producer is followed, inside one fast chain, by consumers that
// evaluate conditions straight from the lazy record (setcc, cmovcc, jcc) and
// by INC/DEC, which must carry the producer's CF through, and finally by
// pushfq (a hand-back that materialises the record). Every sequence runs
// natively and in the simulator with random operands; the defined flags and
// the registers must agree.
#include <catch2/catch.hpp>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "support/x86_exec.hpp"
#include "support/x86_native.hpp"

using namespace ksim::test;

namespace {

constexpr uint64_t kCF = 1, kPF = 4, kAF = 0x10, kZF = 0x40, kSF = 0x80, kOF = 0x800;
constexpr uint64_t kAll = kCF | kPF | kAF | kZF | kSF | kOF;

struct Producer {
  std::string name;
  std::vector<uint8_t> code;  // operates on rax (and rbx / cl)
  uint64_t defined;           // flags the SDM defines after it
};

// The producers at each operand size: the opcode bytes for 8/16/32/64-bit
// forms of "op rAX, rBX" (and the unary / shift forms on rAX).
std::vector<Producer> producers() {
  std::vector<Producer> out;
  struct Bin { const char* n; uint8_t op8, op; uint64_t defined; };
  const Bin bins[] = {{"add", 0x00, 0x01, kAll},       {"sub", 0x28, 0x29, kAll},
                      {"cmp", 0x38, 0x39, kAll},       {"and", 0x20, 0x21, kAll & ~kAF},
                      {"or", 0x08, 0x09, kAll & ~kAF}, {"xor", 0x30, 0x31, kAll & ~kAF},
                      {"test", 0x84, 0x85, kAll & ~kAF}};
  for (unsigned bits : {8u, 16u, 32u, 64u}) {
    std::vector<uint8_t> pre;
    if (bits == 16) pre.push_back(0x66);
    if (bits == 64) pre.push_back(0x48);
    auto with = [&](std::initializer_list<uint8_t> b) {
      std::vector<uint8_t> v = pre;
      for (uint8_t x : b) v.push_back(x);
      return v;
    };
    const std::string sz = std::to_string(bits);
    const size_t first = out.size();
    for (const Bin& b : bins) out.push_back({b.n, with({bits == 8 ? b.op8 : b.op, 0xd8}), b.defined});
    const uint8_t grp = bits == 8 ? 0xfe : 0xff, un = bits == 8 ? 0xf6 : 0xf7, sh = bits == 8 ? 0xc0 : 0xc1,
                  shcl = bits == 8 ? 0xd2 : 0xd3;
    out.push_back({"inc", with({grp, 0xc0}), kAll});
    out.push_back({"dec", with({grp, 0xc8}), kAll});
    out.push_back({"neg", with({un, 0xd8}), kAll});
    if (bits != 8) out.push_back({"imul", with({0x0f, 0xaf, 0xc3}), kCF | kOF});
    // Counts 1 and 5: OF is defined for a count of 1 only, AF never.
    out.push_back({"shl 1", with({sh, 0xe0, 1}), kAll & ~kAF});
    out.push_back({"shr 1", with({sh, 0xe8, 1}), kAll & ~kAF});
    out.push_back({"sar 1", with({sh, 0xf8, 1}), kAll & ~kAF});
    out.push_back({"shl 5", with({sh, 0xe0, 5}), kAll & ~(kAF | kOF)});
    out.push_back({"shr 5", with({sh, 0xe8, 5}), kAll & ~(kAF | kOF)});
    out.push_back({"sar 5", with({sh, 0xf8, 5}), kAll & ~(kAF | kOF)});
    // By CL (random, masked): a zero count leaves every flag alone, and
    // for other counts OF is defined only for 1: compare CF SF ZF PF.
    out.push_back({"shl cl", with({shcl, 0xe0}), kCF | kSF | kZF | kPF});
    // Rotates: CF (OF only for a count of 1), the rest unchanged.
    out.push_back({"rol 1", with({sh, 0xc0, 1}), kAll});
    out.push_back({"ror 5", with({sh, 0xc8, 5}), kAll & ~kOF});
    // A rotate after another producer: CF (and OF) from the rotate, the
    // other flags from the producer before it.
    std::vector<uint8_t> two = with({bits == 8 ? uint8_t{0x00} : uint8_t{0x01}, 0xd8});  // add
    for (uint8_t x : with({sh, 0xc0, 1})) two.push_back(x);                              // rol 1
    out.push_back({"add; rol 1", two, kAll});
    two = with({bits == 8 ? uint8_t{0x20} : uint8_t{0x21}, 0xd8});  // and
    for (uint8_t x : with({sh, 0xc8, 5})) two.push_back(x);       // ror 5
    out.push_back({"and; ror 5", two, kAll & ~(kAF | kOF)});
    two = with({grp, 0xc0});                                 // inc
    for (uint8_t x : with({sh, 0xc8, 1})) two.push_back(x);  // ror 1
    for (uint8_t x : with({sh, 0xc0, 3})) two.push_back(x);  // rol 3
    out.push_back({"inc; ror 1; rol 3", two, kAll & ~kOF});
    for (size_t k = first; k < out.size(); ++k) out[k].name += "/" + sz;
  }
  return out;
}

// The flags condition `cc` (SDM order) reads.
uint64_t reads(unsigned cc) {
  static const uint64_t r[8] = {kOF, kCF, kZF, kCF | kZF, kSF, kPF, kSF | kOF, kZF | kSF | kOF};
  return r[(cc >> 1) & 7];
}

std::string hex(const std::vector<uint8_t>& v) {
  std::string s;
  char b[4];
  for (uint8_t x : v) {
    std::snprintf(b, sizeof b, "%02x ", x);
    s += b;
  }
  return s;
}

}  // namespace

TEST_CASE("x86 fast path: lazy flags read by setcc, cmovcc, jcc, inc/dec and pushfq match the host",
          "[x86][fast][diff]") {
  X86Native native(X86Native::Placement::anywhere);
  if (!native.ok()) FAIL("native executor: " << native.error());
  std::mt19937_64 rng(0x5eed'f1a9);
  std::vector<uint8_t> data(64, 0);
  const uint64_t edges[] = {0, 1, 0x7f, 0x80, 0xff, 0x7fff, 0x8000, 0xffff, 0x7fffffff, 0x80000000, 0xffffffff,
                            0x7fffffffffffffffull, 0x8000000000000000ull, ~0ull};
  auto value = [&] { return (rng() & 3) == 0 ? edges[rng() % std::size(edges)] : rng(); };
  int cases = 0;
  for (const Producer& p : producers()) {
    for (unsigned cc = 0; cc < 16; ++cc) {
      const bool cond_defined = (reads(cc) & ~p.defined) == 0;
      // mov edx, 0 / mov esi, 0 (flags untouched); producer; setcc dl;
      // cmovcc rsi, rdi; jcc +2; inc r8 (skipped when taken); inc r9
      // (CF carried through); pushfq; pop r10.
      std::vector<uint8_t> code = {0xba, 0, 0, 0, 0, 0xbe, 0, 0, 0, 0};
      for (uint8_t x : p.code) code.push_back(x);
      const std::vector<uint8_t> tail = {0x0f, static_cast<uint8_t>(0x90 + cc), 0xc2,           // setcc dl
                                         0x48, 0x0f, static_cast<uint8_t>(0x40 + cc), 0xf7,     // cmovcc rsi, rdi
                                         static_cast<uint8_t>(0x70 + cc), 0x03,                 // jcc +3
                                         0x49, 0xff, 0xc0,                                      // inc r8
                                         0x49, 0xff, 0xc1,                                      // inc r9
                                         0x9c, 0x41, 0x5a};                                     // pushfq; pop r10
      for (uint8_t x : tail) code.push_back(x);
      for (int k = 0; k < 40; ++k) {
        X86State in;
        for (uint64_t& g : in.gpr) g = value();
        in.gpr[4] = kX86DataAddr + kX86DataSize;
        in.gpr[1] = rng() % 8;  // shift counts below every operand size: CF defined
        in.rflags = 0x2 | (rng() & kAll);
        const X86Result n = native.run(code, in, data);
        const X86Result s = x86_exec(code, in, data);
        REQUIRE(n.ok);
        REQUIRE(s.ok);
        INFO(p.name << " cc " << cc << " code " << hex(code) << " rax " << in.gpr[0] << " rbx " << in.gpr[3]
                    << " rcx " << in.gpr[1] << " flags in " << in.rflags);
        CHECK(s.state.gpr[0] == n.state.gpr[0]);  // the producer's result
        // INC r9 keeps CF and sets the others; what it leaves is compared
        // wherever the producer defined CF (in the pushed image and after).
        const uint64_t after = (p.defined & kCF) | (kAll & ~kCF);
        CHECK((s.state.gpr[10] & after) == (n.state.gpr[10] & after));
        CHECK((s.state.rflags & after) == (n.state.rflags & after));
        CHECK(s.state.gpr[9] == n.state.gpr[9]);
        if (cond_defined) {
          CHECK(s.state.gpr[2] == n.state.gpr[2]);  // setcc
          CHECK(s.state.gpr[6] == n.state.gpr[6]);  // cmovcc
          CHECK(s.state.gpr[8] == n.state.gpr[8]);  // jcc
        }
        ++cases;
      }
    }
  }
  CHECK(cases > 20000);
}

// The flags a fast chain leaves must be exact at every hand-back to the
// outside world: here a trap hook (the harness's int3 stop) sees them,
// after a producer whose record is still lazy when the chain ends.
TEST_CASE("x86 fast path: flags are materialised when the chain hands back at a trap", "[x86][fast]") {
  std::vector<uint8_t> data(64, 0);
  X86State in;
  in.gpr[4] = kX86DataAddr + kX86DataSize;
  in.gpr[0] = 0x7fffffffffffffffull;
  in.gpr[3] = 1;
  in.rflags = 0x2;
  // add rax, rbx: 0x7fff...f + 1 = 0x8000...0: SF OF AF PF set, CF ZF
  // clear (PF: the low byte 0x00 has even parity).
  const X86Result s = x86_exec({0x48, 0x01, 0xd8}, in, data);
  REQUIRE(s.ok);
  CHECK(s.state.gpr[0] == 0x8000000000000000ull);
  CHECK((s.state.rflags & kAll) == (kSF | kOF | kAF | kPF));
}

// A store from a fast chain into the next instruction, already decoded on
// an earlier pass: the chain must run the new bytes (docs/X86.md,
// "Decoding"). Two passes of: mov [rip+2], cl (patches the immediate of
// the add that follows); add ebx, imm8; dec ecx; jnz back.
TEST_CASE("x86 fast path: a store into the next, already decoded instruction takes effect at once", "[x86][fast]") {
  std::vector<uint8_t> data(64, 0);
  X86State in;
  in.gpr[4] = kX86DataAddr + kX86DataSize;
  in.gpr[3] = 0;
  const std::vector<uint8_t> code = {0xb9, 0x02, 0x00, 0x00, 0x00,        // mov ecx, 2
                                     0x88, 0x0d, 0x02, 0x00, 0x00, 0x00,  // mov [rip+2], cl
                                     0x83, 0xc3, 0x00,                    // add ebx, imm8 (patched)
                                     0xff, 0xc9,                          // dec ecx
                                     0x75, 0xf3};                         // jnz -13 (to the mov)
  const X86Result s = x86_exec(code, in, data);
  REQUIRE(s.ok);
  CHECK(s.state.gpr[3] == 2 + 1);  // pass 1 adds 2, pass 2 adds 1 (a stale entry would add 2 again)
  CHECK(s.state.gpr[1] == 0);
}
