// The decoded-instruction cache, shared by every hart of a machine.
//
// One entry per halfword of every code page that has been executed, so a
// fetch is an index into an array. Entries start as "decode me" stubs and
// are filled on first execution. A store into a page that holds decoded
// code (from any hart, a device or the host) resets the entries whose bytes
// it touched (every instruction's bytes for a fused group), before the next
// fetch: the cache always holds what memory holds. What a hart that has not
// executed FENCE.I since may still see instead is its stale view
// (cpu/code_view.hpp, docs/CODE_MODEL.md); under --code-model strict every
// hart sees new code at its very next fetch.
//
// Pages are never freed while the machine lives, so a hart may keep a
// pointer to the page it is executing from across invalidations.
#pragma once
#include <cstdint>

#include "cpu/code_pages.hpp"
#include "cpu/rv64/insn.hpp"
#include "mem/bus.hpp"

namespace ksim::rv64 {

inline constexpr unsigned kInsnsPerPage = kPageSize / 2;
// The most bytes one entry covers: a fused triple of 32-bit instructions.
inline constexpr unsigned kMaxSpan = 12;

class DecodeCache {
 public:
  // `views`: the relaxed code model's stale views, told of new code pages.
  explicit DecodeCache(Bus& bus, CodeViews* views = nullptr);
  DecodeCache(const DecodeCache&) = delete;
  DecodeCache& operator=(const DecodeCache&) = delete;

  // The entries of the RAM page starting at `page_base` (created on demand;
  // marks the page as holding code so stores to it are noticed).
  Insn* page(uint64_t page_base);
  // Marks a page as holding code without creating entries (used for the
  // page a page-crossing instruction reaches into).
  void watch_page(uint64_t page_base);
  // Resets every entry whose instruction could overlap [addr, addr+size).
  void invalidate(uint64_t addr, uint64_t size);
  // Resets everything (the host may ask for a full flush, e.g. after
  // restoring a checkpoint).
  void flush();

  uint64_t invalidations() const { return invalidations_; }

 private:
  // Two guard entries follow the last halfword: sequential execution that
  // runs off the page lands on one of them (2048 after a 2-byte instruction
  // at offset 0xffe... or 2049 after a 4-byte one) and goes back to fetch.
  // Aligned so that the entries of one I-cache line (at most 256 bytes:
  // 128 entries of 32 bytes) share every address bit above theirs
  // (Hart::other_line).
  struct alignas(4096) Page {
    Insn insns[kInsnsPerPage + 2];
  };
  // Resets entry k of a page and every fused group that depends on it.
  void reset(Insn* insns, unsigned k);
  CodePages<Page> pages_;
  uint64_t invalidations_ = 0;
};

// The entry every slot starts with, and the guard entry.
Insn decode_stub();
Insn page_end_guard();

}  // namespace ksim::rv64
