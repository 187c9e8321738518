// The kprobe_events front end (kprobes/events/): the spec syntax of
// Documentation/trace/kprobetrace.rst ("Synopsis of kprobe_events"), its
// refusals with a caret under the bad column, argument fetching on a
// simulated CPU, and the ftrace line format.
#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <string>

#include "kprobes/arch.hpp"
#include "kprobes/events/fetch_args.hpp"
#include "kprobes/events/probe_spec.hpp"
#include "kprobes/events/trace_line.hpp"
#include "mem/memory_map.hpp"
#include "sim/elf/symbols.hpp"
#include "sim/machine.hpp"

using namespace ksim;
using namespace ksim::kprobes;
using namespace ksim::kprobes::events;

namespace {

// Stand-ins for the ISA Arch classes while make_x86_arch()/make_rv64_arch()
// are not written yet: only the register names and the ABI that fetch
// arguments use, as kprobes/arch.hpp documents them. The real classes are
// used whenever the factories return one.
class FetchOnlyArch : public Arch {
 public:
  int analyse(const TextReader&, uint64_t, const Symbol*, StepMode, ProbeInsn&, std::string&) const override {
    return -kEOPNOTSUPP;
  }
  int build_slot(ProbeInsn&, uint64_t, StepMode, std::string&) const override { return -kEOPNOTSUPP; }
  unsigned slot_size() const override { return 16; }
  bool is_breakpoint(const uint8_t*) const override { return false; }
  unsigned breakpoint_bytes(uint8_t*) const override { return 0; }
  bool is_breakpoint_trap(const TrapInfo&) const override { return false; }
  bool is_single_step_trap(const TrapInfo&) const override { return false; }
  bool is_ipi(const TrapInfo&) const override { return false; }
  void send_ipi(const DeviceStore&, int) const override {}
  SavedFlags save_and_mask(Cpu&) const override { return {}; }
  void restore(Cpu&, const SavedFlags&) const override {}
  bool emulate(Cpu&, Bus&, const ProbeInsn&, SavedFlags&) const override { return false; }
  void begin_step(Cpu&, const ProbeInsn&, uint64_t) const override {}
  bool is_step_end(const Cpu&, const TrapInfo&, const ProbeInsn&, uint64_t) const override { return false; }
  void finish_step(Cpu&, Bus&, const ProbeInsn&, uint64_t, SavedFlags&) const override {}
  RegSnapshot snapshot(const Cpu&) const override { return {}; }
  void restore_snapshot(Cpu&, const RegSnapshot&) const override {}
  void set_retval(Cpu&, uint64_t) const override {}
  bool return_address(const Cpu&, const Bus&, uint64_t&) const override { return false; }
  bool set_return_address(Cpu&, Bus&, uint64_t) const override { return false; }
  uint64_t sp_after_return(uint64_t sp) const override { return sp; }
};

// x86-64 SysV: rdi rsi rdx rcx r8 r9, then the stack above the return address.
class LocalX86Arch : public FetchOnlyArch {
 public:
  Isa isa() const override { return Isa::x86_64; }
  bool arg(const Cpu& cpu, const Bus& bus, int n, uint64_t& out) const override {
    static const int kRegs[6] = {7, 6, 2, 1, 8, 9};
    if (n >= 1 && n <= 6) {
      out = cpu.gpr(kRegs[n - 1]);
      return true;
    }
    return n > 6 && bus.read_bytes(cpu.gpr(4) + 8 * (n - 6), &out, 8);
  }
  uint64_t retval(const Cpu& cpu) const override { return cpu.gpr(0); }
  uint64_t stack_pointer(const Cpu& cpu) const override { return cpu.gpr(4); }
  int reg_index(const std::string& name) const override {
    static const char* const kShort[16] = {"ax", "cx", "dx", "bx", "sp", "bp", "si", "di",
                                           "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"};
    if (name == "ip" || name == "rip") return -2;
    for (int i = 0; i < 16; ++i) {
      if (name == kShort[i] || (i < 8 && name == std::string("r") + kShort[i])) return i;
    }
    return -1;
  }
};

// RV64: a0-a7, then the stack from sp.
class LocalRv64Arch : public FetchOnlyArch {
 public:
  Isa isa() const override { return Isa::rv64; }
  bool arg(const Cpu& cpu, const Bus& bus, int n, uint64_t& out) const override {
    if (n >= 1 && n <= 8) {
      out = cpu.gpr(9 + n);
      return true;
    }
    return n > 8 && bus.read_bytes(cpu.gpr(2) + 8 * (n - 9), &out, 8);
  }
  uint64_t retval(const Cpu& cpu) const override { return cpu.gpr(10); }
  uint64_t stack_pointer(const Cpu& cpu) const override { return cpu.gpr(2); }
  int reg_index(const std::string& name) const override {
    static const char* const kAbi[32] = {"zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0",
                                         "a1",   "a2", "a3", "a4", "a5", "a6", "a7", "s2", "s3", "s4", "s5",
                                         "s6",   "s7", "s8", "s9", "s10", "s11", "t3", "t4", "t5", "t6"};
    if (name == "pc") return -2;
    for (int i = 0; i < 32; ++i) {
      if (name == kAbi[i] || (name.starts_with('x') && name.substr(1) == std::to_string(i))) return i;
    }
    return -1;
  }
};

std::unique_ptr<Arch> x86_arch() {
  auto a = make_x86_arch();
  return a ? std::move(a) : std::make_unique<LocalX86Arch>();
}
std::unique_ptr<Arch> rv64_arch() {
  auto a = make_rv64_arch();
  return a ? std::move(a) : std::make_unique<LocalRv64Arch>();
}

ProbeSpec parse_x86(const std::string& text) { return parse_probe_spec(text, *x86_arch()); }

// The spec is refused with `reason` in the message and the caret at `column`.
void check_refused(const std::string& text, size_t column, const std::string& reason) {
  INFO("spec: " << text);
  try {
    parse_x86(text);
    FAIL("accepted");
  } catch (const SpecError& e) {
    CHECK_THAT(e.reason(), Catch::Contains(reason));
    CHECK(e.column() == column);
    const std::string caret_line = "\n  " + std::string(column, ' ') + "^";
    CHECK_THAT(std::string(e.what()), Catch::EndsWith(caret_line));
    CHECK_THAT(std::string(e.what()), Catch::StartsWith("bad probe spec: " + e.reason() + "\n  "));
  }
}

std::string many_args(size_t n) {
  std::string s = "p do_fork";
  for (size_t i = 0; i < n; ++i) s += " a" + std::to_string(i) + "=%di";
  return s;
}

SymbolTable test_symbols(uint64_t base) {
  SymbolTable t;
  t.add({"do_fork", base + 0x100, 0x58, Symbol::Kind::function});
  t.add({"sys_open", base + 0x200, 0x40, Symbol::Kind::function});
  t.add({"main", base + 0x300, 0x80, Symbol::Kind::function});
  t.add({"label", base + 0x400, 0, Symbol::Kind::other});  // no size: runs to the next symbol
  t.add({"counter", base + 0x420, 16, Symbol::Kind::object});
  t.finalize();
  return t;
}

}  // namespace

