// A CPU's store buffer (timing model v2, issue 23 §3): stores that have
// executed but are not yet visible to other CPUs, each with the cycle at
// which it becomes visible (when its line arrives). RAM holds only what
// every CPU may see; the buffering CPU's own loads look here first
// (store-to-load forwarding).
//
// How stores enter and leave depends on the memory model:
//  - tso (x86-TSO): every store enters while the buffer is not empty or
//    its line is not already modified in the L1; entries become visible in
//    program order (a FIFO).
//  - rvwmo (as an in-order core with a store buffer can show RVWMO): a
//    store whose line is modified in the L1 and which no buffered store to
//    the same line precedes is visible at once; others wait for their line,
//    and for the stores before them to the same line only.
//  - sc: nothing is buffered (a store waits for its line).
// The machine applies an entry to RAM before any CPU's step that starts at
// or after its cycle, and no slot runs past the next such cycle, so every
// schedule sees the same values (sim/machine.cpp); the buffering CPU drops
// an entry when its own clock passes the entry's cycle.
#pragma once
#include <cstdint>
#include <deque>

namespace ksim {

enum class MemoryModel : uint8_t { sc, tso, rvwmo };

struct BufferedStore {
  uint64_t addr = 0;
  uint64_t value = 0;   // little-endian, `size` bytes
  uint64_t visible = 0; // the cycle it becomes visible to the other CPUs
  uint8_t size = 0;
  // Already in RAM: another CPU's step at or after `visible` came first.
  // The entry stays until the buffering CPU's own clock passes `visible`,
  // so what it forwards, waits for and has room for never depends on how
  // the machine interleaved the CPUs.
  bool applied = false;
};

struct StoreBuffer {
  std::deque<BufferedStore> entries;  // program order
  // The earliest cycle at which an entry becomes visible (kNone if empty).
  static constexpr uint64_t kNone = ~uint64_t{0};
  uint64_t next_visible() const {
    uint64_t t = kNone;
    for (const BufferedStore& e : entries) t = e.visible < t ? e.visible : t;
    return t;
  }
  uint64_t last_visible() const {
    uint64_t t = 0;
    for (const BufferedStore& e : entries) t = e.visible > t ? e.visible : t;
    return t;
  }
  // The latest visibility of a buffered store to the same line.
  uint64_t line_visible(uint64_t line, unsigned shift) const {
    uint64_t t = 0;
    for (const BufferedStore& e : entries)
      if ((e.addr >> shift) == line || ((e.addr + e.size - 1) >> shift) == line) t = e.visible > t ? e.visible : t;
    return t;
  }
};

}  // namespace ksim
