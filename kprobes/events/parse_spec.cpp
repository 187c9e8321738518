// The kprobe_events parser. Every refusal names the problem and the column
// it starts at; the rules follow Linux's trace_kprobe.c / trace_probe.c
// (what is refused and why), with ksim's own wording.
#include <cctype>
#include <cstdio>
#include <limits>
#include <optional>

#include "kprobes/arch.hpp"
#include "kprobes/events/probe_spec.hpp"

namespace ksim::kprobes::events {

namespace {

struct Word {
  std::string_view text;
  size_t column;
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::vector<Word> split_words(std::string_view s) {
  std::vector<Word> words;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_space(s[i])) ++i;
    size_t start = i;
    while (i < s.size() && !is_space(s[i])) ++i;
    if (i > start) words.push_back({s.substr(start, i - start), start});
  }
  return words;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

}  // namespace

bool is_identifier(std::string_view s) {
  if (s.empty() || !(is_alpha(s[0]) || s[0] == '_')) return false;
  for (char c : s) {
    if (!(is_alpha(c) || is_digit(c) || c == '_')) return false;
  }
  return true;
}

std::optional<uint64_t> parse_unsigned(std::string_view s) {
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    s.remove_prefix(2);
    base = 16;
  }
  if (s.empty()) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    int d;
    if (is_digit(c)) {
      d = c - '0';
    } else if (base == 16 && std::isxdigit(static_cast<unsigned char>(c))) {
      d = std::tolower(static_cast<unsigned char>(c)) - 'a' + 10;
    } else {
      return std::nullopt;
    }
    if (v > (std::numeric_limits<uint64_t>::max() - d) / base) return std::nullopt;
    v = v * base + d;
  }
  return v;
}

namespace {

// Kernel symbol names also carry dots (`foo.isra.0`, `bar.cold`).
bool is_symbol_name(std::string_view s) {
  if (s.empty() || is_digit(s[0])) return false;
  for (char c : s) {
    if (!(is_alpha(c) || is_digit(c) || c == '_' || c == '.')) return false;
  }
  return true;
}


// A signed number: an optional sign, then as parse_unsigned, within int64.
std::optional<int64_t> parse_signed(std::string_view s) {
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  auto mag = parse_unsigned(s);
  constexpr uint64_t kMaxPositive = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (!mag || *mag > kMaxPositive + (negative ? 1 : 0)) return std::nullopt;
  return negative ? static_cast<int64_t>(0 - *mag) : static_cast<int64_t>(*mag);
}

// Field names every trace event already has (Linux's reserved_field_names).
constexpr const char* kReservedArgNames[] = {
    "common_type", "common_flags", "common_preempt_count", "common_pid",
    "common_tgid", "__probe_ip",   "__probe_ret_ip",       "__probe_func",
};

constexpr const char* kTypeList = "u8..u64, s8..s64, x8..x64, char, string, symbol";
constexpr const char* kIdentifierRule = "' (letters, digits and '_', not starting with a digit)";

class SpecParser {
 public:
  SpecParser(std::string_view text, const Arch& arch) : text_(text), arch_(arch) { spec_.source = text; }

  ProbeSpec run() {
    std::vector<Word> words = split_words(text_);
    if (words.empty()) fail(0, "empty probe spec (expected p or r, a target and arguments)");
    parse_head(words[0]);
    // ksim's shorthand "p:SYM[+OFFS] ARGS" (the form ksim's own examples
    // use): when no target follows the head, or the next word is a fetch
    // argument (NAME=...; a target never holds '='), the name after ':' is
    // the target, and the event gets Linux's default name.
    size_t first_arg = 2;
    if (has_head_name_ && (words.size() < 2 || words[1].text.find('=') != std::string_view::npos)) {
      std::string_view name = head_name_.text;
      size_t column = head_name_.column;
      if (size_t slash = name.find('/'); slash != std::string_view::npos) {
        parse_event_name(name.substr(0, slash + 1), column);  // the group only
        name.remove_prefix(slash + 1);
        column += slash + 1;
      }
      if (name.empty()) fail(column, "missing probe target (SYMBOL[+OFFS] or ADDR)");
      parse_target(Word{name, column});
      first_arg = 1;
    } else {
      if (has_head_name_) parse_event_name(head_name_.text, head_name_.column);
      if (words.size() < 2) fail(text_.size(), "missing probe target (SYMBOL[+OFFS] or ADDR)");
      parse_target(words[1]);
    }
    if (spec_.event.empty()) spec_.event = default_event_name();
    for (size_t i = first_arg; i < words.size(); ++i) parse_arg(words[i], i - first_arg);
    return std::move(spec_);
  }