// --- Parsing: the probe head and target -------------------------------------

TEST_CASE("A kprobe on a symbol gets Linux's default group and event names", "[kprobes][events]") {
  ProbeSpec s = parse_x86("p do_fork");
  CHECK(s.kind == ProbeKind::kprobe);
  CHECK(s.group == "kprobes");
  CHECK(s.event == "p_do_fork_0");
  CHECK(s.symbol == "do_fork");
  CHECK(s.offset == 0);
  CHECK_FALSE(s.has_addr);
  CHECK(s.target_column == 2);
  CHECK(s.args.empty());
  CHECK(s.describe() == "p:kprobes/p_do_fork_0 do_fork");
}

TEST_CASE("Probe offsets are decimal or 0x hex and name the default event", "[kprobes][events]") {
  ProbeSpec hex = parse_x86("p do_fork+0x10");
  CHECK(hex.offset == 16);
  CHECK(hex.event == "p_do_fork_16");
  CHECK(hex.describe() == "p:kprobes/p_do_fork_16 do_fork+16");
  CHECK(parse_x86("p do_fork+16").offset == 16);
  // Dots in symbol names (GCC's clones) become '_' in the event name.
  CHECK(parse_x86("p foo.isra.0+4").event == "p_foo_isra_0_4");
}

TEST_CASE("A kprobe on an address is named p_0x<addr>", "[kprobes][events]") {
  ProbeSpec s = parse_x86("p 0x80001234");
  CHECK(s.has_addr);
  CHECK(s.addr == 0x80001234);
  CHECK(s.event == "p_0x80001234");
  CHECK(s.describe() == "p:kprobes/p_0x80001234 0x80001234");
}

