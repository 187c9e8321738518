// The text of a guest's source files, for showing C lines beside the
// instructions (`ksim disasm -S`, the debugger's Code and Source views),
// and the rule that decides which lines go before which instruction.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/elf/line_table.hpp"

namespace ksim {

// Files are read on first use and kept; one that cannot be read (moved,
// never shipped with the image, too large) is remembered as missing.
class SourceFiles {
 public:
  // Line `n` (1-based) of the file at `path`, tabs expanded to 8 columns
  // and without its newline; nullptr when the file or the line is missing.
  const std::string* line(const std::string& path, uint32_t n);
  // The number of lines, 0 when the file is missing.
  uint32_t line_count(const std::string& path);

 private:
  const std::vector<std::string>* load(const std::string& path);
  std::map<std::string, std::optional<std::vector<std::string>>> files_;
};

// Which source lines to show before each instruction of a listing, as
// `objdump -S` does: when the instruction starts a different line than the
// one before it, that line; when it moves a little further down the same
// file, also the lines skipped over (a comment, a brace), so the C reads
// as written. Call next() for each instruction in address order.
class SourceInterleaver {
 public:
  explicit SourceInterleaver(const LineTable& lines) : lines_(lines) {}
  struct Block {
    uint32_t file = 0;          // LineTable file index
    uint32_t first = 0, last = 0;  // lines [first, last] to show
  };
  std::optional<Block> next(uint64_t pc);
  // Forget the previous line (a new function or a jump in the listing).
  void reset() { prev_.reset(); }

  // The most lines skipped over that are still shown.
  static constexpr uint32_t kMaxGap = 4;

 private:
  const LineTable& lines_;
  std::optional<SourceLoc> prev_;
};

}  // namespace ksim
