// Tests for the ELF loader and the symbol table. The ELF images are built
// byte by byte here, so the tests need no guest toolchain or build output.
#include <catch2/catch.hpp>
#include <elf.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "sim/elf/elf_image.hpp"
#include "sim/elf/symbols.hpp"

using namespace ksim;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

using Bytes = std::vector<uint8_t>;

template <class T>
T get(const Bytes& b, size_t off) {
  T v;
  std::memcpy(&v, b.data() + off, sizeof v);
  return v;
}

template <class T>
void put(Bytes& b, size_t off, const T& v) {
  if (b.size() < off + sizeof v) b.resize(off + sizeof v);
  std::memcpy(b.data() + off, &v, sizeof v);
}

// Layout of the test image (offsets in the file).
constexpr size_t kPhoff = sizeof(Elf64_Ehdr);
constexpr size_t kPhnum = 3;  // text PT_LOAD, data PT_LOAD, PT_GNU_STACK
constexpr size_t kTextOff = 0x100, kTextSize = 0x40;
constexpr size_t kDataOff = 0x140, kDataSize = 0x10;
constexpr uint64_t kTextAddr = 0x80000000, kDataAddr = 0x80001000;
constexpr uint64_t kDataMemsz = 0x100;  // .data (0x10) + .bss (0xf0)
constexpr uint64_t kEntry = kTextAddr;

uint8_t text_byte(size_t i) { return static_cast<uint8_t>(i * 7 + 3); }
uint8_t data_byte(size_t i) { return static_cast<uint8_t>(0xa0 + i); }

size_t phdr_off(size_t i) { return kPhoff + i * sizeof(Elf64_Phdr); }

// Appends a NUL-terminated string to a string table; returns its offset.
uint32_t add_string(std::string& table, const std::string& s) {
  uint32_t off = static_cast<uint32_t>(table.size());
  table += s;
  table += '\0';
  return off;
}

size_t align8(size_t n) { return (n + 7) & ~size_t{7}; }