 private:
  [[noreturn]] void fail(size_t column, const std::string& why) const { throw SpecError(text_, column, why); }

  // p, r, r<MAXACTIVE>, each optionally followed by :[GRP/][EVENT].
  void parse_head(Word w) {
    std::string_view t = w.text;
    const size_t colon = t.find(':');
    const std::string_view letters = t.substr(0, colon);
    if (t[0] != 'p' && t[0] != 'r') {
      fail(w.column, "unknown probe type '" + std::string(letters) + "' (expected p or r)");
    }
    spec_.kind = t[0] == 'r' ? ProbeKind::kretprobe : ProbeKind::kprobe;
    const std::string_view count = letters.substr(1);
    if (!count.empty()) {
      if (!is_digit(count[0])) {
        fail(w.column, "unknown probe type '" + std::string(letters) + "' (expected p or r)");
      }
      if (!spec_.is_return()) fail(w.column + 1, "MAXACTIVE is only for return probes (r<N>)");
      auto n = parse_unsigned(count);
      if (!n || *n == 0 || *n > static_cast<uint64_t>(kMaxActiveLimit)) {  // Linux refuses 0 too
        fail(w.column + 1, "bad MAXACTIVE '" + std::string(count) + "' (1 to " +
                               std::to_string(kMaxActiveLimit) + ")");
      }
      spec_.maxactive = static_cast<int>(*n);
    }
    if (colon != std::string_view::npos) {
      has_head_name_ = true;
      head_name_ = Word{t.substr(colon + 1), w.column + colon + 1};
    }
  }
  bool has_head_name_ = false;
  Word head_name_{};

  void parse_event_name(std::string_view name, size_t column) {
    const size_t slash = name.find('/');
    if (slash != std::string_view::npos) {
      const std::string_view group = name.substr(0, slash);
      if (group.empty()) fail(column, "empty group name before '/'");
      if (group.size() >= kMaxEventNameLen) fail(column, "group name longer than 63 characters");
      if (!is_identifier(group)) {
        fail(column, "bad group name '" + std::string(group) + kIdentifierRule);
      }
      spec_.group = group;
      name.remove_prefix(slash + 1);
      column += slash + 1;
      if (name.empty()) return;  // GRP/ alone: the event name is made up
    } else if (name.empty()) {
      fail(column, "empty event name after ':'");
    }
    if (name.size() >= kMaxEventNameLen) fail(column, "event name longer than 63 characters");
    if (!is_identifier(name)) {
      fail(column, "bad event name '" + std::string(name) + kIdentifierRule);
    }
    spec_.event = name;
  }

  // SYMBOL[+OFFS], ADDR, either with %return.
  void parse_target(Word w) {
    std::string_view t = w.text;
    spec_.target_column = w.column;
    const size_t pct = t.find('%');
    if (pct != std::string_view::npos) {
      if (t.substr(pct) != "%return") {
        fail(w.column + pct, "unknown suffix '" + std::string(t.substr(pct)) + "' (only %return)");
      }
      spec_.kind = ProbeKind::kretprobe;
      t = t.substr(0, pct);
      if (t.empty()) fail(w.column, "missing probe target before '%return'");
    }
    if (is_digit(t[0])) {
      auto addr = parse_unsigned(t);
      if (!addr) fail(w.column, "bad address '" + std::string(t) + "' (0x hex or decimal)");
      spec_.has_addr = true;
      spec_.addr = *addr;
      return;
    }
    const size_t op = t.find_first_of("+-");
    const std::string_view sym = t.substr(0, op);
    if (sym.empty()) fail(w.column, "missing symbol before '" + std::string(1, t[0]) + "'");
    if (!is_symbol_name(sym)) fail(w.column, "bad symbol name '" + std::string(sym) + "'");
    spec_.symbol = sym;
    if (op == std::string_view::npos) return;
    if (t[op] == '-') fail(w.column + op, "negative probe offset (a probe lies at or after its symbol)");
    const std::string_view off = t.substr(op + 1);
    auto n = parse_unsigned(off);
    if (!n || *n > std::numeric_limits<uint32_t>::max()) {
      fail(w.column + op + 1, "bad offset '" + std::string(off) + "' (decimal or 0x hex)");
    }
    spec_.offset = *n;
    if (spec_.is_return() && spec_.offset != 0) {
      fail(w.column + op + 1, "a return probe must be at the function entry (offset 0)");
    }
  }

