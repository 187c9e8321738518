// objdump-compatible disassembly of decoded RV64 instructions.
//
// The reference is riscv64-unknown-elf-objdump -d from binutils 2.40. Its
// opcode table lists many aliases ahead of the instructions they stand for,
// and it prints the first row that matches, so some of its choices look odd
// next to the ISA manual; we follow them because users compare our listings
// with objdump's line by line (tests/rv64_disasm_test.cpp checks every line of
// the guest programs and of an all-instructions file against objdump):
//   - immediate ALU forms print with the register-form name: "add a0,a1,5"
//     for addi, "and"/"or"/"xor" for andi/ori/xori, "addw" for addiw, and
//     "sll"/"srl"/"sra"(+"w") for the shift-immediates (shamt in hex);
//   - CSR immediate forms reuse the register-form names: "csrrw a0,mstatus,5"
//     for csrrwi, "csrw mstatus,5" for csrwi;
//   - compressed instructions print as the 32-bit instruction they expand to
//     (with the same aliases), except HINT encodings, which objdump names by
//     their compressed mnemonic ("c.li zero,5", "c.slli64 a0", "c.nop 3").
// Deliberate differences, where objdump's output depends on more than the
// instruction's bytes:
//   - after auipc/lui objdump tracks register values and appends
//     "# <address> <symbol>" to later instructions. That needs the preceding
//     instructions, which a one-instruction API does not have, so we never
//     print those comments;
//   - objdump names CSRs after the privileged spec version recorded in the
//     ELF. We always use version 1.11, the one gas 2.40 records by default
//     (see kCsrNames), so files that record 1.12, or no version at all, get
//     numbers where objdump would name a 1.12 CSR (menvcfg, pmpaddr63, ...);
//   - words the decoder rejects print as ".4byte 0x..."/".2byte 0x...", which
//     is objdump's form for words it does not know; objdump does name a few
//     encodings outside RV64IMAC+Zicsr+Zifencei (uret, sret, sfence.vma, the
//     reserved c.addi16sp sp,0), but on ksim those trap, and the listing says so.
#include "cpu/rv64/disasm.hpp"

#include <array>
#include <cstdio>
#include <string_view>

#include "cpu/hex.hpp"