// A small but complete static executable: two PT_LOADs, .text/.data/.bss,
// a symbol table with the kinds of noise real tables have, section headers
// at the very end (so any truncation cuts them).
Bytes build_image(uint16_t machine = EM_RISCV) {
  Bytes b(kDataOff + kDataSize, 0);
  for (size_t i = 0; i < kTextSize; ++i) b[kTextOff + i] = text_byte(i);
  for (size_t i = 0; i < kDataSize; ++i) b[kDataOff + i] = data_byte(i);

  // Sections: 0 null, 1 .text, 2 .data, 3 .bss, 4 .symtab, 5 .strtab, 6 .shstrtab
  std::string strtab(1, '\0');
  std::vector<Elf64_Sym> syms;
  auto sym = [&](const char* name, unsigned bind, unsigned type, uint16_t shndx, uint64_t value,
                 uint64_t size) {
    Elf64_Sym s{};
    s.st_name = name[0] != '\0' ? add_string(strtab, name) : 0;
    s.st_info = static_cast<unsigned char>(ELF64_ST_INFO(bind, type));
    s.st_shndx = shndx;
    s.st_value = value;
    s.st_size = size;
    syms.push_back(s);
  };
  sym("", STB_LOCAL, STT_NOTYPE, SHN_UNDEF, 0, 0);
  sym("", STB_LOCAL, STT_SECTION, 1, kTextAddr, 0);
  sym("crt.S", STB_LOCAL, STT_FILE, SHN_ABS, 0, 0);
  sym("$x", STB_LOCAL, STT_NOTYPE, 1, kTextAddr, 0);
  sym(".L3", STB_LOCAL, STT_NOTYPE, 1, kTextAddr + 8, 0);
  sym("loop", STB_LOCAL, STT_NOTYPE, 1, kTextAddr + 0x38, 0);
  const uint32_t first_global = static_cast<uint32_t>(syms.size());
  sym("_start", STB_GLOBAL, STT_NOTYPE, 1, kTextAddr, 0);
  sym("main", STB_GLOBAL, STT_FUNC, 1, kTextAddr + 0x10, 0x28);
  sym("tohost", STB_GLOBAL, STT_OBJECT, 2, kDataAddr, 8);
  sym("fromhost", STB_GLOBAL, STT_NOTYPE, 2, kDataAddr + 8, 0);
  sym("buf", STB_GLOBAL, STT_OBJECT, 3, kDataAddr + 0x10, 0x40);
  sym("ext", STB_GLOBAL, STT_NOTYPE, SHN_UNDEF, 0, 0);
  sym("_end", STB_GLOBAL, STT_NOTYPE, 3, kDataAddr + kDataMemsz, 0);

  const size_t symtab_off = align8(b.size());
  for (size_t i = 0; i < syms.size(); ++i) put(b, symtab_off + i * sizeof(Elf64_Sym), syms[i]);
  const size_t strtab_off = b.size();
  b.insert(b.end(), strtab.begin(), strtab.end());

  std::string shstr(1, '\0');
  const uint32_t n_text = add_string(shstr, ".text"), n_data = add_string(shstr, ".data"),
                 n_bss = add_string(shstr, ".bss"), n_symtab = add_string(shstr, ".symtab"),
                 n_strtab = add_string(shstr, ".strtab"), n_shstr = add_string(shstr, ".shstrtab");
  const size_t shstr_off = b.size();
  b.insert(b.end(), shstr.begin(), shstr.end());

  auto shdr = [](uint32_t name, uint32_t type, uint64_t flags, uint64_t addr, uint64_t off,
                 uint64_t size) {
    Elf64_Shdr s{};
    s.sh_name = name;
    s.sh_type = type;
    s.sh_flags = flags;
    s.sh_addr = addr;
    s.sh_offset = off;
    s.sh_size = size;
    s.sh_addralign = 1;
    return s;
  };
  std::vector<Elf64_Shdr> shdrs = {
      Elf64_Shdr{},
      shdr(n_text, SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, kTextAddr, kTextOff, kTextSize),
      shdr(n_data, SHT_PROGBITS, SHF_ALLOC | SHF_WRITE, kDataAddr, kDataOff, kDataSize),
      shdr(n_bss, SHT_NOBITS, SHF_ALLOC | SHF_WRITE, kDataAddr + kDataSize, kDataOff + kDataSize,
           kDataMemsz - kDataSize),
      shdr(n_symtab, SHT_SYMTAB, 0, 0, symtab_off, syms.size() * sizeof(Elf64_Sym)),
      shdr(n_strtab, SHT_STRTAB, 0, 0, strtab_off, strtab.size()),
      shdr(n_shstr, SHT_STRTAB, 0, 0, shstr_off, shstr.size()),
  };
  shdrs[4].sh_link = 5;
  shdrs[4].sh_info = first_global;
  shdrs[4].sh_entsize = sizeof(Elf64_Sym);
  shdrs[4].sh_addralign = 8;
  const size_t shoff = align8(b.size());
  for (size_t i = 0; i < shdrs.size(); ++i) put(b, shoff + i * sizeof(Elf64_Shdr), shdrs[i]);

  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_EXEC;
  eh.e_machine = machine;
  eh.e_version = EV_CURRENT;
  eh.e_entry = kEntry;
  eh.e_phoff = kPhoff;
  eh.e_shoff = shoff;
  eh.e_ehsize = sizeof(Elf64_Ehdr);
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = kPhnum;
  eh.e_shentsize = sizeof(Elf64_Shdr);
  eh.e_shnum = static_cast<uint16_t>(shdrs.size());
  eh.e_shstrndx = 6;
  put(b, 0, eh);

  Elf64_Phdr text{PT_LOAD, PF_R | PF_X, kTextOff, kTextAddr, kTextAddr, kTextSize, kTextSize, 0x1000};
  Elf64_Phdr data{PT_LOAD, PF_R | PF_W, kDataOff, kDataAddr, kDataAddr, kDataSize, kDataMemsz, 0x1000};
  Elf64_Phdr stack{PT_GNU_STACK, PF_R | PF_W, 0, 0, 0, 0, 0, 0x10};
  put(b, phdr_off(0), text);
  put(b, phdr_off(1), data);
  put(b, phdr_off(2), stack);
  return b;
}

Elf64_Ehdr ehdr(const Bytes& b) { return get<Elf64_Ehdr>(b, 0); }
Elf64_Phdr phdr(const Bytes& b, size_t i) { return get<Elf64_Phdr>(b, phdr_off(i)); }
Elf64_Shdr shdr(const Bytes& b, size_t i) {
  return get<Elf64_Shdr>(b, ehdr(b).e_shoff + i * sizeof(Elf64_Shdr));
}
void put_shdr(Bytes& b, size_t i, const Elf64_Shdr& s) {
  put(b, ehdr(b).e_shoff + i * sizeof(Elf64_Shdr), s);
}

