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
// The last generation leaves room below kReadAlways.
constexpr uint16_t kLastGen = 0xfffe;
}  // namespace

PageOwners::PageOwners(Bus& bus, int cpus)
    : bus_(bus), ram_(bus.ram()), blocks_(bus.ram().size() >> kBlockShift), owner_(blocks_, kUnowned),
      last_(blocks_, kUnowned),
      streak_(blocks_, 0),
      quiet_(blocks_, 0),
      flips_(blocks_, 0) {
  cpus_.resize(static_cast<size_t>(cpus));
  for (PerCpu& c : cpus_) {
    c.read.reset(zeroed(blocks_));
    c.write.reset(zeroed(blocks_));
    c.xwrite.reset(zeroed(blocks_));
  }
}

void PageOwners::enable(Resolver* r) {
  resolver_ = r;
  if (dirty_) {
    std::fill(owner_.begin(), owner_.end(), kUnowned);
    std::fill(last_.begin(), last_.end(), kUnowned);
    std::fill(streak_.begin(), streak_.end(), 0);
    std::fill(quiet_.begin(), quiet_.end(), 0);
    std::fill(flips_.begin(), flips_.end(), 0);
    for (PerCpu& c : cpus_) {
      std::memset(c.read.get(), 0, blocks_ * sizeof(uint16_t));
      std::memset(c.write.get(), 0, blocks_ * sizeof(uint16_t));
      std::memset(c.xwrite.get(), 0, blocks_ * sizeof(uint16_t));
    }
    dirty_ = false;
  }
  for (PerCpu& c : cpus_) {
    c.ahead = false;
    c.undo_blocks.clear();
    c.gen = r ? 1 : 0;
  }
}

bool PageOwners::access(int cpu, uint64_t cycle, uint64_t addr, unsigned size, bool write, AccessMode mode) {
  dirty_ = true;
  for (uint64_t b = block_of(addr); b <= block_of(addr + size - 1); ++b)
    if (!block_access(cpu, cycle, b, write, mode)) return false;
  return true;
}

