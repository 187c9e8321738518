// Little-endian binary writer and bounds-checked reader for checkpoints.
// The reader never trusts a length: every read is checked against what is
// left, and a short or inconsistent input is an InputError, not a crash.
#pragma once
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "sim/elf/elf_image.hpp"  // InputError

namespace ksim {

class Writer {
 public:
  void u8(uint8_t v) { out_.push_back(v); }
  void u32(uint32_t v) { raw(&v, 4); }
  void u64(uint64_t v) { raw(&v, 8); }
  void i32(int32_t v) { raw(&v, 4); }
  void boolean(bool v) { u8(v ? 1 : 0); }
  void str(const std::string& s) {
    u64(s.size());
    raw(s.data(), s.size());
  }
  void raw(const void* p, size_t n) {
    if (n == 0) return;
    const size_t old = out_.size();
    out_.resize(old + n);
    std::memcpy(out_.data() + old, p, n);
  }
  template <typename T>
  void vec(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    u64(v.size());
    raw(v.data(), v.size() * sizeof(T));
  }
  std::vector<uint8_t>& bytes() { return out_; }

 private:
  std::vector<uint8_t> out_;
};

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> in) : in_(in) {}
  uint8_t u8() { return take<uint8_t>(); }
  uint32_t u32() { return take<uint32_t>(); }
  uint64_t u64() { return take<uint64_t>(); }
  int32_t i32() { return take<int32_t>(); }
  bool boolean() {
    uint8_t v = u8();
    if (v > 1) fail("bad boolean");
    return v == 1;
  }
  std::string str() {
    uint64_t n = length(1);
    std::string s(reinterpret_cast<const char*>(in_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  void raw(void* p, size_t n) {
    need(n);
    std::memcpy(p, in_.data() + pos_, n);
    pos_ += n;
  }
  template <typename T>
  std::vector<T> vec() {
    uint64_t n = length(sizeof(T));
    std::vector<T> v(n);
    raw(v.data(), n * sizeof(T));
    return v;
  }
  // A count of items of `item_size` bytes each that must fit in what is left.
  uint64_t length(size_t item_size) {
    uint64_t n = u64();
    if (item_size && n > (in_.size() - pos_) / item_size) fail("length field larger than the data");
    return n;
  }
  bool at_end() const { return pos_ == in_.size(); }
  [[noreturn]] void fail(const std::string& why) const {
    throw InputError("checkpoint: corrupt (" + why + " at byte " + std::to_string(pos_) + ")");
  }

 private:
  void need(size_t n) {
    if (n > in_.size() - pos_) fail("truncated");
  }
  template <typename T>
  T take() {
    T v;
    raw(&v, sizeof v);
    return v;
  }
  std::span<const uint8_t> in_;
  size_t pos_ = 0;
};

}  // namespace ksim