namespace ksim::rv64 {

namespace {

constexpr std::array<const char*, 32> kRegNames = {
    "zero", "ra", "sp", "gp", "tp",  "t0",  "t1", "t2", "s0", "s1", "a0",
    "a1",   "a2", "a3", "a4", "a5",  "a6",  "a7", "s2", "s3", "s4", "s5",
    "s6",   "s7", "s8", "s9", "s10", "s11", "t3", "t4", "t5", "t6"};

constexpr uint32_t bits(uint32_t v, int hi, int lo) { return (v >> lo) & ((1u << (hi - lo + 1)) - 1); }

// CSR names as objdump prints them. binutils 2.40 names a CSR only if it
// exists in the privileged spec version recorded in the ELF attributes, and
// gas 2.40 records version 1.11 by default, so every guest is listed with
// the 1.11 names: ustatus, sedeleg, ... are named while menvcfg, mconfigptr,
// mseccfg, mtinst, mstatush, pmpcfg4.. and pmpaddr16.. (1.12) are printed as
// numbers, even though ksim implements some of them. Besides that, objdump
// names the CSRs of every extension (F, V, H, Smaia, ...), whichever the file
// was built for. Numbered families are listed as ranges below.
struct CsrName {
  uint16_t num;
  const char* name;
};
constexpr CsrName kCsrNames[] = {
    // Unprivileged: N extension (gone in 1.12), F, V, Zkr
    {0x000, "ustatus"}, {0x004, "uie"}, {0x005, "utvec"}, {0x040, "uscratch"}, {0x041, "uepc"},
    {0x042, "ucause"}, {0x043, "utval"}, {0x044, "uip"}, {0x001, "fflags"}, {0x002, "frm"},
    {0x003, "fcsr"}, {0x008, "vstart"}, {0x009, "vxsat"}, {0x00a, "vxrm"}, {0x00f, "vcsr"},
    {0x015, "seed"},
    // Supervisor
    {0x100, "sstatus"}, {0x102, "sedeleg"}, {0x103, "sideleg"}, {0x104, "sie"}, {0x105, "stvec"},
    {0x106, "scounteren"}, {0x10c, "sstateen0"}, {0x10d, "sstateen1"}, {0x10e, "sstateen2"},
    {0x10f, "sstateen3"}, {0x114, "sieh"}, {0x140, "sscratch"}, {0x141, "sepc"}, {0x142, "scause"},
    {0x143, "stval"}, {0x144, "sip"}, {0x14d, "stimecmp"}, {0x150, "siselect"}, {0x151, "sireg"},
    {0x154, "siph"}, {0x15c, "stopei"}, {0x15d, "stimecmph"}, {0x180, "satp"}, {0x5a8, "scontext"},
    {0xda0, "scountovf"}, {0xdb0, "stopi"},
    // Virtual supervisor
    {0x200, "vsstatus"}, {0x204, "vsie"}, {0x205, "vstvec"}, {0x214, "vsieh"}, {0x240, "vsscratch"},
    {0x241, "vsepc"}, {0x242, "vscause"}, {0x243, "vstval"}, {0x244, "vsip"}, {0x24d, "vstimecmp"},
    {0x250, "vsiselect"}, {0x251, "vsireg"}, {0x254, "vsiph"}, {0x25c, "vstopei"},
    {0x25d, "vstimecmph"}, {0x280, "vsatp"}, {0xeb0, "vstopi"},
    // Machine
    {0x300, "mstatus"}, {0x301, "misa"}, {0x302, "medeleg"}, {0x303, "mideleg"}, {0x304, "mie"},
    {0x305, "mtvec"}, {0x306, "mcounteren"}, {0x308, "mvien"}, {0x309, "mvip"}, {0x30c, "mstateen0"},
    {0x30d, "mstateen1"}, {0x30e, "mstateen2"}, {0x30f, "mstateen3"}, {0x313, "midelegh"},
    {0x314, "mieh"}, {0x318, "mvienh"}, {0x319, "mviph"}, {0x31c, "mstateen0h"}, {0x31d, "mstateen1h"},
    {0x31e, "mstateen2h"}, {0x31f, "mstateen3h"}, {0x320, "mcountinhibit"}, {0x340, "mscratch"},
    {0x341, "mepc"}, {0x342, "mcause"}, {0x343, "mtval"}, {0x344, "mip"}, {0x350, "miselect"},
    {0x351, "mireg"}, {0x354, "miph"}, {0x35c, "mtopei"}, {0xb00, "mcycle"}, {0xb02, "minstret"},
    {0xb80, "mcycleh"}, {0xb82, "minstreth"}, {0xf11, "mvendorid"}, {0xf12, "marchid"},
    {0xf13, "mimpid"}, {0xf14, "mhartid"}, {0xfb0, "mtopi"},
    // Hypervisor
    {0x600, "hstatus"}, {0x602, "hedeleg"}, {0x603, "hideleg"}, {0x604, "hie"}, {0x605, "htimedelta"},
    {0x606, "hcounteren"}, {0x607, "hgeie"}, {0x608, "hvien"}, {0x609, "hvictl"}, {0x60a, "henvcfg"},
    {0x60c, "hstateen0"}, {0x60d, "hstateen1"}, {0x60e, "hstateen2"}, {0x60f, "hstateen3"},
    {0x613, "hidelegh"}, {0x615, "htimedeltah"}, {0x618, "hvienh"}, {0x61a, "henvcfgh"},
    {0x61c, "hstateen0h"}, {0x61d, "hstateen1h"}, {0x61e, "hstateen2h"}, {0x61f, "hstateen3h"},
    {0x643, "htval"}, {0x644, "hip"}, {0x645, "hvip"}, {0x646, "hviprio1"}, {0x647, "hviprio2"},
    {0x64a, "htinst"}, {0x655, "hviph"}, {0x656, "hviprio1h"}, {0x657, "hviprio2h"}, {0x680, "hgatp"},
    {0x6a8, "hcontext"}, {0xe12, "hgeip"},
    // Debug and trigger
    {0x7a0, "tselect"}, {0x7a1, "tdata1"}, {0x7a2, "tdata2"}, {0x7a3, "tdata3"}, {0x7a4, "tinfo"},
    {0x7a5, "tcontrol"}, {0x7a8, "mcontext"}, {0x7aa, "mscontext"}, {0x7b0, "dcsr"}, {0x7b1, "dpc"},
    {0x7b2, "dscratch0"}, {0x7b3, "dscratch1"},
    // Unprivileged counters and vector state
    {0xc00, "cycle"}, {0xc01, "time"}, {0xc02, "instret"}, {0xc20, "vl"}, {0xc21, "vtype"},
    {0xc22, "vlenb"}, {0xc80, "cycleh"}, {0xc81, "timeh"}, {0xc82, "instreth"},
};

// A family name<index><suffix>; the counter families start at index 3.
struct CsrRange {
  uint16_t first, count, first_index;
  const char* prefix;
  const char* suffix;
};
constexpr CsrRange kCsrRanges[] = {
    {0x3a0, 4, 0, "pmpcfg", ""},        {0x3b0, 16, 0, "pmpaddr", ""},
    {0x323, 29, 3, "mhpmevent", ""},    {0x723, 29, 3, "mhpmevent", "h"},
    {0xb03, 29, 3, "mhpmcounter", ""},  {0xb83, 29, 3, "mhpmcounter", "h"},
    {0xc03, 29, 3, "hpmcounter", ""},   {0xc83, 29, 3, "hpmcounter", "h"},
};

// A word with no mnemonic, printed as data of the instruction's size.
std::string raw_word(const Insn& in) { return (in.len == 2 ? ".2byte\t" : ".4byte\t") + hex(in.raw); }

// objdump's name for an instruction when no alias applies (see the comment at
// the top: the immediate ALU forms go by their register-form names).
const char* base_name(Op op) {
  switch (op) {
    case Op::addi: return "add";
    case Op::xori: return "xor";
    case Op::ori: return "or";
    case Op::andi: return "and";
    case Op::addiw: return "addw";
    case Op::slli: return "sll";
    case Op::srli: return "srl";
    case Op::srai: return "sra";
    case Op::slliw: return "sllw";
    case Op::srliw: return "srlw";
    case Op::sraiw: return "sraw";
    case Op::csrrwi: return "csrrw";
    case Op::csrrsi: return "csrrs";
    case Op::csrrci: return "csrrc";
    default: return op_info(op).mnemonic;
  }
}

// FENCE's pred/succ sets as objdump spells them; the empty set has no name.
std::string fence_set(uint32_t set) {
  if (set == 0) return "unknown";
  std::string s;
  for (auto [bit, c] : {std::pair{8u, 'i'}, {4u, 'o'}, {2u, 'r'}, {1u, 'w'}})
    if (set & bit) s += c;
  return s;
}

class Printer {
 public:
  Printer(const Insn& in, uint64_t pc, const Symbolizer& symbolize) : in_(in), pc_(pc), symbolize_(symbolize) {}

