#include "mem/cache/memory_system.hpp"

#include "mem/ownership.hpp"

#include <algorithm>

namespace ksim {

namespace {
constexpr uint8_t kL2Clean = 1, kL2Dirty = 2;
}

MemorySystem::MemorySystem(const MachineProfile& p, int cpus, uint64_t seed) : p_(p) {
  line_shift_ = 0;
  while ((1u << line_shift_) < p.l1d.line_bytes) ++line_shift_;
  const int per = p.l2_shared_by ? static_cast<int>(p.l2_shared_by) : cpus;
  const int clusters = (cpus + per - 1) / per;
  // Each cache its own replacement sequence from the one seed.
  l1_.reserve(static_cast<size_t>(cpus));
  for (int c = 0; c < cpus; ++c) l1_.emplace_back(p.l1d, seed * 131 + static_cast<uint64_t>(c));
  l1i_.reserve(static_cast<size_t>(cpus));
  for (int c = 0; c < cpus; ++c) l1i_.emplace_back(p.l1i, seed * 131 + 128 + static_cast<uint64_t>(c));
  l2_.reserve(static_cast<size_t>(clusters));
  for (int c = 0; c < clusters; ++c) l2_.emplace_back(p.l2, seed * 131 + 64 + static_cast<uint64_t>(c));
  stats_.assign(static_cast<size_t>(cpus), CacheStats{});
  buffers_.assign(static_cast<size_t>(cpus), StoreBuffer{});
  // No allocation per store: room for the profile's entries up front.
  for (StoreBuffer& b : buffers_) b.reserve(p.store_buffer_entries);
  filters_.assign(static_cast<size_t>(cpus), HitFilter{});
  buffer_entries_ = p.store_buffer_entries;
}

MemorySystem::StoreResult MemorySystem::store(int cpu, uint64_t cycle, uint64_t position, uint64_t addr,
                                              unsigned size, uint64_t value, bool may_buffer) {
  StoreResult r;
  StoreBuffer& b = buffers_[static_cast<size_t>(cpu)];
  if (b.next_visible() <= cycle) apply_due(cpu, cycle, position);
  r.hit = hit(cpu, addr, size, true);
  const uint64_t extra = r.hit ? 0 : access(cpu, position, addr, size, true);
  if (model_ == MemoryModel::sc || !may_buffer) {
    r.stall = extra;
    return r;
  }
  // A store across two lines is ordered after the buffered stores to either.
  const uint64_t line = addr >> line_shift_, last_line = (addr + size - 1) >> line_shift_;
  const uint64_t same_line = b.empty() || model_ == MemoryModel::tso
                                 ? 0
                                 : std::max(b.line_visible(line, line_shift_), b.line_visible(last_line, line_shift_));
  const bool wait = model_ == MemoryModel::tso ? (!r.hit || !b.empty()) : (!r.hit || same_line > cycle);
  if (!wait) return r;
  CacheStats& st = stats_[static_cast<size_t>(cpu)];
  uint64_t now = cycle;
  // A full buffer: wait for its first entry to become visible.
  while (b.size() >= buffer_entries_) {
    const uint64_t t = b.next_visible();
    if (t > now) {
      st.buffer_full_cycles += t - now;
      now = t;
    }
    apply_due(cpu, now, position);
  }
  r.stall = now - cycle;
  // Visible when its line is here: at once for a modified line, else after
  // the miss or upgrade; and never before what must precede it.
  uint64_t visible = r.hit ? now : now + extra + p_.l1d_latency;
  const uint64_t before = model_ == MemoryModel::tso ? b.last_visible() : same_line;
  if (visible < before) visible = before;
  // Loads of the line must look in the buffer now; under tso every store
  // joins the buffer while it holds anything.
  HitFilter& f = filters_[static_cast<size_t>(cpu)];
  f.drop(line);
  f.drop(last_line);
  if (model_ == MemoryModel::tso) f.clear_writes();
  // The CPU does not wait for the line: its latency is not a stall.
  st.stall_cycles -= extra;
  b.push(BufferedStore{addr, value, visible, static_cast<uint8_t>(size)});
  ++st.buffered_stores;
  r.buffered = true;
  return r;
}

bool MemorySystem::direct_slow(int cpu, uint64_t addr, unsigned size, bool write) {
  if (!hit(cpu, addr, size, write)) return false;
  const uint64_t line = addr >> line_shift_;
  const StoreBuffer& b = buffers_[static_cast<size_t>(cpu)];
  if (!b.empty() && ((write && model_ == MemoryModel::tso) || b.touches(line, line_shift_))) return false;
  HitFilter& f = filters_[static_cast<size_t>(cpu)];
  f.insert(line, write);
  return true;
}

MemorySystem::Forward MemorySystem::forward(int cpu, uint64_t addr, unsigned size, uint64_t& value,
                                            uint64_t& wait) {
  const StoreBuffer& b = buffers_[static_cast<size_t>(cpu)];
  for (const BufferedStore* it = b.end(); it != b.begin();) {
    --it;
    if (it->addr + it->size <= addr || addr + size <= it->addr) continue;
    if (it->addr <= addr && addr + size <= it->addr + it->size) {
      value = it->value >> (8 * (addr - it->addr));
      if (size < 8) value &= (uint64_t{1} << (8 * size)) - 1;
      ++stats_[static_cast<size_t>(cpu)].forwarded_loads;
      return Forward::full;
    }
    // Covered in part: wait until every store that overlaps it is visible.
    wait = 0;
    for (const BufferedStore& e : b)
      if (!(e.addr + e.size <= addr || addr + size <= e.addr)) wait = std::max(wait, e.visible);
    return Forward::partial;
  }
  return Forward::none;
}

// Due entries leave the buffer (or are marked applied) a chunk at a time,
// before any is applied: applying one tells the page's listeners, which
// may look at the buffer again.
namespace {
constexpr size_t kChunk = 32;
}

void MemorySystem::apply_due(int cpu, uint64_t cycle, uint64_t position) {
  StoreBuffer& b = buffers_[static_cast<size_t>(cpu)];
  // Program order among the due entries: two to one line are in visibility
  // order already, and entries to different lines commute.
  BufferedStore due[kChunk];
  while (b.next_visible() <= cycle) {
    const size_t n = b.take_due(cycle, due, kChunk);
    for (size_t k = 0; k < n; ++k) {
      const BufferedStore& e = due[k];
      if (e.applied) continue;
      // Made visible by its own CPU at `position` (its step, which may come
      // before `visible`: a fence or an atomic flushes the buffer): a CPU
      // that ran ahead over the bytes is put back first, as for a store.
      if (owners_ && owners_->enabled()) owners_->before_host_access(cpu, position, e.addr, e.size, true);
      if (apply) apply(cpu, e);
    }
  }
}

void MemorySystem::apply_due_all(uint64_t cycle) {
  BufferedStore due[kChunk];
  for (int c = 0; c < cpus(); ++c) {
    StoreBuffer& b = buffers_[static_cast<size_t>(c)];
    while (b.next_unapplied() <= cycle) {
      const size_t n = b.mark_due(cycle, due, kChunk);
      for (size_t k = 0; k < n; ++k) {
        const BufferedStore& e = due[k];
        // A CPU ahead that read the bytes before this cycle read the old
        // ones: it is put back before they change.
        if (owners_ && owners_->enabled()) owners_->before_visible(c, e.visible, e.addr, e.size);
        if (apply) apply(c, e);
      }
    }
  }
}

uint64_t MemorySystem::drain(int cpu, uint64_t cycle, uint64_t position) {
  StoreBuffer& b = buffers_[static_cast<size_t>(cpu)];
  if (b.empty()) return cycle;
  const uint64_t t = std::max(cycle, b.last_visible());
  stats_[static_cast<size_t>(cpu)].drain_cycles += t - cycle;
  apply_due(cpu, t, position);
  return t;
}

bool MemorySystem::load_forward(int cpu, uint64_t& cycle, uint64_t position, uint64_t addr, unsigned size,
                                uint64_t& value) {
  apply_due(cpu, cycle, position);  // what is visible by now is memory's
  uint64_t wait = 0;
  switch (forward(cpu, addr, size, value, wait)) {
    case Forward::full:
      return true;
    case Forward::partial:
      if (wait > cycle) cycle = wait;
      apply_due(cpu, cycle, position);
      return false;
    case Forward::none:
      break;
  }
  return false;
}

bool MemorySystem::stores_visible(int cpu, uint64_t& cycle, uint64_t position) {
  if (!buffered(cpu)) return true;
  apply_due(cpu, cycle, position);
  if (!buffered(cpu)) return true;
  cycle = wait_for(cpu, cycle);
  return false;
}

uint64_t MemorySystem::wait_for(int cpu, uint64_t cycle) {
  const uint64_t t = std::max(cycle, buffers_[static_cast<size_t>(cpu)].last_visible());
  stats_[static_cast<size_t>(cpu)].drain_cycles += t - cycle;
  return t;
}

uint64_t MemorySystem::next_visible_except(int cpu) const {
  uint64_t t = StoreBuffer::kNone;
  for (int c = 0; c < cpus(); ++c)
    if (c != cpu) t = std::min(t, buffers_[static_cast<size_t>(c)].next_unapplied());
  return t;
}

std::vector<Cache*> MemorySystem::all_caches() {
  std::vector<Cache*> v;
  for (Cache& c : l1_) v.push_back(&c);
  for (Cache& c : l2_) v.push_back(&c);
  for (Cache& c : l1i_) v.push_back(&c);
  return v;
}

uint32_t MemorySystem::access(int cpu, uint64_t cycle, uint64_t addr, unsigned size, bool write) {
  const uint64_t mask = (uint64_t{1} << line_shift_) - 1;
  const uint64_t first = addr & ~mask, last = (addr + size - 1) & ~mask;
  uint32_t extra = access_line(cpu, cycle, first, write);
  // A misaligned access across two lines pays for both (one after the other).
  if (last != first) extra += access_line(cpu, cycle, last, write);
  stats_[static_cast<size_t>(cpu)].stall_cycles += extra;
  return extra;
}

void MemorySystem::l1_victim(int cpu, uint64_t cycle, const Cache::Victim& v) {
  if (v.valid) filters_[static_cast<size_t>(cpu)].drop(v.addr >> line_shift_);
  if (!v.valid || v.state != kMesiM) return;
  ++stats_[static_cast<size_t>(cpu)].writebacks;
  l2_fill(cpu, cycle, cluster(cpu), v.addr, true);
}

void MemorySystem::l2_fill(int cpu, uint64_t cycle, int cl, uint64_t line_addr, bool dirty) {
  Cache& l2 = l2_[static_cast<size_t>(cl)];
  if (l2.find(line_addr) >= 0) {
    if (dirty) l2.set_state(line_addr, kL2Dirty);
    return;
  }
  const Cache::Victim v = l2.fill(line_addr, dirty ? kL2Dirty : kL2Clean);
  if (!v.valid || !p_.l2_inclusive) return;
  // Inclusion: the L1s under this L2 lose the victim too (a modified copy
  // goes to memory with it). A CPU that runs ahead may have hit it since
  // the cycle of this access: it is put back first.
  const int n = cpus();
  for (int k = 0; k < n; ++k) {
    if (cluster(k) != cl) continue;
    Cache& l1 = l1_[static_cast<size_t>(k)];
    Cache& l1i = l1i_[static_cast<size_t>(k)];
    const bool d = l1.find(v.addr) >= 0, i = l1i.find(v.addr) >= 0;
    if (!d && !i) continue;
    // (Its fetches ahead are not in the block grants: a line of its L1I
    // puts it back whatever it touched.)
    if (owners_ && k != cpu && (i ? owners_->ahead(k) : owners_->touched_ahead(k, v.addr)))
      owners_->resolve_mask(cpu, cycle, uint64_t{1} << k);
    if (d) {
      l1.set_state(v.addr, kMesiI);
      filters_[static_cast<size_t>(k)].drop(v.addr >> line_shift_);
      ++stats_[static_cast<size_t>(k)].back_invalidations;
    }
    if (i) {
      l1i.set_state(v.addr, Cache::kInvalid);
      ++stats_[static_cast<size_t>(k)].l1i_invalidations;
      if (on_ievict) on_ievict(k, v.addr);
    }
  }
}

uint32_t MemorySystem::ifetch(int cpu, uint64_t cycle, uint64_t addr) {
  const uint64_t la = addr & ~((uint64_t{1} << line_shift_) - 1);
  Cache& mine = l1i_[static_cast<size_t>(cpu)];
  if (mine.find(la) >= 0) return 0;
  CacheStats& st = stats_[static_cast<size_t>(cpu)];
  ++st.l1i_misses;
  // The fill reads the line coherently: a modified copy in an L1D supplies
  // it and becomes shared (written back into its L2, as for a load).
  int owner = -1;
  for (int k = 0; k < cpus(); ++k) {
    Cache& d = l1_[static_cast<size_t>(k)];
    // (Its own modified copy supplies the line too, from its L1D through
    // the L2, as a write-back: no transfer from another CPU.)
    if (d.state(la) != kMesiM) continue;
    filters_[static_cast<size_t>(k)].drop_write(la >> line_shift_);
    if (k == cpu) {
      l2_fill(k, cycle, cluster(k), la, true);
      d.set_state(la, kMesiS);
      continue;
    }
    // A CPU running ahead may have stored into its modified copy since
    // this fetch's cycle: it is put back first.
    if (owners_ && k != cpu && owners_->touched_ahead(k, la)) owners_->resolve_mask(cpu, cycle, uint64_t{1} << k);
    owner = k;
    l2_fill(k, cycle, cluster(k), la, true);
    d.set_state(la, kMesiS);
  }
  unsigned from = 0;
  const uint32_t cost = supply(cpu, cycle, la, owner, from);
  if (on_miss) on_miss(cpu, cycle, la, 2, from);
  const Cache::Victim v = mine.fill(la, kIValid);
  if (v.valid && on_ievict) on_ievict(cpu, v.addr);
  const uint32_t extra = cost > p_.l1i_latency ? cost - p_.l1i_latency : 0;
  st.stall_cycles += extra;
  return extra;
}

void MemorySystem::iflush(int cpu) {
  Cache& mine = l1i_[static_cast<size_t>(cpu)];
  const Cache::Raw raw = mine.raw();
  for (size_t k = 0; k < raw.state->size(); ++k) {
    if ((*raw.state)[k] == Cache::kInvalid) continue;
    (*raw.state)[k] = Cache::kInvalid;
    const uint64_t line = (*raw.lines)[k];
    (*raw.lines)[k] = Cache::kNoLine;
    if (on_ievict) on_ievict(cpu, line << line_shift_);
  }
}

void MemorySystem::code_store(int cpu, uint64_t cycle, uint64_t addr, unsigned size) {
  if (!p_.l1i_coherent) return;
  const uint64_t mask = (uint64_t{1} << line_shift_) - 1;
  for (uint64_t la = addr & ~mask; la <= ((addr + size - 1) & ~mask); la += mask + 1)
    for (int k = 0; k < cpus(); ++k) {
      Cache& c = l1i_[static_cast<size_t>(k)];
      if (c.find(la) < 0) continue;
      // (A store into code has put back every CPU ahead already, PageOwners::
      // flagged_store; a buffered one reaching a page that became code since
      // has not.)
      if (owners_ && cpu >= 0 && k != cpu && owners_->ahead(k)) owners_->resolve_mask(cpu, cycle, uint64_t{1} << k);
      c.set_state(la, Cache::kInvalid);
      if (cpu >= 0 && k != cpu) ++stats_[static_cast<size_t>(cpu)].invalidations;
      ++stats_[static_cast<size_t>(k)].l1i_invalidations;
      if (on_ievict) on_ievict(k, la);
    }
}

uint32_t MemorySystem::supply(int cpu, uint64_t cycle, uint64_t la, int owner, unsigned& from) {
  CacheStats& st = stats_[static_cast<size_t>(cpu)];
  const int me = cluster(cpu);
  if (owner >= 0) {
    ++st.transfers;
    from = 2 + static_cast<unsigned>(owner);
    l2_fill(cpu, cycle, me, la, false);
    return cluster(owner) == me ? p_.transfer_same_l2 : p_.transfer_other_l2;
  }
  if (l2_[static_cast<size_t>(me)].find(la) >= 0) {
    ++st.l2_hits;
    from = 0;
    return p_.l2_latency;
  }
  ++st.l2_misses;
  from = 1;
  l2_fill(cpu, cycle, me, la, false);
  return p_.memory_latency;
}

uint32_t MemorySystem::access_line(int cpu, uint64_t cycle, uint64_t la, bool write) {
  CacheStats& st = stats_[static_cast<size_t>(cpu)];
  Cache& mine = l1_[static_cast<size_t>(cpu)];
  const uint8_t cur = mine.state(la);
  if (cur == kMesiM || (cur != kMesiI && !write)) return 0;
  if (cur == kMesiE) {  // exclusive already: modified silently
    mine.set_state(la, kMesiM);
    return 0;
  }
  const int me = cluster(cpu);
  // The other L1s: a modified copy supplies the line; a store invalidates
  // every copy, a load leaves them shared.
  int owner = -1;
  bool others = false, far = false;
  const int n = cpus();
  for (int k = 0; k < n; ++k) {
    if (k == cpu) continue;
    Cache& other = l1_[static_cast<size_t>(k)];
    const uint8_t s = other.state(la);
    if (s == kMesiI) continue;
    // A CPU running ahead whose copy this access changes may have used it
    // since this access's cycle: it is put back first. (The block grants
    // usually have done so already; an x86 locked instruction's load takes
    // the line exclusive before its store asks for the block.) Ahead it
    // can have used only lines of blocks its grants let it touch; a copy of
    // any other line changes nothing it did.
    if ((write || s != kMesiS) && owners_ && owners_->touched_ahead(k, la))
      owners_->resolve_mask(cpu, cycle, uint64_t{1} << k);
    others = true;
    if (cluster(k) != me) far = true;
    if (s == kMesiM) {
      owner = k;
      // The owner writes the line back into its L2 as it gives it up.
      l2_fill(k, cycle, cluster(k), la, true);
    }
    if (write) {
      other.set_state(la, kMesiI);
      filters_[static_cast<size_t>(k)].drop(la >> line_shift_);
      ++st.invalidations;
    } else if (s != kMesiS) {
      other.set_state(la, kMesiS);
      filters_[static_cast<size_t>(k)].drop_write(la >> line_shift_);
    }
  }
  if (cur == kMesiS) {  // a store to a shared copy: the data is here
    ++st.upgrades;
    if (on_miss) on_miss(cpu, cycle, la, 3, 0);
    mine.set_state(la, kMesiM);
    return (far ? p_.upgrade_other_l2 : p_.upgrade_same_l2) - p_.l1d_latency;
  }
  ++st.l1_misses;
  unsigned from = 0;
  const uint32_t cost = supply(cpu, cycle, la, owner, from);
  if (on_miss) on_miss(cpu, cycle, la, write ? 1 : 0, from);
  l1_victim(cpu, cycle, mine.fill(la, write ? kMesiM : (others ? kMesiS : kMesiE)));
  return cost - p_.l1d_latency;
}

}  // namespace ksim
