// What the Memory window shows: hex and ASCII from an address, each byte
// with its age: how many stops ago it last changed, comparing what the
// window read at each stop of the debugger (a byte written twice between
// two stops counts once; a byte written back to its old value is not seen). Bytes in code
// (the image's executable segments and the probe slot area) are marked so
// the view can colour code writes apart.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ui/model/debugger.hpp"

namespace ksim::ui {

class MemoryView {
 public:
  static constexpr uint32_t kNever = ~uint32_t{0};
  struct Byte {
    uint8_t value = 0;
    bool valid = false;   // inside RAM or a readable region
    bool code = false;
    uint32_t age = kNever;  // stops since it changed; 0: changed by the last move
  };

  void set_range(uint64_t addr, size_t len);
  uint64_t addr() const { return addr_; }
  size_t size() const { return bytes_.size(); }
  // Reads memory; call after every move (ages advance per move).
  void refresh(Debugger& d);
  const std::vector<Byte>& bytes() const { return bytes_; }
  // "  80001000  13 05 ...  |....|" for row `r` of 16 bytes (tests, copy).
  std::string row_text(size_t r) const;

 private:
  uint64_t addr_ = 0;
  std::vector<Byte> bytes_;
  uint64_t seen_moves_ = ~uint64_t{0};
};

}  // namespace ksim::ui
