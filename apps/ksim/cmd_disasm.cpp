// `ksim disasm`: objdump-style listing of a guest image, whole or by symbol.
#include <algorithm>
#include <cstdio>

#include "apps/ksim/options.hpp"
#include "cpu/rv64/disasm.hpp"
#include "cpu/rv64/insn.hpp"
#include "cpu/x86/insn.hpp"
#include "sim/elf/source_text.hpp"

namespace ksim::cli {

namespace {

// -S: the C source lines printed before the instructions they compiled to.
struct Source {
  const LineTable& lines;
  SourceInterleaver order{lines};
  SourceFiles files;

  void before(uint64_t pc, bool function_start) {
    if (function_start) order.reset();
    const auto b = order.next(pc);
    if (!b) return;
    const std::string& path = lines.path(b->file);
    for (uint32_t n = b->first; n <= b->last; ++n) {
      // Without the file (moved, or a foreign image), where the line is.
      if (const std::string* text = files.line(path, n))
        std::printf("%s\n", text->c_str());
      else
        std::printf("%s:%u\n", lines.short_name(b->file).c_str(), n);
    }
  }
};

// x86: Intel syntax from Zydis's formatter, raw bytes in hex, branch and
// call targets named by symbol.
void list_range_x86(const ElfImage& img, const ElfSegment& seg, uint64_t start, uint64_t end, Source* src) {
  auto symbolize = [&img](uint64_t a) {
    return img.symbols.containing(a) ? img.symbols.format(a) : std::string();
  };
  uint64_t pc = start;
  while (pc < end) {
    const Symbol* fn = img.symbols.containing(pc);
    const bool starts = fn && fn->addr == pc && fn->kind == Symbol::Kind::function;
    if (starts) std::printf("\n%016llx <%s>:\n", static_cast<unsigned long long>(pc), fn->name.c_str());
    if (src) src->before(pc, starts || pc == start);
    const uint64_t off = pc - seg.paddr;
    const uint64_t avail = std::min<uint64_t>(15, end - pc);
    const uint8_t* bytes = seg.bytes.data() + off;
    x86::Insn in = x86::decode(bytes, avail, pc);
    std::string hex;
    for (unsigned k = 0; k < in.len; ++k) {
      char b[4];
      std::snprintf(b, sizeof b, "%02x ", bytes[k]);
      hex += b;
    }
    std::printf("%8llx:\t%-30s\t%s\n", static_cast<unsigned long long>(pc), hex.c_str(),
                x86::disassemble(bytes, avail, pc, symbolize).c_str());
    pc += in.len ? in.len : 1;
  }
}

// Lists [start, end) of one executable segment, with symbol headers.
void list_range(const ElfImage& img, const ElfSegment& seg, uint64_t start, uint64_t end, Source* src) {
  if (img.isa == Isa::x86_64) return list_range_x86(img, seg, start, end, src);
  auto symbolize = [&img](uint64_t a) {
    return img.symbols.containing(a) ? img.symbols.format(a) : std::string();
  };
  uint64_t pc = start;
  while (pc < end) {
    const Symbol* fn = img.symbols.containing(pc);
    const bool starts = fn && fn->addr == pc && fn->kind == Symbol::Kind::function;
    if (starts) std::printf("\n%016llx <%s>:\n", static_cast<unsigned long long>(pc), fn->name.c_str());
    if (src) src->before(pc, starts || pc == start);
    uint64_t off = pc - seg.paddr;
    auto byte = [&](uint64_t o) -> uint8_t { return o < seg.bytes.size() ? seg.bytes[o] : 0; };
    uint16_t lo = static_cast<uint16_t>(byte(off) | byte(off + 1) << 8);
    uint16_t hi = static_cast<uint16_t>(byte(off + 2) | byte(off + 3) << 8);
    rv64::Insn in = rv64::decode(lo, hi);
    if (in.len == 4 && pc + 4 > end) in = rv64::decode16(lo);  // truncated tail
    if (in.len == 2)
      std::printf("%8llx:\t%04x     \t%s\n", static_cast<unsigned long long>(pc), lo,
                  rv64::disassemble(in, pc, symbolize).c_str());
    else
      std::printf("%8llx:\t%08x \t%s\n", static_cast<unsigned long long>(pc), static_cast<uint32_t>(hi) << 16 | lo,
                  rv64::disassemble(in, pc, symbolize).c_str());
    pc += in.len;
  }
}

// The length of the instruction at `pc` as the listing decodes it.
unsigned insn_len(const ElfImage& img, const ElfSegment& seg, uint64_t pc) {
  const uint64_t off = pc - seg.paddr;
  if (off >= seg.bytes.size()) return 1;
  if (img.isa == Isa::x86_64) {
    const x86::Insn in = x86::decode(seg.bytes.data() + off, std::min<uint64_t>(15, seg.bytes.size() - off), pc);
    return in.len ? in.len : 1;
  }
  return rv64::is_compressed(static_cast<uint16_t>(seg.bytes[off])) ? 2 : 4;
}

}  // namespace

int cmd_disasm(const std::vector<std::string>& args) {
  po::options_description opts("ksim disasm options");
  std::string isa_name = "rv64", elf, image;
  std::vector<std::string> symbols;
  opts.add_options()
      ("isa", po::value(&isa_name)->default_value("rv64"), "instruction set: rv64 or x86 (Intel syntax)")
      ("elf", po::value(&elf), "guest ELF64 executable (default: a built-in image, see --image)")
      ("image", po::value(&image)->default_value(kDefaultImage), "built-in image: preempt, nopreempt, fig4, hello")
      ("symbol", po::value(&symbols), "function to list (repeatable; also positional); default: all code")
      ("source,S", po::bool_switch(), "show the C (or assembler) source lines before their instructions, as objdump -S");
  po::positional_options_description pos;
  pos.add("symbol", -1);
  po::variables_map vm;
  if (!parse_options(args, "usage: ksim disasm [options] [SYMBOL...]", opts, &pos, vm)) return kOk;
  Isa isa = parse_isa(isa_name);
  ElfImage img = load_image(elf, image, isa);
  std::optional<Source> src;
  if (vm["source"].as<bool>()) {
    if (img.lines->empty())
      std::fprintf(stderr, "ksim disasm: the image has no line information (built without -g): no source shown\n");
    else
      src.emplace(Source{*img.lines});
  }
  Source* sp = src ? &*src : nullptr;

  // Code is what the executable segments hold; an image whose segments
  // carry no X flag at all (the riscv-tests' flagless segment, which the
  // machine loads anyway) is listed whole.
  const bool any_x = std::any_of(img.segments.begin(), img.segments.end(), [](auto& s) { return s.executable; });
  auto is_code = [any_x](const ElfSegment& s) { return s.executable || !any_x; };
  auto segment_of = [&](uint64_t addr) -> const ElfSegment* {
    for (const auto& s : img.segments)
      if (is_code(s) && addr - s.paddr < s.memsz) return &s;
    return nullptr;
  };

  if (symbols.empty()) {
    for (const auto& s : img.segments)
      if (is_code(s)) list_range(img, s, s.paddr, s.paddr + s.bytes.size(), sp);
    return kOk;
  }
  for (const auto& name : symbols) {
    std::optional<uint64_t> addr = img.symbols.resolve(name);
    if (!addr) throw InputError("unknown symbol '" + name + "'");
    const ElfSegment* seg = segment_of(*addr);
    if (!seg) throw InputError("'" + name + "' is not in an executable segment");
    const Symbol* sym = img.symbols.containing(*addr);
    // Inside a function, only where an instruction starts, as a probe there
    // is refused: from anywhere else the bytes decode to garbage.
    if (sym && sym->addr < *addr && segment_of(sym->addr) == seg) {
      uint64_t pc = sym->addr;
      while (pc < *addr) {
        const unsigned len = insn_len(img, *seg, pc);
        if (pc + len > *addr)
          throw InputError("'" + name + "' is not where an instruction starts: the " + std::to_string(len) +
                           "-byte instruction at " + img.symbols.format(pc) + " covers it");
        pc += len;
      }
    }
    uint64_t end = (sym && sym->size) ? sym->addr + sym->size : *addr + 4;
    end = std::min(end, seg->paddr + seg->bytes.size());
    list_range(img, *seg, *addr, end, sp);
  }
  return kOk;
}

}  // namespace ksim::cli
