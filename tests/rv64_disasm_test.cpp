// ksim's RV64 disassembler against GNU objdump, line by line.
//
// Each test disassembles an ELF with riscv64-unknown-elf-objdump -d, decodes
// the bytes of every instruction line with rv64::decode() and requires
// rv64::disassemble() to print the same mnemonic and operands. Inputs: the
// guest programs of the build, tests/data/rv64_all_insns.S (assembled here),
// and a generated file holding every 16-bit encoding plus random 32-bit
// encodings of every instruction-table row.
//
// Deliberate differences from objdump, which the comparison allows for (see
// also the comment at the top of cpu/rv64/disasm.cpp):
//   1. objdump appends "# <address> <symbol>" to some instructions, computed
//      from the values earlier lui/auipc instructions left in registers. The
//      disassembler sees one instruction at a time and prints no comments, so
//      the comment is cut from objdump's line before comparing.
//   2. Words the ksim decoder rejects print as ".4byte 0x..." / ".2byte 0x...",
//      as objdump prints words it does not know. objdump does know a few words
//      outside RV64IMAC+Zicsr+Zifencei (uret, sret, sfence.vma, the reserved
//      c.addi16sp sp,0, ...); for those the listing shows what ksim does with
//      them: it traps. They are counted apart, not as mismatches.
//   3. objdump names CSRs after the privileged spec version the ELF records;
//      ksim always uses 1.11, which gas records by default (once a file uses a
//      CSR by name). Every input here records 1.11, so this never shows; a
//      CSR mismatch here means an input started recording another version.
// Data in code sections (objdump's .word/.short/.byte lines) is skipped.
#include <catch2/catch.hpp>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cpu/rv64/disasm.hpp"
#include "cpu/rv64/insn.hpp"

using namespace ksim::rv64;
namespace fs = std::filesystem;

namespace {

// ---------------------------------------------------------------------------
// Tools

std::string objdump_tool() {
  std::string configured = KSIM_RISCV_OBJDUMP;
  return configured.empty() ? "riscv64-unknown-elf-objdump" : configured;
}

// The cross gcc that belongs to objdump (same directory and prefix).
std::string gcc_tool() {
  std::string od = objdump_tool();
  const std::string suffix = "objdump";
  if (od.size() >= suffix.size() && od.compare(od.size() - suffix.size(), suffix.size(), suffix) == 0) {
    std::string gcc = od.substr(0, od.size() - suffix.size()) + "gcc";
    if (gcc.find('/') == std::string::npos || fs::exists(gcc)) return gcc;
  }
  return "riscv64-unknown-elf-gcc";
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs a shell command; returns its stdout and sets `status` to its exit code.
std::string run(const std::string& cmd, int& status) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) {
    status = -1;
    return out;
  }
  char buf[1 << 16];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int rc = pclose(p);
  status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return out;
}

// A scratch directory removed at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "ksim-disasm-XXXXXX").string();
    if (mkdtemp(tmpl.data())) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Assembles and links one .S file the way the guests are built (same ISA
// string), with .text at the guests' load address. The cross toolchain is a
// declared dependency of the project, so its absence fails the test.
fs::path assemble(const fs::path& src, const TempDir& dir) {
  const std::string gcc = gcc_tool();
  int status = 0;
  run(quote(gcc) + " --version >/dev/null 2>&1", status);
  INFO("the RV64 cross compiler '" << gcc << "' is required (Debian/Ubuntu: apt-get install gcc-riscv64-unknown-elf)");
  REQUIRE(status == 0);
  const fs::path elf = dir.path() / (src.stem().string() + ".elf");
  const std::string cmd = quote(gcc) + " -march=rv64imac_zicsr_zifencei -mabi=lp64 -nostdlib -nostartfiles" +
                          " -static -Wl,-Ttext=0x80000000 -Wl,--no-relax -o " + quote(elf.string()) + " " +
                          quote(src.string()) + " 2>&1";
  std::string log = run(cmd, status);
  INFO(cmd << "\n" << log);
  REQUIRE(status == 0);
  return elf;
}

// ---------------------------------------------------------------------------
// objdump listings

struct Line {
  uint64_t addr;
  uint32_t raw;
  unsigned len;          // 2 or 4, from the width of objdump's hex field
  std::string mnemonic;  // objdump's
  std::string operands;  // objdump's, comment removed, whitespace normalised
};

struct Listing {
  std::vector<Line> lines;
  std::map<uint64_t, std::string> symbols;  // from the "<sym>:" headers
};

std::string normalise(const std::string& s) {
  std::string out;
  bool space = false;
  for (char c : s) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
    } else {
      if (space) out += ' ';
      out += c;
      space = false;
    }
  }
  return out;
}

