#include "ui/model/memory_view.hpp"

#include <cstdio>

namespace ksim::ui {

void MemoryView::set_range(uint64_t addr, size_t len) {
  if (addr == addr_ && len == bytes_.size()) return;
  addr_ = addr;
  bytes_.assign(len, Byte{});
  seen_moves_ = ~uint64_t{0};  // a new range: nothing is "changed" yet
}

void MemoryView::refresh(Debugger& d) {
  if (d.moves() == seen_moves_) return;
  const bool first = seen_moves_ == ~uint64_t{0};
  seen_moves_ = d.moves();
  World& w = d.world();
  const Bus& bus = w.machine().bus();
  std::vector<std::pair<uint64_t, uint64_t>> code;
  for (const ElfSegment& s : w.spec().image->segments)
    if (s.executable) code.push_back({s.paddr, s.paddr + s.memsz});
  if (kprobes::Engine* e = w.engine()) code.push_back({e->layout().slots_begin, e->layout().slots_end});
  for (size_t i = 0; i < bytes_.size(); ++i) {
    Byte& b = bytes_[i];
    uint8_t v = 0;
    const bool ok = bus.read_bytes(addr_ + i, &v, 1);
    if (b.age != kNever) ++b.age;
    if (!first && ok && b.valid && v != b.value) b.age = 0;
    b.value = v;
    b.valid = ok;
    b.code = false;
    for (auto [lo, hi] : code)
      if (addr_ + i >= lo && addr_ + i < hi) b.code = true;
  }
}

std::string MemoryView::row_text(size_t r) const {
  std::string s;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016llx ", static_cast<unsigned long long>(addr_ + r * 16));
  s += buf;
  std::string ascii;
  for (size_t i = r * 16; i < r * 16 + 16 && i < bytes_.size(); ++i) {
    if (bytes_[i].valid) {
      std::snprintf(buf, sizeof buf, " %02x", bytes_[i].value);
      ascii += bytes_[i].value >= 32 && bytes_[i].value < 127 ? static_cast<char>(bytes_[i].value) : '.';
    } else {
      std::snprintf(buf, sizeof buf, " ??");
      ascii += ' ';
    }
    s += buf;
  }
  return s + "  |" + ascii + "|";
}

}  // namespace ksim::ui
