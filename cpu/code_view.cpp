#include "cpu/code_view.hpp"

#include <algorithm>
#include <cstring>

namespace ksim {

CodeViews::CodeViews(Bus& bus, int cpus, CodeModel model, bool storer_sees_own)
    : bus_(bus),
      model_(model),
      storer_sees_own_(storer_sees_own),
      views_(static_cast<size_t>(cpus)),
      stale_(std::make_unique<uint8_t[]>(static_cast<size_t>(cpus))) {
  // Strict: nobody ever sees old code, so nothing is copied or listened to.
  if (model_ == CodeModel::relaxed)
    bus_.on_store_to_flagged(kPageHasCode,
                             [this](const Accessor& who, uint64_t addr, unsigned size) { on_store(who, addr, size); });
}

void CodeViews::watch(uint64_t addr) {
  const uint64_t page_base = addr & ~(kPageSize - 1);
  if (model_ != CodeModel::relaxed || !bus_.ram().contains(page_base, kPageSize)) return;
  auto& p = pages_[page_base];
  if (p) return;
  p = std::make_unique_for_overwrite<uint8_t[]>(kPageSize);
  std::memcpy(p.get(), bus_.ram().ptr(page_base), kPageSize);
}

uint8_t* CodeViews::copy_of(uint64_t addr) {
  // Stores into code come in runs on one page (a guest's data beside its
  // code, the kprobes engine's writes): remember the last page found.
  const uint64_t base = addr & ~(kPageSize - 1);
  if (base != last_base_) {
    auto it = pages_.find(base);
    if (it == pages_.end()) return nullptr;
    last_base_ = base;
    last_copy_ = it->second.get();
  }
  return last_copy_ + (addr & (kPageSize - 1));
}

void CodeViews::resync() {
  for (auto& [base, p] : pages_) std::memcpy(p.get(), bus_.ram().ptr(base), kPageSize);
  for (View& v : views_) {
    v.ranges.clear();
    v.synced = 0;
    recompute(v);
  }
}

// One notification is one store when it is a CPU's (at most 8 bytes wide)
// or a host write of at most timing::kCodeStoreGranule bytes; a longer host write
// is its aligned granules (timing.hpp).
void CodeViews::on_store(const Accessor& who, uint64_t addr, unsigned size) {
  if (size <= timing::kCodeStoreGranule) return store_piece(who, addr, size);
  for (uint64_t a = addr, end = addr + size; a < end;) {
    const uint64_t next = std::min(end, (a & ~uint64_t{timing::kCodeStoreGranule - 1}) + timing::kCodeStoreGranule);
    store_piece(who, a, static_cast<unsigned>(next - a));
    a = next;
  }
}

void CodeViews::store_piece(const Accessor& who, uint64_t addr, unsigned len) {
  StaleRange r;
  r.addr = addr;
  r.len = static_cast<uint8_t>(len);
  r.store_cycle = who.cycle;
  r.storer = who.cpu;
  bool changed = false;
  for (unsigned i = 0; i < len; ++i) {
    const uint8_t now = *bus_.ram().ptr(addr + i);
    uint8_t* copy = copy_of(addr + i);
    // A byte of a page that is not a code page (a store straddling into
    // one) was never fetched: nobody can hold an old copy of it.
    r.old[i] = copy ? *copy : now;
    if (copy) *copy = now;
    changed |= r.old[i] != now;
  }
  if (who.taken_back || who.cpu < 0 || static_cast<size_t>(who.cpu) >= views_.size()) return;
  if (storer_sees_own_) {
    // x86: the storing CPU sees its own store at once, even over bytes of
    // an older store it did not see yet (SDM self-modifying code: the
    // processor checks its stores against the code it prefetched).
    View& v = views_[static_cast<size_t>(who.cpu)];
    if (std::erase_if(v.ranges, [&](const StaleRange& s) { return s.addr < addr + len && addr < s.addr + s.len; }))
      recompute(v);
  }
  // Rewriting code with the same bytes leaves nobody a stale view, nor do
  // stores outside the image's code (data beside code) and, above, taking
  // back a run-ahead's bytes and writes by no CPU (a loader, a debugger).
  if (!changed || !in_code(addr, len)) return;
  ++stores_recorded_;
  for (size_t c = 0; c < views_.size(); ++c) {
    const int cpu = static_cast<int>(c);
    if ((storer_sees_own_ && cpu == who.cpu) || (has_run && !has_run(cpu))) continue;
    StaleRange mine = r;
    if (holds_copy) {
      mine.expires = ~uint64_t{0};
      if (!holds_copy(cpu, addr, len, mine)) continue;
    } else {
      mine.expires = r.store_cycle + timing::kStaleCodeMaxCycles;
    }
    add(cpu, mine);
  }
}

void CodeViews::drop_line(int cpu, uint64_t line_addr, unsigned bytes) {
  View& v = views_[static_cast<size_t>(cpu)];
  if (v.ranges.empty()) return;
  if (std::erase_if(v.ranges, [&](const StaleRange& r) { return r.addr < line_addr + bytes && line_addr < r.addr + r.len; }))
    recompute(v);
}

bool CodeViews::fetch_from(int cpu, uint64_t pc, uint64_t prev_end) {
  View& v = views_[static_cast<size_t>(cpu)];
  bool dropped = false;
  for (auto it = v.ranges.begin(); it != v.ranges.end();) {
    StaleRange& r = *it;
    const bool keep = r.window_hi == 0 || (pc >= r.window_lo && pc < r.window_hi &&
                                           (r.window_entered ? pc == prev_end : pc == r.window_lo));
    if (keep) {
      if (r.window_hi != 0) r.window_entered = true;
      ++it;
    } else {
      it = v.ranges.erase(it);
      dropped = true;
    }
  }
  if (dropped) recompute(v);
  return !v.ranges.empty();
}

bool CodeViews::in_code(uint64_t addr, unsigned len) const {
  if (code_ranges_.empty()) return true;
  for (const auto& [start, end] : code_ranges_)
    if (addr < end && start < addr + len) return true;
  return false;
}

void CodeViews::add(int cpu, const StaleRange& r) {
  View& v = views_[static_cast<size_t>(cpu)];
  if (before(r.store_cycle, r.storer, v.synced, cpu)) {
    // The CPU has serialised after this store already (handled first, but
    // later in the global order): it sees the store, as if it had dropped
    // it there.
    if (on_sync) on_sync(cpu, v.synced, 1, v.synced_mark);
    return;
  }
  const bool was_stale = !v.ranges.empty();
  if (v.ranges.size() >= timing::kStaleCodeMaxStores) v.ranges.erase(v.ranges.begin());
  v.ranges.push_back(r);
  recompute(v);
  if (!was_stale && on_stale) on_stale(cpu);
}

void CodeViews::recompute(View& v) {
  v.min_expiry = ~uint64_t{0};
  for (const StaleRange& r : v.ranges) v.min_expiry = std::min(v.min_expiry, r.expiry());
  stale_[static_cast<size_t>(&v - views_.data())] = !v.ranges.empty();
}

void CodeViews::drop_expired(View& v, uint64_t cycle) {
  std::erase_if(v.ranges, [cycle](const StaleRange& r) { return cycle >= r.expiry(); });
  recompute(v);
}

bool CodeViews::overlaps(int cpu, uint64_t addr, unsigned len) const {
  for (const StaleRange& r : views_[static_cast<size_t>(cpu)].ranges)
    if (r.addr < addr + len && addr < r.addr + r.len) return true;
  return false;
}

size_t CodeViews::read(int cpu, uint64_t addr, uint8_t* out, size_t n) const {
  const Ram& ram = bus_.ram();
  if (!ram.contains(addr, 1)) return 0;
  n = std::min<uint64_t>(n, ram.base() + ram.size() - addr);
  std::memcpy(out, ram.ptr(addr), n);
  // Newest first, so the oldest store's old bytes are the ones left: the
  // CPU's copy predates every store it has not seen.
  const auto& rs = views_[static_cast<size_t>(cpu)].ranges;
  for (auto it = rs.rbegin(); it != rs.rend(); ++it)
    for (unsigned i = 0; i < it->len; ++i)
      if (it->addr + i - addr < n) out[it->addr + i - addr] = it->old[i];
  return n;
}

void CodeViews::note_fetch(int cpu, uint64_t cycle, uint64_t addr, unsigned len) {
  uint8_t seen[16];
  len = std::min(len, 16u);
  const size_t n = read(cpu, addr, seen, len);
  if (n == 0 || std::memcmp(seen, bus_.ram().ptr(addr), n) == 0) return;
  for (StaleRange& r : views_[static_cast<size_t>(cpu)].ranges) {
    if (r.reported || !(r.addr < addr + n && addr < r.addr + r.len)) continue;
    r.reported = true;
    if (on_stale_fetch) on_stale_fetch(cpu, cycle, addr, r);
  }
}

void CodeViews::serialize(int cpu, uint64_t cycle) {
  note_serialized(cpu, cycle);
  View& v = views_[static_cast<size_t>(cpu)];
  if (v.ranges.empty()) return;
  const uint64_t n = std::erase_if(
      v.ranges, [&](const StaleRange& r) { return before(r.store_cycle, r.storer, cycle, cpu); });
  if (n == 0) return;
  recompute(v);
  // One event per store seen, as for a store handled after the
  // serialisation (add()): the trace is the same in either host order.
  if (on_sync)
    for (uint64_t i = 0; i < n; ++i) on_sync(cpu, cycle, 1, v.synced_mark);
}

void CodeViews::drop_all(int cpu, uint64_t cycle) {
  View& v = views_[static_cast<size_t>(cpu)];
  if (v.ranges.empty()) return;
  const uint64_t n = v.ranges.size();
  v.ranges.clear();
  recompute(v);
  if (!on_sync) return;
  const uint64_t mark = on_mark ? on_mark() : 0;
  for (uint64_t i = 0; i < n; ++i) on_sync(cpu, cycle, 1, mark);
}

void CodeViews::set_ranges(int cpu, std::vector<StaleRange> r) {
  View& v = views_[static_cast<size_t>(cpu)];
  v.ranges = std::move(r);
  recompute(v);
}

}  // namespace ksim
