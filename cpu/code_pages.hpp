// The page map under both decode caches (cpu/rv64/decode_cache.*, the x86
// DecodeCacheX86): RAM page base -> that ISA's page of decoded entries.
//
// A page is created on first execution and flagged kPageHasCode, so every
// store into it (from any CPU, a device or the host) reaches the owning
// cache's invalidate() before the store instruction completes. Pages live
// as long as the machine, so a CPU may keep a pointer to the page it runs
// from across invalidations. Lookups remember the last page found: stores
// into code come in runs (a loader, the kprobes engine, data beside code),
// so most of them cost no hash lookup.
#pragma once
#include <cstdint>
#include <memory>
#include <unordered_map>

#include "cpu/code_view.hpp"
#include "mem/bus.hpp"

namespace ksim {

template <typename Page>
class CodePages {
 public:
  // `invalidate(addr, size)` is called for every store into a code page;
  // `views` (the relaxed code model's stale views) learns of each new code
  // page.
  template <typename OnStore>
  CodePages(Bus& bus, OnStore invalidate, CodeViews* views = nullptr) : bus_(bus), views_(views) {
    bus_.on_store_to_flagged(kPageHasCode,
                             [invalidate](const Accessor&, uint64_t addr, unsigned size) { invalidate(addr, size); });
  }
  CodePages(const CodePages&) = delete;
  CodePages& operator=(const CodePages&) = delete;

  // The page at `base`, created (by `make()`) and flagged on first use.
  template <typename Make>
  Page* get(uint64_t base, Make make) {
    if (base == last_base_) return last_page_;
    auto& slot = pages_[base];
    if (!slot) {
      slot = make();
      watch(base);
    }
    remember(base, slot.get());
    return slot.get();
  }
  // The page at `base` if it exists, else nullptr (no page is created).
  Page* find(uint64_t base) {
    if (base == last_base_) return last_page_;
    auto it = pages_.find(base);
    if (it == pages_.end()) return nullptr;
    remember(base, it->second.get());
    return last_page_;
  }
  // Flags a page as holding code without creating entries (the page a
  // page-crossing instruction reaches into).
  void watch(uint64_t base) {
    if (!bus_.ram().contains(base, 1)) return;
    if (views_) views_->watch(base);
    bus_.ram().set_page_flag(base, kPageHasCode);
  }
  template <typename F>
  void for_each(F f) {
    for (auto& [base, p] : pages_) f(*p);
  }

 private:
  void remember(uint64_t base, Page* p) {
    last_base_ = base;
    last_page_ = p;
  }
  Bus& bus_;
  CodeViews* views_;
  std::unordered_map<uint64_t, std::unique_ptr<Page>> pages_;
  uint64_t last_base_ = ~uint64_t{0};
  Page* last_page_ = nullptr;
};

}  // namespace ksim