Listing parse_objdump(const std::string& text) {
  // "    80000000:\t00558513          \tadd\ta0,a1,5 # comment"
  static const std::regex insn_re(R"(^\s*([0-9a-f]+):\t([0-9a-f]+)\s*\t([^\t]*)\t?(.*)$)");
  // "0000000080000000 <_start>:"
  static const std::regex sym_re(R"(^([0-9a-f]+) <(.+)>:$)");
  Listing l;
  std::istringstream in(text);
  std::string s;
  std::smatch m;
  while (std::getline(in, s)) {
    if (std::regex_match(s, m, sym_re)) {
      l.symbols.emplace(std::stoull(m[1], nullptr, 16), m[2]);
    } else if (std::regex_match(s, m, insn_re)) {
      std::string ops = m[4];
      if (size_t hash = ops.find(" #"); hash != std::string::npos) ops.resize(hash);
      const std::string raw = m[2];
      l.lines.push_back({std::stoull(m[1], nullptr, 16), static_cast<uint32_t>(std::stoul(raw, nullptr, 16)),
                         raw.size() == 4 ? 2u : 4u, normalise(m[3]), normalise(ops)});
    }
  }
  return l;
}

Listing objdump(const fs::path& elf) {
  int status = 0;
  std::string out = run(quote(objdump_tool()) + " -d " + quote(elf.string()) + " 2>&1", status);
  INFO(objdump_tool() << " -d " << elf << ":\n" << out.substr(0, 2000));
  REQUIRE(status == 0);
  return parse_objdump(out);
}

// Names an address the way objdump does in a listing: the nearest symbol at
// or below it ("sym", "sym+0x1c"), or, below the first symbol, that symbol
// with a negative offset.
std::string label(const std::map<uint64_t, std::string>& symbols, uint64_t addr) {
  if (symbols.empty()) return {};
  auto it = symbols.upper_bound(addr);
  char off[32];
  if (it == symbols.begin()) {
    std::snprintf(off, sizeof off, "-0x%llx", static_cast<unsigned long long>(it->first - addr));
    return it->second + off;
  }
  --it;
  if (it->first == addr) return it->second;
  std::snprintf(off, sizeof off, "+0x%llx", static_cast<unsigned long long>(addr - it->first));
  return it->second + off;
}

bool is_data(const std::string& mnemonic) {
  return mnemonic == ".word" || mnemonic == ".short" || mnemonic == ".byte" || mnemonic == ".dword";
}

struct Comparison {
  size_t compared = 0;     // instruction lines that matched
  size_t outside_isa = 0;  // named by objdump, rejected by the ksim decoder
  std::vector<std::string> mismatches;
  std::vector<std::string> outside_examples;
};

