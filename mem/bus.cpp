#include "mem/bus.hpp"

#include <cstring>
#include <stdexcept>

namespace ksim {

Bus::Bus(uint64_t ram_base, uint64_t ram_size) : ram_(ram_base, ram_size) {}

void Bus::map(uint64_t base, uint64_t size, Device* dev) {
  for (const auto& m : mappings_)
    if (base < m.base + m.size && m.base < base + size)
      throw std::logic_error("overlapping device mappings");
  if (base < ram_.base() + ram_.size() && ram_.base() < base + size)
    throw std::logic_error("device mapping overlaps RAM");
  mappings_.push_back({base, size, dev});
}

void Bus::unmap(const Device* dev) {
  std::erase_if(mappings_, [dev](const auto& m) { return m.dev == dev; });
}

Device* Bus::device_at(uint64_t addr) const {
  for (const auto& m : mappings_)
    if (addr - m.base < m.size) return m.dev;
  return nullptr;
}

AccessResult Bus::load(const Accessor& who, uint64_t addr, unsigned size, uint64_t& value) {
  if (ram_.contains(addr, size)) {
    value = 0;
    std::memcpy(&value, ram_.ptr(addr), size);  // little-endian host
    return AccessResult::ok;
  }
  for (const auto& m : mappings_) {
    if (addr - m.base < m.size && size <= m.size - (addr - m.base)) {
      if (addr & (size - 1)) return AccessResult::fault;
      return m.dev->read(who, addr - m.base, size, value) ? AccessResult::ok : AccessResult::fault;
    }
  }
  return AccessResult::fault;
}

AccessResult Bus::store(const Accessor& who, uint64_t addr, unsigned size, uint64_t value) {
  if (ram_.contains(addr, size)) {
    std::memcpy(ram_.ptr(addr), &value, size);
    if (ram_.page_flags(addr) | ram_.page_flags(addr + size - 1)) notify_flagged_store(who, addr, size);
    return AccessResult::ok;
  }
  for (const auto& m : mappings_) {
    if (addr - m.base < m.size && size <= m.size - (addr - m.base)) {
      if (addr & (size - 1)) return AccessResult::fault;
      return m.dev->write(who, addr - m.base, size, value) ? AccessResult::ok : AccessResult::fault;
    }
  }
  return AccessResult::fault;
}

uint64_t Bus::cpus_affected(const Accessor& who, uint64_t addr, unsigned size, bool is_write, uint64_t value) const {
  for (const auto& m : mappings_)
    if (addr - m.base < m.size) return m.dev->cpus_affected(who, addr - m.base, size, is_write, value);
  return ~uint64_t{0};
}

void Bus::notify_flagged_store(const Accessor& who, uint64_t addr, unsigned size) {
  notify_range(who, addr, size, ram_.page_flags(addr) | ram_.page_flags(addr + size - 1));
}

void Bus::notify_range(const Accessor& who, uint64_t addr, unsigned size, uint8_t flags) {
  for (auto& l : listeners_)
    if (flags & l.flag) l.fn(who, addr, size);
}

bool Bus::write_bytes(uint64_t addr, const void* src, uint64_t len, const Accessor& who) {
  if (len == 0) return true;
  if (!ram_.contains(addr, len)) return false;
  if (before_host_access) before_host_access(addr, len, true);
  std::memcpy(ram_.ptr(addr), src, len);
  // Notify page by page so listeners see bounded ranges.
  const Accessor& host = who;
  uint64_t a = addr, end = addr + len;
  while (a < end) {
    uint64_t page_end = (a | (kPageSize - 1)) + 1;
    uint64_t chunk = (end < page_end ? end : page_end) - a;
    if (uint8_t flags = ram_.page_flags(a)) notify_range(host, a, static_cast<unsigned>(chunk), flags);
    a += chunk;
  }
  return true;
}

bool Bus::read_bytes(uint64_t addr, void* dst, uint64_t len) const {
  if (len == 0) return true;
  if (!ram_.contains(addr, len)) return false;
  if (before_host_access) before_host_access(addr, len, false);
  std::memcpy(dst, ram_.ptr(addr), len);
  return true;
}

}  // namespace ksim
