// Test harness: a one-hart RV64 machine that runs a code sequence placed
// at the start of RAM and stops at a final `ebreak` (caught by a trap hook,
// so the guest never sees it).
#pragma once
#include <cstring>
#include <vector>

#include "cpu/rv64/hart.hpp"
#include "mem/memory_map.hpp"
#include "sim/machine.hpp"

namespace ksim::test {

class Rv64Machine {
 public:
  static constexpr uint64_t kCode = memmap::kRamBase;
  static constexpr uint64_t kData = memmap::kRamBase + 0x10000;

  // `model`: tests of the shared decode cache's coherence, which store into
  // code without fence.i, run under CodeModel::strict.
  explicit Rv64Machine(int cpus = 1, CodeModel model = CodeModel::relaxed) : m_(config(cpus, model)) {
    m_.trap_hooks().add(0, [this](Cpu&, const TrapInfo& t) {
      if (!t.interrupt && t.cause == rv64::kBreakpoint && t.pc == stop_at_) {
        m_.request_stop("test end");
        return HookResult::stop;
      }
      return HookResult::pass;
    });
  }

  rv64::Hart& hart(int i = 0) { return static_cast<rv64::Hart&>(m_.cpu(i)); }
  Machine& machine() { return m_; }

  // Writes `code` (32-bit words) at `at`, followed by the stopping ebreak.
  void load(const std::vector<uint32_t>& code, uint64_t at = kCode) {
    std::vector<uint32_t> words = code;
    words.push_back(0x00100073);
    m_.bus().write_bytes(at, words.data(), words.size() * 4);
    stop_at_ = at + code.size() * 4;
    hart().set_pc(at);
  }
  // Writes raw bytes (e.g. compressed code) and sets the stop address.
  void load_bytes(const std::vector<uint8_t>& bytes, uint64_t at = kCode) {
    m_.bus().write_bytes(at, bytes.data(), bytes.size());
    uint32_t brk = 0x00100073;
    m_.bus().write_bytes(at + bytes.size(), &brk, 4);
    stop_at_ = at + bytes.size();
    hart().set_pc(at);
  }
  // Runs until the final ebreak (or the guest ends / crashes).
  RunResult run() { return m_.run(); }
  uint64_t& x(int r) { return hart().s.x[r]; }
  template <typename T>
  T read(uint64_t addr) {
    T v{};
    m_.bus().read_bytes(addr, &v, sizeof v);
    return v;
  }
  template <typename T>
  void write(uint64_t addr, T v) {
    m_.bus().write_bytes(addr, &v, sizeof v);
  }
  void set_stop(uint64_t addr) { stop_at_ = addr; }

 private:
  static MachineConfig config(int cpus, CodeModel model) {
    MachineConfig c;
    c.cpus = cpus;
    c.code_model = model;
    c.ram_size = 16ull << 20;
    c.max_cycles = 10'000'000;
    return c;
  }
  Machine m_;
  uint64_t stop_at_ = 0;
};

}  // namespace ksim::test