TEST_CASE("Group and event names: GRP/EVENT, EVENT, and GRP/ alone", "[kprobes][events]") {
  ProbeSpec both = parse_x86("p:mygrp/myev do_fork");
  CHECK(both.group == "mygrp");
  CHECK(both.event == "myev");
  ProbeSpec event_only = parse_x86("p:myev do_fork");
  CHECK(event_only.group == "kprobes");
  CHECK(event_only.event == "myev");
  ProbeSpec group_only = parse_x86("p:mygrp/ do_fork+8");
  CHECK(group_only.group == "mygrp");
  CHECK(group_only.event == "p_do_fork_8");
}

TEST_CASE("ksim shorthand: p:SYM NAME=ARG and r:SYM NAME=ARG take the name as the target", "[kprobes][events]") {
  ProbeSpec p = parse_x86("p:do_fork flags=$arg1");
  CHECK(p.symbol == "do_fork");
  CHECK(p.event == "p_do_fork_0");
  REQUIRE(p.args.size() == 1);
  CHECK(p.args[0].name == "flags");
  ProbeSpec r = parse_x86("r:sys_open ret=$retval");
  CHECK(r.is_return());
  CHECK(r.symbol == "sys_open");
  CHECK(r.event == "r_sys_open_0");
  ProbeSpec off = parse_x86("p:grp/do_fork+4 x=%ax");
  CHECK(off.group == "grp");
  CHECK(off.symbol == "do_fork");
  CHECK(off.offset == 4);
  CHECK(off.event == "p_do_fork_4");
  ProbeSpec alone = parse_x86("r8:sys_open");
  CHECK(alone.symbol == "sys_open");
  CHECK(alone.maxactive == 8);
  // With a target word the name after ':' is the event, as in Linux.
  ProbeSpec linux_form = parse_x86("p:do_fork do_fork flags=$arg1");
  CHECK(linux_form.event == "do_fork");
  check_refused("p:do_fork+x flags=$arg1", 10, "bad offset");
}

TEST_CASE("Return probes: r, r<MAXACTIVE>, r with +0, and p with %return", "[kprobes][events]") {
  ProbeSpec r = parse_x86("r sys_open");
  CHECK(r.kind == ProbeKind::kretprobe);
  CHECK(r.is_return());
  CHECK(r.maxactive == 0);
  CHECK(r.event == "r_sys_open_0");
  CHECK(r.describe() == "r:kprobes/r_sys_open_0 sys_open");

  ProbeSpec counted = parse_x86("r16:ret sys_open");
  CHECK(counted.maxactive == 16);
  CHECK(counted.event == "ret");
  CHECK(counted.describe() == "r16:kprobes/ret sys_open");
  CHECK(parse_x86("r4096 sys_open").maxactive == 4096);
  CHECK(parse_x86("r sys_open+0").offset == 0);

  ProbeSpec pct = parse_x86("p sys_open%return");
  CHECK(pct.is_return());
  CHECK(pct.symbol == "sys_open");
  CHECK(pct.event == "r_sys_open_0");
  CHECK(pct.describe() == "r:kprobes/r_sys_open_0 sys_open");
  CHECK(parse_x86("p:grp/ev sys_open+0%return").is_return());
}

// --- Parsing: fetch arguments ------------------------------------------------