  std::string run() {
    if (in_.op == Op::illegal) return in_.len == 2 && in_.raw == 0 ? "unimp" : raw_word(in_);
    if (in_.len == 2) {
      if (std::string hint = compressed_hint(); !hint.empty()) return hint;
    } else if (!objdump_knows()) {
      return raw_word(in_);
    }
    if (std::string a = alias(); !a.empty()) return a;
    return canonical();
  }

 private:
  const Insn& in_;
  uint64_t pc_;
  const Symbolizer& symbolize_;

  const char* rd() const { return reg_name(in_.rd); }
  const char* rs1() const { return reg_name(in_.rs1); }
  const char* rs2() const { return reg_name(in_.rs2); }
  std::string imm() const { return std::to_string(in_.imm); }
  // "(reg)" and "off(reg)". Built by appending: GCC 12 at -O3 warns
  // (-Wrestrict, a false positive) about "(" + std::string(...).
  static std::string paren(unsigned base) {
    std::string s = "(";
    s += reg_name(base);
    s += ')';
    return s;
  }
  static std::string mem(int32_t off, unsigned base) { return std::to_string(off) + paren(base); }
  std::string csr() const { return csr_name(static_cast<uint32_t>(in_.imm)); }

  std::string target() const {
    uint64_t addr = pc_ + static_cast<uint64_t>(static_cast<int64_t>(in_.imm));
    std::string s = hex(addr, false);
    if (symbolize_) {
      if (std::string name = symbolize_(addr); !name.empty()) s += " <" + name + ">";
    }
    return s;
  }

  static std::string join(std::string_view mn, std::initializer_list<std::string_view> ops) {
    std::string s(mn);
    char sep = '\t';
    for (std::string_view op : ops) {
      s += sep;
      s += op;
      sep = ',';
    }
    return s;
  }

  // 32-bit encodings our decoder accepts but objdump rejects: its FENCE rows
  // require rd = rs1 = 0 (and fm = 0 except for fence.tso), and fence.i
  // requires the whole immediate to be zero. The decoder ignores those fields
  // as the ISA tells implementations to.
  bool objdump_knows() const {
    const uint32_t raw = in_.raw;
    if (in_.op == Op::fence) return (raw & 0xf00fff80) == 0 || raw == 0x8330000f;
    if (in_.op == Op::fence_i) return raw == 0x0000100f;
    return true;
  }

