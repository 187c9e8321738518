// The probe script parser (probe_script.hpp). Probe definitions go through
// the kprobe_events parser itself; its column is moved into the line.
#include "kprobes/events/probe_script.hpp"


namespace ksim::kprobes::events {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

std::string one_line(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c == '\t' || c == '\r') c = ' ';
  return out;
}

std::string error_text(const std::string& file, int line, std::string_view text, size_t column,
                       const std::string& reason) {
  return file + ":" + std::to_string(line) + ": " + reason + "\n  " + one_line(text) + "\n  " +
         std::string(column, ' ') + "^";
}

struct Word {
  std::string_view text;
  size_t column;
};

std::vector<Word> words_of(std::string_view s, size_t from) {
  std::vector<Word> out;
  size_t i = from;
  while (i < s.size()) {
    while (i < s.size() && is_space(s[i])) ++i;
    size_t start = i;
    while (i < s.size() && !is_space(s[i])) ++i;
    if (i > start) out.push_back({s.substr(start, i - start), start});
  }
  return out;
}

}  // namespace

ScriptError::ScriptError(const std::string& file, int line, std::string_view line_text, size_t column,
                         const std::string& reason)
    : std::runtime_error(error_text(file, line, line_text, column, reason)), line_(line), column_(column) {}

std::vector<ProbeOp> parse_probe_script(std::string_view script, const std::string& file, const Arch& arch) {
  std::vector<ProbeOp> ops;
  int lineno = 0;
  size_t pos = 0;
  while (pos < script.size()) {
    size_t nl = script.find('\n', pos);
    std::string_view line = script.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? script.size() : nl + 1;
    ++lineno;
    const std::string_view full = line;
    auto fail = [&](size_t column, const std::string& reason) {
      throw ScriptError(file, lineno, full, column, reason);
    };
    // A comment runs from '#' to the end of the line (the error display
    // keeps the whole line).
    if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    size_t i = 0;
    while (i < line.size() && is_space(line[i])) ++i;
    if (i == line.size()) continue;
    if (line[i] != '@') fail(i, "expected @CYCLE at the start of the line (an operation is '@CYCLE OP')");
    size_t c0 = i + 1, c1 = c0;
    while (c1 < line.size() && !is_space(line[c1])) ++c1;
    std::optional<uint64_t> cycle = parse_unsigned(line.substr(c0, c1 - c0));
    if (!cycle) fail(c0, "bad cycle '" + std::string(line.substr(c0, c1 - c0)) + "' (decimal or 0x hex)");
    size_t o = c1;
    while (o < line.size() && is_space(line[o])) ++o;
    if (o == line.size()) fail(o, "no operation after the cycle");
    size_t end = line.size();
    while (end > o && is_space(line[end - 1])) --end;

    ProbeOp op;
    op.cycle = *cycle;
    op.line = lineno;
    op.line_text = std::string(full);
    op.column = o;
    op.text = std::string(line.substr(o, end - o));
    std::vector<Word> w = words_of(line.substr(0, end), o);
    const std::string_view head = w[0].text;

    // [GRP/]EVENT naming an existing event.
    auto name_arg = [&](std::string_view name, size_t column) {
      size_t slash = name.find('/');
      std::string_view group = slash == std::string_view::npos ? std::string_view{} : name.substr(0, slash);
      std::string_view event = slash == std::string_view::npos ? name : name.substr(slash + 1);
      if (slash != std::string_view::npos && !is_identifier(group))
        fail(column, "bad group name '" + std::string(group) + "'");
      if (!is_identifier(event))
        fail(column + (slash == std::string_view::npos ? 0 : slash + 1),
             "bad event name '" + std::string(event) + "' (letters, digits and '_', not starting with a digit)");
      op.group = std::string(group);
      op.event = std::string(event);
      op.event_column = column;
    };

    if (head == "enable" || head == "disable") {
      op.kind = head == "enable" ? ProbeOp::Kind::enable : ProbeOp::Kind::disable;
      if (w.size() != 2) fail(w.size() < 2 ? end : w[2].column, std::string(head) + " takes one event name");
      name_arg(w[1].text, w[1].column);
    } else if (head == "kprobes-enabled" || head == "kprobes-optimization") {
      op.kind = head == "kprobes-enabled" ? ProbeOp::Kind::knob : ProbeOp::Kind::optimization;
      if (w.size() != 2 || (w[1].text != "0" && w[1].text != "1"))
        fail(w.size() < 2 ? end : w[1].column, std::string(head) + " takes 0 or 1");
      op.on = w[1].text == "1";
    } else if (head[0] == '-') {
      op.kind = ProbeOp::Kind::remove;
      if (head.size() < 3 || head[1] != ':') fail(w[0].column, "a removal is '-:[GRP/]EVENT'");
      if (w.size() != 1) fail(w[1].column, "a removal takes nothing after the event name");
      name_arg(head.substr(2), w[0].column + 2);
    } else if (head[0] == 'p' || head[0] == 'r') {
      op.kind = ProbeOp::Kind::define;
      try {
        op.spec = parse_probe_spec(op.text, arch);
      } catch (const SpecError& e) {
        fail(o + e.column(), "bad probe spec: " + e.reason());
      }
    } else {
      fail(w[0].column, "unknown operation '" + std::string(head) +
                            "' (expected p..., r..., -:EVENT, enable, disable, kprobes-enabled or kprobes-optimization)");
    }
    ops.push_back(std::move(op));
  }
  return ops;
}

}  // namespace ksim::kprobes::events
