// CPUs: each CPU's state (what it is doing, where, its clock), then the
// selected CPU's registers.
#include <algorithm>
#include <cinttypes>

#include "ui/model/cpu_view.hpp"
#include "ui/model/explain.hpp"
#include "ui/views/view_state.hpp"

namespace ksim::ui {

void draw_cpus(ViewState& s) {
  if (!s.begin("CPUs")) return s.end();
  Machine& m = s.d.world().machine();
  // In a stop_machine: why the CPUs are in different states at one cycle.
  const std::string why = stop_machine_line(s.d);
  if (!why.empty()) {
    wrapped(s, ImVec4(0.7f, 0.7f, 1, 1), why);
    if (ImGui::IsItemHovered()) {
      ImGui::BeginTooltip();
      ImGui::PushTextWrapPos(ImGui::GetFontSize() * 30);
      ImGui::TextUnformatted(stop_machine_rule());
      ImGui::PopTextWrapPos();
      ImGui::EndTooltip();
    }
    ImGui::Separator();
  }
  for (int c = 0; c < m.cpu_count(); ++c) {
    CpuRow r = cpu_row(s.d, c);
    ImGui::PushID(c);
    char label[32];
    std::snprintf(label, sizeof label, "CPU %d", c);
    if (ImGui::RadioButton(label, s.selected_cpu == c)) s.selected_cpu = c;
    s.note(label);
    const ImVec4 doing_col = r.state == CpuRow::Doing::guest    ? ImVec4(0.5f, 0.9f, 0.5f, 1)
                             : r.state == CpuRow::Doing::idle   ? ImVec4(0.6f, 0.6f, 0.7f, 1)
                             : r.state == CpuRow::Doing::ended  ? ImVec4(0.9f, 0.8f, 0.3f, 1)
                                                                : ImVec4(1.0f, 0.55f, 0.25f, 1);
    // What it is doing beside its name while that fits, wrapped below it
    // otherwise (a stop_machine state, a probe phase): never cut off.
    flow(ImGui::CalcTextSize(r.doing.c_str()).x);
    wrapped(s, doing_col, r.doing);
    char pc[48];
    std::snprintf(pc, sizeof pc, "  pc %" PRIx64 " ", r.pc);
    wrapped(s, r.pc_changed ? ImVec4(1, 0.9f, 0.3f, 1) : ImGui::GetStyleColorVec4(ImGuiCol_Text),
            pc + r.pc_sym + (r.pc_line.empty() ? "" : " (" + r.pc_line + ")"));
    char state[160];
    std::snprintf(state, sizeof state, "  %s  irq %s  cycle %" PRIu64 "  instret %" PRIu64 "%s%s", r.priv.c_str(),
                  r.irq_enabled ? "on" : "off", r.cycle, r.instret, r.task.empty() ? "" : "  task ", r.task.c_str());
    wrapped(s, ImGui::GetStyleColorVec4(ImGuiCol_Text), state);
    if (!r.caches.empty()) wrapped(s, ImVec4(0.6f, 0.8f, 1.0f, 1), "  " + r.caches);  // timing v2
    ImGui::Separator();
    ImGui::PopID();
  }
  // The selected CPU's registers after every CPU's state, so that all
  // CPUs are in sight together (a stop_machine, a race); yellow: changed
  // by the last move.
  const CpuRow r = cpu_row(s.d, s.selected_cpu);
  ImGui::TextDisabled("CPU %d registers", s.selected_cpu);
  const float cell = ImGui::CalcTextSize("rax  0000000000000000").x + px(12);
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
  s.end();
}

}  // namespace ksim::ui
