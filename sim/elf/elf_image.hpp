// Loading ELF64 executables with libelf: the PT_LOAD segments, the entry
// point and the symbol table. A malformed, truncated or wrong-machine file is
// refused with an InputError whose what() is a one-line reason.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "cpu/isa.hpp"
#include "sim/elf/line_table.hpp"
#include "sim/elf/symbols.hpp"

namespace ksim {

// Bad input from the user (file, spec, option value): one-line reason.
// The CLI maps it to exit status 3.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ElfSegment {
  uint64_t paddr = 0;              // load address (p_paddr)
  uint64_t vaddr = 0;
  uint64_t memsz = 0;              // bytes past bytes.size() are zero-filled
  std::vector<uint8_t> bytes;      // file contents (p_filesz bytes)
  bool readable = false, writable = false, executable = false;
};

struct ElfImage {
  Isa isa = Isa::rv64;
  uint64_t entry = 0;
  std::vector<ElfSegment> segments;
  SymbolTable symbols;
  // Source lines (empty without debug information); shared, as images are
  // copied into every machine built from them.
  std::shared_ptr<const LineTable> lines = std::make_shared<LineTable>();
};

// Parses an in-memory ELF. `name` is used in error messages only.
// Throws InputError. Requires ELFCLASS64, little-endian, ET_EXEC, the
// machine matching `isa`, at least one PT_LOAD, and segments that fit in
// the file.
ElfImage parse_elf(std::span<const uint8_t> bytes, Isa isa, const std::string& name);
// Reads a file and parses it; an unreadable file is an InputError too.
ElfImage load_elf_file(const std::string& path, Isa isa);

}  // namespace ksim
