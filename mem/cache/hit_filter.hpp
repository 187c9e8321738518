// The cores' first test of a data access under timing model v2 (issue 23
// §6, "a same-line check before the tag lookup"): a few lines per CPU that
// a load (rd) or a store (wr) may use straight from RAM, because the L1
// holds them in a state that allows it and nothing in the CPU's store
// buffer stands in the way (no buffered store to the line; for a store
// under tso, an empty buffer).
//
// Direct-mapped by the line number's low bits. The memory system fills a
// slot when a tag lookup finds such a line (MemorySystem::direct_slow) and
// empties it whenever that stops being true: the line leaves the L1 or is
// downgraded, a store to it is buffered, a checkpoint replaces the caches.
// An empty filter is always correct: it spares tag lookups and never
// changes what an access does, so it is not part of any saved state.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ksim {

struct HitFilter {
  // 256 lines of loads (16 KiB, half the L1s of both profiles); fewer of
  // stores, whose filter tso empties at every buffered store.
  static constexpr unsigned kReadSlots = 256, kWriteSlots = 32;
  static constexpr uint64_t kNoLine = ~uint64_t{0};  // no address has this line number
  uint64_t rd[kReadSlots];
  uint64_t wr[kWriteSlots];

  HitFilter() { clear(); }
  void clear() {
    clear_writes();
    for (uint64_t& l : rd) l = kNoLine;
  }
  void clear_writes() {
    for (uint64_t& l : wr) l = kNoLine;
  }
  // The slot of a line in each filter: its low bits.
  static size_t rd_slot(uint64_t line) { return static_cast<size_t>(line % kReadSlots); }
  static size_t wr_slot(uint64_t line) { return static_cast<size_t>(line % kWriteSlots); }
  // Whether [addr, addr+size) lies in one line the filter lets a load
  // (`write` false) or a store use directly; `shift` is log2 of the line.
  bool covers(uint64_t addr, unsigned size, bool write, unsigned shift) const {
    const uint64_t line = addr >> shift;
    return (write ? wr[wr_slot(line)] : rd[rd_slot(line)]) == line && ((addr + size - 1) >> shift) == line;
  }
  void insert(uint64_t line, bool write) {
    rd[rd_slot(line)] = line;  // a line a store may use, a load may too
    if (write) wr[wr_slot(line)] = line;
  }
  // The line may no longer be used directly at all, or not for stores.
  void drop(uint64_t line) {
    if (rd[rd_slot(line)] == line) rd[rd_slot(line)] = kNoLine;
    drop_write(line);
  }
  void drop_write(uint64_t line) {
    if (wr[wr_slot(line)] == line) wr[wr_slot(line)] = kNoLine;
  }
};

}  // namespace ksim
