#include "cpu/rv64/decode_cache.hpp"

#include "cpu/rv64/semantics.hpp"

namespace ksim::rv64 {

Insn decode_stub() {
  Insn in{};
  in.fast = &fast_decode;
  in.exec = &exec_decode;
  in.op = Op::illegal;
  return in;
}

Insn page_end_guard() {
  Insn in{};
  in.fast = &fast_go_precise;
  in.exec = &exec_page_end;
  in.op = Op::illegal;
  return in;
}

DecodeCache::DecodeCache(Bus& bus, CodeViews* views)
    : pages_(bus, [this](uint64_t addr, unsigned size) { invalidate(addr, size); }, views) {}

Insn* DecodeCache::page(uint64_t page_base) {
  return pages_
      .get(page_base,
           [] {
             auto p = std::make_unique<Page>();
             const Insn stub = decode_stub();
             for (unsigned k = 0; k < kInsnsPerPage; ++k) p->insns[k] = stub;
             p->insns[kInsnsPerPage] = p->insns[kInsnsPerPage + 1] = page_end_guard();
             return p;
           })
      ->insns;
}

void DecodeCache::watch_page(uint64_t page_base) { pages_.watch(page_base); }

void DecodeCache::invalidate(uint64_t addr, uint64_t size) {
  // An entry starting up to kMaxSpan - 2 bytes before `addr` may cover it:
  // a 32-bit instruction starts on any halfword, and a fused group runs two
  // or three instructions from its first entry (Insn::span).
  uint64_t first = (addr & ~uint64_t{1}) - (kMaxSpan - 2);
  uint64_t end = addr + size;
  for (uint64_t a = first; a < end; a += 2) {
    Page* page = pages_.find(a & ~(kPageSize - 1));
    if (!page) continue;
    Insn* insns = page->insns;
    const unsigned k = static_cast<unsigned>((a & (kPageSize - 1)) >> 1);
    if (insns[k].exec != &exec_decode && a + insns[k].span > addr) reset(insns, k);
  }
}

void DecodeCache::reset(Insn* insns, unsigned k) {
  insns[k] = decode_stub();
  ++invalidations_;
  // A fused group that runs the instruction of entry k reads that entry's
  // fields: it goes too (and so on backwards). Its first entry is at most
  // kMaxSpan - 4 bytes before (a triple of 32-bit instructions) on the same
  // page (groups never cross a page end). An entry whose span reaches past
  // k's first byte is taken to depend on k (it may only cover k's bytes,
  // but resetting it then is merely redundant).
  for (unsigned back = 1; back <= (kMaxSpan - 4) / 2 && back <= k; ++back) {
    const Insn& p = insns[k - back];
    if (p.exec != &exec_decode && p.span > p.len && p.span > 2 * back) reset(insns, k - back);
  }
}

void DecodeCache::flush() {
  const Insn stub = decode_stub();
  pages_.for_each([&](Page& page) {
    for (unsigned k = 0; k < kInsnsPerPage; ++k) page.insns[k] = stub;
  });
}

}  // namespace ksim::rv64
