#include "sim/elf/source_text.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace ksim {

namespace {

// A source file bigger than this is not a guest's C file: not shown.
constexpr std::streamsize kMaxSourceBytes = 16 << 20;

std::string expand_tabs(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\t')
      out.append(8 - out.size() % 8, ' ');
    else if (c != '\r')
      out += c;
  }
  return out;
}

}  // namespace

const std::vector<std::string>* SourceFiles::load(const std::string& path) {
  auto it = files_.find(path);
  if (it == files_.end()) {
    // Only a regular file, read up to the limit: a path in a hostile
    // image's DWARF may name a device (endless) or a FIFO (blocks).
    std::optional<std::vector<std::string>> text;
    std::error_code ec;
    const auto st = std::filesystem::status(path, ec);
    const uint64_t size = !ec && std::filesystem::is_regular_file(st) ? std::filesystem::file_size(path, ec) : 0;
    if (!ec && std::filesystem::is_regular_file(st) && size <= static_cast<uint64_t>(kMaxSourceBytes)) {
      std::ifstream in(path, std::ios::binary);
      std::string bytes(static_cast<size_t>(size), '\0');
      in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      const auto got = in.gcount();
      if (!in.bad() && got >= 0) {
        bytes.resize(static_cast<size_t>(got));
        text.emplace();
        std::istringstream lines(bytes);
        for (std::string l; std::getline(lines, l);) text->push_back(expand_tabs(l));
      }
    }
    it = files_.emplace(path, std::move(text)).first;
  }
  return it->second ? &*it->second : nullptr;
}

const std::string* SourceFiles::line(const std::string& path, uint32_t n) {
  const auto* f = load(path);
  if (f == nullptr || n == 0 || n > f->size()) return nullptr;
  return &(*f)[n - 1];
}

uint32_t SourceFiles::line_count(const std::string& path) {
  const auto* f = load(path);
  return f ? static_cast<uint32_t>(f->size()) : 0;
}

std::optional<SourceInterleaver::Block> SourceInterleaver::next(uint64_t pc) {
  const auto loc = lines_.at(pc);
  if (!loc || loc == prev_) return std::nullopt;
  Block b{loc->file, loc->line, loc->line};
  if (prev_ && prev_->file == loc->file && loc->line > prev_->line && loc->line - prev_->line <= kMaxGap + 1)
    b.first = prev_->line + 1;
  prev_ = loc;
  return b;
}

}  // namespace ksim
