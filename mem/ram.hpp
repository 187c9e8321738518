// Guest RAM: one contiguous range of physical addresses backed by an
// anonymous mapping reserved without commit (MAP_NORESERVE), so the host
// only spends memory on pages the guest touches: sparse in practice, and a
// single bounds check on the hot path.
//
// Each 4 KiB page has a flag byte. A store into a flagged page takes a slow
// path that tells the bus's listeners (the decoded-instruction cache, the
// `tohost` watcher). Unflagged pages cost the store one byte load.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ksim {

inline constexpr unsigned kPageShift = 12;
inline constexpr uint64_t kPageSize = 1ull << kPageShift;

enum PageFlag : uint8_t {
  kPageHasCode = 1,   // some instruction in this page is in a decode cache
  kPageWatched = 2,   // a watched address (e.g. tohost) lies in this page
  kPageReserved = 4,  // an LR reservation of some hart lies in this page
};

class Ram {
 public:
  Ram(uint64_t base, uint64_t size);
  ~Ram();
  Ram(const Ram&) = delete;
  Ram& operator=(const Ram&) = delete;

  uint64_t base() const { return base_; }
  uint64_t size() const { return size_; }
  uint8_t* host() const { return host_; }

  // True when [addr, addr+len) lies inside RAM.
  bool contains(uint64_t addr, uint64_t len) const {
    uint64_t off = addr - base_;
    return off < size_ && len <= size_ - off;
  }
  uint8_t* ptr(uint64_t addr) const { return host_ + (addr - base_); }
  // Returns every page to zero and to the host (checkpoint restore).
  void clear();
  // Indices of pages that may hold non-zero bytes: the pages the host has
  // backed with memory (never-touched pages read as zero and are skipped
  // without being touched). Checkpoints scan only these.
  std::vector<uint64_t> resident_pages() const;

  uint8_t page_flags(uint64_t addr) const { return flags_[(addr - base_) >> kPageShift]; }
  const uint8_t* flag_table() const { return flags_.data(); }
  void set_page_flag(uint64_t addr, uint8_t flag) { flags_[(addr - base_) >> kPageShift] |= flag; }
  void clear_page_flag(uint64_t addr, uint8_t flag) { flags_[(addr - base_) >> kPageShift] &= ~flag; }

 private:
  uint64_t base_;
  uint64_t size_;
  uint8_t* host_;
  std::vector<uint8_t> flags_;
};

}  // namespace ksim
