#include "sim/elf/elf_image.hpp"

#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>
#include <system_error>

#include "cpu/hex.hpp"

namespace ksim {

namespace {

// Refusal limits. They keep a hostile file from making us allocate much more
// than its own size, and are far above anything a simulated guest needs.
constexpr uint64_t kMaxFileSize = 256ull << 20;       // load_elf_file
constexpr uint64_t kMaxTotalMemsz = 4ull << 30;        // sum of PT_LOAD p_memsz
constexpr uint64_t kMinNameBudget = 16ull << 20;       // see read_symbols()

// The file name goes first in every message; control characters in it would
// break the one-line promise, so they are shown as '?'.
std::string printable(std::string_view name) {
  std::string out(name);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return out;
}

[[noreturn]] void refuse(const std::string& name, const std::string& reason) {
  throw InputError(printable(name) + ": " + reason);
}

std::string libelf_error() {
  const char* msg = elf_errmsg(-1);
  return msg != nullptr ? msg : "unknown libelf error";
}

const char* expected_machine(Isa isa) { return isa == Isa::rv64 ? "RISC-V" : "x86-64"; }

std::string machine_name(unsigned machine) {
  const char* name = nullptr;
  switch (machine) {
    case EM_NONE: name = "EM_NONE"; break;
    case EM_386: name = "EM_386"; break;
    case EM_ARM: name = "EM_ARM"; break;
    case EM_X86_64: name = "EM_X86_64"; break;
    case EM_AARCH64: name = "EM_AARCH64"; break;
    case EM_RISCV: name = "EM_RISCV"; break;
    case EM_PPC64: name = "EM_PPC64"; break;
    case EM_MIPS: name = "EM_MIPS"; break;
    default: return "machine " + std::to_string(machine);
  }
  return std::string(name) + " (" + std::to_string(machine) + ")";
}

// elf_version() must be called before anything else in libelf, once per
// process; a function-local static makes that thread-safe.
void init_libelf() {
  static const bool ok = elf_version(EV_CURRENT) != EV_NONE;
  if (!ok) throw std::runtime_error("libelf: elf_version(EV_CURRENT) failed");
}

struct ElfCloser {
  void operator()(Elf* e) const { elf_end(e); }
};
using ElfPtr = std::unique_ptr<Elf, ElfCloser>;

// e_ident checks, done on the raw bytes so that each problem gets its own
// message before libelf sees the file.
void check_ident(std::span<const uint8_t> bytes, const std::string& name) {
  if (bytes.empty()) refuse(name, "empty file");
  if (bytes.size() < SELFMAG || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0) {
    refuse(name, "not an ELF file");
  }
  if (bytes.size() < EI_NIDENT) refuse(name, "truncated: ELF identification is incomplete");
  switch (bytes[EI_CLASS]) {
    case ELFCLASS64: break;
    case ELFCLASS32: refuse(name, "32-bit ELF (ELFCLASS32), expected ELFCLASS64");
    default: refuse(name, "bad ELF class " + std::to_string(bytes[EI_CLASS]));
  }
  switch (bytes[EI_DATA]) {
    case ELFDATA2LSB: break;
    case ELFDATA2MSB: refuse(name, "big-endian ELF (ELFDATA2MSB), expected little-endian");
    default: refuse(name, "bad ELF data encoding " + std::to_string(bytes[EI_DATA]));
  }
  if (bytes[EI_VERSION] != EV_CURRENT) {
    refuse(name, "bad ELF version " + std::to_string(bytes[EI_VERSION]));
  }
  if (bytes.size() < sizeof(Elf64_Ehdr)) refuse(name, "truncated: ELF header extends past end of file");
}

void check_type_and_machine(const GElf_Ehdr& eh, Isa isa, const std::string& name) {
  switch (eh.e_type) {
    case ET_EXEC: break;
    case ET_DYN: refuse(name, "not a static executable: ET_DYN (shared object or PIE)");
    case ET_REL: refuse(name, "not an executable: ET_REL (relocatable object)");
    case ET_CORE: refuse(name, "not an executable: ET_CORE (core dump)");
    default: refuse(name, "not an executable: e_type " + std::to_string(eh.e_type));
  }
  unsigned want = isa == Isa::rv64 ? EM_RISCV : EM_X86_64;
  if (eh.e_machine != want) {
    refuse(name, "wrong machine: " + machine_name(eh.e_machine) + ", expected " + expected_machine(isa));
  }
}

// libelf quietly clamps the program and section header counts to what fits
// in the file; a truncated table must be an error instead, so check here.
size_t check_phdr_table(const GElf_Ehdr& eh, uint64_t file_size, const std::string& name) {
  if (eh.e_phnum == PN_XNUM) refuse(name, "too many program headers (PN_XNUM is not supported)");
  if (eh.e_phnum == 0) refuse(name, "no program headers, so no loadable segment (PT_LOAD)");
  if (eh.e_phentsize != sizeof(Elf64_Phdr)) {
    refuse(name, "bad program header size " + std::to_string(eh.e_phentsize) + ", expected " +
                     std::to_string(sizeof(Elf64_Phdr)));
  }
  uint64_t fit = eh.e_phoff > file_size ? 0 : (file_size - eh.e_phoff) / sizeof(Elf64_Phdr);
  if (fit < eh.e_phnum) {
    refuse(name, "truncated: program header " + std::to_string(fit) + " extends past end of file");
  }
  return eh.e_phnum;
}

size_t check_shdr_table(const GElf_Ehdr& eh, uint64_t file_size, const std::string& name) {
  if (eh.e_shoff == 0) {
    if (eh.e_shnum != 0) refuse(name, "section header count is set but e_shoff is 0");
    return 0;
  }
  // e_shnum == 0 with e_shoff set means "the count is in section 0"; only
  // files with 65280+ sections need that, and no guest image does.
  if (eh.e_shnum == 0) refuse(name, "extended section numbering is not supported");
  if (eh.e_shentsize != sizeof(Elf64_Shdr)) {
    refuse(name, "bad section header size " + std::to_string(eh.e_shentsize) + ", expected " +
                     std::to_string(sizeof(Elf64_Shdr)));
  }
  uint64_t fit = eh.e_shoff > file_size ? 0 : (file_size - eh.e_shoff) / sizeof(Elf64_Shdr);
  if (fit < eh.e_shnum) {
    refuse(name, "truncated: section header " + std::to_string(fit) + " extends past end of file");
  }
  return eh.e_shnum;
}

// True when [off, off+size) lies inside a file of `file_size` bytes.
bool inside_file(uint64_t off, uint64_t size, uint64_t file_size) {
  return off <= file_size && size <= file_size - off;
}

// True when [addr, addr+size) does not wrap past the top of the address space.
bool no_wrap(uint64_t addr, uint64_t size) { return size == 0 || size - 1 <= UINT64_MAX - addr; }

std::vector<ElfSegment> read_segments(Elf* elf, size_t phnum, std::span<const uint8_t> bytes,
                                      const std::string& name) {
  std::vector<ElfSegment> segments;
  std::vector<size_t> index;  // program header index of each segment, for messages
  uint64_t total_mem = 0, total_file = 0;
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(elf, static_cast<int>(i), &ph) == nullptr) {
      refuse(name, "cannot read program header " + std::to_string(i) + ": " + libelf_error());
    }
    if (ph.p_type != PT_LOAD) continue;
    const std::string seg = "segment " + std::to_string(i) + " (PT_LOAD)";
    // A segment with no file bytes (pure .bss) never reads at p_offset.
    if (ph.p_filesz != 0 && !inside_file(ph.p_offset, ph.p_filesz, bytes.size())) {
      refuse(name, "truncated: " + seg + " data [" + hex(ph.p_offset) + ", +" + hex(ph.p_filesz) +
                       ") extends past end of file");
    }
    if (ph.p_filesz > ph.p_memsz) {
      refuse(name, seg + ": p_filesz " + hex(ph.p_filesz) + " exceeds p_memsz " + hex(ph.p_memsz));
    }
    if (!no_wrap(ph.p_paddr, ph.p_memsz) || !no_wrap(ph.p_vaddr, ph.p_memsz)) {
      refuse(name, seg + ": address range wraps around (paddr " + hex(ph.p_paddr) + ", vaddr " +
                       hex(ph.p_vaddr) + ", memsz " + hex(ph.p_memsz) + ")");
    }
    if (ph.p_memsz > kMaxTotalMemsz - total_mem) {
      refuse(name, "loadable segments need more than 4 GiB of memory");
    }
    total_mem += ph.p_memsz;
    // Overlapping file ranges would let a small file make us copy its bytes
    // many times over; linkers never emit them, so cap the copy at the size.
    total_file += ph.p_filesz;
    if (total_file > bytes.size()) {
      refuse(name, "loadable segments hold more file bytes than the file has (overlapping file ranges)");
    }
    if (ph.p_memsz == 0) continue;  // nothing to load