// The refusal message for `b`, or "(accepted)". Every message must be one
// line and name the file first.
std::string refusal(const Bytes& b, Isa isa = Isa::rv64) {
  try {
    parse_elf(b, isa, "foo.elf");
  } catch (const InputError& e) {
    std::string msg = e.what();
    CHECK(msg.find('\n') == std::string::npos);
    CHECK_THAT(msg, StartsWith("foo.elf: "));
    return msg;
  }
  return "(accepted)";
}

// Parses and reports whether it loaded; any exception other than InputError
// escapes and fails the test.
bool loads_or_refuses(const Bytes& b) {
  try {
    parse_elf(b, Isa::rv64, "fuzz.elf");
    return true;
  } catch (const InputError& e) {
    std::string msg = e.what();
    REQUIRE(msg.find('\n') == std::string::npos);
    REQUIRE_THAT(msg, StartsWith("fuzz.elf: "));
    return false;
  }
}

std::filesystem::path temp_path(const std::string& tag) {
  return std::filesystem::temp_directory_path() /
         ("ksim_elf_test_" + std::to_string(::getpid()) + "_" + tag);
}

void write_file(const std::filesystem::path& p, const Bytes& b) {
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

}  // namespace

TEST_CASE("valid RV64 image loads with segments, bytes and entry", "[elf]") {
  Bytes b = build_image();
  ElfImage img = parse_elf(b, Isa::rv64, "ok.elf");
  CHECK(img.isa == Isa::rv64);
  CHECK(img.entry == kEntry);
  REQUIRE(img.segments.size() == 2);

  const ElfSegment& text = img.segments[0];
  CHECK(text.paddr == kTextAddr);
  CHECK(text.vaddr == kTextAddr);
  CHECK(text.memsz == kTextSize);
  REQUIRE(text.bytes.size() == kTextSize);
  for (size_t i = 0; i < kTextSize; ++i) CHECK(text.bytes[i] == text_byte(i));
  CHECK(text.readable);
  CHECK_FALSE(text.writable);
  CHECK(text.executable);

  // memsz past the file bytes is zero-fill: the loader keeps only filesz bytes.
  const ElfSegment& data = img.segments[1];
  CHECK(data.paddr == kDataAddr);
  CHECK(data.memsz == kDataMemsz);
  REQUIRE(data.bytes.size() == kDataSize);
  for (size_t i = 0; i < kDataSize; ++i) CHECK(data.bytes[i] == data_byte(i));
  CHECK(data.readable);
  CHECK(data.writable);
  CHECK_FALSE(data.executable);
}

TEST_CASE("x86-64 image loads for Isa::x86_64", "[elf]") {
  ElfImage img = parse_elf(build_image(EM_X86_64), Isa::x86_64, "x.elf");
  CHECK(img.isa == Isa::x86_64);
  CHECK(img.segments.size() == 2);
}

TEST_CASE("symbols are read and noise symbols skipped", "[elf][symbols]") {
  ElfImage img = parse_elf(build_image(), Isa::rv64, "ok.elf");
  const SymbolTable& st = img.symbols;
  CHECK(st.all().size() == 7);  // _start main loop tohost fromhost buf _end

  REQUIRE(st.find("main") != nullptr);
  CHECK(st.find("main")->addr == kTextAddr + 0x10);
  CHECK(st.find("main")->size == 0x28);
  CHECK(st.find("main")->kind == Symbol::Kind::function);
  REQUIRE(st.find("tohost") != nullptr);
  CHECK(st.find("tohost")->kind == Symbol::Kind::object);
  REQUIRE(st.find("fromhost") != nullptr);
  CHECK(st.find("fromhost")->kind == Symbol::Kind::other);
  REQUIRE(st.find("_start") != nullptr);
  CHECK(st.find("loop") != nullptr);
  CHECK(st.find("buf") != nullptr);
  CHECK(st.find("_end") != nullptr);

  CHECK(st.find("$x") == nullptr);
  CHECK(st.find(".L3") == nullptr);
  CHECK(st.find("crt.S") == nullptr);
  CHECK(st.find("ext") == nullptr);  // undefined
  CHECK(st.find("") == nullptr);
  CHECK(st.find("nosuch") == nullptr);
}

