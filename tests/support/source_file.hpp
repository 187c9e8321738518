// A guest source file's line read directly, as the reference the source
// views are checked against (the guest sources have no tabs to expand).
#pragma once
#include <cstdint>
#include <fstream>
#include <string>

namespace ksim::test {

inline std::string file_line(const std::string& path, uint32_t n) {
  std::ifstream in(path);
  std::string l;
  for (uint32_t i = 0; i < n && std::getline(in, l); ++i) {
  }
  return l;
}

}  // namespace ksim::test
