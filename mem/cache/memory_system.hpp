// Timing model v2's memory (issue 23): every CPU's L1 data cache, the
// last-level caches (one per `l2.shared_by` CPUs) and memory, with MESI
// between the L1s, priced by a machine profile (mem/cache/profile.hpp).
// Caches hold tags and states only: RAM always holds the bytes, so the
// caches decide what an access costs and never what it reads.
//
// Exactness under run-ahead (mem/ownership.hpp): a hit changes nothing
// (replacement is pseudo-random, drawn on fills only), so a CPU running
// ahead may hit freely; anything else (a miss, an upgrade, the first
// store to an exclusive line) changes shared state and is a sync point,
// made in exact order. The block grants already put back a CPU ahead that
// touched a block another CPU's access changes hands; the one effect they
// cannot see is an inclusive L2 evicting a line from another CPU's L1, and
// that CPU, if it runs ahead, is put back first here.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "mem/cache/cache.hpp"
#include "mem/cache/coherence.hpp"
#include "mem/cache/hit_filter.hpp"
#include "mem/cache/profile.hpp"
#include "mem/cache/store_buffer.hpp"

namespace ksim {

class PageOwners;

// What one CPU's accesses did (exact order; L1 hits are counted by the
// core, which can undo them with a put-back).
struct CacheStats {
  // Instruction fetch: lines fetched that missed the L1I (hits are counted
  // by the core), lines a store or an inclusive L2 took from it.
  uint64_t l1i_misses = 0, l1i_invalidations = 0;
  uint64_t l1_misses = 0;          // loads and stores that missed their L1 (upgrades excluded)
  uint64_t upgrades = 0;           // stores to a shared copy
  uint64_t l2_hits = 0, l2_misses = 0;
  uint64_t transfers = 0;          // lines supplied by another CPU's L1 (held modified)
  uint64_t invalidations = 0;      // other CPUs' copies this CPU's stores invalidated
  uint64_t writebacks = 0;         // modified lines this CPU's L1 gave up
  uint64_t back_invalidations = 0; // lines an inclusive L2 took from this CPU's L1
  uint64_t stall_cycles = 0;       // cycles beyond the L1 hit latency
  // Store buffer (tso, rvwmo): stores buffered, loads served from the
  // buffer, cycles waiting for a free entry, cycles draining it (fences,
  // atomics, traps, device accesses).
  uint64_t buffered_stores = 0, forwarded_loads = 0, buffer_full_cycles = 0, drain_cycles = 0;
};

class MemorySystem {
 public:
  MemorySystem(const MachineProfile& p, int cpus, uint64_t seed);

  const MachineProfile& profile() const { return p_; }
  int cpus() const { return static_cast<int>(l1_.size()); }
  // The L2 a CPU's misses go to.
  int cluster(int cpu) const { return p_.l2_shared_by ? cpu / static_cast<int>(p_.l2_shared_by) : 0; }
  // CPUs that run ahead are put back through `owners` (nullptr: none do).
  void connect(PageOwners* owners) { owners_ = owners; }