  // Linux's names: p_<sym>_<offs>, r_<sym>_<offs>, p_0x<addr>, with the
  // characters an event name cannot hold ('.') turned into '_'.
  std::string default_event_name() const {
    const char kind = spec_.is_return() ? 'r' : 'p';
    char buf[kMaxEventNameLen + 40];
    if (spec_.has_addr) {
      std::snprintf(buf, sizeof buf, "%c_0x%llx", kind, static_cast<unsigned long long>(spec_.addr));
    } else {
      std::snprintf(buf, sizeof buf, "%c_%.*s_%llu", kind, static_cast<int>(kMaxEventNameLen), spec_.symbol.c_str(),
                    static_cast<unsigned long long>(spec_.offset));
    }
    std::string name(buf);
    for (char& c : name) {
      if (c == '.') c = '_';
    }
    if (name.size() >= kMaxEventNameLen) name.resize(kMaxEventNameLen - 1);
    return name;
  }

  // [NAME=]FETCHARG[:TYPE]
  void parse_arg(Word w, size_t index) {
    if (index >= kMaxProbeArgs) fail(w.column, "too many arguments (at most " + std::to_string(kMaxProbeArgs) + ")");
    std::string_view t = w.text;
    FetchArg arg;
    arg.column = w.column;
    size_t body_col = w.column;
    const size_t eq = t.find('=');
    const size_t quote = t.find("\\\"");
    if (eq != std::string_view::npos && (quote == std::string_view::npos || eq < quote)) {
      const std::string_view name = t.substr(0, eq);
      if (name.empty()) fail(w.column, "missing argument name before '='");
      if (!is_identifier(name)) {
        fail(w.column, "bad argument name '" + std::string(name) + kIdentifierRule);
      }
      arg.name = name;
      t.remove_prefix(eq + 1);
      body_col += eq + 1;
      if (t.empty()) fail(body_col, "missing fetch argument after '='");
    } else {
      arg.name = "arg" + std::to_string(index + 1);
    }
    arg.text = t;

    // The type suffix: the first ':' outside a string immediate.
    size_t search_from = 0;
    if (t.substr(0, 2) == "\\\"") {
      const size_t close = t.find('"', 2);
      search_from = close == std::string_view::npos ? t.size() : close + 1;
    }
    const size_t colon = t.find(':', search_from);
    const std::string_view expr = t.substr(0, colon);
    const FetchType* type = nullptr;
    const size_t type_col = body_col + colon + 1;
    if (colon != std::string_view::npos) {
      const std::string_view tname = t.substr(colon + 1);
      if (tname.empty()) fail(type_col, "missing type after ':'");
      type = find_fetch_type(tname);
      if (!type) fail(type_col, "unknown type '" + std::string(tname) + "' (" + kTypeList + ")");
    }

    check_parens(expr, body_col);
    parse_fetch(expr, body_col, arg);
    arg.type = checked_type(arg, type, type_col);

    for (const char* reserved : kReservedArgNames) {
      if (arg.name == reserved) fail(w.column, "argument name '" + arg.name + "' is reserved");
    }
    for (const FetchArg& earlier : spec_.args) {
      if (earlier.name == arg.name) fail(w.column, "duplicate argument name '" + arg.name + "'");
    }
    spec_.args.push_back(std::move(arg));
  }

