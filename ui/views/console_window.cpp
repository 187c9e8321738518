// Console: the guest's lines (per CPU or all) and the probe session's
// ftrace lines, in cycle order, up to the present.
#include <algorithm>
#include <cinttypes>

#include "ui/views/view_state.hpp"

namespace ksim::ui {

void draw_console(ViewState& s) {
  if (!s.begin("Console")) return s.end();
  const EventLog& log = s.d.log();
  const int cpus = s.d.world().machine().cpu_count();
  ImGui::SetNextItemWidth(px(90));
  const std::string cur = s.console_cpu < 0 ? "all CPUs" : "CPU " + std::to_string(s.console_cpu);
  if (ImGui::BeginCombo("##cpu", cur.c_str())) {
    if (ImGui::Selectable("all CPUs", s.console_cpu < 0)) s.console_cpu = -1;
    for (int c = 0; c < cpus; ++c)
      if (ImGui::Selectable(("CPU " + std::to_string(c)).c_str(), s.console_cpu == c)) s.console_cpu = c;
    ImGui::EndCombo();
  }
  flow(ImGui::CalcTextSize("probe lines").x + ImGui::GetFrameHeight() + ImGui::GetStyle().ItemInnerSpacing.x);
  ImGui::Checkbox("probe lines", &s.console_probe_lines);
  s.note("probe lines");

  // Merge console events and probe lines delivered so far, by cycle
  // (again only when something changed).
  const std::string key = std::to_string(log.cursor()) + "/" + std::to_string(log.line_cursor()) + "/" +
                          std::to_string(log.generation()) + "/" + std::to_string(s.console_cpu) + "/" +
                          (s.console_probe_lines ? "1" : "0");
  if (key != s.console_key) {
    s.console_key = key;
    auto& items = s.console_cache;
    items.clear();
    for (uint32_t i : log.of_kind(EventKind::console)) {
      if (i >= log.cursor()) break;
      const EventRec& r = log[i];
      if (s.console_cpu < 0 || r.cpu == s.console_cpu) items.push_back({r.cycle, r.cpu, r.text, false});
    }
    if (s.console_probe_lines)
      for (size_t i = 0; i < log.line_cursor(); ++i) {
        const ProbeLine& l = log.lines()[i];
        if (s.console_cpu < 0 || l.cpu == s.console_cpu)
          items.push_back({l.cycle, l.cpu, static_cast<uint32_t>(i), true});
      }
    std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.cycle < b.cycle; });
  }
  const auto& items = s.console_cache;

  const SymbolTable& syms = s.d.world().machine().symbols();
  const LineTable& lines = s.d.world().machine().source_lines();
  ImGui::BeginChild("lines", ImVec2(0, 0), false, ImGuiWindowFlags_HorizontalScrollbar);
  ImGuiListClipper clip;
  clip.Begin(static_cast<int>(items.size()));
  while (clip.Step())
    for (int i = clip.DisplayStart; i < clip.DisplayEnd; ++i) {
      const auto& it = items[static_cast<size_t>(i)];
      if (it.probe)
        ImGui::TextColored(ImVec4(1, 0.7f, 0.35f, 1), "%s", log.lines()[it.ref].text.c_str());
      else
        ImGui::Text("[%d] %9" PRIu64 "  %s", it.cpu, it.cycle,
                    syms.name_backtrace_line(log.text(it.ref), &lines).c_str());  // a panic's backtrace named
    }
  if (ImGui::GetScrollY() >= ImGui::GetScrollMaxY() - 4) ImGui::SetScrollHereY(1.0f);
  ImGui::EndChild();
  s.end();
}

}  // namespace ksim::ui
