// Code as each CPU sees it (--code-model, docs/CODE_MODEL.md).
//
// The decode caches are shared and always hold what memory holds. Under
// the relaxed model each CPU also has a *stale view*: the old bytes of
// stores into code that it may not see yet, each with the cycle it was made
// at. A CPU with a stale view leaves its fast path and fetches through its
// core's slow path, which overlays the view on memory and decodes outside
// the shared cache; it drops the view when it serialises (x86) or executes
// fence.i (RV64), and each stored range when it expires
// (timing::kStaleCodeMaxCycles). A CPU with an empty view runs exactly as
// under the strict model: nothing here is consulted per instruction.
//
// The old bytes come from a copy of each code page taken when the page
// became a code page and kept equal to memory by the store notifications
// (the bus notifies after a store, when the old bytes are gone): 4 KiB per
// page that holds code, nothing under the strict model.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cpu/code_model.hpp"
#include "cpu/timing.hpp"
#include "mem/bus.hpp"

namespace ksim {

// One store a CPU does not see yet: the bytes at [addr, addr+len) before
// it, who made it and when.
struct StaleRange {
  uint64_t addr = 0;
  uint64_t store_cycle = 0;
  int32_t storer = 0;
  uint8_t len = 0;
  bool reported = false;  // a stale_fetch event was emitted for it
  uint8_t old[timing::kCodeStoreGranule] = {};
  // The cycle it ends without a synchronisation: under timing v1 the
  // store's cycle plus timing::kStaleCodeMaxCycles; under v2 never (the
  // I-cache line's eviction or the fetch window's end ends it instead).
  uint64_t expires = 0;
  // Timing v2 with a coherent I-cache (x86): the bytes the CPU had fetched
  // ahead when the store was made, [window_lo, window_hi). A fetch outside
  // them, or after a taken jump, fetches again from the I-cache (which
  // the store reached) and ends the range. Both 0: no window.
  uint64_t window_lo = 0, window_hi = 0;
  bool window_entered = false;  // the CPU fetched at window_lo since the store
  uint64_t expiry() const { return expires; }
};

// The stale views of a machine's CPUs, shared by its cores.
class CodeViews {
 public:
  // `storer_sees_own`: whether a CPU sees its own stores at once (x86) or
  // only after it synchronises like everyone else (RV64's fence.i).
  CodeViews(Bus& bus, int cpus, CodeModel model, bool storer_sees_own);
  CodeViews(const CodeViews&) = delete;
  CodeViews& operator=(const CodeViews&) = delete;

  CodeModel model() const { return model_; }
  // The page holding `addr` became a code page (CodePages::watch): copy
  // its bytes.
  void watch(uint64_t addr);

  // Whether `cpu` has any stale range (the cores test this where they
  // already leave their fast paths).
  bool stale(int cpu) const { return stale_[static_cast<size_t>(cpu)]; }
  // The same as one byte a core keeps a pointer to: its per-step test is
  // one load (stepping and the reference schedule test it every step).
  const uint8_t* stale_flag(int cpu) const { return &stale_[static_cast<size_t>(cpu)]; }
  // Drops the ranges of `cpu` that have expired at `cycle`; true when its
  // view is still stale.
  bool expire(int cpu, uint64_t cycle) {
    View& v = views_[static_cast<size_t>(cpu)];
    if (cycle >= v.min_expiry) drop_expired(v, cycle);
    return !v.ranges.empty();
  }
  // Whether a stale range of `cpu` overlaps [addr, addr+len).
  bool overlaps(int cpu, uint64_t addr, unsigned len) const;
  // The bytes `cpu`'s next fetch at `addr` would see: memory overlaid with
  // its stale view (the oldest store's old bytes win). Returns the bytes
  // read: up to `n`, fewer at the end of RAM, 0 outside it.
  size_t read(int cpu, uint64_t addr, uint8_t* out, size_t n) const;
  // `cpu` executes the instruction at [addr, addr+len) from its view, at
  // `cycle`: when that differs from memory, each stale range behind the
  // difference is reported once (on_stale_fetch).
  void note_fetch(int cpu, uint64_t cycle, uint64_t addr, unsigned len);
  // `cpu` serialised at `cycle`: drops every store made before that in the
  // global (cycle, CPU) order, and reports them (on_sync). Stores and
  // serialisations are ordered by their stamps, not by the host order in
  // which they are handled: two schedules that give the same run may
  // handle a store and another CPU's serialisation a few cycles apart in
  // either order (a later-stamped store stays; an earlier-stamped store
  // handled after the serialisation is never added, and is reported at the
  // serialisation's place). A store into code puts back every CPU running
  // ahead before it is handled (mem/ownership.hpp), so the serialisation
  // it is compared with is one the CPU has really made.
  void serialize(int cpu, uint64_t cycle);
  // The same for a CPU whose view is empty (the cores' cheap case): only
  // the serialisation's cycle is kept.
  void note_serialized(int cpu, uint64_t cycle) {
    View& v = views_[static_cast<size_t>(cpu)];
    if (cycle < v.synced) return;
    v.synced = cycle;
    if (on_mark) v.synced_mark = on_mark();
  }
  // The serialisation stamp is part of a CPU's run-ahead point: a CPU put
  // back did not serialise at the cycles it had run ahead to (its view is
  // empty while it runs ahead, so the stamp is all there is).
  std::pair<uint64_t, uint64_t> sync_point(int cpu) const {
    const View& v = views_[static_cast<size_t>(cpu)];
    return {v.synced, v.synced_mark};
  }
  void set_sync_point(int cpu, std::pair<uint64_t, uint64_t> p) {
    View& v = views_[static_cast<size_t>(cpu)];
    v.synced = p.first;
    v.synced_mark = p.second;
  }
  // Drops the whole view of `cpu`, whatever the stamps (instant patching:
  // every CPU sees the new text at once); reports a non-empty one at `cycle`.
  void drop_all(int cpu, uint64_t cycle);