void PageOwners::grant_write(PerCpu& c, uint64_t b, bool copy) {
  if (c.write[b] == c.gen) return;
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

bool PageOwners::block_access(int cpu, uint64_t cycle, uint64_t b, bool write, AccessMode mode) {
  PerCpu& c = cpus_[static_cast<size_t>(cpu)];
  uint8_t& o = owner_[b];
  const auto me = static_cast<uint8_t>(cpu);
  if (o == kUnowned) o = me;
  if (mode != AccessMode::exact) {
    // Ahead of the exact schedule (or replaying such a run): only what no
    // other CPU can observe.
    if (o == me) {
      c.read[b] = kReadAlways;
      if (write) grant_write(c, b, mode == AccessMode::ahead);
      return true;
    }
    if (o == kReadShared && !write) {
      c.read[b] = kReadAlways;
      return true;
    }
    return false;
  }
  // In exact order everything is allowed; the block's state records who
  // may touch it while running ahead later.
  if (o == me) {
    c.read[b] = kReadAlways;
    if (write) c.xwrite[b] = kWriteAlways;
    return true;
  }
  if (o == kShared && flips_[b] < kMaxFlips && take_back(c, me, b, write)) return true;
  if (o == kShared) {
    // Good until this CPU next runs ahead (a new generation).
    if (c.read[b] < c.gen) c.read[b] = c.gen;
    if (write) c.xwrite[b] = c.gen;
    return true;
  }
  if (o == kReadShared) {
    if (!write) {
      c.read[b] = kReadAlways;
      return true;
    }
    // The first store since the block turned read-shared: whoever read it
    // ahead of this moment read what it held before, so is put back, and
    // every CPU's grants go (a later read ahead is a sync point).
    resolve_touching(cpu, cycle, b, b, false);
    revoke(b, true);
    o = kShared;
    c.read[b] = c.gen;
    c.xwrite[b] = c.gen;
    return true;
  }
  // Another CPU owns it. If it runs ahead and may have touched the block
  // (stored into it, when this is a load), what it did there lies in this
  // CPU's future: put it back first.
  const int k = o;
  PerCpu& kc = cpus_[static_cast<size_t>(k)];
  if (kc.ahead && (write ? kc.touched(b) : kc.wrote(b))) resolver_->resolve(k, cycle, cpu);
  kc.write[b] = kc.xwrite[b] = 0;
  if (flips_[b] < kMaxFlips) ++flips_[b];
  last_[b] = me;
  streak_[b] = 0;
  if (write) {
    o = kShared;
    kc.read[b] = 0;
    c.read[b] = c.gen;
    c.xwrite[b] = c.gen;
  } else {
    o = kReadShared;
    c.read[b] = kReadAlways;
  }
  return true;
}

// A shared block in exact order (the thresholds: ownership.hpp). No CPU ahead can
// have touched it (every access to it is a sync point there), so it
// changes state without putting anybody back; the other CPUs' exact-order
// grants go, so their next access takes the slow path.
bool PageOwners::take_back(PerCpu& c, uint8_t me, uint64_t b, bool write) {
  if (last_[b] != me) {
    last_[b] = me;
    streak_[b] = 0;
  }
  quiet_[b] = write ? 0 : static_cast<uint8_t>(quiet_[b] + 1);
  if (quiet_[b] >= kQuietLoads) {
    revoke(b, false);
    owner_[b] = kReadShared;
    quiet_[b] = 0;
    ++flips_[b];
    c.read[b] = kReadAlways;
    return true;
  }
  if (++streak_[b] >= kTakeBackStreak) {
    revoke(b, true);
    owner_[b] = me;
    streak_[b] = 0;
    quiet_[b] = 0;
    c.read[b] = kReadAlways;
    if (write) c.xwrite[b] = kWriteAlways;
    return true;
  }
  return false;
}

void PageOwners::revoke(uint64_t b, bool loads_too) {
  for (PerCpu& k : cpus_) {
    k.write[b] = k.xwrite[b] = 0;
    if (loads_too) k.read[b] = 0;
  }
}

bool PageOwners::flagged_store(int cpu, uint64_t cycle, AccessMode mode, uint8_t flags) {
  if (mode != AccessMode::exact) return false;
  // A CPU ahead may have fetched the code this store changes; a tohost
  // store ends the run. (LR reservations need nothing: SC is a sync
  // point, so a CPU ahead never depends on its reservation.)
  if (flags & (kPageHasCode | kPageWatched)) resolve_all(cpu, cycle);
  return true;
}

bool PageOwners::before_flag(int cpu, uint64_t cycle, uint64_t addr, AccessMode mode) {
  if (!resolver_ || !ram_.contains(addr, 1)) return true;
  const uint64_t lo = block_of(addr & ~(kPageSize - 1)), hi = lo + kBlocksPerPage - 1;
  if (mode == AccessMode::exact) {
    resolve_touching(cpu, cycle, lo, hi, true);
    return true;
  }
  // Ahead, always a sync point: a CPU in exact order at an earlier cycle
  // may still store into the page, and whether its store reaches a code
  // page changes what every CPU sees (the decode caches, and under the
  // relaxed code model the stale views the store records). First fetches
  // of a page are rare; they cost a trip through exact order.
  return false;
}

bool PageOwners::before_decode(int cpu, uint64_t cycle, uint64_t addr, AccessMode mode) {
  if (!resolver_ || !ram_.contains(addr, 1)) return true;
  // An instruction may reach 15 bytes on (x86): the blocks it may cover,
  // and the next page, which becomes a code page if it reaches there.
  const uint64_t last = std::min(addr + 14, ram_.base() + ram_.size() - 1);
  if ((last >> kPageShift) != (addr >> kPageShift) && !(ram_.page_flags(last) & kPageHasCode) &&
      !before_flag(cpu, cycle, last, mode))
    return false;
  const uint64_t lo = block_of(addr), hi = block_of(last);
  if (mode == AccessMode::exact) {
    resolve_touching(cpu, cycle, lo, hi, true);
    return true;
  }
  for (size_t k = 0; k < cpus_.size(); ++k) {
    if (static_cast<int>(k) == cpu || !cpus_[k].ahead) continue;
    for (uint64_t b = lo; b <= hi; ++b)
      if (cpus_[k].wrote(b)) return false;
  }
  return true;
}

void PageOwners::before_host_access(int cpu, uint64_t cycle, uint64_t addr, uint64_t len, bool write) {
  if (!resolver_ || len == 0 || !ram_.contains(addr, len)) return;
  if (write)
    for (uint64_t a = addr & ~(kPageSize - 1); a < addr + len; a += kPageSize)
      if (ram_.page_flags(a) & kPageHasCode) {
        resolve_all(cpu, cycle);
        return;
      }
  resolve_touching(cpu, cycle, block_of(addr), block_of(addr + len - 1), !write);
}

void PageOwners::before_visible(int storer, uint64_t cycle, uint64_t addr, uint64_t len) {
  if (!resolver_ || len == 0 || !ram_.contains(addr, len)) return;
  const bool code = (ram_.page_flags(addr) | ram_.page_flags(addr + len - 1)) & kPageHasCode;
  const uint64_t lo = block_of(addr), hi = block_of(addr + len - 1);
  for (size_t k = 0; k < cpus_.size(); ++k) {
    const PerCpu& kc = cpus_[k];
    if (static_cast<int>(k) == storer || !kc.ahead) continue;
    bool hit = code;
    for (uint64_t b = lo; b <= hi && !hit; ++b) hit = kc.touched(b);
    // (CPU -1: every step before `cycle`, whatever the CPU's number.)
    if (hit) resolver_->resolve(static_cast<int>(k), cycle, -1);
  }
}

void PageOwners::resolve_touching(int cpu, uint64_t cycle, uint64_t lo, uint64_t hi, bool written_only) {
  for (size_t k = 0; k < cpus_.size(); ++k) {
    const PerCpu& kc = cpus_[k];
    if (static_cast<int>(k) == cpu || !kc.ahead) continue;
    for (uint64_t b = lo; b <= hi; ++b)
      if (written_only ? kc.wrote(b) : kc.touched(b)) {
        resolver_->resolve(static_cast<int>(k), cycle, cpu);
        break;
      }
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
    for (uint64_t b = 0; b < blocks_; ++b) {
      if (c.read[b] != kReadAlways) c.read[b] = 0;
      if (c.xwrite[b] != kWriteAlways) c.xwrite[b] = 0;
    }
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
    uint8_t* now = ram_.host() + (b << kBlockShift);
    const uint8_t* was = c.undo_bytes.get() + i * kBlockSize;
    // A block copied for a store that then did not happen (it stopped at a
    // sync point after its grant) or that stored what was there holds what
    // it held: nothing to take back, and nothing decoded from it is wrong.
    if (std::memcmp(now, was, kBlockSize) == 0) continue;
    std::memcpy(now, was, kBlockSize);
    // Someone may have decoded the bytes being taken back (this CPU, from
    // a block it wrote while ahead): the decode caches must forget them.
    // Only they: the bytes go back to what every other CPU saw, so no LR
    // reservation (another CPU's is never in a block this CPU owns ahead)
    // and no tohost watch (a sync point ahead) is concerned.
    bus_.notify_flag(kPageHasCode, Accessor{cpu, 0, true}, addr, static_cast<unsigned>(kBlockSize));
  }
  commit(cpu);
}

}  // namespace ksim
