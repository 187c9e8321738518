#include "sim/elf/source_text.hpp"

#include <fstream>
#include <sstream>

namespace ksim {

namespace {

// A source file bigger than this is not a guest's C file: not shown.
constexpr std::streamoff kMaxSourceBytes = 16 << 20;

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
    std::optional<std::vector<std::string>> text;
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (in && in.tellg() >= 0 && in.tellg() <= kMaxSourceBytes) {
      in.seekg(0);
      text.emplace();
      for (std::string l; std::getline(in, l);) text->push_back(expand_tabs(l));
      if (in.bad()) text.reset();
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