TEST_CASE("Fetch arguments: registers, memory, variables, immediates, dereferences", "[kprobes][events]") {
  ProbeSpec s = parse_x86(
      "p:ev do_fork %di %si:u32 flags=%dx:x32 +8(%di):s16 -4(+0(%si)):u8 @0x1000 @counter+8:u64 @counter-8 "
      "$stack $stack3 $arg1 $comm \\42 \\-1:s64 \\\"hi\" +0(%di):string +0($stack):symbol %ip c=%ax:char +u8(%di)");
  REQUIRE(s.args.size() == 20);
  const auto& a = s.args;
  // Unnamed arguments are arg<position>, counting named ones too.
  CHECK(a[0].name == "arg1");
  CHECK(a[0].source == FetchSource::reg);
  CHECK(a[0].reg == 7);  // rdi
  CHECK(std::string(a[0].type->name) == "x64");
  CHECK(a[1].name == "arg2");
  CHECK(std::string(a[1].type->name) == "u32");
  CHECK(a[1].reg == 6);
  CHECK(a[2].name == "flags");
  CHECK(std::string(a[2].type->name) == "x32");
  CHECK(a[3].derefs.size() == 1);
  CHECK(a[3].derefs[0].offset == 8);
  CHECK(std::string(a[3].type->name) == "s16");
  // Innermost first: +0 then -4.
  REQUIRE(a[4].derefs.size() == 2);
  CHECK(a[4].derefs[0].offset == 0);
  CHECK(a[4].derefs[1].offset == -4);
  CHECK(a[5].source == FetchSource::imm);
  CHECK(a[5].number == 0x1000);
  CHECK(a[5].derefs.size() == 1);
  CHECK(a[6].source == FetchSource::symbol);
  CHECK(a[6].symbol == "counter");
  CHECK(a[6].sym_offset == 8);
  CHECK(a[6].symbol_column == s.source.find("@counter+8") + 1);
  CHECK(a[7].sym_offset == -8);
  CHECK(a[8].source == FetchSource::stack);
  CHECK(a[9].source == FetchSource::stack_entry);
  CHECK(a[9].number == 3);
  CHECK(a[10].source == FetchSource::arg);
  CHECK(a[10].number == 1);
  CHECK(a[11].source == FetchSource::comm);
  CHECK(std::string(a[11].type->name) == "string");
  CHECK(a[12].source == FetchSource::imm);
  CHECK(a[12].number == 42);
  CHECK(a[13].number == ~uint64_t{0});
  CHECK(a[14].source == FetchSource::imm_string);
  CHECK(a[14].str == "hi");
  CHECK(std::string(a[14].type->name) == "string");
  CHECK(std::string(a[15].type->name) == "string");
  CHECK(std::string(a[16].type->name) == "symbol");
  CHECK(a[16].derefs.size() == 1);
  CHECK(a[17].source == FetchSource::pc);
  CHECK(a[18].name == "c");
  CHECK(std::string(a[18].type->name) == "char");
  CHECK(a[19].derefs[0].user);
  CHECK(a[19].derefs[0].offset == 8);
  CHECK(a[19].name == "arg20");
}

TEST_CASE("describe() lists the arguments as written, each with its name", "[kprobes][events]") {
  ProbeSpec s = parse_x86("r8:grp/ret sys_open rv=$retval:s32 +0($retval):string  %ax");
  CHECK(s.describe() == "r8:grp/ret sys_open rv=$retval:s32 arg2=+0($retval):string arg3=%ax");
}

TEST_CASE("RV64 register names come from the RV64 Arch", "[kprobes][events]") {
  auto arch = rv64_arch();
  ProbeSpec s = parse_probe_spec("p do_fork %a0 %x11 %sp %pc", *arch);
  REQUIRE(s.args.size() == 4);
  CHECK(s.args[0].reg == 10);
  CHECK(s.args[1].reg == 11);
  CHECK(s.args[2].reg == 2);
  CHECK(s.args[3].source == FetchSource::pc);
  CHECK_THROWS_AS(parse_probe_spec("p do_fork %di", *arch), SpecError);
}

TEST_CASE("128 arguments are accepted", "[kprobes][events]") {
  CHECK(parse_x86(many_args(128)).args.size() == 128);
}

TEST_CASE("describe() gives a spec that parses back to the same probe", "[kprobes][events]") {
  for (const char* text : {"p do_fork", "p:g/e do_fork+0x20 %di:u32 +8(-4(%si)):s8", "r12 sys_open +0($retval):string",
                           "p sys_open%return +0($retval):string x=$stack2", "p 0x1000 \\\"hi\" @counter-8:symbol"}) {
    INFO(text);
    const std::string once = parse_x86(text).describe();
    CHECK(parse_x86(once).describe() == once);
  }
}

TEST_CASE("Every prefix of a spec either parses or is refused with a SpecError", "[kprobes][events]") {
  const std::string full = "r16:grp/ev sys_open%return a=+0x10(-8(+u0($stack))):s32 \\\"a:b\" @x.y-0x8:u8 $comm";
  for (size_t n = 0; n <= full.size(); ++n) {
    const std::string text = full.substr(0, n);
    INFO(text);
    try {
      parse_x86(text);
    } catch (const SpecError& e) {
      CHECK(e.column() <= text.size());
    }
  }
}