  // What each source may be printed as (Linux: strings come from memory,
  // $comm and string immediates are strings).
  const FetchType* checked_type(const FetchArg& arg, const FetchType* type, size_t type_col) const {
    const bool is_text = arg.source == FetchSource::comm || arg.source == FetchSource::imm_string;
    if (is_text) {
      if (type && type->cls != TypeClass::string) {
        const char* what = arg.source == FetchSource::comm ? "$comm" : "a string immediate";
        fail(type_col, std::string(what) + " is a string: type '" + type->name + "' does not apply");
      }
      return find_fetch_type("string");
    }
    if (!type) return &default_fetch_type();
    if (type->cls == TypeClass::string && arg.derefs.empty()) {
      fail(type_col, "type 'string' needs a memory argument, e.g. +0(%di):string");
    }
    return type;
  }

  void check_parens(std::string_view expr, size_t column) const {
    if (expr.substr(0, 2) == "\\\"") return;  // a string immediate holds any text
    std::vector<size_t> open;
    for (size_t i = 0; i < expr.size(); ++i) {
      if (expr[i] == '(') {
        open.push_back(i);
      } else if (expr[i] == ')') {
        if (open.empty()) fail(column + i, "unbalanced parentheses: ')' without '('");
        open.pop_back();
      }
    }
    if (!open.empty()) fail(column + open.back(), "unbalanced parentheses: '(' is never closed");
  }

  void parse_fetch(std::string_view e, size_t col, FetchArg& arg) {
    if (e.empty()) fail(col, "missing fetch argument");
    switch (e[0]) {
      case '%': return parse_register(e.substr(1), col + 1, arg);
      case '@': return parse_memory(e.substr(1), col + 1, arg);
      case '$': return parse_variable(e.substr(1), col, arg);
      case '\\': return parse_immediate(e.substr(1), col + 1, arg);
      case '+':
      case '-': return parse_deref(e, col, arg);
      default:
        fail(col, "bad fetch argument '" + std::string(e) + "' (expected %REG, @ADDR, @SYM, $VAR, \\IMM or OFFS(...))");
    }
  }

  void parse_register(std::string_view name, size_t col, FetchArg& arg) {
    if (name.empty()) fail(col, "missing register name after '%'");
    const int idx = arch_.reg_index(std::string(name));
    if (idx == -2) {
      arg.source = FetchSource::pc;
    } else if (idx >= 0) {
      arg.source = FetchSource::reg;
      arg.reg = idx;
    } else {
      fail(col, "unknown register '" + std::string(name) + "'");
    }
  }

  // @ADDR or @SYM[+|-OFFS]: the address, then one read.
  void parse_memory(std::string_view r, size_t col, FetchArg& arg) {
    if (r.empty()) fail(col, "missing address or symbol after '@'");
    if (is_digit(r[0])) {
      auto addr = parse_unsigned(r);
      if (!addr) fail(col, "bad address '" + std::string(r) + "' (0x hex or decimal)");
      arg.source = FetchSource::imm;
      arg.number = *addr;
    } else {
      const size_t op = r.find_first_of("+-");
      const std::string_view sym = r.substr(0, op);
      if (sym.empty()) fail(col, "missing symbol before '" + std::string(1, r[0]) + "'");
      if (!is_symbol_name(sym)) fail(col, "bad symbol name '" + std::string(sym) + "'");
      if (op != std::string_view::npos) {
        auto off = parse_signed(r.substr(op));
        if (!off) fail(col + op, "bad offset '" + std::string(r.substr(op)) + "' (decimal or 0x hex)");
        arg.sym_offset = *off;
      }
      arg.source = FetchSource::symbol;
      arg.symbol = sym;
      arg.symbol_column = col;
    }
    arg.derefs.push_back({});
  }