  // Compressed HINT encodings (rd = x0, or a zero immediate/shift amount):
  // objdump's RVC rows for the ordinary mnemonics exclude them, so it falls
  // back to the RVC name. C.ADDI rd,0 is the odd one: it still prints as an
  // add, but as "add rd,rd,0" where the 32-bit addi rd,rd,0 would be "mv".
  std::string compressed_hint() const {
    const uint32_t c = in_.raw;
    const uint32_t rd = bits(c, 11, 7), rs2 = bits(c, 6, 2);
    const uint32_t imm6 = bits(c, 12, 12) << 5 | rs2;
    const int32_t simm6 = static_cast<int32_t>(imm6 << 26) >> 26;
    switch (bits(c, 1, 0) << 3 | bits(c, 15, 13)) {
      case 1 << 3 | 0:  // C.ADDI (C.NOP when rd = 0)
        if (rd == 0 && simm6 != 0) return join("c.nop", {std::to_string(simm6)});
        if (rd != 0 && simm6 == 0) return join("add", {reg_name(rd), reg_name(rd), "0"});
        break;
      case 1 << 3 | 2:  // C.LI
        if (rd == 0) return join("c.li", {"zero", std::to_string(simm6)});
        break;
      case 1 << 3 | 3:  // C.LUI (rd = 2 is C.ADDI16SP)
        if (rd == 0) return join("c.lui", {"zero", hex(imm6 >= 32 ? imm6 + 0xfffc0 : imm6)});
        break;
      case 1 << 3 | 4:  // C.SRLI/C.SRAI with shamt 0
        if (bits(c, 11, 11) == 0 && imm6 == 0)
          return join(bits(c, 10, 10) ? "c.srai64" : "c.srli64", {reg_name(8 + bits(c, 9, 7))});
        break;
      case 2 << 3 | 0:  // C.SLLI
        if (imm6 == 0) return join("c.slli64", {reg_name(rd)});
        if (rd == 0) return join("c.slli", {"zero", hex(imm6)});
        break;
      case 2 << 3 | 4:  // C.MV / C.ADD with rd = 0
        if (rd == 0 && rs2 != 0) return join(bits(c, 12, 12) ? "c.add" : "c.mv", {"zero", reg_name(rs2)});
        break;
      default:
        break;
    }
    return {};
  }

