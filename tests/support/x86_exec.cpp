#include "support/x86_exec.hpp"

#include "cpu/x86/x86_cpu.hpp"
#include "sim/machine.hpp"

namespace ksim::test {

namespace {
// One machine serves every snippet (building one per snippet dominated the
// differential test's run time); each call resets what a snippet can change.
struct Rig {
  Machine m;
  X86Result* current = nullptr;
  uint64_t stop_at = 0;
  static MachineConfig config() {
    MachineConfig cfg;
    cfg.isa = Isa::x86_64;
    cfg.ram_size = 4ull << 20;
    cfg.max_cycles = ~0ull;
    return cfg;
  }
  Rig() : m(config()) {
    m.trap_hooks().add(0, [this](Cpu&, const TrapInfo& t) {
      X86Result& res = *current;
      if (!t.interrupt && t.cause == x86::kBP && t.pc == stop_at) {
        res.ok = true;
      } else {
        char b[64];
        std::snprintf(b, sizeof b, "exception vector %llu at +0x%llx", static_cast<unsigned long long>(t.cause),
                      static_cast<unsigned long long>(t.pc - kX86CodeAddr));
        res.vector = t.cause;
        res.error = b;
      }
      return HookResult::stop;
    });
  }
};
}  // namespace

X86Result x86_exec(const std::vector<uint8_t>& code, const X86State& in, std::vector<uint8_t>& data) {
  static Rig rig;
  Machine& m = rig.m;
  std::vector<uint8_t> bytes = code;
  const uint64_t stop_at = kX86CodeAddr + bytes.size();
  bytes.push_back(0xcc);  // int3: the harness's stop
  m.bus().write_bytes(kX86CodeAddr, bytes.data(), bytes.size());
  if (data.size() > kX86DataSize) data.resize(kX86DataSize);
  std::vector<uint8_t> zeros(kX86DataSize, 0);
  m.bus().write_bytes(kX86DataAddr, zeros.data(), zeros.size());
  m.bus().write_bytes(kX86DataAddr, data.data(), data.size());

  X86Result res;
  rig.current = &res;
  rig.stop_at = stop_at;
  auto& cpu = static_cast<x86::X86Cpu&>(m.cpu(0));
  cpu.reset_control();
  for (int r = 0; r < 16; ++r) cpu.s.gpr[r] = in.gpr[r];
  cpu.s.rflags = (in.rflags & x86::kFlagsWritable) | x86::kFlagsFixed;
  cpu.s.rip = kX86CodeAddr;
  RunResult rr = m.run();
  if (!res.ok && res.error.empty()) res.error = "run ended without reaching the end: " + rr.reason;
  for (int r = 0; r < 16; ++r) res.state.gpr[r] = cpu.s.gpr[r];
  res.state.rflags = cpu.s.rflags;
  m.bus().read_bytes(kX86DataAddr, data.data(), data.size());
  return res;
}

}  // namespace ksim::test
