#include "sim/elf/symbols.hpp"

#include <cstdio>

#include <algorithm>
#include <charconv>
#include <limits>
#include <numeric>

#include "cpu/hex.hpp"
#include "sim/elf/line_table.hpp"

namespace ksim {

namespace {

constexpr uint64_t kMaxAddr = std::numeric_limits<uint64_t>::max();

// Names that only clutter traces: assembler-local labels (.L...) and the
// ARM/RISC-V mapping symbols ($x, $d, ...), which mark code/data runs.
bool is_noise_name(std::string_view name) {
  return name.empty() || name.front() == '$' || name.starts_with(".L");
}

// Lower rank wins in containing(): a function says more about a PC than an
// object, and either says more than a bare label.
int kind_rank(Symbol::Kind k) {
  switch (k) {
    case Symbol::Kind::function: return 0;
    case Symbol::Kind::object: return 1;
    case Symbol::Kind::other: return 2;
  }
  return 2;
}

// Parses all of `text` as an unsigned number: "0x..." is hex, anything else
// decimal. No sign, no spaces, no empty digit string, no overflow.
std::optional<uint64_t> parse_number(std::string_view text, bool allow_decimal) {
  int base = 10;
  if (text.size() >= 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    text.remove_prefix(2);
    base = 16;
  } else if (!allow_decimal) {
    return std::nullopt;
  }
  if (text.empty()) return std::nullopt;
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value, base);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

}  // namespace

void SymbolTable::add(Symbol s) {
  if (is_noise_name(s.name)) return;
  by_addr_.push_back(std::move(s));
}

void SymbolTable::add_region(uint64_t addr, uint64_t size) {
  if (size == 0) return;
  // Saturate instead of wrapping: a region is only a bound, never trusted data.
  uint64_t last = size - 1 > kMaxAddr - addr ? kMaxAddr : addr + (size - 1);
  regions_.emplace_back(addr, last);
}

void SymbolTable::finalize() {
  // Sort a permutation so that we still know each symbol's insertion order:
  // find() must return the first definition of a duplicated name.
  const size_t n = by_addr_.size();
  std::vector<uint32_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0u);
  std::stable_sort(perm.begin(), perm.end(), [&](uint32_t a, uint32_t b) {
    const Symbol& x = by_addr_[a];
    const Symbol& y = by_addr_[b];
    return x.addr != y.addr ? x.addr < y.addr : x.name < y.name;
  });
  std::vector<Symbol> sorted;
  sorted.reserve(n);
  for (uint32_t i : perm) sorted.push_back(std::move(by_addr_[i]));
  by_addr_ = std::move(sorted);

  by_name_.resize(n);
  std::iota(by_name_.begin(), by_name_.end(), 0u);
  std::sort(by_name_.begin(), by_name_.end(), [&](uint32_t a, uint32_t b) {
    const std::string& x = by_addr_[a].name;
    const std::string& y = by_addr_[b].name;
    return x != y ? x < y : perm[a] < perm[b];
  });

  std::sort(regions_.begin(), regions_.end());

  // Extent of each symbol. A sized symbol covers [addr, addr+size). A size-0
  // one (an assembler label, a function without .size) covers up to the next
  // symbol at a higher address and, when sections are known, not past the
  // end of its own section.
  last_.assign(n, 0);
  size_t next = 0;  // first index whose addr is greater than the current one
  for (size_t i = 0; i < n; ++i) {
    const Symbol& s = by_addr_[i];
    if (s.size != 0) {
      last_[i] = s.size - 1 > kMaxAddr - s.addr ? kMaxAddr : s.addr + (s.size - 1);
      continue;
    }
    next = std::max(next, i + 1);
    while (next < n && by_addr_[next].addr == s.addr) ++next;
    uint64_t last = next < n ? by_addr_[next].addr - 1 : kMaxAddr;
    if (!regions_.empty()) {
      // A label outside every section (an absolute symbol, `_end`) marks a
      // place, not a range: it covers only its own address.
      auto it = std::upper_bound(regions_.begin(), regions_.end(),
                                 std::pair{s.addr, kMaxAddr});
      if (it != regions_.begin() && std::prev(it)->second >= s.addr) {
        last = std::min(last, std::prev(it)->second);
      } else {
        last = s.addr;
      }
    }
    last_[i] = last;
  }