TEST_CASE("format names addresses by their containing symbol", "[elf][symbols]") {
  const SymbolTable& st = parse_elf(build_image(), Isa::rv64, "ok.elf").symbols;
  CHECK(st.format(kTextAddr) == "_start");
  CHECK(st.format(kTextAddr + 4) == "_start+0x4");
  CHECK(st.format(kTextAddr + 8) == "_start+0x8");  // .L3 is ignored
  CHECK(st.format(kTextAddr + 0x10) == "main");
  CHECK(st.format(kTextAddr + 0x2c) == "main+0x1c");
  CHECK(st.format(kTextAddr + 0x38) == "loop");
  CHECK(st.format(kTextAddr + 0x3c) == "loop+0x4");
  // Past the end of .text: the last label does not run on into the gap.
  CHECK(st.format(kTextAddr + 0x40) == "0x80000040");
  CHECK(st.format(kDataAddr) == "tohost");
  CHECK(st.format(kDataAddr + 4) == "tohost+0x4");
  CHECK(st.format(kDataAddr + 8) == "fromhost");
  CHECK(st.format(kDataAddr + 0xc) == "fromhost+0x4");
  CHECK(st.format(kDataAddr + 0x10) == "buf");
  CHECK(st.format(kDataAddr + 0x4f) == "buf+0x3f");
  CHECK(st.format(kDataAddr + 0x50) == "0x80001050");
  CHECK(st.format(kDataAddr + 0x100) == "_end");
  CHECK(st.format(kDataAddr + 0x104) == "0x80001104");
  CHECK(st.format(0x1234) == "0x1234");
  CHECK(st.format(0) == "0x0");
  CHECK(st.format(~0ull) == "0xffffffffffffffff");
}

TEST_CASE("resolve parses symbols, offsets and addresses", "[elf][symbols]") {
  const SymbolTable& st = parse_elf(build_image(), Isa::rv64, "ok.elf").symbols;
  CHECK(st.resolve("main") == kTextAddr + 0x10);
  CHECK(st.resolve("main+0x1c") == kTextAddr + 0x2c);
  CHECK(st.resolve("main+28") == kTextAddr + 0x2c);
  CHECK(st.resolve("main+0x10") == kTextAddr + 0x20);
  CHECK(st.resolve("main+16") == kTextAddr + 0x20);
  CHECK(st.resolve("main+0X10") == kTextAddr + 0x20);
  CHECK(st.resolve("tohost") == kDataAddr);
  CHECK(st.resolve("0x80001234") == 0x80001234u);
  CHECK(st.resolve("0x80001234+4") == 0x80001238u);
  CHECK(st.resolve("0x80001234+0x4") == 0x80001238u);
  CHECK(st.resolve("0xffffffffffffffff") == ~0ull);

  CHECK_FALSE(st.resolve("nosuch"));
  CHECK_FALSE(st.resolve("nosuch+4"));
  CHECK_FALSE(st.resolve("$x"));
  CHECK_FALSE(st.resolve(""));
  CHECK_FALSE(st.resolve("+4"));
  CHECK_FALSE(st.resolve("main+"));
  CHECK_FALSE(st.resolve("main+0x"));
  CHECK_FALSE(st.resolve("main+4x"));
  CHECK_FALSE(st.resolve("main+0x1g"));
  CHECK_FALSE(st.resolve("main+-4"));
  CHECK_FALSE(st.resolve("main+ 4"));
  CHECK_FALSE(st.resolve(" main"));
  CHECK_FALSE(st.resolve("main "));
  CHECK_FALSE(st.resolve("main+4+4"));
  CHECK_FALSE(st.resolve("0x"));
  CHECK_FALSE(st.resolve("0x12zz"));
  CHECK_FALSE(st.resolve("1234"));  // bare decimal is not an address
  CHECK_FALSE(st.resolve("0x10000000000000000"));
  CHECK_FALSE(st.resolve("0xffffffffffffffff+1"));
  CHECK_FALSE(st.resolve("main+99999999999999999999999"));
  CHECK_FALSE(st.resolve("main+0xffffffffffffffff"));

  // format and resolve round-trip over every covered byte.
  for (uint64_t a = kTextAddr; a < kTextAddr + 0x60; ++a) CHECK(st.resolve(st.format(a)) == a);
  for (uint64_t a = kDataAddr; a < kDataAddr + 0x110; ++a) CHECK(st.resolve(st.format(a)) == a);
}