void compare(const Listing& listing, const std::string& what, Comparison& result) {
  Symbolizer symbolize = [&listing](uint64_t addr) { return label(listing.symbols, addr); };
  for (const Line& line : listing.lines) {
    if (is_data(line.mnemonic)) continue;
    const uint16_t lo = static_cast<uint16_t>(line.raw), hi = static_cast<uint16_t>(line.raw >> 16);
    const Insn in = line.len == 2 ? decode16(lo) : decode(lo, hi);
    const std::string ours = disassemble(in, line.addr, symbolize);
    const size_t tab = ours.find('\t');
    const std::string mn = ours.substr(0, tab);
    const std::string ops = tab == std::string::npos ? "" : normalise(ours.substr(tab + 1));

    char buf[96];
    std::snprintf(buf, sizeof buf, "%s: %llx: %0*x: ", what.c_str(), static_cast<unsigned long long>(line.addr),
                  static_cast<int>(line.len * 2), line.raw);
    const std::string where = buf;
    const std::string theirs = line.mnemonic + (line.operands.empty() ? "" : " " + line.operands);
    if (in.len != line.len) {
      result.mismatches.push_back(where + "length " + std::to_string(in.len) + " vs objdump's " +
                                  std::to_string(line.len));
    } else if (mn == line.mnemonic && ops == line.operands) {
      ++result.compared;
    } else if (in.op == Op::illegal && mn[0] == '.') {
      ++result.outside_isa;
      if (result.outside_examples.size() < 10) result.outside_examples.push_back(where + theirs);
    } else {
      result.mismatches.push_back(where + "objdump \"" + theirs + "\", ksim \"" + mn + (ops.empty() ? "" : " " + ops) +
                                  "\"");
    }
  }
}

void require_match(const Comparison& r, size_t min_compared) {
  std::string report;
  for (size_t i = 0; i < r.mismatches.size() && i < 60; ++i) report += r.mismatches[i] + "\n";
  if (r.mismatches.size() > 60) report += "... and " + std::to_string(r.mismatches.size() - 60) + " more\n";
  INFO(r.mismatches.size() << " mismatches out of " << r.compared + r.mismatches.size() << " lines:\n" << report);
  REQUIRE(r.mismatches.empty());
  INFO("instructions compared: " << r.compared);
  REQUIRE(r.compared >= min_compared);
}

void note_outside_isa(const Comparison& r) {
  if (r.outside_isa == 0) return;
  std::string ex;
  for (const std::string& e : r.outside_examples) ex += "  " + e + "\n";
  WARN(r.outside_isa << " words named by objdump but outside ksim's ISA (shown as .4byte/.2byte), e.g.\n" << ex);
}

}  // namespace

// ---------------------------------------------------------------------------

