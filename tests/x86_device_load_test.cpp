// A MOV that loads from a device inside a fast chain (the kprobes engine's
// optprobe port in a detour buffer, the LAPIC, the UART) runs its precise
// semantics without leaving the fast loop (fast::load_precise): the run
// must be the precise path's, to the cycle.
#include <catch2/catch.hpp>

#include "support/x86_rig.hpp"

using namespace ksim;

namespace {

// The LAPIC timer started, then 16 times: a flag producer, a load of the
// timer's current count (it depends on the cycle of the load), a
// consumer of the producer's CF, a byte load of the UART's LSR merged into
// rdx, and the loop's own dec/jnz.
std::vector<uint8_t> program() {
  std::vector<uint8_t> p = {
      0x41, 0xb8, 0x00, 0x00, 0xe0, 0xfe,                                // mov r8d, 0xfee00000 (LAPIC)
      0x41, 0xb9, 0x00, 0x00, 0x00, 0x10,                                // mov r9d, 0x10000000 (UART)
      0x41, 0xc7, 0x80, 0x80, 0x03, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00,  // mov dword [r8+0x380], 0x100000
      0xb9, 0x10, 0x00, 0x00, 0x00,                                      // mov ecx, 16
      0x48, 0x01, 0xcb,                                                  // loop: add rbx, rcx
      0x41, 0x8b, 0x80, 0x90, 0x03, 0x00, 0x00,                          // mov eax, [r8+0x390]
      0x48, 0x11, 0xc6,                                                  // adc rsi, rax
      0x41, 0x8a, 0x51, 0x05,                                            // mov dl, [r9+5]
      0x48, 0x01, 0xd7,                                                  // add rdi, rdx
      0xff, 0xc9,                                                        // dec ecx
      0x75, 0xe8,                                                        // jnz loop
  };
  p.insert(p.end(), test::kX86PowerOff.begin(), test::kX86PowerOff.end());
  return p;
}

struct WantsInsns : EventObserver {
  uint64_t insns = 0;
  bool wants_insns() const override { return true; }
  void on_event(const Event& e) override { insns += e.kind == EventKind::insn; }
};

}  // namespace

TEST_CASE("x86: a device load in the fast path gives the precise path's registers, flags and cycles", "[x86][fast]") {
  test::X86Rig fast(EventKind::trap, {13});
  test::X86Rig precise(EventKind::trap, {13});
  WantsInsns every;  // instruction events: every instruction on the precise path
  precise.m.events().add(&every);
  for (test::X86Rig* r : {&fast, &precise}) {
    r->cpu().s.gpr[3] = 0xffff'ffff'ffff'fff0;  // rbx: the adds carry now and then
    r->cpu().s.gpr[2] = 0x1234'5678'9abc'de00;  // rdx: the byte load keeps the rest
    r->code(program());
    const RunResult res = r->m.run();
    INFO(res.reason);
    REQUIRE(res.end == RunResult::End::poweroff);
    CHECK(r->events.empty());  // no #GP
  }
  const auto& a = fast.cpu().s;
  const auto& b = precise.cpu().s;
  CHECK(every.insns == b.instret);
  CHECK(a.instret == b.instret);
  CHECK(a.cycle == b.cycle);
  CHECK(a.rip == b.rip);
  CHECK(a.rflags == b.rflags);
  for (int i = 0; i < 16; ++i) {
    INFO("gpr " << i);
    CHECK(a.gpr[i] == b.gpr[i]);
  }
  CHECK((b.gpr[2] & ~0xffull) == 0x1234'5678'9abc'de00);
  CHECK((b.gpr[2] & 0xff) == 0x60);  // LSR: transmitter empty and idle
  CHECK(b.gpr[6] != 0);              // rsi: the timer counts were loaded
}
