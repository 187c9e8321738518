#include "ui/model/source_view.hpp"

#include "cpu/hex.hpp"

namespace ksim::ui {

SourceView source_view(Debugger& d, int cpu) {
  Machine& m = d.world().machine();
  const LineTable& lt = m.source_lines();
  SourceView v;
  const uint64_t pc = m.cpu(cpu).pc();
  v.where = m.describe(pc);
  if (lt.empty()) {
    v.missing = "the image has no line information (built without -g)";
    return v;
  }
  const auto loc = lt.at(pc);
  if (!loc) {
    v.missing = "no source line for " + v.where + " (code without line information: a slot, a trampoline)";
    return v;
  }
  v.file = lt.short_name(loc->file);
  v.current = loc->line;
  const std::string& path = lt.path(loc->file);
  const uint32_t n = d.sources().line_count(path);
  if (n == 0) {
    v.missing = "cannot read " + path;
    return v;
  }
  v.lines.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    v.lines[i].line = i + 1;
    v.lines[i].text = *d.sources().line(path, i + 1);
  }
  for (int c = 0; c < m.cpu_count(); ++c) {
    const auto at = lt.at(m.cpu(c).pc());
    if (at && at->file == loc->file && at->line >= 1 && at->line <= n) v.lines[at->line - 1].cpus.push_back(c);
  }
  return v;
}

}  // namespace ksim::ui
