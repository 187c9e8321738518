#include "cpu/rv64/reservations.hpp"

namespace ksim::rv64 {

Reservations::Reservations(Bus& bus, int harts) : bus_(bus), slots_(harts) {
  bus_.on_store_to_flagged(kPageReserved,
                           [this](const Accessor&, uint64_t addr, unsigned size) { on_store(addr, size); });
}

void Reservations::set(int hart, uint64_t addr) {
  release(hart);
  slots_[hart] = {true, granule(addr)};
  bus_.ram().set_page_flag(granule(addr), kPageReserved);
}

bool Reservations::take(int hart, uint64_t addr) {
  bool ok = slots_[hart].valid && slots_[hart].granule == granule(addr);
  release(hart);
  return ok;
}

void Reservations::release(int hart) {
  Slot& s = slots_[hart];
  if (!s.valid) return;
  s.valid = false;
  // Drop the page flag when no other hart holds a reservation in the page.
  uint64_t page = s.granule >> kPageShift;
  for (const Slot& o : slots_)
    if (o.valid && (o.granule >> kPageShift) == page) return;
  bus_.ram().clear_page_flag(s.granule, kPageReserved);
}

void Reservations::on_store(uint64_t addr, unsigned size) {
  uint64_t first = granule(addr), last = granule(addr + size - 1);
  for (int h = 0; h < static_cast<int>(slots_.size()); ++h)
    if (slots_[h].valid && slots_[h].granule >= first && slots_[h].granule <= last) release(h);
}

}  // namespace ksim::rv64