  // A CPU's view gained its first range: it must leave its fast path (the
  // platform ends its slice).
  std::function<void(int cpu)> on_stale;
  // Timing v2: whether `cpu` holds a copy of the bytes [addr, addr+len) a
  // store is replacing (its non-coherent I-cache holds the line; or, with
  // a coherent one, they lie in what it fetched ahead of its PC, whose
  // bounds it sets in `r`). Unset (timing v1): every CPU may, until
  // timing::kStaleCodeMaxCycles after the store.
  std::function<bool(int cpu, uint64_t addr, unsigned len, StaleRange& r)> holds_copy;
  // Timing v2: `cpu`'s I-cache lost the line at `line_addr` (`bytes`
  // long): the old code it held there goes (no event, like an expiry).
  void drop_line(int cpu, uint64_t line_addr, unsigned bytes);
  // Timing v2, coherent I-cache: `cpu` fetches at `pc`, after the
  // instruction that ended at `prev_end` (a taken jump when they differ).
  // A range's first fetch must be at the PC the CPU had when the store was
  // made; after that only a fetch that follows on in the window keeps it.
  // True when the view is still stale.
  bool fetch_from(int cpu, uint64_t pc, uint64_t prev_end);
  // Whether the CPU has fetched anything since reset: one that has not
  // holds no copy of any code, so stores before its first instruction
  // (a probe registered before the run) are simply there when it starts.
  // Unset: every CPU has.
  std::function<bool(int cpu)> has_run;
  // Events (sim/events.hpp: stale_fetch, code_sync); unset, nothing is built.
  std::function<void(int cpu, uint64_t cycle, uint64_t addr, const StaleRange&)> on_stale_fetch;
  // `mark`: the event's place among those of its (cycle, CPU), taken from
  // on_mark at the serialisation (a store handled after it, but made before
  // it, is reported later at that place).
  std::function<void(int cpu, uint64_t cycle, uint64_t ranges, uint64_t mark)> on_sync;
  std::function<uint64_t()> on_mark;

  // Checkpoints: the views are machine state; the page copies follow RAM.
  const std::vector<StaleRange>& ranges(int cpu) const { return views_[static_cast<size_t>(cpu)].ranges; }
  void set_ranges(int cpu, std::vector<StaleRange> r);
  // RAM was replaced (a checkpoint restore): copies from RAM again.
  void resync();
  // Where the code is: the loaded image's executable segments, [start,
  // end) pairs. Only stores there leave stale views, so data that shares
  // a page with code (small guests link .data right after .text) never
  // makes a CPU stale. Empty (no image, or one without segment flags):
  // any store into a code page may.
  void set_code_ranges(std::vector<std::pair<uint64_t, uint64_t>> r) { code_ranges_ = std::move(r); }
  const std::vector<std::pair<uint64_t, uint64_t>>& code_ranges() const { return code_ranges_; }
  uint64_t stores_recorded() const { return stores_recorded_; }

 private:
  struct View {
    std::vector<StaleRange> ranges;  // in store order, oldest first
    uint64_t min_expiry = ~uint64_t{0};
    uint64_t synced = 0;       // the cycle of the CPU's latest serialisation
    uint64_t synced_mark = 0;  // its on_mark
  };
  // Whether a store stamped (cycle, storer) comes before `cpu`'s
  // serialisation at `at` in the global (cycle, CPU) order (at one cycle,
  // the lower CPU steps first; a CPU's own store and serialisation are in
  // program order).
  static bool before(uint64_t cycle, int storer, uint64_t at, int cpu) {
    return cycle != at ? cycle < at : storer <= cpu;
  }
  void on_store(const Accessor& who, uint64_t addr, unsigned size);
  void store_piece(const Accessor& who, uint64_t addr, unsigned len);
  void add(int cpu, const StaleRange& r);
  bool in_code(uint64_t addr, unsigned len) const;
  void drop_expired(View& v, uint64_t cycle);
  // After any change to v's ranges: its earliest expiry and stale flag.
  void recompute(View& v);
  uint8_t* copy_of(uint64_t addr);

  Bus& bus_;
  CodeModel model_;
  bool storer_sees_own_;
  std::vector<View> views_;
  std::unique_ptr<uint8_t[]> stale_;  // per CPU: its view is not empty
  std::vector<std::pair<uint64_t, uint64_t>> code_ranges_;
  std::unordered_map<uint64_t, std::unique_ptr<uint8_t[]>> pages_;
  uint64_t last_base_ = ~uint64_t{0};  // copy_of()'s last page
  uint8_t* last_copy_ = nullptr;
  uint64_t stores_recorded_ = 0;
};

}  // namespace ksim
