#include "sim/elf/line_table.hpp"

#include <elfutils/libdw.h>

#include <algorithm>
#include <unordered_map>

#include "sim/elf/symbols.hpp"
#include "sim/serial.hpp"

namespace ksim {

namespace {

struct DwarfCloser {
  void operator()(Dwarf* d) const { dwarf_end(d); }
};

// Refusal limit for a restored table: far above a guest's (the kernel has
// about 6,000 rows) and keeps a hostile checkpoint from allocating much.
constexpr uint64_t kMaxRows = 1u << 22;
// A line number a compiler writes (DWARF's are unsigned; libdw gives int).
constexpr uint32_t kMaxLine = 1u << 30;

}  // namespace

LineTable LineTable::read(Elf* elf, const std::vector<std::pair<uint64_t, uint64_t>>& rewritten) {
  LineTable t;
  // No .debug_info (or one libdw refuses) is not an error: no lines.
  std::unique_ptr<Dwarf, DwarfCloser> dw(dwarf_begin_elf(elf, DWARF_C_READ, nullptr));
  if (!dw) return t;
  std::unordered_map<std::string, uint32_t> file_index;
  Dwarf_Off off = 0, next = 0;
  size_t header = 0;
  while (dwarf_nextcu(dw.get(), off, &next, &header, nullptr, nullptr, nullptr) == 0) {
    Dwarf_Die cu;
    const Dwarf_Off die_off = off + header;
    off = next;
    if (dwarf_offdie(dw.get(), die_off, &cu) == nullptr) continue;
    Dwarf_Lines* lines = nullptr;
    size_t n = 0;
    if (dwarf_getsrclines(&cu, &lines, &n) != 0) continue;
    // Rows come in sequences; a row covers up to the next row's address,
    // and the end_sequence row only closes the one before it.
    Row open;
    bool have_open = false;
    for (size_t i = 0; i < n; ++i) {
      Dwarf_Line* l = dwarf_onesrcline(lines, i);
      Dwarf_Addr addr = 0;
      int lineno = 0;
      bool end_seq = false;
      if (l == nullptr || dwarf_lineaddr(l, &addr) != 0 || dwarf_lineno(l, &lineno) != 0 ||
          dwarf_lineendsequence(l, &end_seq) != 0) {
        have_open = false;
        continue;
      }
      if (have_open && addr > open.addr) {
        open.end = addr;
        t.rows_.push_back(open);
      }
      have_open = false;
      if (end_seq) continue;
      const char* src = dwarf_linesrc(l, nullptr, nullptr);
      if (src == nullptr || lineno <= 0 || static_cast<uint32_t>(lineno) > kMaxLine) continue;
      auto [it, added] = file_index.try_emplace(src, static_cast<uint32_t>(t.files_.size()));
      if (added) t.files_.emplace_back(src);
      // Several rows at one address: the last one is the line that runs
      // there (earlier ones are empty ranges), as addr2line has it.
      open = Row{addr, 0, SourceLoc{it->second, static_cast<uint32_t>(lineno)}};
      have_open = true;
    }
  }
  std::erase_if(t.rows_, [&](const Row& r) {
    for (const auto& [first, end] : rewritten)
      if (r.addr < end && first < r.end) return true;
    return false;
  });
  t.finish();
  return t;
}

void LineTable::finish() {
  std::stable_sort(rows_.begin(), rows_.end(), [](const Row& a, const Row& b) { return a.addr < b.addr; });
  // Overlapping sequences (two units claiming one range) would make lookup
  // ambiguous; the first unit wins, as it does for addr2line.
  std::vector<Row> kept;
  kept.reserve(rows_.size());
  for (const Row& r : rows_) {
    if (!kept.empty() && r.addr < kept.back().end) continue;
    kept.push_back(r);
  }
  rows_ = std::move(kept);

  // Files that own rows decide the common directory.
  std::vector<bool> used(files_.size(), false);
  for (const Row& r : rows_) used[r.loc.file] = true;
  std::string prefix;
  bool first = true;
  for (size_t i = 0; i < files_.size(); ++i) {
    if (!used[i]) continue;
    const std::string& f = files_[i];
    std::string dir = f.substr(0, f.rfind('/') + 1);  // "" when no '/'
    if (first) {
      prefix = dir;
      first = false;
      continue;
    }
    size_t k = 0;
    while (k < prefix.size() && k < dir.size() && prefix[k] == dir[k]) ++k;
    // Cut back to the last '/' inside the common part.
    const size_t slash = k == 0 ? std::string::npos : prefix.rfind('/', k - 1);
    prefix.resize(slash == std::string::npos ? 0 : slash + 1);
  }
  short_.clear();
  for (const std::string& f : files_)
    short_.push_back(f.compare(0, prefix.size(), prefix) == 0 ? f.substr(prefix.size()) : f);
}

std::optional<SourceLoc> LineTable::at(uint64_t addr) const {
  auto it = std::upper_bound(rows_.begin(), rows_.end(), addr, [](uint64_t a, const Row& r) { return a < r.addr; });
  if (it == rows_.begin()) return std::nullopt;
  --it;
  if (addr >= it->end) return std::nullopt;
  return it->loc;
}

std::string LineTable::describe(uint64_t addr) const {
  const auto loc = at(addr);
  if (!loc) return {};
  return short_[loc->file] + ":" + std::to_string(loc->line);
}

void LineTable::save(Writer& w) const {
  w.u64(files_.size());
  for (const std::string& f : files_) w.str(f);
  w.u64(rows_.size());
  for (const Row& r : rows_) {
    w.u64(r.addr);
    w.u64(r.end);
    w.u32(r.loc.file);
    w.u32(r.loc.line);
  }
}

LineTable LineTable::restore(Reader& r) {
  LineTable t;
  const uint64_t nf = r.length(8);
  for (uint64_t i = 0; i < nf; ++i) t.files_.push_back(r.str());
  const uint64_t nr = r.length(24);
  if (nr > kMaxRows) r.fail("too many line rows");
  uint64_t last_end = 0;
  for (uint64_t i = 0; i < nr; ++i) {
    Row row;
    row.addr = r.u64();
    row.end = r.u64();
    row.loc.file = r.u32();
    row.loc.line = r.u32();
    if (row.end <= row.addr || row.addr < last_end || row.loc.file >= nf || row.loc.line == 0 ||
        row.loc.line > kMaxLine)
      r.fail("bad line row");
    last_end = row.end;
    t.rows_.push_back(row);
  }
  t.finish();
  return t;
}

std::string describe_addr(const SymbolTable& symbols, const LineTable* lines, uint64_t addr) {
  std::string s = symbols.format(addr);
  if (lines != nullptr) {
    const std::string where = lines->describe(addr);
    if (!where.empty()) s += " (" + where + ")";
  }
  return s;
}

}  // namespace ksim