  // The L1 hit test of both cores: [addr, addr+size) lies in one line that
  // `cpu`'s L1 holds in a state that allows the access without telling
  // anyone (any valid state for a load, modified for a store).
  bool hit(int cpu, uint64_t addr, unsigned size, bool write) const {
    if (((addr ^ (addr + size - 1)) >> line_shift_) != 0) return false;
    return l1_[static_cast<size_t>(cpu)].holds(addr, write ? kMesiM : kMesiS);
  }
  // The fast paths' test (the cores inline its first half, with filter()):
  // the access may be made directly on RAM, an L1 hit with nothing in the
  // CPU's store buffer in its way (mem/cache/hit_filter.hpp). False sends it
  // to the precise path, which charges a miss and buffers a store.
  bool direct(int cpu, uint64_t addr, unsigned size, bool write) {
    return filters_[static_cast<size_t>(cpu)].covers(addr, size, write, line_shift_) ||
           direct_slow(cpu, addr, size, write);
  }
  // The filter's miss: the tag lookup and the buffer, and the line goes
  // into the filter when the answer is yes.
  bool direct_slow(int cpu, uint64_t addr, unsigned size, bool write);
  const HitFilter* filter(int cpu) const { return &filters_[static_cast<size_t>(cpu)]; }
  unsigned line_shift() const { return line_shift_; }
  // After a checkpoint replaced the caches and buffers.
  void forget_filters() {
    for (HitFilter& f : filters_) f.clear();
  }
  // --- Instruction caches ---------------------------------------------------
  // Whether `cpu`'s L1I holds `addr`'s line (the cores' fetch test: a hit
  // changes nothing, so a CPU running ahead may hit freely).
  bool ihit(int cpu, uint64_t addr) const { return l1i_[static_cast<size_t>(cpu)].holds(addr, kIValid); }
  // A fetch that missed, in exact order, in the step that began at
  // `cycle`: fills the line from the L2, memory or another CPU's modified
  // copy; the cycles it costs beyond an I-cache hit.
  uint32_t ifetch(int cpu, uint64_t cycle, uint64_t addr);
  // fence.i on a core whose I-cache is not coherent: the whole L1I goes
  // (the U54's FENCE.I flushes it, FU540 §4.1); the refills are the cost.
  void iflush(int cpu);
  // A store by `cpu` changed [addr, addr+size) in a code page. A coherent
  // I-cache (x86) loses the line everywhere, the storer's included (the
  // SDM's self-modifying-code detection); a non-coherent one keeps it.
  void code_store(int cpu, uint64_t cycle, uint64_t addr, unsigned size);
  // `cpu`'s L1I lost a line (its own fill's victim, an inclusive L2's
  // eviction, a coherent store, fence.i): what it held of old code goes.
  std::function<void(int cpu, uint64_t line_addr)> on_ievict;
  // Every miss and upgrade, in exact order (the machine's cache_miss
  // events, sim/events.hpp): `cycle` is the step's, `what` a CacheAccess,
  // `from` a CacheSource. Unset (the default), nothing is built.
  std::function<void(int cpu, uint64_t cycle, uint64_t line_addr, unsigned what, unsigned from)> on_miss;
  unsigned line_bytes() const { return 1u << line_shift_; }

  // An access in exact order, in the CPU's step that began at `cycle`: the
  // cycles it costs beyond an L1 hit (0 for a hit). Moves lines between the caches; a store, an atomic or a locked
  // instruction (`write`) takes the line exclusive.
  uint32_t access(int cpu, uint64_t cycle, uint64_t addr, unsigned size, bool write);