  max_last_.resize(n);
  uint64_t running = 0;
  for (size_t i = 0; i < n; ++i) {
    running = std::max(running, last_[i]);
    max_last_[i] = running;
  }
}

const Symbol* SymbolTable::find(std::string_view name) const {
  auto it = std::lower_bound(by_name_.begin(), by_name_.end(), name,
                             [&](uint32_t i, std::string_view n) { return by_addr_[i].name < n; });
  if (it == by_name_.end() || by_addr_[*it].name != name) return nullptr;
  return &by_addr_[*it];
}

const Symbol* SymbolTable::containing(uint64_t addr) const {
  if (max_last_.size() != by_addr_.size()) return nullptr;  // not finalized
  auto it = std::upper_bound(by_addr_.begin(), by_addr_.end(), addr,
                             [](uint64_t a, const Symbol& s) { return a < s.addr; });
  const Symbol* best = nullptr;
  size_t best_i = 0;
  // Walk down from the nearest symbol at or below addr. max_last_ says when
  // no earlier symbol can reach addr any more, which ends the walk early.
  for (size_t i = static_cast<size_t>(it - by_addr_.begin()); i-- > 0;) {
    if (max_last_[i] < addr) break;
    if (last_[i] < addr) continue;
    const Symbol& s = by_addr_[i];
    if (best == nullptr) {
      best = &s;
      best_i = i;
      continue;
    }
    // Better kind first; then the nearer (higher) address; then a sized
    // symbol over a bare label; then the alphabetically first name.
    int rs = kind_rank(s.kind), rb = kind_rank(best->kind);
    bool better = rs != rb                 ? rs < rb
                  : s.addr != best->addr   ? s.addr > best->addr
                  : (s.size != 0) != (best->size != 0) ? s.size != 0
                                                       : i < best_i;
    if (better) {
      best = &s;
      best_i = i;
    }
  }
  return best;
}

std::string SymbolTable::format(uint64_t addr) const {
  const Symbol* s = containing(addr);
  if (s == nullptr) return hex(addr);
  if (s->addr == addr) return s->name;
  return s->name + "+" + hex(addr - s->addr);
}

std::optional<uint64_t> SymbolTable::resolve(std::string_view spec) const {
  if (spec.empty()) return std::nullopt;
  std::string_view base = spec;
  uint64_t offset = 0;
  // Split at the last '+': symbol names in the images we load do not contain
  // one, and "a+1+2" then fails cleanly because "a+1" is no symbol.
  if (size_t plus = spec.rfind('+'); plus != std::string_view::npos) {
    base = spec.substr(0, plus);
    auto off = parse_number(spec.substr(plus + 1), /*allow_decimal=*/true);
    if (!off) return std::nullopt;
    offset = *off;
  }
  if (base.empty()) return std::nullopt;

  uint64_t addr = 0;
  if (auto number = parse_number(base, /*allow_decimal=*/false)) {
    addr = *number;
  } else if (const Symbol* s = find(base)) {
    addr = s->addr;
  } else {
    return std::nullopt;
  }
  if (offset > kMaxAddr - addr) return std::nullopt;
  return addr + offset;
}

}  // namespace ksim

namespace ksim {

std::string SymbolTable::name_backtrace_line(const std::string& line, const LineTable* lines) const {
  // "[<" 16 hex digits ">]" at the end of the line.
  if (line.size() < 20 || line.compare(line.size() - 2, 2, ">]") != 0) return line;
  const size_t open = line.size() - 20;
  if (line.compare(open, 2, "[<") != 0) return line;
  uint64_t addr = 0;
  for (size_t i = open + 2; i < open + 18; ++i) {
    const char c = line[i];
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return line;
    addr = addr << 4 | static_cast<uint64_t>(d);
  }
  // A return address: the call that made it is just before it, and may be
  // the last instruction of its function (Linux's %pB looks up addr - 1).
  const Symbol* s = addr ? containing(addr - 1) : nullptr;
  if (!s) return line;
  char off[48];
  std::snprintf(off, sizeof off, "+0x%llx/0x%llx", static_cast<unsigned long long>(addr - s->addr),
                static_cast<unsigned long long>(s->size));
  std::string named = line + " " + s->name + off;
  if (lines != nullptr) {
    const std::string where = lines->describe(addr - 1);
    if (!where.empty()) named += " (" + where + ")";
  }
  return named;
}

}  // namespace ksim
