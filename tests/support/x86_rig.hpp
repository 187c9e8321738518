// A one-CPU x86 machine for instruction-level tests: code at kCode, an IDT
// at kIdt whose chosen vectors are interrupt gates to kHandler, a stack,
// and the events of one kind recorded as they are delivered.
#pragma once
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "cpu/x86/x86_cpu.hpp"
#include "mem/memory_map.hpp"
#include "sim/events.hpp"
#include "sim/machine.hpp"

namespace ksim::test {

struct X86Rig {
  static constexpr uint64_t kBase = memmap::kRamBaseX86;
  static constexpr uint64_t kCode = kBase + 0x1000;
  static constexpr uint64_t kHandler = kBase + 0x2000;
  static constexpr uint64_t kIdt = kBase + 0x3000;
  static constexpr uint64_t kStackTop = kBase + 0x8000;

  Machine m{[] {
    MachineConfig c;
    c.isa = Isa::x86_64;
    c.ram_size = 1 << 20;
    c.max_cycles = 1'000'000;
    return c;
  }()};
  std::vector<Event> events;  // of the kind given to the constructor

  // Gates for `vectors`; the IDT's limit ends after the highest of them.
  X86Rig(EventKind kind, const std::vector<int>& vectors) : obs_(*this, kind) {
    m.events().add(&obs_);
    const uint64_t lo = (kHandler & 0xffff) | (uint64_t{0x08} << 16) | (uint64_t{0x8e} << 40) |
                        ((kHandler >> 16 & 0xffff) << 48);
    const uint64_t hi = kHandler >> 32;
    for (int v : vectors) {
      m.bus().write_bytes(kIdt + 16 * v, &lo, 8);
      m.bus().write_bytes(kIdt + 16 * v + 8, &hi, 8);
    }
    cpu().s.idt_base = kIdt;
    cpu().s.idt_limit = static_cast<uint16_t>(16 * (*std::max_element(vectors.begin(), vectors.end()) + 1) - 1);
    cpu().s.gpr[4] = kStackTop;
    cpu().s.rip = kCode;
  }
  X86Rig(const X86Rig&) = delete;
  x86::X86Cpu& cpu() { return static_cast<x86::X86Cpu&>(m.cpu(0)); }
  void code(const std::vector<uint8_t>& b, uint64_t at = kCode) { m.bus().write_bytes(at, b.data(), b.size()); }
  uint64_t q(uint64_t addr) {
    uint64_t v = 0;
    m.bus().read_bytes(addr, &v, 8);
    return v;
  }

 private:
  struct Obs : EventObserver {
    Obs(X86Rig& r, EventKind k) : rig(r), kind(k) {}
    void on_event(const Event& e) override {
      if (e.kind == kind) rig.events.push_back(e);
    }
    X86Rig& rig;
    EventKind kind;
  } obs_;
};

// mov eax, 0x5555; movabs [0x100000], eax: the finisher powers off with
// status 0.
inline const std::vector<uint8_t> kX86PowerOff = {0xb8, 0x55, 0x55, 0x00, 0x00, 0xa3, 0x00, 0x00,
                                                  0x10, 0x00, 0x00, 0x00, 0x00, 0x00};

}  // namespace ksim::test
