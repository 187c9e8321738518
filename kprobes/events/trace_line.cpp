#include "kprobes/events/trace_line.hpp"

#include <algorithm>
#include <cstdio>

#include "sim/elf/symbols.hpp"

namespace ksim::kprobes::events {

namespace {

// The symbol's size, or for a size-0 label the distance to the next symbol
// (0 when nothing follows).
uint64_t extent(const SymbolTable& symbols, const Symbol& s) {
  if (s.size != 0) return s.size;
  auto all = symbols.all();
  auto next = std::upper_bound(all.begin(), all.end(), s.addr,
                               [](uint64_t a, const Symbol& sym) { return a < sym.addr; });
  return next == all.end() ? 0 : next->addr - s.addr;
}

}  // namespace

std::string format_ip_sym(const SymbolTable& symbols, uint64_t addr, bool with_offset) {
  if (addr == 0) return "0";
  char buf[48];
  const Symbol* s = symbols.containing(addr);
  if (!s) {
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(addr));
    return buf;
  }
  if (!with_offset) return s->name;
  const uint64_t size = extent(symbols, *s);
  if (size != 0) {
    std::snprintf(buf, sizeof buf, "+0x%llx/0x%llx", static_cast<unsigned long long>(addr - s->addr),
                  static_cast<unsigned long long>(size));
  } else {
    std::snprintf(buf, sizeof buf, "+0x%llx", static_cast<unsigned long long>(addr - s->addr));
  }
  return s->name + buf;
}

std::string format_hit_line(const HitLine& hit, const SymbolTable& symbols) {
  std::string line(hit.comm.size() + 64, '\0');  // the numbers take at most 20 digits each
  const int n = std::snprintf(line.data(), line.size(), "%16s-%-5llu [%03d] %5llu: ", hit.comm.c_str(),
                              static_cast<unsigned long long>(hit.pid), hit.cpu,
                              static_cast<unsigned long long>(hit.cycle));
  line.resize(n > 0 ? static_cast<size_t>(n) : 0);
  line += hit.event + ": (" + format_ip_sym(symbols, hit.ip, true);
  if (hit.is_return) line += " <- " + format_ip_sym(symbols, hit.func, false);
  line += ")" + hit.args;
  return line;
}

}  // namespace ksim::kprobes::events