TEST_CASE("Disassembler: hand-picked encodings", "[rv64][disasm]") {
  const uint64_t pc = 0x80000000;
  CHECK(disassemble(decode32(0x00000013), pc) == "nop");
  CHECK(disassemble(decode32(0xfff00513), pc) == "li\ta0,-1");
  CHECK(disassemble(decode32(0x00558513), pc) == "add\ta0,a1,5");      // addi: objdump's alias
  CHECK(disassemble(decode32(0x03f59513), pc) == "sll\ta0,a1,0x3f");   // slli
  CHECK(disassemble(decode32(0x12345537), pc) == "lui\ta0,0x12345");
  CHECK(disassemble(decode32(0xfffff517), pc) == "auipc\ta0,0xfffff");
  CHECK(disassemble(decode32(0x80a5a023), pc) == "sw\ta0,-2048(a1)");
  CHECK(disassemble(decode32(0x06b6252f), pc) == "amoadd.w.aqrl\ta0,a1,(a2)");
  CHECK(disassemble(decode32(0x1405a52f), pc) == "lr.w.aq\ta0,(a1)");
  CHECK(disassemble(decode32(0x1ab6352f), pc) == "sc.d.rl\ta0,a1,(a2)");
  CHECK(disassemble(decode32(0x30002573), pc) == "csrr\ta0,mstatus");
  CHECK(disassemble(decode32(0x3002d073), pc) == "csrw\tmstatus,5");   // csrwi
  CHECK(disassemble(decode32(0x7c05a573), pc) == "csrrs\ta0,0x7c0,a1");
  CHECK(disassemble(decode32(0xc0002573), pc) == "rdcycle\ta0");
  CHECK(disassemble(decode32(0x0ff0000f), pc) == "fence");
  CHECK(disassemble(decode32(0x0330000f), pc) == "fence\trw,rw");
  CHECK(disassemble(decode32(0x8330000f), pc) == "fence.tso");
  CHECK(disassemble(decode32(0x0100000f), pc) == "fence\tw,unknown");  // pause
  CHECK(disassemble(decode32(0x0000100f), pc) == "fence.i");
  CHECK(disassemble(decode32(0x00008067), pc) == "ret");
  CHECK(disassemble(decode32(0x000500e7), pc) == "jalr\ta0");
  CHECK(disassemble(decode32(0xc0001073), pc) == "unimp");
  CHECK(disassemble(decode32(0x0000505b), pc) == ".4byte\t0x505b");

  // Compressed encodings print as the instruction they expand to.
  CHECK(disassemble(decode16(0x1141), pc) == "add\tsp,sp,-16");        // c.addi sp,-16
  CHECK(disassemble(decode16(0x4515), pc) == "li\ta0,5");              // c.li
  CHECK(disassemble(decode16(0x852e), pc) == "mv\ta0,a1");             // c.mv
  CHECK(disassemble(decode16(0x8082), pc) == "ret");                   // c.jr ra
  CHECK(disassemble(decode16(0x9002), pc) == "ebreak");                // c.ebreak
  CHECK(disassemble(decode16(0x0001), pc) == "nop");                   // c.nop
  CHECK(disassemble(decode16(0x0000), pc) == "unimp");                 // c.unimp
  CHECK(disassemble(decode16(0x4015), pc) == "c.li\tzero,5");          // HINT
  CHECK(disassemble(decode16(0x0502), pc) == "c.slli64\ta0");          // HINT
  CHECK(disassemble(decode16(0x6001), pc) == ".2byte\t0x6001");        // reserved

  // Branch and jump targets, with and without a symbol.
  Symbolizer sym = [](uint64_t a) { return a == 0x80000010 ? std::string("foo+0x8") : std::string(); };
  CHECK(disassemble(decode32(0x00b50463), 0x80000008, sym) == "beq\ta0,a1,80000010 <foo+0x8>");
  CHECK(disassemble(decode32(0x00b50463), 0x80000008) == "beq\ta0,a1,80000010");
  CHECK(disassemble(decode32(0x00b50463), 0x80000000, sym) == "beq\ta0,a1,80000008");
  CHECK(disassemble(decode32(0x8000006f), pc) == "j\t7ff00000");           // most negative jal
  CHECK(disassemble(decode32(0x7ffff0ef), pc) == "jal\t800ffffe");         // most positive, rd = ra
  CHECK(disassemble(decode32(0x800002ef), pc) == "jal\tt0,7ff00000");
  CHECK(disassemble(decode32(0x80000063), pc) == "beqz\tzero,7ffff000");   // most negative branch
  CHECK(disassemble(decode16(0xa001), 0x2, sym) == "j\t2");                // c.j .
  CHECK(disassemble(decode16(0xb001), 0x0) == "j\tfffffffffffff800");      // wraps below 0

  // Names.
  CHECK(std::string(reg_name(0)) == "zero");
  CHECK(std::string(reg_name(2)) == "sp");
  CHECK(std::string(reg_name(8)) == "s0");
  CHECK(std::string(reg_name(31)) == "t6");
  CHECK(csr_name(0x300) == "mstatus");
  CHECK(csr_name(0x305) == "mtvec");
  CHECK(csr_name(0xc00) == "cycle");
  CHECK(csr_name(0x3bf) == "pmpaddr15");
  CHECK(csr_name(0x3ef) == "0x3ef");     // pmpaddr63 is 1.12: see csr_name()
  CHECK(csr_name(0x30a) == "0x30a");     // menvcfg, likewise
  CHECK(csr_name(0x000) == "ustatus");   // 1.11 still has it
  CHECK(csr_name(0xc83) == "hpmcounter3h");
  CHECK(csr_name(0x7c0) == "0x7c0");
}

