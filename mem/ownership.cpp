#include "mem/ownership.hpp"

#include <algorithm>
#include <cstring>

namespace ksim {

PageOwners::PageOwners(Bus& bus, int cpus)
    : bus_(bus), ram_(bus.ram()), pages_(bus.ram().size() >> kPageShift), owner_(pages_, kUnowned) {
  cpus_.resize(static_cast<size_t>(cpus));
  for (PerCpu& c : cpus_) {
    c.tag = std::make_unique<uint32_t[]>(pages_);
    // Disabled: every access granted (read_min <= tag == write_tag).
    c.gen = 0x7fffffff;
    std::fill_n(c.tag.get(), pages_, c.write_tag());
  }
}

void PageOwners::enable(Resolver* r) {
  resolver_ = r;
  std::fill(owner_.begin(), owner_.end(), kUnowned);
  for (PerCpu& c : cpus_) {
    c.gen = 1;
    c.ahead = false;
    c.undo_pages.clear();
    c.undo_bytes.clear();
    std::fill_n(c.tag.get(), pages_, r ? 0u : ~0u);
    if (!r) c.gen = 0x7fffffff;
  }
}

bool PageOwners::access(int cpu, uint64_t cycle, uint64_t addr, unsigned size, bool write, AccessMode mode) {
  const uint64_t first = page_of(addr), last = page_of(addr + size - 1);
  for (uint64_t p = first; p <= last; ++p)
    if (!page_access(cpu, cycle, p, write, mode)) return false;
  return true;
}

bool PageOwners::page_access(int cpu, uint64_t cycle, uint64_t p, bool write, AccessMode mode) {
  PerCpu& c = cpus_[static_cast<size_t>(cpu)];
  uint8_t& o = owner_[p];
  const auto me = static_cast<uint8_t>(cpu);
  if (o == kUnowned) o = me;
  if (mode != AccessMode::exact) {
    // Ahead of the exact schedule (or replaying such a run): only what no
    // other CPU can observe.
    if (o == me) {
      if (write) {
        if (mode == AccessMode::ahead && !c.wrote(p)) save_page(c, p);
        c.tag[p] = c.write_tag();
      } else if (!c.touched(p)) {
        c.tag[p] = c.read_min();
      }
      return true;
    }
    if (o == kReadShared && !write) {
      if (!c.touched(p)) c.tag[p] = c.read_min();
      return true;
    }
    return false;
  }
  // In exact order everything is allowed; the page's state records who
  // may touch it while running ahead later.
  if (o == me || o == kShared) {
    c.tag[p] = c.write_tag();
    return true;
  }
  if (o == kReadShared) {
    if (!write) {
      if (!c.touched(p)) c.tag[p] = c.read_min();
      return true;
    }
    // The first store since the page turned read-shared: whoever read it
    // ahead of this moment read what it held before, so is put back, and
    // every CPU's grant goes (a later read is a sync point).
    resolve_touching(cpu, cycle, p, false);
    for (PerCpu& k : cpus_) k.tag[p] = 0;
    o = kShared;
    c.tag[p] = c.write_tag();
    return true;
  }
  // Another CPU owns it. If it ran ahead and touched the page, what it
  // did there lies in this CPU's future: put it back first.
  const int k = o;
  PerCpu& kc = cpus_[static_cast<size_t>(k)];
  if (kc.ahead && kc.touched(p)) resolver_->resolve(k, cycle, cpu);
  if (write) {
    o = kShared;
    kc.tag[p] = 0;
    c.tag[p] = c.write_tag();
  } else {
    o = kReadShared;
    if (kc.wrote(p)) kc.tag[p] = kc.read_min();
    if (!c.touched(p)) c.tag[p] = c.read_min();
  }
  return true;
}

bool PageOwners::flagged_store(int cpu, uint64_t cycle, AccessMode mode, uint8_t flags) {
  if (mode != AccessMode::exact) return false;
  // A CPU ahead may have fetched the code this store changes. (LR
  // reservations need nothing: SC is a sync point, so a CPU ahead never
  // depends on its reservation. A tohost store ends the run, which puts
  // everyone back.)
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

void PageOwners::resolve_all(int cpu, uint64_t cycle) {
  for (size_t k = 0; k < cpus_.size(); ++k)
    if (static_cast<int>(k) != cpu && cpus_[k].ahead) resolver_->resolve(static_cast<int>(k), cycle, cpu);
}

void PageOwners::begin_ahead(int cpu) {
  PerCpu& c = cpus_[static_cast<size_t>(cpu)];
  if (++c.gen >= 0x7fffffff) {  // generations ran out: start again
    c.gen = 1;
    std::fill_n(c.tag.get(), pages_, 0u);
  }
  c.ahead = true;
  c.undo_pages.clear();
  c.undo_bytes.clear();
}

void PageOwners::commit(int cpu) {
  PerCpu& c = cpus_[static_cast<size_t>(cpu)];
  c.ahead = false;
  c.undo_pages.clear();
  c.undo_bytes.clear();
}

void PageOwners::save_page(PerCpu& c, uint64_t page) {
  const size_t at = c.undo_bytes.size();
  c.undo_bytes.resize(at + kPageSize);
  std::memcpy(c.undo_bytes.data() + at, ram_.host() + page * kPageSize, kPageSize);
  c.undo_pages.push_back(static_cast<uint32_t>(page));
}

void PageOwners::undo(int cpu) {
  PerCpu& c = cpus_[static_cast<size_t>(cpu)];
  for (size_t i = 0; i < c.undo_pages.size(); ++i) {
    const uint64_t p = c.undo_pages[i];
    std::memcpy(ram_.host() + p * kPageSize, c.undo_bytes.data() + i * kPageSize, kPageSize);
    // Someone may have decoded the bytes being taken back (this CPU, from
    // a page it wrote while ahead): the decode cache must forget them.
    if (ram_.flag_table()[p] & kPageHasCode)
      bus_.notify_flagged_store(Accessor{cpu, 0}, ram_.base() + p * kPageSize, static_cast<unsigned>(kPageSize));
  }
  commit(cpu);
}

}  // namespace ksim
