#include "mem/ownership.hpp"

#include <algorithm>
#include <cstring>
#include <new>

namespace ksim {

namespace {
// Zeroed tables from calloc: the host backs only the parts that are used.
uint16_t* zeroed(uint64_t n) {
  void* p = std::calloc(n, sizeof(uint16_t));
  if (!p) throw std::bad_alloc();
  return static_cast<uint16_t*>(p);
}
// Generation 0 is the disabled state (write tables are all 0 then); the
// last one leaves room below kReadAlways.
constexpr uint16_t kLastGen = 0xfffe;
}  // namespace

PageOwners::PageOwners(Bus& bus, int cpus)
    : bus_(bus),
      ram_(bus.ram()),
      pages_(bus.ram().size() >> kPageShift),
      blocks_(bus.ram().size() >> kBlockShift),
      owner_(pages_, kUnowned) {
  cpus_.resize(static_cast<size_t>(cpus));
  for (PerCpu& c : cpus_) {
    c.read.reset(zeroed(pages_));
    c.write.reset(zeroed(blocks_));
    // Disabled: every read granted (kReadAlways >= 0), every write
    // (write[b] == 0 == gen).
    std::fill_n(c.read.get(), pages_, kReadAlways);
    c.gen = 0;
  }
}

void PageOwners::enable(Resolver* r) {
  resolver_ = r;
  std::fill(owner_.begin(), owner_.end(), kUnowned);
  for (PerCpu& c : cpus_) {
    c.ahead = false;
    c.undo_blocks.clear();
    std::fill_n(c.read.get(), pages_, r ? uint16_t{0} : kReadAlways);
    std::memset(c.write.get(), 0, blocks_ * sizeof(uint16_t));
    c.gen = r ? 1 : 0;
  }
}

bool PageOwners::PerCpu::wrote(uint64_t page) const {
  const uint16_t* w = write.get() + page * kBlocksPerPage;
  for (unsigned b = 0; b < kBlocksPerPage; ++b)
    if (w[b] == gen) return true;
  return false;
}

void PageOwners::PerCpu::drop_writes(uint64_t page) {
  std::fill_n(write.get() + page * kBlocksPerPage, kBlocksPerPage, uint16_t{0});
}

bool PageOwners::access(int cpu, uint64_t cycle, uint64_t addr, unsigned size, bool write, AccessMode mode) {
  const uint64_t off = addr - ram_.base(), end = off + size - 1;
  for (uint64_t p = off >> kPageShift; p <= end >> kPageShift; ++p) {
    const uint64_t lo = std::max(off, p << kPageShift) >> kBlockShift;
    const uint64_t hi = std::min(end, ((p + 1) << kPageShift) - 1) >> kBlockShift;
    if (!page_access(cpu, cycle, p, lo, hi, write, mode)) return false;
  }
  return true;
}

void PageOwners::grant_writes(PerCpu& c, uint64_t first_block, uint64_t last_block, bool copy) {
  for (uint64_t b = first_block; b <= last_block; ++b) {
    if (c.write[b] == c.gen) continue;
    if (copy) {
      const size_t n = c.undo_blocks.size();
      if (n == c.undo_room) {  // grow (no zero-filling: blocks are copied in)
        const size_t room = std::max<size_t>(64, 2 * n);
        std::unique_ptr<uint8_t[]> bigger(new uint8_t[room * kBlockSize]);
        if (n) std::memcpy(bigger.get(), c.undo_bytes.get(), n * kBlockSize);
        c.undo_bytes = std::move(bigger);
        c.undo_room = room;
      }
      std::memcpy(c.undo_bytes.get() + n * kBlockSize, ram_.host() + (b << kBlockShift), kBlockSize);
      c.undo_blocks.push_back(static_cast<uint32_t>(b));
    }
    c.write[b] = c.gen;
  }
}

bool PageOwners::page_access(int cpu, uint64_t cycle, uint64_t p, uint64_t first_block, uint64_t last_block,
                             bool write, AccessMode mode) {
  PerCpu& c = cpus_[static_cast<size_t>(cpu)];
  uint8_t& o = owner_[p];
  const auto me = static_cast<uint8_t>(cpu);
  if (o == kUnowned) o = me;
  if (mode != AccessMode::exact) {
    // Ahead of the exact schedule (or replaying such a run): only what no
    // other CPU can observe.
    if (o == me) {
      c.read[p] = kReadAlways;
      if (write) grant_writes(c, first_block, last_block, mode == AccessMode::ahead);
      return true;
    }
    if (o == kReadShared && !write) {
      c.read[p] = kReadAlways;
      return true;
    }
    return false;
  }
  // In exact order everything is allowed; the page's state records who
  // may touch it while running ahead later.
  if (o == me) {
    c.read[p] = kReadAlways;
    if (write) grant_writes(c, first_block, last_block, false);
    return true;
  }
  if (o == kShared) {
    // Good until this CPU next runs ahead (a new generation).
    if (c.read[p] < c.gen) c.read[p] = c.gen;
    if (write) grant_writes(c, first_block, last_block, false);
    return true;
  }
  if (o == kReadShared) {
    if (!write) {
      c.read[p] = kReadAlways;
      return true;
    }
    // The first store since the page turned read-shared: whoever read it
    // ahead of this moment read what it held before, so is put back, and
    // every CPU's grants go (a later read ahead is a sync point).
    resolve_touching(cpu, cycle, p, false);
    for (PerCpu& k : cpus_) {
      k.read[p] = 0;
      k.drop_writes(p);
    }
    o = kShared;
    c.read[p] = c.gen;
    grant_writes(c, first_block, last_block, false);
    return true;
  }
  // Another CPU owns it. If it runs ahead and may have touched the page
  // (a store, when this is a load), what it did there lies in this CPU's
  // future: put it back first.
  const int k = o;
  PerCpu& kc = cpus_[static_cast<size_t>(k)];
  if (kc.ahead && (write ? kc.touched(p) : kc.wrote(p))) resolver_->resolve(k, cycle, cpu);
  kc.drop_writes(p);
  if (write) {
    o = kShared;
    kc.read[p] = 0;
    c.read[p] = c.gen;
    grant_writes(c, first_block, last_block, false);
  } else {
    o = kReadShared;
    c.read[p] = kReadAlways;
  }
  return true;
}

bool PageOwners::flagged_store(int cpu, uint64_t cycle, AccessMode mode, uint8_t flags) {
  if (mode != AccessMode::exact) return false;
  // A CPU ahead may have fetched the code this store changes; a tohost
  // store ends the run. (LR reservations need nothing: SC is a sync
  // point, so a CPU ahead never depends on its reservation.)
  if (flags & (kPageHasCode | kPageWatched)) resolve_all(cpu, cycle);
  return true;
}

bool PageOwners::before_decode(int cpu, uint64_t cycle, uint64_t addr, AccessMode mode) {
  if (!resolver_ || !ram_.contains(addr, 1)) return true;
  const uint64_t p = page_of(addr);
  if (mode == AccessMode::exact) {
    resolve_touching(cpu, cycle, p, true);
    return true;
  }
  for (size_t k = 0; k < cpus_.size(); ++k)
    if (static_cast<int>(k) != cpu && cpus_[k].ahead && cpus_[k].wrote(p)) return false;
  return true;
}

void PageOwners::before_host_access(int cpu, uint64_t cycle, uint64_t addr, uint64_t len, bool write) {
  if (!resolver_ || len == 0 || !ram_.contains(addr, len)) return;
  for (uint64_t p = page_of(addr); p <= page_of(addr + len - 1); ++p) {
    if (write && (ram_.flag_table()[p] & kPageHasCode)) {
      resolve_all(cpu, cycle);
      return;
    }
    resolve_touching(cpu, cycle, p, !write);
  }
}

void PageOwners::resolve_touching(int cpu, uint64_t cycle, uint64_t page, bool written_only) {
  for (size_t k = 0; k < cpus_.size(); ++k) {
    const PerCpu& kc = cpus_[k];
    if (static_cast<int>(k) == cpu || !kc.ahead) continue;
    if (written_only ? kc.wrote(page) : kc.touched(page)) resolver_->resolve(static_cast<int>(k), cycle, cpu);
  }
}

void PageOwners::resolve_mask(int cpu, uint64_t cycle, uint64_t mask) {
  for (size_t k = 0; k < cpus_.size(); ++k)
    if (static_cast<int>(k) != cpu && cpus_[k].ahead && ((mask >> k) & 1))
      resolver_->resolve(static_cast<int>(k), cycle, cpu);
}

void PageOwners::begin_ahead(int cpu) {
  PerCpu& c = cpus_[static_cast<size_t>(cpu)];
  if (++c.gen > kLastGen) {  // generations ran out: start again
    c.gen = 1;
    std::memset(c.write.get(), 0, blocks_ * sizeof(uint16_t));
    for (uint64_t p = 0; p < pages_; ++p)
      if (c.read[p] != kReadAlways) c.read[p] = 0;
  }
  c.ahead = true;
  c.undo_blocks.clear();
}

void PageOwners::commit(int cpu) {
  PerCpu& c = cpus_[static_cast<size_t>(cpu)];
  c.ahead = false;
  c.undo_blocks.clear();
}

void PageOwners::undo(int cpu) {
  PerCpu& c = cpus_[static_cast<size_t>(cpu)];
  for (size_t i = 0; i < c.undo_blocks.size(); ++i) {
    const uint64_t b = c.undo_blocks[i], addr = ram_.base() + (b << kBlockShift);
    std::memcpy(ram_.host() + (b << kBlockShift), c.undo_bytes.get() + i * kBlockSize, kBlockSize);
    // Someone may have decoded the bytes being taken back (this CPU, from
    // a page it wrote while ahead): the decode cache must forget them.
    if (ram_.page_flags(addr) & kPageHasCode)
      bus_.notify_flagged_store(Accessor{cpu, 0}, addr, static_cast<unsigned>(kBlockSize));
  }
  commit(cpu);
}

}  // namespace ksim