TEST_CASE("Disassembler matches objdump on every guest program", "[rv64][disasm][objdump]") {
  const fs::path list = fs::path(KSIM_BINARY_DIR) / "workloads/rv64/guests.txt";
  INFO("guest list " << list << " (written at configure time; build the ksim_guests target)");
  REQUIRE(fs::exists(list));
  std::ifstream in(list);
  Comparison r;
  size_t elfs = 0;
  for (std::string path; std::getline(in, path);) {
    if (path.empty()) continue;
    INFO("guest " << path);
    REQUIRE(fs::exists(path));
    compare(objdump(path), fs::path(path).filename().string(), r);
    ++elfs;
  }
  REQUIRE(elfs > 0);
  note_outside_isa(r);
  require_match(r, 1000);
}

TEST_CASE("Disassembler matches objdump on every instruction form", "[rv64][disasm][objdump]") {
  TempDir dir;
  REQUIRE(!dir.path().empty());
  const fs::path src = fs::path(KSIM_SOURCE_DIR) / "tests/data/rv64_all_insns.S";
  Comparison r;
  compare(objdump(assemble(src, dir)), "rv64_all_insns", r);
  note_outside_isa(r);
  require_match(r, 1000);
}

// Every 16-bit encoding, and for each instruction-table row random values of
// the bits its mask leaves free (registers, immediates, and the fields the
// decoder ignores), with each register field forced to x0 now and then.
TEST_CASE("Disassembler matches objdump on generated encodings", "[rv64][disasm][objdump]") {
  TempDir dir;
  REQUIRE(!dir.path().empty());
  const fs::path src = dir.path() / "encodings.S";
  {
    std::ofstream out(src);
    // The named CSR makes gas record the privileged spec version in the
    // ELF, as it does for every guest; objdump chooses CSR names by it. The
    // zero padding (1 MiB, the reach of jal) on both sides keeps every jump
    // target inside .text, so objdump names targets after the symbols of the
    // listing and not after linker symbols beyond it.
    out << "  .text\n  .globl _start\n_start:\n  csrr a0, mstatus\n  .skip 0x100000\nencodings:\n";
    char line[40];
    for (uint32_t c = 0; c < 0x10000; ++c) {
      if (!is_compressed(static_cast<uint16_t>(c))) continue;
      std::snprintf(line, sizeof line, "  .insn 2, 0x%04x\n", c);
      out << line;
    }
    auto word = [&](uint32_t w) {
      if ((w & 0x1f) == 0x1f) return;  // a 48-bit or longer encoding: not ours to print
      std::snprintf(line, sizeof line, "  .insn 4, 0x%08x\n", w);
      out << line;
    };
    std::mt19937 rng(20240601);
    for (size_t i = 0; i < static_cast<size_t>(Op::illegal); ++i) {
      const OpInfo& info = op_info(static_cast<Op>(i));
      for (int k = 0; k < 96; ++k) {
        uint32_t w = rng();
        if (k % 4 == 1) w &= ~(0x1fu << 7);    // rd = x0
        if (k % 4 == 2) w &= ~(0x1fu << 15);   // rs1 = x0
        if (k % 4 == 3) w &= ~(0x1fu << 20);   // rs2 = x0 (or a small immediate)
        if (k % 16 == 5) w &= 0x000fffff;      // immediate 0
        if (k % 16 == 6) w |= 0xfff00000;      // immediate -1
        word((w & ~info.mask) | info.match);
      }
    }
    for (uint32_t csr = 0; csr < 4096; ++csr) word(csr << 20 | 2 << 12 | 10 << 7 | 0x73);  // csrr a0,csr
    for (int k = 0; k < 4096; ++k) word(rng() | 3);
    out << "  .skip 0x100000\n";
  }
  Comparison r;
  compare(objdump(assemble(src, dir)), "encodings", r);
  note_outside_isa(r);
  require_match(r, 60000);
}
