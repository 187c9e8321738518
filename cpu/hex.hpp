// Addresses and values as people read them in messages: "0x1f40", and
// instruction bytes. One helper for every layer at or above cpu/
// (messages, disassembly, errors).
#pragma once
#include <charconv>
#include <cstdint>
#include <string>

#include "cpu/isa.hpp"

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

// An instruction's bytes as its ISA's tools print them (`objdump -d`,
// `ksim disasm`): x86 in memory order, a byte at a time ("e9 1f 44 00
// 00"); RV64 as the 16- or 32-bit parcel it is, a little-endian number
// ("feeef537", "1141").
inline std::string insn_bytes(Isa isa, const uint8_t* p, size_t len) {
  static const char* const kDigits = "0123456789abcdef";
  std::string out;
  if (isa == Isa::rv64 && (len == 2 || len == 4)) {
    for (size_t i = len; i-- > 0;) {
      out += kDigits[p[i] >> 4];
      out += kDigits[p[i] & 15];
    }
    return out;
  }
  for (size_t i = 0; i < len; ++i) {
    if (i) out += ' ';
    out += kDigits[p[i] >> 4];
    out += kDigits[p[i] & 15];
  }
  return out;
}

}  // namespace ksim
