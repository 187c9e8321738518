// CPUs: one collapsible section per CPU, the selected one open.
#include <algorithm>
#include <cinttypes>

#include "ui/model/cpu_view.hpp"
#include "ui/views/view_state.hpp"

namespace ksim::ui {

void draw_cpus(ViewState& s) {
  const ImVec2 ds = ImGui::GetIO().DisplaySize;
  if (!s.begin("CPUs", ImVec2(0, ds.y * 0.24f), ImVec2(ds.x * 0.34f, ds.y * 0.41f))) return s.end();
  Machine& m = s.d.world().machine();
  for (int c = 0; c < m.cpu_count(); ++c) {
    CpuRow r = cpu_row(s.d, c);
    ImGui::PushID(c);
    char label[32];
    std::snprintf(label, sizeof label, "CPU %d", c);
    if (ImGui::RadioButton(label, s.selected_cpu == c)) s.selected_cpu = c;
    s.note(label);
    ImGui::SameLine();
    const ImVec4 doing_col = r.state == CpuRow::Doing::guest    ? ImVec4(0.5f, 0.9f, 0.5f, 1)
                             : r.state == CpuRow::Doing::idle   ? ImVec4(0.6f, 0.6f, 0.7f, 1)
                             : r.state == CpuRow::Doing::ended  ? ImVec4(0.9f, 0.8f, 0.3f, 1)
                                                                : ImVec4(1.0f, 0.55f, 0.25f, 1);
    ImGui::TextColored(doing_col, "%s", r.doing.c_str());
    ImGui::TextColored(r.pc_changed ? ImVec4(1, 0.9f, 0.3f, 1) : ImGui::GetStyleColorVec4(ImGuiCol_Text),
                       "  pc %016" PRIx64 " %s%s%s%s", r.pc, r.pc_sym.c_str(), r.pc_line.empty() ? "" : " (",
                       r.pc_line.c_str(), r.pc_line.empty() ? "" : ")");
    ImGui::Text("  %s  irq %s  cycle %" PRIu64 "  instret %" PRIu64 "%s%s", r.priv.c_str(), r.irq_enabled ? "on" : "off",
                r.cycle, r.instret, r.task.empty() ? "" : "  task ", r.task.c_str());
    if (c == s.selected_cpu) {  // the selected CPU's registers; yellow: changed by the last move
      const float cell = ImGui::CalcTextSize("rax  0000000000000000").x + 12;
      const int cols = std::clamp(static_cast<int>(ImGui::GetContentRegionAvail().x / cell), 1, 8);
      if (ImGui::BeginTable("regs", cols, ImGuiTableFlags_SizingStretchSame)) {
        for (const RegRow& reg : r.regs) {
          ImGui::TableNextColumn();
          if (reg.changed)
            ImGui::TextColored(ImVec4(1, 0.9f, 0.3f, 1), "%-4s %016" PRIx64, reg.name.c_str(), reg.value);
          else
            ImGui::Text("%-4s %016" PRIx64, reg.name.c_str(), reg.value);
        }
        ImGui::EndTable();
      }
    }
    ImGui::Separator();
    ImGui::PopID();
  }
  s.end();
}

}  // namespace ksim::ui
