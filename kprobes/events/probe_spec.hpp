// A parsed kprobe_events definition (Documentation/trace/kprobetrace.rst),
// the text `ksim run --probe SPEC` accepts:
//
//   p[:[GRP/][EVENT]] SYMBOL[+OFFS]|ADDR [FETCHARGS]     kprobe
//   p[:[GRP/][EVENT]] SYMBOL%return [FETCHARGS]          kretprobe (5.11+ form)
//   r[MAXACTIVE][:[GRP/][EVENT]] SYMBOL[+0]|ADDR [FETCHARGS]
//
// ksim shorthand: `p:SYM[+OFFS] NAME=ARG...` and `r:SYM NAME=ARG...` (no
// target word after the head, or a NAME=... right after it) take the name
// after ':' as the target and give the event Linux's default name; so
// `p:do_fork flags=$arg1` probes do_fork as event p_do_fork_0. Linux would
// read do_fork as the event name and refuse the spec.
//
// FETCHARGS (at most 128), each `[NAME=]FETCHARG[:TYPE]`:
//   %REG            register (names from the Arch: %di, %ax, %a0, %ip, %pc)
//   @ADDR           memory at ADDR          @SYM[+|-OFFS]  memory at SYM+OFFS
//   $stack          the stack pointer       $stackN        Nth word on the stack
//   $argN           Nth function argument (N >= 1; kprobes at a function entry)
//   $retval         return value (return probes only)
//   $comm           the current task's name (a string)
//   +|-[u]OFFS(FETCHARG)  memory at FETCHARG+OFFS (nestable)
//   \IMM  \"TEXT"   an immediate number or string
// TYPE: u8..u64 s8..s64 x8..x64 char string symbol; default x64.
// Numbers are decimal or 0x hex. Names follow Linux: default group
// "kprobes", event `p_<sym>_<offs>`, `r_<sym>_<offs>` or `p_0x<addr>`,
// arguments arg1, arg2, ...
//
// Parsing checks everything that does not need the guest: registers (from
// the Arch), variables against the probe kind, types, names. Symbols are
// resolved later: the probe target by the caller, @SYM when arguments are
// fetched (check_fetch_symbols() refuses unknown ones up front).
#pragma once
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ksim {
class SymbolTable;
}

namespace ksim::kprobes {
class Arch;
}

namespace ksim::kprobes::events {

// A refused spec. what() is three lines: the reason, the spec, and a caret
// under the offending column:
//   bad probe spec: unknown register 'foo'
//     p:do_fork flags=%foo
//                      ^
class SpecError : public std::runtime_error {
 public:
  SpecError(std::string_view spec, size_t column, const std::string& reason);
  const std::string& reason() const { return reason_; }
  size_t column() const { return column_; }  // 0-based, into the spec text

 private:
  std::string reason_;
  size_t column_;
};

// How a fetched value is printed (ftrace's print functions per type).
enum class TypeClass : uint8_t { unsigned_dec, signed_dec, hex, character, string, symbol };

struct FetchType {
  const char* name;
  uint8_t size;  // bytes the final dereference reads, and the value's width
  TypeClass cls;
};
// nullptr for a name that is not a type.
const FetchType* find_fetch_type(std::string_view name);
const FetchType& default_fetch_type();  // x64, as Linux on 64-bit

// Where a fetch starts; dereferences (if any) follow.
enum class FetchSource : uint8_t {
  reg,          // Cpu::gpr(reg)
  pc,           // %ip / %pc
  stack,        // $stack: the stack pointer
  stack_entry,  // $stackN: the word at sp + 8*N
  arg,          // $argN
  retval,       // $retval
  comm,         // $comm
  imm,          // \IMM, and the address of @ADDR
  imm_string,   // \"TEXT"
  symbol,       // the address SYM+OFFS of @SYM+OFFS
};

struct Deref {
  int64_t offset = 0;
  bool user = false;  // +u0(...): user memory; the same memory in ksim
};

struct FetchArg {
  std::string name;  // printed in the trace: NAME= or arg<N>
  std::string text;  // the argument as written after NAME=, with its :TYPE
  const FetchType* type = nullptr;
  FetchSource source = FetchSource::imm;
  int reg = 0;           // FetchSource::reg
  uint64_t number = 0;   // N of $stackN/$argN; the value of imm
  std::string symbol;    // FetchSource::symbol
  int64_t sym_offset = 0;
  std::string str;       // FetchSource::imm_string
  // Memory reads, innermost first: value = read(value + offset). @ADDR and
  // @SYM are a source followed by one read at offset 0.
  std::vector<Deref> derefs;
  size_t column = 0;         // where the argument starts in the spec
  size_t symbol_column = 0;  // where @SYM's name starts
};

enum class ProbeKind : uint8_t { kprobe, kretprobe };

struct ProbeSpec {
  std::string source;  // the spec as given, for later errors
  ProbeKind kind = ProbeKind::kprobe;
  int maxactive = 0;  // r<N>: kretprobe instances; 0 = the engine's default
  std::string group = "kprobes";
  std::string event;
  // The target: a symbol and offset, or an address.
  bool has_addr = false;
  uint64_t addr = 0;
  std::string symbol;
  uint64_t offset = 0;
  size_t target_column = 0;  // where the target starts in `source`
  std::vector<FetchArg> args;

  bool is_return() const { return kind == ProbeKind::kretprobe; }
  // The canonical text, as Linux lists kprobe_events:
  //   p:kprobes/p_do_fork_0 do_fork flags=%di:x32
  //   r16:kprobes/r_sys_open_0 sys_open ret=$retval
  std::string describe() const;
};

inline constexpr size_t kMaxProbeArgs = 128;     // Linux MAX_TRACE_ARGS
inline constexpr int kMaxActiveLimit = 4096;      // Linux KRETPROBE_MAXACTIVE_MAX
inline constexpr size_t kMaxEventNameLen = 64;    // Linux MAX_EVENT_NAME_LEN (with NUL)
inline constexpr uint64_t kMaxStackIndex = 2048;  // Linux PARAM_MAX_STACK (16 KiB / 8)
inline constexpr size_t kMaxDerefDepth = 16;      // Linux FETCH_INSN_MAX bounds nesting

// Event, group and argument names: C identifiers (Linux's is_good_name).
bool is_identifier(std::string_view s);
// All of `s` as an unsigned number: 0x hex or decimal, no overflow.
std::optional<uint64_t> parse_unsigned(std::string_view s);

// Parses one spec; throws SpecError. Register names come from `arch`.
ProbeSpec parse_probe_spec(std::string_view text, const Arch& arch);

// Throws SpecError for the first @SYM argument `symbols` does not know.
void check_fetch_symbols(const ProbeSpec& spec, const SymbolTable& symbols);

}  // namespace ksim::kprobes::events
