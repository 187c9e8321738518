// LR/SC reservations of all harts of a machine.
//
// A reservation covers one naturally aligned 8-byte granule. It is lost
// when any store (by any hart, a device or the host) touches the granule, or
// when its hart executes any SC. Pages holding a reservation carry
// kPageReserved, so only stores into those pages pay for the check.
#pragma once
#include <cstdint>
#include <vector>

#include "mem/bus.hpp"

namespace ksim::rv64 {

class Reservations {
 public:
  Reservations(Bus& bus, int harts);
  void set(int hart, uint64_t addr);
  // For SC: true when `hart` still holds a reservation covering `addr`.
  // The reservation is released either way.
  bool take(int hart, uint64_t addr);
  bool held(int hart) const { return slots_[hart].valid; }
  // Checkpoint restore: sets a hart's reservation as saved.
  void restore(int hart, bool valid, uint64_t granule_addr) {
    release(hart);
    if (valid) set(hart, granule_addr);
  }
  uint64_t address(int hart) const { return slots_[hart].granule; }

 private:
  static uint64_t granule(uint64_t addr) { return addr & ~uint64_t{7}; }
  void on_store(uint64_t addr, unsigned size);
  void release(int hart);
  struct Slot {
    bool valid = false;
    uint64_t granule = 0;
  };
  Bus& bus_;
  std::vector<Slot> slots_;
};

}  // namespace ksim::rv64
