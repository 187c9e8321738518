// Guest images of the build tree, loaded once per test binary.
#pragma once
#include <map>
#include <string>

#include "sim/elf/elf_image.hpp"

namespace ksim::test {

// The ELF at `rel` under the build directory (e.g. "workloads/rv64/kernel_preempt.elf").
inline const ElfImage& guest_image(const std::string& rel, Isa isa) {
  static std::map<std::string, ElfImage> cache;
  auto it = cache.find(rel);
  if (it == cache.end()) it = cache.emplace(rel, load_elf_file(std::string(KSIM_BINARY_DIR) + "/" + rel, isa)).first;
  return it->second;
}

}  // namespace ksim::test