  // --- Store buffers (mem/cache/store_buffer.hpp) ---------------------------
  MemoryModel model() const { return model_; }
  void set_model(MemoryModel m) { model_ = m; }
  // How a visible entry reaches RAM (the machine writes it and tells the
  // page's listeners, as a store does).
  std::function<void(int cpu, const BufferedStore&)> apply;
  bool buffered(int cpu) const { return !buffers_[static_cast<size_t>(cpu)].empty(); }
  const StoreBuffer& buffer(int cpu) const { return buffers_[static_cast<size_t>(cpu)]; }
  std::vector<StoreBuffer>& all_buffers() { return buffers_; }
  struct StoreResult {
    uint64_t stall = 0;     // cycles the CPU waits (a miss under sc, a full buffer)
    bool hit = false;       // the line was modified in the L1 already
    bool buffered = false;  // the value is in the buffer, not in RAM
  };
  // A store in exact order (the caller writes RAM unless it is buffered).
  // `may_buffer` false: it must be visible at once (a store into a watched
  // page, after the buffer was drained): it waits for its line, as under sc.
  // `position`: where the CPU's step began (CPUs ahead are put back there).
  StoreResult store(int cpu, uint64_t cycle, uint64_t position, uint64_t addr, unsigned size, uint64_t value,
                    bool may_buffer = true);
  // A load by `cpu` of [addr, addr+size): the buffer's newest store that
  // covers it, if one does (forwarded); a store that covers part of it
  // must become visible first (`wait` is the cycle it does).
  enum class Forward { none, full, partial };
  Forward forward(int cpu, uint64_t addr, unsigned size, uint64_t& value, uint64_t& wait);
  // `cpu` itself, in its step at `position`: its entries visible by
  // `cycle` reach RAM (if no other CPU's step put them there already) and
  // leave the buffer.
  void apply_due(int cpu, uint64_t cycle, uint64_t position);
  // Before any CPU's step at `cycle`: every entry visible by then is in RAM
  // (each stays in its buffer until its own CPU passes it).
  void apply_due_all(uint64_t cycle);
  // Waits for the whole buffer: the cycle the last entry is visible (at
  // least `cycle`); everything is applied.
  uint64_t drain(int cpu, uint64_t cycle, uint64_t position);
  // What both cores do with their buffers. A load of [addr, addr+size) at
  // `cycle` in the step at `position`: true with `value` when a buffered
  // store covers it; a store covering part of it is waited for (`cycle`
  // moves on) and the load then reads RAM (false).
  bool load_forward(int cpu, uint64_t& cycle, uint64_t position, uint64_t addr, unsigned size, uint64_t& value);
  // Before a fence, an atomic, WFI or HLT: true when no buffered store is
  // still on its way; else `cycle` moves to when the last is visible and
  // the instruction must run again then (false).
  bool stores_visible(int cpu, uint64_t& cycle, uint64_t position);
  // The cycle the last buffered store becomes visible (at least `cycle`),
  // counted as drain cycles; nothing is applied (the machine applies each
  // at its cycle).
  uint64_t wait_for(int cpu, uint64_t cycle);
  // The earliest visibility among the other CPUs' buffers (kNone: none).
  uint64_t next_visible_except(int cpu) const;

  const CacheStats& stats(int cpu) const { return stats_[static_cast<size_t>(cpu)]; }
  // The state of `addr`'s line in `cpu`'s L1, and whether its L2 holds it.
  bool l1i_holds(int cpu, uint64_t addr) const { return ihit(cpu, addr); }
  Mesi l1_state(int cpu, uint64_t addr) const { return static_cast<Mesi>(l1_[static_cast<size_t>(cpu)].state(addr)); }
  bool l2_holds(int cluster, uint64_t addr) const { return l2_[static_cast<size_t>(cluster)].find(addr) >= 0; }
  int clusters() const { return static_cast<int>(l2_.size()); }

  // Checkpoints: every cache's raw state and the counters.
  std::vector<Cache*> all_caches();
  std::vector<CacheStats>& all_stats() { return stats_; }

 private:
  uint32_t access_line(int cpu, uint64_t cycle, uint64_t line_addr, bool write);
  // Puts `line_addr` into cluster `cl`'s L2 (dirty: a write-back), evicting
  // as the profile says.
  void l2_fill(int cpu, uint64_t cycle, int cl, uint64_t line_addr, bool dirty);
  // Where a missed line comes from for `cpu`: `owner`'s modified copy (a
  // transfer), its L2, or memory (which fills the L2); the latency, counted,
  // and in `from` the source as a cache_miss event gives it (0 L2, 1
  // memory, 2 + k CPU k).
  uint32_t supply(int cpu, uint64_t cycle, uint64_t la, int owner, unsigned& from);
  // `cpu`'s L1 gives up a victim (a modified one is written back).
  void l1_victim(int cpu, uint64_t cycle, const Cache::Victim& v);

  MachineProfile p_;
  unsigned line_shift_ = 6;
  static constexpr uint8_t kIValid = 1;
  std::vector<Cache> l1i_; // per CPU: valid or not
  std::vector<Cache> l1_;  // per CPU, MESI states
  std::vector<Cache> l2_;  // per cluster: 1 clean, 2 dirty
  std::vector<CacheStats> stats_;
  std::vector<StoreBuffer> buffers_;
  std::vector<HitFilter> filters_;  // per CPU; sized once (the cores keep pointers)
  MemoryModel model_ = MemoryModel::sc;
  uint32_t buffer_entries_ = 0;
  PageOwners* owners_ = nullptr;
};

}  // namespace ksim
