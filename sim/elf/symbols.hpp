// Symbol table of a guest image: prints addresses as `symbol+0xoff` and
// resolves `symbol+offset` back to an address.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ksim {

class LineTable;

struct Symbol {
  enum class Kind { function, object, other };
  std::string name;
  uint64_t addr = 0;
  uint64_t size = 0;
  Kind kind = Kind::other;
};

class SymbolTable {
 public:
  void add(Symbol s);
  // Optional: an address range (an allocated section) that bounds size-0
  // symbols, so that the last label of .text does not claim what follows.
  void add_region(uint64_t addr, uint64_t size);
  // Must be called after the last add() and before any lookup.
  void finalize();

  // Exact name lookup (first definition wins for duplicate local names).
  const Symbol* find(std::string_view name) const;
  // The function or object whose [addr, addr+size) holds `addr`; for symbols
  // of size 0, the nearest one at or below `addr` in the same section range.
  const Symbol* containing(uint64_t addr) const;
  // "sym", "sym+0x1c", or "0x80001234" when nothing contains the address.
  std::string format(uint64_t addr) const;
  // Parses "sym", "sym+0x1c", "sym+28", "0x80001234" (also with a "+off").
  // Returns nullopt for an unknown symbol or a malformed spec.
  std::optional<uint64_t> resolve(std::string_view spec) const;

  // A console line of a guest backtrace ("... [<0000000080001a2c>]", as
  // Linux prints one before kallsyms names it) with the address named
  // after it, as Linux's `[<addr>] sym+off/size`: " do_fork+0x2c/0x6e".
  // Other lines come back as they are. For display only: the console
  // events keep the guest's own bytes. With `lines`, the call's source
  // line follows: " do_fork+0x2c/0x6e (kernel/workload.c:60)".
  std::string name_backtrace_line(const std::string& line, const LineTable* lines = nullptr) const;

  std::span<const Symbol> all() const { return by_addr_; }
  bool empty() const { return by_addr_.empty(); }

 private:
  std::vector<Symbol> by_addr_;               // sorted by (addr, name)
  std::vector<uint32_t> by_name_;             // indices into by_addr_, sorted by name
  std::vector<uint64_t> last_;                // per by_addr_: last address it covers
  std::vector<uint64_t> max_last_;            // prefix maximum of last_
  std::vector<std::pair<uint64_t, uint64_t>> regions_;  // [first, last] inclusive
};

}  // namespace ksim