TEST_CASE("SymbolTable built by hand: preference, extents, duplicates", "[symbols]") {
  SymbolTable st;
  st.add({"label", 0x1000, 0, Symbol::Kind::other});
  st.add({"data", 0x1000, 0x100, Symbol::Kind::object});
  st.add({"func", 0x1010, 0x20, Symbol::Kind::function});
  st.add({"inner", 0x1018, 0, Symbol::Kind::other});
  st.add({"dup", 0x3000, 0, Symbol::Kind::other});
  st.add({"dup", 0x2000, 0, Symbol::Kind::other});
  st.add({"$d", 0x1000, 0, Symbol::Kind::other});
  st.add({".Ltmp", 0x1000, 0, Symbol::Kind::other});
  st.add({"", 0x1000, 0, Symbol::Kind::other});
  st.finalize();

  CHECK(st.all().size() == 6);
  // An object beats a bare label at the same address; a function beats both.
  CHECK(st.format(0x1000) == "data");
  CHECK(st.format(0x1010) == "func");
  CHECK(st.format(0x101c) == "func+0xc");
  CHECK(st.format(0x1030) == "data+0x30");
  CHECK(st.format(0x10ff) == "data+0xff");
  // Past `data`, the label `inner` reaches up to the next symbol (no
  // sections known), then `dup` at 0x2000 takes over.
  CHECK(st.format(0x1100) == "inner+0xe8");
  CHECK(st.format(0x1fff) == "inner+0xfe7");
  CHECK(st.format(0x2004) == "dup+0x4");
  // The last size-0 symbol, with no section to bound it, reaches onwards.
  CHECK(st.format(0x3010) == "dup+0x10");
  CHECK(st.format(0xfff) == "0xfff");

  // The first definition of a duplicated name wins.
  REQUIRE(st.find("dup") != nullptr);
  CHECK(st.find("dup")->addr == 0x3000);
  CHECK(st.resolve("dup+1") == 0x3001u);

  const Symbol* c = st.containing(0x1018);
  REQUIRE(c != nullptr);
  CHECK(c->name == "func");
}

TEST_CASE("SymbolTable regions bound size-0 labels", "[symbols]") {
  SymbolTable st;
  st.add({"a", 0x100, 0, Symbol::Kind::other});
  st.add({"b", 0x200, 0, Symbol::Kind::other});
  st.add({"abs", 0x900, 0, Symbol::Kind::other});
  st.add_region(0x100, 0x40);
  st.add_region(0x200, 0x10);
  st.finalize();
  CHECK(st.format(0x13f) == "a+0x3f");
  CHECK(st.format(0x140) == "0x140");
  CHECK(st.format(0x20f) == "b+0xf");
  CHECK(st.format(0x210) == "0x210");
  CHECK(st.format(0x900) == "abs");
  CHECK(st.format(0x901) == "0x901");

  SymbolTable empty;
  empty.finalize();
  CHECK(empty.empty());
  CHECK(empty.format(0x80) == "0x80");
  CHECK_FALSE(empty.resolve("x"));
  CHECK(empty.resolve("0x80+8") == 0x88u);
}

TEST_CASE("stripped image loads with no symbols", "[elf]") {
  Bytes b = build_image();
  Elf64_Ehdr eh = ehdr(b);
  eh.e_shoff = 0;
  eh.e_shnum = 0;
  eh.e_shstrndx = 0;
  put(b, 0, eh);
  ElfImage img = parse_elf(b, Isa::rv64, "stripped.elf");
  CHECK(img.symbols.empty());
  CHECK(img.symbols.format(kTextAddr) == "0x80000000");
  CHECK(img.segments.size() == 2);

  // Sections but no .symtab is fine too.
  Bytes c = build_image();
  Elf64_Shdr s = shdr(c, 4);
  s.sh_type = SHT_PROGBITS;
  put_shdr(c, 4, s);
  CHECK(parse_elf(c, Isa::rv64, "nosymtab.elf").symbols.empty());
}

