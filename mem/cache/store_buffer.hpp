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
#include <cstddef>
#include <vector>

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

// Entries in program order, with the earliest and latest visibility kept
// up to date (the machine asks for them before every slot, the CPU before
// every store).
class StoreBuffer {
 public:
  static constexpr uint64_t kNone = ~uint64_t{0};

  // Room for `n` entries up front: no allocation per store.
  void reserve(size_t n) { e_.reserve(n); }
  bool empty() const { return e_.empty(); }
  size_t size() const { return e_.size(); }
  const BufferedStore* begin() const { return e_.data(); }
  const BufferedStore* end() const { return e_.data() + e_.size(); }
  void clear() {
    e_.clear();
    recount();
  }
  void push(const BufferedStore& e) {
    e_.push_back(e);
    note(e);
  }
  // Takes out, in program order, up to `max` entries visible by `cycle`
  // into `out`: how many.
  size_t take_due(uint64_t cycle, BufferedStore* out, size_t max) {
    size_t n = 0, w = 0;
    for (size_t r = 0; r < e_.size(); ++r) {
      if (n < max && e_[r].visible <= cycle)
        out[n++] = e_[r];
      else
        e_[w++] = e_[r];
    }
    e_.resize(w);
    recount();
    return n;
  }
  // Marks, in program order, up to `max` entries visible by `cycle` and not
  // in RAM yet as applied, copying them into `out`: how many.
  size_t mark_due(uint64_t cycle, BufferedStore* out, size_t max) {
    size_t n = 0;
    for (size_t r = 0; r < e_.size() && n < max; ++r)
      if (!e_[r].applied && e_[r].visible <= cycle) {
        e_[r].applied = true;
        out[n++] = e_[r];
      }
    recount();
    return n;
  }

  // The earliest cycle at which an entry becomes visible (kNone if empty);
  // the same among entries not yet in RAM.
  uint64_t next_visible() const { return first_; }
  uint64_t next_unapplied() const { return first_unapplied_; }
  // The latest (0 if empty).
  uint64_t last_visible() const { return last_; }
  // Whether a buffered store touches the line.
  bool touches(uint64_t line, unsigned shift) const {
    for (const BufferedStore& e : e_)
      if (on_line(e, line, shift)) return true;
    return false;
  }
  // The latest visibility of a buffered store to the same line (0: none).
  uint64_t line_visible(uint64_t line, unsigned shift) const {
    uint64_t t = 0;
    for (const BufferedStore& e : e_)
      if (on_line(e, line, shift)) t = e.visible > t ? e.visible : t;
    return t;
  }

 private:
  // Its first or last byte is in the line (a store is at most 8 bytes).
  static bool on_line(const BufferedStore& e, uint64_t line, unsigned shift) {
    return (e.addr >> shift) == line || ((e.addr + e.size - 1) >> shift) == line;
  }
  void note(const BufferedStore& e) {
    if (e.visible < first_) first_ = e.visible;
    if (!e.applied && e.visible < first_unapplied_) first_unapplied_ = e.visible;
    if (e.visible > last_) last_ = e.visible;
  }
  void recount() {
    first_ = first_unapplied_ = kNone;
    last_ = 0;
    for (const BufferedStore& e : e_) note(e);
  }
  std::vector<BufferedStore> e_;  // program order; a few dozen at most (the profile's count)
  uint64_t first_ = kNone, first_unapplied_ = kNone, last_ = 0;
};

}  // namespace ksim