  // $retval $comm $stack $stackN $argN; `col` is at the '$'.
  void parse_variable(std::string_view v, size_t col, FetchArg& arg) {
    auto index_after = [&](std::string_view prefix, uint64_t min, const char* what) {
      const std::string_view digits = v.substr(prefix.size());
      const bool decimal = !digits.empty() && digits.find_first_not_of("0123456789") == digits.npos;
      auto n = decimal ? parse_unsigned(digits) : std::nullopt;
      if (!n || *n < min || *n > kMaxStackIndex) {
        fail(col + 1 + prefix.size(), std::string("bad ") + what + " '" + std::string(digits) + "' (" +
                                          std::to_string(min) + " to " + std::to_string(kMaxStackIndex) + ")");
      }
      return *n;
    };
    if (v == "retval") {
      if (!spec_.is_return()) fail(col, "$retval is only available on return probes (r)");
      arg.source = FetchSource::retval;
    } else if (v == "comm" || v == "COMM") {
      arg.source = FetchSource::comm;
    } else if (v == "stack") {
      arg.source = FetchSource::stack;
    } else if (v.starts_with("stack")) {
      arg.source = FetchSource::stack_entry;
      arg.number = index_after("stack", 0, "stack index");
    } else if (v.starts_with("arg")) {
      arg.number = index_after("arg", 1, "argument number");
      if (spec_.is_return()) {
        fail(col, "$argN is not available on return probes (Linux needs BTF for that; "
                  "fetch it with a p probe on the function)");
      }
      if (!spec_.has_addr && spec_.offset != 0) fail(col, "$argN is only available at a function entry (offset 0)");
      arg.source = FetchSource::arg;
    } else {
      fail(col, "unknown variable '$" + std::string(v) + "' (expected $retval, $stack, $stackN, $argN or $comm)");
    }
  }

  // \IMM or \"TEXT"; `col` is after the backslash.
  void parse_immediate(std::string_view r, size_t col, FetchArg& arg) {
    if (!r.empty() && r[0] == '"') {
      const size_t close = r.find('"', 1);
      if (close == std::string_view::npos) fail(col, "unterminated string immediate (no closing '\"')");
      if (close != r.size() - 1) fail(col + close + 1, "unexpected text after the string immediate");
      arg.source = FetchSource::imm_string;
      arg.str = r.substr(1, close - 1);
      return;
    }
    // Linux reads a signed immediate when it starts with a sign, else an
    // unsigned one (the whole 64-bit range).
    std::optional<uint64_t> v;
    if (!r.empty() && (r[0] == '-' || r[0] == '+')) {
      if (auto s = parse_signed(r)) v = static_cast<uint64_t>(*s);
    } else {
      v = parse_unsigned(r);
    }
    if (!v) fail(col, "bad immediate '" + std::string(r) + "' (decimal or 0x hex)");
    arg.source = FetchSource::imm;
    arg.number = *v;
  }

  // +|-[u]OFFS(FETCHARG). The parentheses are known to balance.
  void parse_deref(std::string_view e, size_t col, FetchArg& arg) {
    size_t i = 1;
    const bool user = e.size() > 1 && e[1] == 'u';
    if (user) ++i;
    const size_t lp = e.find('(', i);
    if (lp == std::string_view::npos) fail(col, "a dereference needs parentheses: +|-OFFS(FETCHARG)");
    const std::string_view off_text = e.substr(i, lp - i);
    auto off = parse_unsigned(off_text);
    if (!off || *off > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      fail(col + i, "bad dereference offset '" + std::string(off_text) + "' (decimal or 0x hex)");
    }
    size_t depth = 0, rp = lp;
    for (; rp < e.size(); ++rp) {
      if (e[rp] == '(') ++depth;
      if (e[rp] == ')' && --depth == 0) break;
    }
    if (rp + 1 != e.size()) fail(col + rp + 1, "unexpected text after ')'");
    const std::string_view inner = e.substr(lp + 1, rp - lp - 1);
    if (inner.empty()) fail(col + lp + 1, "missing fetch argument inside '()'");
    parse_fetch(inner, col + lp + 1, arg);
    if (arg.source == FetchSource::comm) fail(col + lp + 1, "$comm cannot be dereferenced");
    if (arg.source == FetchSource::imm_string) fail(col + lp + 1, "a string immediate cannot be dereferenced");
    if (arg.derefs.size() >= kMaxDerefDepth) {
      fail(col, "too many nested dereferences (at most " + std::to_string(kMaxDerefDepth) + ")");
    }
    const int64_t magnitude = static_cast<int64_t>(*off);
    arg.derefs.push_back({e[0] == '-' ? -magnitude : magnitude, user});
  }

  std::string_view text_;
  const Arch& arch_;
  ProbeSpec spec_;
};

}  // namespace

ProbeSpec parse_probe_spec(std::string_view text, const Arch& arch) { return SpecParser(text, arch).run(); }

}  // namespace ksim::kprobes::events