// --- Refusals, each with the caret under the bad part ------------------------

TEST_CASE("A refused spec prints the reason, the spec and a caret", "[kprobes][events]") {
  try {
    parse_x86("p do_fork flags=%foo");
    FAIL("accepted");
  } catch (const SpecError& e) {
    CHECK(std::string(e.what()) ==
          "bad probe spec: unknown register 'foo'\n"
          "  p do_fork flags=%foo\n"
          "                   ^");
  }
}

TEST_CASE("Refused: probe type letters and MAXACTIVE", "[kprobes][events]") {
  check_refused("q do_fork", 0, "unknown probe type 'q'");
  check_refused("px:ev do_fork", 0, "unknown probe type 'px'");
  check_refused("p3 do_fork", 1, "MAXACTIVE is only for return probes");
  check_refused("r5000 do_fork", 1, "bad MAXACTIVE '5000'");
  check_refused("r1x:ev do_fork", 1, "bad MAXACTIVE '1x'");
  check_refused("", 0, "empty probe spec");
  check_refused("   ", 0, "empty probe spec");
}

TEST_CASE("Refused: empty or invalid event and group names", "[kprobes][events]") {
  check_refused("p: do_fork", 2, "empty event name");
  check_refused("p:1ev do_fork", 2, "bad event name '1ev'");
  check_refused("p:/ev do_fork", 2, "empty group name");
  check_refused("p:g-x/ev do_fork", 2, "bad group name 'g-x'");
  check_refused("p:grp/e.v do_fork", 6, "bad event name 'e.v'");
  check_refused("p:" + std::string(64, 'e') + " do_fork", 2, "event name longer than 63");
  check_refused("p:" + std::string(64, 'g') + "/ev do_fork", 2, "group name longer than 63");
}

TEST_CASE("Refused: missing or malformed targets and offsets", "[kprobes][events]") {
  check_refused("p:grp/", 6, "missing probe target");  // "p:ev" alone is the shorthand for a probe on ev
  check_refused("p:grp/   ", 6, "missing probe target");
  check_refused("p do_fork+0x1g", 10, "bad offset '0x1g'");
  check_refused("p do_fork+", 10, "bad offset ''");
  check_refused("p do_fork-4", 9, "negative probe offset");
  check_refused("p do_fork+0x100000000", 10, "bad offset");
  check_refused("p 0x12zz", 2, "bad address '0x12zz'");
  check_refused("p +4", 2, "missing symbol before '+'");
  check_refused("p mod:sym", 2, "bad symbol name 'mod:sym'");
  check_refused("p do_fork%ret", 9, "unknown suffix '%ret'");
  check_refused("p %return", 2, "missing probe target");
}

TEST_CASE("Refused: a return probe away from the function entry", "[kprobes][events]") {
  check_refused("r do_fork+4", 10, "must be at the function entry");
  check_refused("r:ev do_fork+0x10", 13, "must be at the function entry");
  check_refused("p do_fork+4%return", 10, "must be at the function entry");
}

TEST_CASE("Refused: unknown registers and fetch arguments", "[kprobes][events]") {
  check_refused("p do_fork %foo", 11, "unknown register 'foo'");
  check_refused("p do_fork %", 11, "missing register name");
  check_refused("p do_fork +0(%xyz)", 14, "unknown register 'xyz'");
  check_refused("p do_fork foo", 10, "bad fetch argument 'foo'");
  check_refused("p do_fork $foo", 10, "unknown variable '$foo'");
  check_refused("p do_fork @", 11, "missing address or symbol");
  check_refused("p do_fork @0x12q", 11, "bad address");
  check_refused("p do_fork @sym+zz", 14, "bad offset '+zz'");
  check_refused("p do_fork \\0xzz", 11, "bad immediate '0xzz'");
  check_refused("p do_fork \\\"abc", 11, "unterminated string immediate");
  check_refused("p do_fork \\\"ab\"c", 15, "unexpected text after the string immediate");
}

