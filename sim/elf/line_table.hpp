// Source lines of a guest image: the DWARF line tables (.debug_line) read
// with libdw, so that an address can be shown as `file:line` and the Code
// window and `ksim disasm -S` can put the C source beside the instructions.
//
// Debug information is optional: an image without it (or with a line table
// libdw cannot read) simply has an empty table, and every caller prints
// what it printed before.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

typedef struct Elf Elf;  // libelf

namespace ksim {

class Writer;
class Reader;

struct SourceLoc {
  uint32_t file = 0;  // index for LineTable::path() / short_name()
  uint32_t line = 0;  // 1-based
  bool operator==(const SourceLoc&) const = default;
};

class LineTable {
 public:
  // The rows of every compilation unit in `elf`; empty when there are none.
  // Rows inside `rewritten` ranges [first, end) are left out: code there is
  // rewritten at run time (the kprobes instruction slots, in the kernel's
  // writable code segment), and the lines of its initial bytes would name
  // source that no longer describes it.
  static LineTable read(Elf* elf, const std::vector<std::pair<uint64_t, uint64_t>>& rewritten = {});

  bool empty() const { return rows_.empty(); }
  // The line whose code holds `addr`, as addr2line answers it: the last row
  // at or below `addr` in the sequence that covers it.
  std::optional<SourceLoc> at(uint64_t addr) const;
  // The path as the compiler recorded it (absolute for our guests), for
  // reading the source text.
  const std::string& path(uint32_t file) const { return files_[file]; }
  // The path relative to the deepest directory holding every file of the
  // table ("kernel/sched.c", "arch/rv64/entry.S"): short enough for a line.
  const std::string& short_name(uint32_t file) const { return short_[file]; }
  // "kernel/sched.c:42", or "" when no row covers `addr`.
  std::string describe(uint64_t addr) const;
  size_t rows() const { return rows_.size(); }

  // Checkpoints carry the table, so a restored run names lines the same way.
  void save(Writer& w) const;
  static LineTable restore(Reader& r);

 private:
  struct Row {
    uint64_t addr = 0, end = 0;  // [addr, end)
    SourceLoc loc;
  };
  void finish();  // sorts rows_, computes short_ from files_

  std::vector<Row> rows_;  // sorted by addr, non-overlapping
  std::vector<std::string> files_, short_;
};

// "sym+0x1c (kernel/sched.c:42)", or the symbol form alone when the table
// has no row for `addr` (or there is no table).
class SymbolTable;
std::string describe_addr(const SymbolTable& symbols, const LineTable* lines, uint64_t addr);

}  // namespace ksim