TEST_CASE("refuses files that are not ELF", "[elf][refuse]") {
  CHECK(refusal({}) == "foo.elf: empty file");
  CHECK(refusal({0x7f, 'E', 'L'}) == "foo.elf: not an ELF file");
  Bytes b = build_image();
  b[1] = 'X';
  CHECK(refusal(b) == "foo.elf: not an ELF file");
  std::string text = "#!/bin/sh\necho this is not an ELF file at all, just text padding\n";
  CHECK(refusal(Bytes(text.begin(), text.end())) == "foo.elf: not an ELF file");
}

TEST_CASE("refuses the wrong class, byte order, type or machine", "[elf][refuse]") {
  Bytes b = build_image();
  b[EI_CLASS] = ELFCLASS32;
  CHECK_THAT(refusal(b), Contains("ELFCLASS32"));
  b = build_image();
  b[EI_CLASS] = 7;
  CHECK_THAT(refusal(b), Contains("bad ELF class 7"));

  b = build_image();
  b[EI_DATA] = ELFDATA2MSB;
  CHECK_THAT(refusal(b), Contains("big-endian"));

  auto with_type = [](uint16_t type) {
    Bytes img = build_image();
    Elf64_Ehdr eh = ehdr(img);
    eh.e_type = type;
    put(img, 0, eh);
    return img;
  };
  CHECK_THAT(refusal(with_type(ET_DYN)), Contains("ET_DYN"));
  CHECK_THAT(refusal(with_type(ET_REL)), Contains("ET_REL"));
  CHECK_THAT(refusal(with_type(ET_CORE)), Contains("ET_CORE"));

  CHECK(refusal(build_image(EM_X86_64), Isa::rv64) ==
        "foo.elf: wrong machine: EM_X86_64 (62), expected RISC-V");
  CHECK(refusal(build_image(EM_RISCV), Isa::x86_64) ==
        "foo.elf: wrong machine: EM_RISCV (243), expected x86-64");
  CHECK_THAT(refusal(build_image(EM_AARCH64)), Contains("EM_AARCH64 (183)"));
  CHECK_THAT(refusal(build_image(4242)), Contains("wrong machine: machine 4242"));
}

TEST_CASE("refuses images without loadable segments", "[elf][refuse]") {
  Bytes b = build_image();
  for (size_t i = 0; i < 2; ++i) {
    Elf64_Phdr ph = phdr(b, i);
    ph.p_type = PT_NOTE;
    put(b, phdr_off(i), ph);
  }
  CHECK_THAT(refusal(b), Contains("no loadable segment (PT_LOAD)"));

  b = build_image();
  Elf64_Ehdr eh = ehdr(b);
  eh.e_phnum = 0;
  put(b, 0, eh);
  CHECK_THAT(refusal(b), Contains("no program headers"));
}

TEST_CASE("every truncated prefix is refused, the full file loads", "[elf][refuse]") {
  const Bytes full = build_image();
  for (size_t len = 0; len <= full.size(); ++len) {
    CAPTURE(len);
    Bytes prefix(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(len));
    if (len < full.size()) {
      std::string msg = refusal(prefix);
      CHECK(msg != "(accepted)");
      if (len >= sizeof(Elf64_Ehdr)) CHECK_THAT(msg, Contains("truncated"));
    } else {
      CHECK_NOTHROW(parse_elf(prefix, Isa::rv64, "foo.elf"));
    }
  }
}

TEST_CASE("refuses program headers and segments outside the file", "[elf][refuse]") {
  Bytes b = build_image();
  Elf64_Ehdr eh = ehdr(b);
  eh.e_phoff = b.size() - 50;  // not even one 56-byte header fits
  put(b, 0, eh);
  CHECK_THAT(refusal(b), Contains("truncated: program header 0 extends past end of file"));

  b = build_image();
  eh = ehdr(b);
  eh.e_phoff = ~0ull - 8;
  put(b, 0, eh);
  CHECK_THAT(refusal(b), Contains("truncated: program header 0"));

  b = build_image();
  eh = ehdr(b);
  eh.e_phnum = 1000;
  put(b, 0, eh);
  CHECK_THAT(refusal(b), Contains("extends past end of file"));

  b = build_image();
  eh = ehdr(b);
  eh.e_phentsize = 32;
  put(b, 0, eh);
  CHECK_THAT(refusal(b), Contains("bad program header size 32"));

  b = build_image();
  Elf64_Phdr ph = phdr(b, 1);
  ph.p_offset = b.size() - 4;
  put(b, phdr_off(1), ph);
  CHECK_THAT(refusal(b), Contains("truncated: segment 1 (PT_LOAD) data"));

  b = build_image();
  ph = phdr(b, 0);
  ph.p_offset = ~0ull;
  put(b, phdr_off(0), ph);
  CHECK_THAT(refusal(b), Contains("truncated: segment 0 (PT_LOAD) data"));

  b = build_image();
  ph = phdr(b, 0);
  ph.p_filesz = ~0ull;
  ph.p_memsz = ~0ull;
  put(b, phdr_off(0), ph);
  CHECK_THAT(refusal(b), Contains("truncated: segment 0 (PT_LOAD) data"));
}