TEST_CASE("Refused: $retval on an entry probe, $argN on a return probe or past the entry", "[kprobes][events]") {
  check_refused("p do_fork $retval", 10, "$retval is only available on return probes");
  check_refused("p do_fork x=+0($retval)", 15, "$retval is only available on return probes");
  check_refused("r do_fork $arg1", 10, "$argN is not available on return probes");
  check_refused("p sys_open%return $arg2", 18, "$argN is not available on return probes");
  check_refused("p do_fork+4 $arg1", 12, "only available at a function entry");
  check_refused("p do_fork $arg0", 14, "bad argument number '0'");
  check_refused("p do_fork $arg", 14, "bad argument number ''");
  check_refused("p do_fork $stackx", 16, "bad stack index 'x'");
  check_refused("p do_fork $stack0x1", 16, "bad stack index '0x1'");
  check_refused("p do_fork $stack9999", 16, "bad stack index '9999'");
}

TEST_CASE("Refused: bad types", "[kprobes][events]") {
  check_refused("p do_fork %di:u128", 14, "unknown type 'u128'");
  check_refused("p do_fork x=%di:", 16, "missing type");
  check_refused("p do_fork %di:string", 14, "needs a memory argument");
  check_refused("p do_fork $stack2:string", 18, "needs a memory argument");
  check_refused("p do_fork $comm:u32", 16, "$comm is a string");
  check_refused("p do_fork \\\"a:b\":x8", 17, "string immediate is a string");
}

TEST_CASE("Refused: unbalanced parentheses and malformed dereferences", "[kprobes][events]") {
  check_refused("p do_fork +0(%di", 12, "'(' is never closed");
  check_refused("p do_fork +0(+8(%di)", 12, "'(' is never closed");
  check_refused("p do_fork +0(%di))", 17, "')' without '('");
  check_refused("p do_fork %di)", 13, "')' without '('");
  check_refused("p do_fork +0%di", 10, "needs parentheses");
  check_refused("p do_fork +0(%di)x", 17, "unexpected text after ')'");
  check_refused("p do_fork +zz(%di)", 11, "bad dereference offset 'zz'");
  check_refused("p do_fork +0()", 13, "missing fetch argument inside");
  check_refused("p do_fork +0($comm)", 13, "$comm cannot be dereferenced");
  std::string deep = "%di";
  for (int i = 0; i < 17; ++i) deep = "+0(" + deep + ")";
  check_refused("p do_fork " + deep, 10, "too many nested dereferences");
}

TEST_CASE("Refused: too many arguments, duplicate and bad argument names", "[kprobes][events]") {
  const std::string spec = many_args(129);
  check_refused(spec, spec.rfind(' ') + 1, "too many arguments (at most 128)");
  check_refused("p do_fork a=%di a=%si", 16, "duplicate argument name 'a'");
  // The second argument's default name is arg2: it collides.
  check_refused("p do_fork arg2=%di %si", 19, "duplicate argument name 'arg2'");
  check_refused("p do_fork common_pid=%di", 10, "is reserved");
  check_refused("p do_fork 1x=%di", 10, "bad argument name '1x'");
  check_refused("p do_fork =%di", 10, "missing argument name");
  check_refused("p do_fork a=", 12, "missing fetch argument after '='");
}

TEST_CASE("Unknown @SYM arguments are refused once symbols are known", "[kprobes][events]") {
  SymbolTable syms = test_symbols(0x1000);
  ProbeSpec ok = parse_x86("p do_fork @counter");
  CHECK_NOTHROW(check_fetch_symbols(ok, syms));
  ProbeSpec bad = parse_x86("p do_fork x=@nosuch+8");
  try {
    check_fetch_symbols(bad, syms);
    FAIL("accepted");
  } catch (const SpecError& e) {
    CHECK(e.reason() == "unknown symbol 'nosuch'");
    CHECK(e.column() == 13);
  }
}

// --- Fetching on a simulated CPU ---------------------------------------------