    ElfSegment s;
    s.paddr = ph.p_paddr;
    s.vaddr = ph.p_vaddr;
    s.memsz = ph.p_memsz;
    auto data = bytes.subspan(ph.p_offset, ph.p_filesz);
    s.bytes.assign(data.begin(), data.end());
    s.readable = (ph.p_flags & PF_R) != 0;
    s.writable = (ph.p_flags & PF_W) != 0;
    s.executable = (ph.p_flags & PF_X) != 0;
    segments.push_back(std::move(s));
    index.push_back(i);
  }
  if (segments.empty()) refuse(name, "no loadable segment (PT_LOAD)");

  // Segments are placed at p_paddr, so that is where they must not collide.
  std::vector<size_t> order(segments.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return segments[a].paddr < segments[b].paddr; });
  for (size_t k = 1; k < order.size(); ++k) {
    const ElfSegment& lo = segments[order[k - 1]];
    const ElfSegment& hi = segments[order[k]];
    if (hi.paddr - lo.paddr < lo.memsz) {
      refuse(name, "segments " + std::to_string(index[order[k - 1]]) + " and " +
                       std::to_string(index[order[k]]) + " overlap at paddr " + hex(hi.paddr));
    }
  }
  return segments;
}

// Every section with file contents must lie inside the file: a truncated
// file is refused even when only its symbol table was cut off.
void check_sections(Elf* elf, size_t shnum, uint64_t file_size, const std::string& name) {
  for (size_t i = 1; i < shnum; ++i) {
    GElf_Shdr sh;
    Elf_Scn* scn = elf_getscn(elf, i);
    if (scn == nullptr || gelf_getshdr(scn, &sh) == nullptr) {
      refuse(name, "cannot read section header " + std::to_string(i) + ": " + libelf_error());
    }
    if (sh.sh_type != SHT_NOBITS && !inside_file(sh.sh_offset, sh.sh_size, file_size)) {
      refuse(name, "truncated: section " + std::to_string(i) + " extends past end of file");
    }
  }
}

