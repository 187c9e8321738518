// x86 jump optimization, the parts built so far (docs/KPROBES_X86.md,
// "Jump optimization"): the safety check (Linux's can_optimize) on the
// guest kernel's own code, each of its refusals on the functions of
// workloads/kernel/arch/x86/opt_cases.S, and the detour buffer's code.
#include <catch2/catch.hpp>

#include "cpu/x86/insn.hpp"
#include "kprobes/arch.hpp"
#include "mem/memory_map.hpp"
#include "support/kprobe_rig.hpp"

using namespace ksim;
using namespace ksim::kprobes;
using ksim::test::KprobeRig;
using ksim::test::kernel_image;

namespace {

struct Check {
  int err;
  std::string why;
  OptRegion r;
};

Check check(KprobeRig& rig, const char* fn, uint64_t off) {
  const Symbol* s = rig.symbol(fn);
  REQUIRE(s);
  TextReader text = [&](uint64_t a, uint8_t* out, size_t n) { return rig.eng->read_original(a, out, n); };
  Check c;
  c.err = rig.eng->arch().can_optimize(text, s->addr + off, *s, c.r, c.why);
  return c;
}

}  // namespace

TEST_CASE("x86 optprobes: can_optimize accepts kernel functions and refuses each unsafe case with a reason",
          "[kprobes][optprobe]") {
  KprobeRig rig(kernel_image(Isa::x86_64), 1);
  // Every function of the kernel at its entry: accepted ones have a region
  // of whole instructions covering at least the jump's 5 bytes (at most one
  // instruction more); refused ones say one of the reasons below.
  size_t accepted = 0, refused = 0;
  for (const Symbol& s : rig.m.symbols().all()) {
    if (s.kind != Symbol::Kind::function || !s.size) continue;
    INFO(s.name);
    Check c = check(rig, s.name.c_str(), 0);
    if (c.err == 0) {
      ++accepted;
      CHECK(c.why.empty());
      CHECK(c.r.len >= 5);
      CHECK(c.r.len < 5 + 15);
      CHECK(c.r.insns >= 1);
    } else {
      ++refused;
      const bool known = c.why.find("indirect jump") != std::string::npos ||
                         c.why.find("inside the region") != std::string::npos ||
                         c.why.find("cannot run from the detour buffer") != std::string::npos ||
                         c.why.find("RIP-relative") != std::string::npos ||
                         c.why.find("fewer than 5 bytes") != std::string::npos ||
                         c.why.find("past the end") != std::string::npos;
      CHECK(known);
    }
  }
  CHECK(accepted >= 20);
  CHECK(refused >= 5);
  CHECK(check(rig, "do_fork", 0).err == 0);  // `mov r9, rsi; test rdi, imm32`
  struct Refusal {
    const char* fn;
    uint64_t off;
    int err;
    const char* says;
  };
  const Refusal refusals[] = {
      {"optcase_jump_table", 0, -kEOPNOTSUPP, "has an indirect jump"},
      {"optcase_branch_into", 1, -kEOPNOTSUPP, "inside the region"},
      {"optcase_call_in_region", 0, -kEOPNOTSUPP, "cannot run from the detour buffer"},
      {"optcase_leaf", 2, -kERANGE, "fewer than 5 bytes to the end"},
  };
  for (const Refusal& f : refusals) {
    INFO(f.fn << "+" << f.off);
    Check c = check(rig, f.fn, f.off);
    CHECK(c.err == f.err);
    CHECK(c.why.find(f.says) != std::string::npos);
    CHECK(c.why.rfind(std::string(f.fn) + "+", 0) == 0);  // it names the place
  }
  // The same function is fine where nothing lands in the region: the
  // branch's target is +4, before a probe at +4 (targets *inside* count).
  CHECK(check(rig, "optcase_branch_into", 4).err == 0);
  // RV64 has no jump optimization yet, and says so.
  KprobeRig rv(kernel_image(Isa::rv64), 1);
  Check c = check(rv, "do_fork", 0);
  CHECK(c.err == -kEOPNOTSUPP);
  CHECK(c.why.find("no jump optimization") != std::string::npos);
}

TEST_CASE("x86 optprobes: the detour buffer calls the handler path, runs the region, jumps back",
          "[kprobes][optprobe]") {
  KprobeRig rig(kernel_image(Isa::x86_64), 1);
  Check c = check(rig, "do_fork", 0);
  REQUIRE(c.err == 0);
  const uint64_t addr = rig.sym("do_fork");
  const uint64_t buf = rig.eng->layout().slots_end - 64;
  std::vector<uint8_t> code;
  std::string why;
  REQUIRE(rig.eng->arch().build_detour(c.r, addr, buf, code, why) == 0);
  // Decode it back, instruction by instruction.
  std::vector<std::string> text;
  for (size_t off = 0; off < code.size();) {
    x86::Insn in = x86::decode(code.data() + off, code.size() - off, buf + off);
    REQUIRE(in.len > 0);
    text.push_back(x86::disassemble(code.data() + off, code.size() - off, buf + off));
    off += in.len;
  }
  REQUIRE(text.size() == 3u + c.r.insns + 1u);
  CHECK(text[0] == "push r11");
  CHECK(text[1] == "mov r11, [0x0000000000110008]");
  CHECK(text[2] == "pop r11");
  // The region's instructions, byte for byte.
  CHECK(std::equal(c.r.bytes, c.r.bytes + c.r.len, code.begin() + 12));
  CHECK(code.size() == 12u + c.r.len + 5u);
  // The jump back lands after the region.
  char back[40];
  std::snprintf(back, sizeof back, "jmp 0x%016llX", static_cast<unsigned long long>(addr + c.r.len));
  CHECK(text.back() == back);
  CHECK(memmap::kOptprobePort == 0x110008);
}