TEST_CASE("refuses inconsistent segments", "[elf][refuse]") {
  Bytes b = build_image();
  Elf64_Phdr ph = phdr(b, 1);
  ph.p_memsz = 8;  // less than p_filesz (0x10)
  put(b, phdr_off(1), ph);
  CHECK_THAT(refusal(b), Contains("segment 1 (PT_LOAD): p_filesz 0x10 exceeds p_memsz 0x8"));

  b = build_image();
  ph = phdr(b, 1);
  ph.p_paddr = kTextAddr + 0x20;  // inside the text segment
  put(b, phdr_off(1), ph);
  CHECK_THAT(refusal(b), Contains("segments 0 and 1 overlap"));

  b = build_image();
  ph = phdr(b, 0);
  ph.p_paddr = kDataAddr + kDataMemsz - 1;  // text starts on data's last byte
  put(b, phdr_off(0), ph);
  CHECK_THAT(refusal(b), Contains("segments 1 and 0 overlap"));

  b = build_image();
  ph = phdr(b, 1);
  ph.p_paddr = ~0ull - 0x7f;
  ph.p_memsz = 0x100;
  put(b, phdr_off(1), ph);
  CHECK_THAT(refusal(b), Contains("segment 1 (PT_LOAD): address range wraps around"));

  b = build_image();
  ph = phdr(b, 1);
  ph.p_paddr = ~0ull - 0xff;  // exactly reaches the top: allowed
  ph.p_vaddr = ph.p_paddr;
  ph.p_memsz = 0x100;
  put(b, phdr_off(1), ph);
  CHECK(refusal(b) == "(accepted)");

  b = build_image();
  ph = phdr(b, 1);
  ph.p_memsz = 5ull << 30;
  put(b, phdr_off(1), ph);
  CHECK_THAT(refusal(b), Contains("more than 4 GiB"));

  // Two segments sharing the same file bytes over and over cannot make the
  // loader copy more than the file holds.
  b = build_image();
  ph = phdr(b, 0);
  ph.p_offset = 0;
  ph.p_filesz = ph.p_memsz = b.size();
  put(b, phdr_off(0), ph);
  ph.p_paddr = ph.p_vaddr = 0x10000000;
  put(b, phdr_off(2), ph);
  CHECK_THAT(refusal(b), Contains("more file bytes than the file has"));
}

TEST_CASE("refuses broken section headers and symbol tables", "[elf][refuse]") {
  Bytes b = build_image();
  Elf64_Ehdr eh = ehdr(b);
  eh.e_shoff = b.size() - 10;
  put(b, 0, eh);
  CHECK_THAT(refusal(b), Contains("truncated: section header 0 extends past end of file"));

  b = build_image();
  Elf64_Shdr s = shdr(b, 5);
  s.sh_size = 1u << 20;
  put_shdr(b, 5, s);
  CHECK_THAT(refusal(b), Contains("truncated: section 5 extends past end of file"));

  b = build_image();
  s = shdr(b, 4);
  s.sh_link = 99;
  put_shdr(b, 4, s);
  CHECK_THAT(refusal(b), Contains("not a string table"));

  b = build_image();
  s = shdr(b, 4);
  s.sh_entsize = 16;
  put_shdr(b, 4, s);
  CHECK_THAT(refusal(b), Contains("malformed symbol table"));

  b = build_image();
  s = shdr(b, 4);
  Elf64_Sym sym = get<Elf64_Sym>(b, s.sh_offset + 7 * sizeof(Elf64_Sym));  // main
  sym.st_name = 0xfffff;
  put(b, s.sh_offset + 7 * sizeof(Elf64_Sym), sym);
  CHECK_THAT(refusal(b), Contains("symbol 7 has a bad name offset"));
}