// Allocated, non-TLS sections bound the extent of size-0 labels.
void add_regions(Elf* elf, size_t shnum, SymbolTable& table) {
  for (size_t i = 1; i < shnum; ++i) {
    GElf_Shdr sh;
    Elf_Scn* scn = elf_getscn(elf, i);
    if (scn == nullptr || gelf_getshdr(scn, &sh) == nullptr) continue;
    if ((sh.sh_flags & SHF_ALLOC) != 0 && (sh.sh_flags & SHF_TLS) == 0) {
      table.add_region(sh.sh_addr, sh.sh_size);
    }
  }
}

std::optional<Symbol::Kind> symbol_kind(const GElf_Sym& sym) {
  if (sym.st_shndx == SHN_UNDEF || sym.st_shndx == SHN_COMMON) return std::nullopt;
  switch (GELF_ST_TYPE(sym.st_info)) {
    case STT_FUNC:
    case STT_GNU_IFUNC: return Symbol::Kind::function;
    case STT_OBJECT: return Symbol::Kind::object;
    case STT_NOTYPE: return Symbol::Kind::other;
    default: return std::nullopt;  // STT_SECTION, STT_FILE, STT_TLS, ...
  }
}

// Reads the first SHT_SYMTAB, if any. A stripped file has none; that is fine.
SymbolTable read_symbols(Elf* elf, size_t shnum, const std::string& name) {
  SymbolTable table;
  Elf_Scn* symtab = nullptr;
  GElf_Shdr sh{};
  for (size_t i = 1; i < shnum && symtab == nullptr; ++i) {
    Elf_Scn* scn = elf_getscn(elf, i);
    if (scn != nullptr && gelf_getshdr(scn, &sh) != nullptr && sh.sh_type == SHT_SYMTAB) symtab = scn;
  }
  if (symtab == nullptr) {
    table.finalize();
    return table;
  }
  if (sh.sh_entsize != sizeof(Elf64_Sym) || sh.sh_size % sizeof(Elf64_Sym) != 0) {
    refuse(name, "malformed symbol table (entry size " + std::to_string(sh.sh_entsize) + ", size " +
                     std::to_string(sh.sh_size) + ")");
  }
  GElf_Shdr strsh;
  Elf_Scn* strscn = sh.sh_link < shnum ? elf_getscn(elf, sh.sh_link) : nullptr;
  if (sh.sh_link == 0 || strscn == nullptr || gelf_getshdr(strscn, &strsh) == nullptr ||
      strsh.sh_type != SHT_STRTAB) {
    refuse(name, "symbol table links to section " + std::to_string(sh.sh_link) +
                     ", which is not a string table");
  }
  Elf_Data* data = elf_getdata(symtab, nullptr);
  if (data == nullptr) refuse(name, "cannot read symbol table: " + libelf_error());

  // Many symbols may point at the same long string; copying it for each of
  // them would turn a small file into gigabytes. Real tables stay far below
  // this budget (names are mostly distinct and the string table holds them).
  const uint64_t name_budget = std::max<uint64_t>(kMinNameBudget, 4 * strsh.sh_size);
  uint64_t name_bytes = 0;
  const size_t count = data->d_size / sizeof(Elf64_Sym);
  for (size_t i = 1; i < count; ++i) {  // entry 0 is the reserved null symbol
    GElf_Sym sym;
    if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) {
      refuse(name, "cannot read symbol " + std::to_string(i) + ": " + libelf_error());
    }
    auto kind = symbol_kind(sym);
    if (!kind) continue;
    const char* s = elf_strptr(elf, sh.sh_link, sym.st_name);
    if (s == nullptr) refuse(name, "symbol " + std::to_string(i) + " has a bad name offset");
    std::string_view sym_name(s);
    name_bytes += sym_name.size();
    if (name_bytes > name_budget) refuse(name, "symbol names are implausibly large");
    table.add(Symbol{std::string(sym_name), sym.st_value, sym.st_size, *kind});
  }
  add_regions(elf, shnum, table);
  table.finalize();
  return table;
}

}  // namespace

