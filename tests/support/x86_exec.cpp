#include "support/x86_exec.hpp"

#include "cpu/x86/x86_cpu.hpp"
#include "sim/machine.hpp"

namespace ksim::test {

X86Result x86_exec(const std::vector<uint8_t>& code, const X86State& in, std::vector<uint8_t>& data) {
  MachineConfig cfg;
  cfg.isa = Isa::x86_64;
  cfg.ram_size = 4ull << 20;
  cfg.max_cycles = 10'000'000;
  Machine m(cfg);
  std::vector<uint8_t> bytes = code;
  const uint64_t stop_at = kX86CodeAddr + bytes.size();
  bytes.push_back(0xcc);  // int3: the harness's stop
  m.bus().write_bytes(kX86CodeAddr, bytes.data(), bytes.size());
  if (data.size() > kX86DataSize) data.resize(kX86DataSize);
  m.bus().write_bytes(kX86DataAddr, data.data(), data.size());

  X86Result res;
  m.trap_hooks().add(0, [&](Cpu&, const TrapInfo& t) {
    if (!t.interrupt && t.cause == x86::kBP && t.pc == stop_at) {
      res.ok = true;
    } else {
      res.vector = t.cause;
      res.error = "exception vector " + std::to_string(t.cause) + " at +0x" +
                  [&] { char b[20]; std::snprintf(b, sizeof b, "%llx", (unsigned long long)(t.pc - kX86CodeAddr)); return std::string(b); }();
    }
    return HookResult::stop;
  });
  auto& cpu = static_cast<x86::X86Cpu&>(m.cpu(0));
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