  // objdump's default aliases. Returns "" when none applies.
  std::string alias() const {
    const unsigned d = in_.rd, s1 = in_.rs1, s2 = in_.rs2;
    switch (in_.op) {
      case Op::addi:
        if (d == 0 && s1 == 0 && in_.imm == 0) return "nop";
        if (s1 == 0) return join("li", {rd(), imm()});
        if (in_.imm == 0) return join("mv", {rd(), rs1()});
        break;
      case Op::addiw:
        if (in_.imm == 0) return join("sext.w", {rd(), rs1()});
        break;
      case Op::xori:
        if (in_.imm == -1) return join("not", {rd(), rs1()});
        break;
      case Op::andi:
        if (in_.imm == 255) return join("zext.b", {rd(), rs1()});
        break;
      case Op::add:  // C.MV expands to add rd,x0,rs2; a 32-bit add keeps its name
        if (in_.len == 2 && s1 == 0) return join("mv", {rd(), rs2()});
        break;
      case Op::sltiu:
        if (in_.imm == 1) return join("seqz", {rd(), rs1()});
        break;
      case Op::sub:
        if (s1 == 0) return join("neg", {rd(), rs2()});
        break;
      case Op::subw:
        if (s1 == 0) return join("negw", {rd(), rs2()});
        break;
      case Op::sltu:
        if (s1 == 0) return join("snez", {rd(), rs2()});
        break;
      case Op::slt:
        if (s2 == 0) return join("sltz", {rd(), rs1()});
        if (s1 == 0) return join("sgtz", {rd(), rs2()});
        break;
      case Op::beq:
        if (s2 == 0) return join("beqz", {rs1(), target()});
        break;
      case Op::bne:
        if (s2 == 0) return join("bnez", {rs1(), target()});
        break;
      case Op::bge:
        if (s1 == 0) return join("blez", {rs2(), target()});
        if (s2 == 0) return join("bgez", {rs1(), target()});
        break;
      case Op::blt:
        if (s2 == 0) return join("bltz", {rs1(), target()});
        if (s1 == 0) return join("bgtz", {rs2(), target()});
        break;
      case Op::jal:
        if (d == 0) return join("j", {target()});
        if (d == 1) return join("jal", {target()});
        break;
      case Op::jalr:
        if (d == 0 && s1 == 1 && in_.imm == 0) return "ret";
        if (d == 0) return join("jr", {in_.imm == 0 ? rs1() : mem(in_.imm, s1)});
        if (d == 1) return join("jalr", {in_.imm == 0 ? rs1() : mem(in_.imm, s1)});
        if (in_.imm == 0) return join("jalr", {rd(), rs1()});
        break;
      case Op::fence:
        if (in_.raw == 0x0ff0000f) return "fence";
        if (in_.raw == 0x8330000f) return "fence.tso";
        break;
      case Op::csrrw:
        if (in_.raw == 0xc0001073) return "unimp";  // csrrw zero,cycle,zero
        if (d == 0) return join("csrw", {csr(), rs1()});
        break;
      case Op::csrrs:
        if (s1 == 0) {
          switch (in_.imm) {
            case 0xc00: return join("rdcycle", {rd()});
            case 0xc01: return join("rdtime", {rd()});
            case 0xc02: return join("rdinstret", {rd()});
            default: return join("csrr", {rd(), csr()});
          }
        }
        if (d == 0) return join("csrs", {csr(), rs1()});
        break;
      case Op::csrrc:
        if (d == 0) return join("csrc", {csr(), rs1()});
        break;
      case Op::csrrwi:
      case Op::csrrsi:
      case Op::csrrci:
        if (d == 0) {
          static constexpr const char* kNames[] = {"csrw", "csrs", "csrc"};
          int i = in_.op == Op::csrrwi ? 0 : in_.op == Op::csrrsi ? 1 : 2;
          return join(kNames[i], {csr(), std::to_string(in_.rs1)});
        }
        break;
      default:
        break;
    }
    return {};
  }

  std::string canonical() const {
    const char* mn = base_name(in_.op);
    switch (op_info(in_.op).format) {
      case Format::R: return join(mn, {rd(), rs1(), rs2()});
      case Format::I: return join(mn, {rd(), rs1(), imm()});
      case Format::SHIFT: return join(mn, {rd(), rs1(), hex(static_cast<uint32_t>(in_.imm))});
      case Format::LOAD: return join(mn, {rd(), mem(in_.imm, in_.rs1)});
      case Format::STORE: return join(mn, {rs2(), mem(in_.imm, in_.rs1)});
      case Format::B: return join(mn, {rs1(), rs2(), target()});
      case Format::U: return join(mn, {rd(), hex(static_cast<uint32_t>(in_.imm) >> 12)});
      case Format::J: return join(mn, {rd(), target()});
      case Format::JALR: return join(mn, {rd(), mem(in_.imm, in_.rs1)});
      case Format::CSR: return join(mn, {rd(), csr(), rs1()});
      case Format::CSRI: return join(mn, {rd(), csr(), std::to_string(in_.rs1)});
      case Format::AMO: return join(std::string(mn) + ordering(), {rd(), rs2(), paren(in_.rs1)});
      case Format::LR: return join(std::string(mn) + ordering(), {rd(), paren(in_.rs1)});
      case Format::FENCE: return join(mn, {fence_set(bits(in_.raw, 27, 24)), fence_set(bits(in_.raw, 23, 20))});
      case Format::NONE: return mn;
    }
    return mn;
  }

  // The aq/rl suffix of an atomic (bits 26 and 25).
  const char* ordering() const {
    static constexpr const char* kSuffix[] = {"", ".rl", ".aq", ".aqrl"};
    return kSuffix[bits(in_.raw, 26, 25)];
  }
};

}  // namespace

const char* reg_name(unsigned r) { return r < kRegNames.size() ? kRegNames[r] : "?"; }

std::string csr_name(uint32_t num) {
  for (const CsrName& c : kCsrNames)
    if (c.num == num) return c.name;
  for (const CsrRange& r : kCsrRanges)
    if (num >= r.first && num < r.first + r.count)
      return r.prefix + std::to_string(num - r.first + r.first_index) + r.suffix;
  return hex(num);
}

std::string disassemble(const Insn& in, uint64_t pc, const Symbolizer& symbolize) {
  return Printer(in, pc, symbolize).run();
}

}  // namespace ksim::rv64