TEST_CASE("symbols sharing one huge name are refused, not copied", "[elf][refuse]") {
  // 2048 symbols all naming the same 64 KiB string: copying the name for
  // each would take 128 MiB from a 112 KiB file.
  Bytes b = build_image();
  const Elf64_Ehdr eh0 = ehdr(b);
  std::vector<Elf64_Shdr> shdrs;
  for (size_t i = 0; i < eh0.e_shnum; ++i) shdrs.push_back(shdr(b, i));

  const size_t str_off = b.size();
  std::string strtab = std::string(1, '\0') + std::string(64 << 10, 'n') + '\0';
  b.insert(b.end(), strtab.begin(), strtab.end());
  const size_t sym_off = align8(b.size());
  const size_t nsyms = 2048;
  for (size_t i = 0; i < nsyms; ++i) {
    Elf64_Sym sym{};
    sym.st_name = i == 0 ? 0 : 1;
    sym.st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
    sym.st_shndx = 1;
    sym.st_value = kTextAddr + i % kTextSize;
    put(b, sym_off + i * sizeof(Elf64_Sym), sym);
  }
  shdrs[4].sh_offset = sym_off;
  shdrs[4].sh_size = nsyms * sizeof(Elf64_Sym);
  shdrs[5].sh_offset = str_off;
  shdrs[5].sh_size = strtab.size();
  Elf64_Ehdr eh = eh0;
  eh.e_shoff = align8(b.size());
  put(b, 0, eh);
  for (size_t i = 0; i < shdrs.size(); ++i) put_shdr(b, i, shdrs[i]);
  CHECK_THAT(refusal(b), Contains("symbol names are implausibly large"));
}

TEST_CASE("random byte flips never crash the loader", "[elf][fuzz]") {
  const Bytes valid = build_image();
  std::mt19937_64 rng(0x6b73696d);  // fixed seed: failures reproduce
  std::uniform_int_distribution<size_t> pos(0, valid.size() - 1);
  std::uniform_int_distribution<int> nflips(1, 8), value(0, 255);
  int loaded = 0, refused = 0;
  for (int iter = 0; iter < 2000; ++iter) {
    Bytes b = valid;
    for (int k = nflips(rng); k > 0; --k) b[pos(rng)] = static_cast<uint8_t>(value(rng));
    CAPTURE(iter);
    if (loads_or_refuses(b)) {
      ++loaded;
    } else {
      ++refused;
    }
  }
  // Both outcomes should occur, or the fuzzing is not exercising much.
  CHECK(loaded > 0);
  CHECK(refused > 0);
}

TEST_CASE("load_elf_file reads files and refuses bad paths", "[elf][file]") {
  namespace fs = std::filesystem;
  const fs::path ok = temp_path("ok.elf");
  write_file(ok, build_image());
  ElfImage img = load_elf_file(ok.string(), Isa::rv64);
  CHECK(img.entry == kEntry);
  CHECK(img.symbols.resolve("main") == kTextAddr + 0x10);
  fs::remove(ok);

  auto file_refusal = [](const std::string& path) -> std::string {
    try {
      load_elf_file(path, Isa::rv64);
    } catch (const InputError& e) {
      return e.what();
    }
    return "(accepted)";
  };
  const std::string missing = temp_path("missing.elf").string();
  CHECK_THAT(file_refusal(missing), StartsWith(missing + ": cannot open"));

  const fs::path dir = temp_path("dir");
  fs::create_directory(dir);
  CHECK_THAT(file_refusal(dir.string()), StartsWith(dir.string() + ": is a directory"));
  fs::remove(dir);

  // A sparse file just over the limit: refused from its size, never read.
  const fs::path big = temp_path("big.elf");
  write_file(big, build_image());
  fs::resize_file(big, (256ull << 20) + 1);
  CHECK_THAT(file_refusal(big.string()), Contains("file too large"));
  fs::remove(big);

  const fs::path empty = temp_path("empty.elf");
  write_file(empty, {});
  CHECK(file_refusal(empty.string()) == empty.string() + ": empty file");
  fs::remove(empty);
}
