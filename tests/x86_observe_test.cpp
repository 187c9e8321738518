// What the x86 machine shows observers (docs/X86.md): instruction events
// carry the instruction's bytes, IPIs are reported where they are received,
// and the disassembler names branch and call targets.
#include <catch2/catch.hpp>

#include <map>
#include <regex>
#include <string>
#include <vector>

#include "cpu/x86/insn.hpp"
#include "mem/memory_map.hpp"
#include "sim/machine.hpp"

using namespace ksim;

namespace {

struct Collect : EventObserver {
  bool insns = false;
  std::vector<Event> events;
  bool wants_insns() const override { return insns; }
  void on_event(const Event& e) override { events.push_back(e); }
};

}  // namespace

TEST_CASE("x86 instruction events carry the first (up to) 8 instruction bytes little-endian as raw", "[x86][trace]") {
  MachineConfig cfg;
  cfg.isa = Isa::x86_64;
  cfg.ram_size = 1 << 20;
  cfg.max_cycles = 1000;
  Machine m(cfg);
  const uint64_t code = memmap::kRamBaseX86 + 0x1000;
  // nop; mov eax, 0x5555 (5 bytes); movabs rbx, 0x1122334455667788 (10
  // bytes: raw holds its first 8); then the finisher.
  const std::vector<uint8_t> prog = {0x90,
                                     0xb8, 0x55, 0x55, 0x00, 0x00,
                                     0x48, 0xbb, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,
                                     0xa3, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00};
  m.bus().write_bytes(code, prog.data(), prog.size());
  m.cpu(0).set_pc(code);
  Collect c;
  c.insns = true;
  m.events().add(&c);
  REQUIRE(m.run().end == RunResult::End::poweroff);
  std::vector<Event> insns;
  for (const Event& e : c.events)
    if (e.kind == EventKind::insn) insns.push_back(e);
  REQUIRE(insns.size() == 4);
  CHECK(insns[0].a == code);
  CHECK(insns[0].b == 0x90);
  CHECK(insns[1].a == code + 1);
  CHECK(insns[1].b == 0x00005555b8ull);
  CHECK(insns[2].a == code + 6);
  CHECK(insns[2].b == 0x334455667788bb48ull);
  CHECK(insns[3].a == code + 16);
  CHECK(insns[3].b == 0x00000010'0000a3ull);
}

TEST_CASE("x86 IPIs are reported as ipi_recv events at the receiving CPU, naming the sender", "[x86][kernel][ipi]") {
  MachineConfig cfg;
  cfg.isa = Isa::x86_64;
  cfg.cpus = 4;
  Machine m(cfg);
  m.load(load_elf_file(std::string(KSIM_BINARY_DIR) + "/workloads/x86/kernel_x86_preempt.elf", Isa::x86_64));
  Collect c;
  m.events().add(&c);
  REQUIRE(m.run().end == RunResult::End::poweroff);
  std::map<std::pair<uint64_t, int>, int> sent;  // (from, to) -> count
  std::map<int, int> received;
  int recv_total = 0;
  for (size_t k = 0; k < c.events.size(); ++k) {
    const Event& e = c.events[k];
    if (e.kind == EventKind::ipi_send) ++sent[{static_cast<uint64_t>(e.cpu), static_cast<int>(e.a)}];
    if (e.kind != EventKind::ipi_recv) continue;
    ++recv_total;
    ++received[e.cpu];
    INFO("ipi_recv #" << recv_total << " on cpu " << e.cpu << " from " << e.a);
    CHECK(e.a < 4);
    CHECK(static_cast<int>(e.a) != e.cpu);
    // It follows the interrupt it explains, on the same CPU and cycle...
    REQUIRE(k > 0);
    CHECK(c.events[k - 1].kind == EventKind::interrupt);
    CHECK(c.events[k - 1].cpu == e.cpu);
    CHECK(c.events[k - 1].cycle == e.cycle);
    // ...and that CPU was sent at least one IPI by the one named.
    CHECK(sent[{e.a, e.cpu}] > 0);
  }
  // The guest counts the IPIs its handler took up to its report ("N ipis
  // received" per CPU): the events are at least that many, and never more
  // than were sent.
  std::regex re("\\[cpu ([0-9]+)\\] done: .*? ([0-9]+) ipis received");
  const std::string console = m.console();
  int reports = 0;
  for (std::sregex_iterator it(console.begin(), console.end(), re), end; it != end; ++it) {
    const int cpu = std::stoi((*it)[1]);
    INFO("cpu " << cpu);
    CHECK(received[cpu] >= std::stoi((*it)[2]));
    ++reports;
  }
  CHECK(reports == 4);
  int sent_total = 0;
  for (const auto& [k, n] : sent) sent_total += n;
  CHECK(recv_total > 0);
  CHECK(recv_total <= sent_total);
}

TEST_CASE("x86 disassembly names the symbol a relative branch or call lands in", "[x86][disasm]") {
  const uint64_t rip = 0x40001000;
  auto symbolize = [](uint64_t a) -> std::string {
    if (a >= 0x40002000 && a < 0x40002100) return a == 0x40002000 ? "foo" : "foo+0x" + std::to_string(a - 0x40002000);
    return "";
  };
  // call rel32 to 0x40002000: e8 fb 0f 00 00 (0x40001005 + 0xffb).
  const uint8_t call[] = {0xe8, 0xfb, 0x0f, 0x00, 0x00};
  const std::string c = x86::disassemble(call, sizeof call, rip, symbolize);
  CHECK_THAT(c, Catch::StartsWith("call "));
  CHECK_THAT(c, Catch::Contains("40002000"));
  CHECK_THAT(c, Catch::EndsWith(" <foo>"));
  // jnz rel32 to 0x40002008: 0f 85 02 10 00 00 (0x40001006 + 0x1002).
  const uint8_t jnz[] = {0x0f, 0x85, 0x02, 0x10, 0x00, 0x00};
  CHECK_THAT(x86::disassemble(jnz, sizeof jnz, rip, symbolize), Catch::EndsWith(" <foo+0x8>"));
  // A jump to nowhere named, an indirect call and a plain move: no name.
  const uint8_t jmp[] = {0xeb, 0x00};
  CHECK_THAT(x86::disassemble(jmp, sizeof jmp, rip, symbolize), !Catch::Contains("<"));
  const uint8_t icall[] = {0xff, 0xd0};  // call rax
  CHECK(x86::disassemble(icall, sizeof icall, rip, symbolize) == "call rax");
  const uint8_t mov[] = {0x48, 0x89, 0xc3};
  CHECK(x86::disassemble(mov, sizeof mov, rip, symbolize) == "mov rbx, rax");
  // Without a symbolizer the text is Zydis's alone.
  CHECK_THAT(x86::disassemble(call, sizeof call, rip), !Catch::Contains("<"));
}