ElfImage parse_elf(std::span<const uint8_t> bytes, Isa isa, const std::string& name) {
  check_ident(bytes, name);
  init_libelf();

  // libelf wants a mutable buffer and may keep pointers into it until
  // elf_end(), so it gets a private copy that outlives every use.
  std::vector<char> copy(bytes.begin(), bytes.end());
  ElfPtr elf(elf_memory(copy.data(), copy.size()));
  if (!elf) refuse(name, "cannot parse ELF: " + libelf_error());
  if (elf_kind(elf.get()) != ELF_K_ELF) refuse(name, "not an ELF file");

  GElf_Ehdr eh;
  if (gelf_getehdr(elf.get(), &eh) == nullptr) refuse(name, "cannot read ELF header: " + libelf_error());
  check_type_and_machine(eh, isa, name);
  size_t phnum = check_phdr_table(eh, bytes.size(), name);
  size_t shnum = check_shdr_table(eh, bytes.size(), name);
  size_t lib_shnum = 0;
  if (elf_getshdrnum(elf.get(), &lib_shnum) != 0 || lib_shnum != shnum) {
    refuse(name, "cannot read section headers: " + libelf_error());
  }
  check_sections(elf.get(), shnum, bytes.size(), name);

  ElfImage image;
  image.isa = isa;
  image.entry = eh.e_entry;
  image.segments = read_segments(elf.get(), phnum, bytes, name);
  image.symbols = read_symbols(elf.get(), shnum, name);
  std::vector<std::pair<uint64_t, uint64_t>> rewritten;
  for (const ElfSegment& s : image.segments)
    if (s.writable && s.executable) rewritten.emplace_back(s.vaddr, s.vaddr + s.memsz);
  image.lines = std::make_shared<const LineTable>(LineTable::read(elf.get(), rewritten));
  return image;
}

ElfImage load_elf_file(const std::string& path, Isa isa) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (ec) refuse(path, "cannot open: " + ec.message());
  if (fs::is_directory(st)) refuse(path, "is a directory, not an ELF file");
  if (!fs::is_regular_file(st)) refuse(path, "not a regular file");
  uint64_t size = fs::file_size(path, ec);
  if (ec) refuse(path, "cannot read: " + ec.message());
  if (size > kMaxFileSize) {
    refuse(path, "file too large (" + std::to_string(size) + " bytes, limit 256 MiB)");
  }

  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) refuse(path, std::string("cannot open: ") + std::strerror(errno));
  // Read to EOF rather than trusting the size from stat: the file may change
  // under us. Stop one byte past the limit so a growing file is still refused.
  std::vector<uint8_t> bytes;
  bytes.reserve(size);
  uint8_t buf[1 << 16];
  for (;;) {
    size_t n = std::fread(buf, 1, sizeof buf, f.get());
    bytes.insert(bytes.end(), buf, buf + n);
    if (bytes.size() > kMaxFileSize) refuse(path, "file too large (limit 256 MiB)");
    if (n < sizeof buf) break;
  }
  if (std::ferror(f.get())) refuse(path, "read error");
  return parse_elf(bytes, isa, path);
}

}  // namespace ksim