TEST_CASE("Fetch arguments evaluate on a simulated x86 CPU as ftrace prints them", "[kprobes][events]") {
  MachineConfig cfg;
  cfg.isa = Isa::x86_64;
  Machine m(cfg);
  auto arch = x86_arch();
  const uint64_t base = memmap::kRamBaseX86;
  const uint64_t data = base + 0x10000, stack = base + 0x20000, str = base + 0x30000;
  SymbolTable syms = test_symbols(base);
  Cpu& cpu = m.cpu(0);
  Bus& bus = m.bus();

  // data: [0] -> str (so the string is +0(+0(%di))), [8] u32 0xdeadbeef,
  // [12] s16 -2, [14] 'K', [16] -> data+0x40, [24] a code address
  const uint64_t words[4] = {str, 0x4b'fffe'deadbeefull, data + 0x40, base + 0x100 + 0x1c};
  bus.write_bytes(data, words, sizeof words);
  const uint64_t inner = 0x1122334455667788ull;
  bus.write_bytes(data + 0x40, &inner, 8);
  bus.write_bytes(str, "hello", 6);
  // stack: [rsp] return address, then the 7th and 8th arguments
  const uint64_t frame[3] = {base + 0x300 + 0x1c, 77, 88};
  bus.write_bytes(stack, frame, sizeof frame);
  const uint64_t counter = 0x0000'0001'0000'0005ull;
  bus.write_bytes(base + 0x420, &counter, 8);

  cpu.set_gpr(7, data);                    // rdi
  cpu.set_gpr(6, 0xffff'ffff'ffff'fffeull);  // rsi
  cpu.set_gpr(2, 0x11);                    // rdx
  cpu.set_gpr(0, 0);                       // rax: a null pointer
  cpu.set_gpr(4, stack);                   // rsp
  cpu.set_pc(base + 0x100);

  ProbeSpec s = parse_probe_spec(
      "p:ev do_fork flags=%dx a=%si:s64 b=%si:u8 c=%si:s8 d=%si:x16 e=%si:u64 name=+0(+0(%di)):string "
      "p=+0(%di):x64 w=+8(%di):u32 h=+12(%di):s16 ch=+14(%di):char n=+0(+16(%di)):x64 "
      "st=$stack s0=$stack0:symbol s1=$stack1:u64 a1=$arg1 a7=$arg7:u32 a8=$arg8:u8 comm=$comm "
      "imm=\\42:u16 neg=\\-1:s32 lit=\\\"lit\" sym=+24(%di):symbol var=@counter:u32 var4=@counter+4:u32 "
      "bad=+0(%ax):u64 badstr=+0(%ax):string ip=%ip",
      *arch);
  const FetchContext ctx{cpu, bus, *arch, syms, false, TaskInfo{"worker0.1", 5}};
  char buf[600];
  std::snprintf(buf, sizeof buf,
                " flags=0x11 a=-2 b=254 c=-2 d=0xfffe e=18446744073709551614 name=\"hello\""
                " p=0x%llx w=3735928559 h=-2 ch='K' n=0x1122334455667788"
                " st=0x%llx s0=main+0x1c/0x80 s1=77 a1=0x%llx a7=77 a8=88 comm=\"worker0.1\""
                " imm=42 neg=-1 lit=\"lit\" sym=do_fork+0x1c/0x58 var=5 var4=1"
                " bad=(fault) badstr=(fault) ip=0x%llx",
                static_cast<unsigned long long>(str), static_cast<unsigned long long>(stack),
                static_cast<unsigned long long>(data), static_cast<unsigned long long>(base + 0x100));
  CHECK(format_args(s, ctx) == buf);
}

TEST_CASE("Fetch arguments evaluate on a simulated RV64 CPU", "[kprobes][events]") {
  Machine m(MachineConfig{});
  auto arch = rv64_arch();
  const uint64_t base = memmap::kRamBase;
  const uint64_t data = base + 0x10000, stack = base + 0x20000;
  SymbolTable syms = test_symbols(base);
  Cpu& cpu = m.cpu(0);
  const uint64_t stack_args[2] = {99, 100};  // the 9th and 10th arguments
  m.bus().write_bytes(stack, stack_args, sizeof stack_args);
  m.bus().write_bytes(data, "/etc/passwd", 12);
  cpu.set_gpr(2, stack);  // sp
  cpu.set_gpr(10, data);  // a0
  cpu.set_gpr(11, 3);     // a1
  cpu.set_gpr(17, 8);     // a7

  ProbeSpec entry =
      parse_probe_spec("p:open sys_open path=+0(%a0):string flags=%a1:u32 $arg8:u8 $arg9:u8 $arg10:s8", *arch);
  const FetchContext at_entry{cpu, m.bus(), *arch, syms, false, TaskInfo{"init", 1}};
  CHECK(format_args(entry, at_entry) == " path=\"/etc/passwd\" flags=3 arg3=8 arg4=99 arg5=100");

  // At the return: a0 holds the return value.
  ProbeSpec ret = parse_probe_spec("r:open_ret sys_open ret=$retval:s32 $retval", *arch);
  cpu.set_gpr(10, static_cast<uint64_t>(-2));
  const FetchContext at_return{cpu, m.bus(), *arch, syms, true, TaskInfo{"init", 1}};
  CHECK(format_args(ret, at_return) == " ret=-2 arg2=0xfffffffffffffffe");
  // A return value does not exist before the return.
  CHECK(format_args(ret, at_entry) == " ret=(fault) arg2=(fault)");
}

TEST_CASE("Strings stop at 255 characters and fault when memory ends first", "[kprobes][events]") {
  Machine m(MachineConfig{});
  auto arch = rv64_arch();
  SymbolTable syms;
  syms.finalize();
  Cpu& cpu = m.cpu(0);
  const uint64_t long_str = memmap::kRamBase + 0x1000;
  const std::string text(300, 'A');
  m.bus().write_bytes(long_str, text.c_str(), text.size() + 1);
  // Unterminated up to the last byte of RAM.
  const uint64_t end = memmap::kRamBase + m.config().ram_size;
  m.bus().write_bytes(end - 4, "abcd", 4);
  cpu.set_gpr(10, long_str);
  cpu.set_gpr(11, end - 4);
  cpu.set_gpr(12, end - 8);  // a u64 that straddles the end of RAM
  ProbeSpec s = parse_probe_spec("p f +0(%a0):string +0(%a1):string +4(%a2):u64 +4(%a2):u32", *arch);
  const FetchContext ctx{cpu, m.bus(), *arch, syms, false, {}};
  CHECK(format_arg_value(s.args[0], ctx) == "\"" + std::string(255, 'A') + "\"");
  CHECK(format_arg_value(s.args[1], ctx) == "(fault)");
  CHECK(format_arg_value(s.args[2], ctx) == "(fault)");
  CHECK(format_arg_value(s.args[3], ctx) == "1684234849");  // "abcd"
}

// --- The trace line ----------------------------------------------------------

TEST_CASE("A kprobe hit prints as an ftrace line", "[kprobes][events]") {
  SymbolTable syms = test_symbols(0x80000000);
  HitLine hit;
  hit.comm = "worker0.1";
  hit.pid = 5;
  hit.cpu = 1;
  hit.cycle = 1234567;
  hit.event = "p_do_fork_0";
  hit.ip = 0x80000100;
  hit.args = " flags=0x11";
  CHECK(format_hit_line(hit, syms) ==
        "       worker0.1-5     [001] 1234567: p_do_fork_0: (do_fork+0x0/0x58) flags=0x11");
}

TEST_CASE("A kretprobe hit prints the return address and the probed function", "[kprobes][events]") {
  SymbolTable syms = test_symbols(0x80000000);
  HitLine hit;
  hit.comm = "init";
  hit.pid = 1;
  hit.cpu = 0;
  hit.cycle = 42;
  hit.event = "r_sys_open_0";
  hit.is_return = true;
  hit.ip = 0x8000031b;
  hit.func = 0x80000200;
  hit.args = " ret=0x3";
  CHECK(format_hit_line(hit, syms) ==
        "            init-1     [000]    42: r_sys_open_0: (main+0x1b/0x80 <- sys_open) ret=0x3");
}

TEST_CASE("Code addresses print as sym+0xoff/0xsize, labels measured to the next symbol", "[kprobes][events]") {
  SymbolTable syms = test_symbols(0x80000000);
  CHECK(format_ip_sym(syms, 0x80000104, true) == "do_fork+0x4/0x58");
  CHECK(format_ip_sym(syms, 0x80000104, false) == "do_fork");
  CHECK(format_ip_sym(syms, 0x80000408, true) == "label+0x8/0x20");
  CHECK(format_ip_sym(syms, 0x70000000, true) == "0x70000000");
  CHECK(format_ip_sym(syms, 0, true) == "0");
  // A comm longer than the column is printed whole.
  HitLine hit;
  hit.comm = "a_rather_long_task_name";
  hit.event = "e";
  hit.ip = 0x70000000;
  CHECK(format_hit_line(hit, syms) == "a_rather_long_task_name-0     [000]     0: e: (0x70000000)");
}
