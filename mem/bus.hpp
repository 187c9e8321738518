// The physical address space: RAM plus MMIO devices. CPUs go straight to
// RAM through Ram::ptr() on their fast paths; everything else (devices,
// holes, flagged pages) goes through here.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "mem/device.hpp"
#include "mem/ram.hpp"

namespace ksim {

enum class AccessResult { ok, fault };

class Bus {
 public:
  Bus(uint64_t ram_base, uint64_t ram_size);

  Ram& ram() { return ram_; }
  const Ram& ram() const { return ram_; }

  // Maps a device at [base, base+size). Overlaps are a programming error.
  void map(uint64_t base, uint64_t size, Device* dev);
  // Removes every mapping of `dev` (a device that goes away before the bus).
  void unmap(const Device* dev);
  Device* device_at(uint64_t addr) const;

  // Slow-path accesses of 1, 2, 4 or 8 bytes (any alignment for RAM;
  // devices see naturally aligned accesses only, else fault).
  AccessResult load(const Accessor& who, uint64_t addr, unsigned size, uint64_t& value);
  AccessResult store(const Accessor& who, uint64_t addr, unsigned size, uint64_t value);

  // Called by the CPUs' fast paths after a RAM store into a page whose flag
  // byte is non-zero, and by store() itself.
  void notify_flagged_store(const Accessor& who, uint64_t addr, unsigned size);
  // The same for the listeners of one flag only, when the page has it (a
  // run-ahead's undo tells the decode caches, and nobody else, of the code
  // it takes back: mem/ownership.cpp).
  void notify_flag(PageFlag flag, const Accessor& who, uint64_t addr, unsigned size) {
    notify_range(who, addr, size, static_cast<uint8_t>((ram_.page_flags(addr) | ram_.page_flags(addr + size - 1)) & flag));
  }
  // Device::cpus_affected() of the device at `addr` (all CPUs for an
  // address no device decodes).
  uint64_t cpus_affected(const Accessor& who, uint64_t addr, unsigned size, bool is_write, uint64_t value) const;

  // Listeners for stores into flagged pages: a listener registered for a
  // PageFlag sees every store into a page carrying that flag (the decoded-
  // instruction cache for kPageHasCode, the tohost watcher for kPageWatched,
  // LR reservations for kPageReserved) and filters exact addresses itself.
  using StoreListener = std::function<void(const Accessor&, uint64_t addr, unsigned size)>;
  void on_store_to_flagged(PageFlag flag, StoreListener l) { listeners_.push_back({flag, std::move(l)}); }

  // Host-side bulk access to RAM (loaders, debuggers, the probe engine):
  // these notify listeners like a guest store would. `who` is the CPU on
  // whose behalf the host writes, at its clock (the probe engine's phases
  // and registrations); loaders and debuggers write as CPU -1 at cycle 0.
  bool write_bytes(uint64_t addr, const void* src, uint64_t len, const Accessor& who = Accessor{-1, 0});
  bool read_bytes(uint64_t addr, void* dst, uint64_t len) const;
  // Called before write_bytes() and read_bytes() touch RAM: exact SMP puts
  // back CPUs that ran ahead over those pages first (mem/ownership.hpp).
  std::function<void(uint64_t addr, uint64_t len, bool write)> before_host_access;

 private:
  struct Mapping {
    uint64_t base, size;
    Device* dev;
  };
  Ram ram_;
  std::vector<Mapping> mappings_;
  struct Listener {
    PageFlag flag;
    StoreListener fn;
  };
  void notify_range(const Accessor& who, uint64_t addr, unsigned size, uint8_t flags);
  std::vector<Listener> listeners_;
};

}  // namespace ksim
