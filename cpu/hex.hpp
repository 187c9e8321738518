// Addresses and values as people read them in messages: "0x1f40". One
// helper for every layer at or above cpu/ (messages, disassembly, errors).
#pragma once
#include <charconv>
#include <cstdint>
#include <string>

namespace ksim {

// Lower-case hexadecimal, "0x" first unless `prefix` is false.
inline std::string hex(uint64_t v, bool prefix = true) {
  char buf[2 + 16];
  char* p = buf;
  if (prefix) {
    *p++ = '0';
    *p++ = 'x';
  }
  auto [end, ec] = std::to_chars(p, buf + sizeof buf, v, 16);
  (void)ec;  // 16 digits always fit
  return std::string(buf, end);
}

}  // namespace ksim
