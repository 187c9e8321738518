// Code: disassembly around the selected CPU's PC, or a symbol or address
// typed in; probes, breakpoints over the original, slots.
#include <cinttypes>

#include "ui/model/code_view.hpp"
#include "ui/views/view_state.hpp"

namespace ksim::ui {

void draw_code(ViewState& s) {
  const ImVec2 ds = ImGui::GetIO().DisplaySize;
  if (!s.begin("Code", ImVec2(ds.x * 0.34f, 0), ImVec2(ds.x * 0.36f, ds.y * 0.43f))) return s.end();
  Machine& m = s.d.world().machine();
  ImGui::SetNextItemWidth(200);
  if (input_text(s, "location", s.code_text, sizeof s.code_text)) {
    if (auto a = resolve_location(s.d, s.code_text)) {
      s.code_addr = *a;
      s.code_follow_pc = false;
      s.code_message.clear();
    } else {
      s.code_message = std::string("unknown symbol or address '") + s.code_text + "'";
    }
  }
  ImGui::SameLine();
  ImGui::Checkbox("follow PC", &s.code_follow_pc);
  s.note("follow PC");
  if (!s.code_message.empty()) ImGui::TextColored(ImVec4(1, 0.5f, 0.4f, 1), "%s", s.code_message.c_str());
  if (s.code_follow_pc) s.code_addr = m.cpu(s.selected_cpu).pc();

  if (s.code_cache_addr != s.code_addr || s.code_cache_moves != s.d.moves() || s.code_cache_cpu != s.selected_cpu) {
    s.code_cache = code_lines(s.d, s.code_addr, 10, 30, s.selected_cpu);
    s.code_cache_addr = s.code_addr;
    s.code_cache_cpu = s.selected_cpu;
    s.code_cache_moves = s.d.moves();
  }
  const std::vector<CodeLine>& lines = s.code_cache;
  if (ImGui::BeginTable("code", 4, ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg)) {
    ImGui::TableSetupColumn("cpu");
    ImGui::TableSetupColumn("address");
    ImGui::TableSetupColumn("bytes");
    ImGui::TableSetupColumn("instruction", ImGuiTableColumnFlags_WidthStretch);
    for (const CodeLine& l : lines) {
      if (!l.label.empty()) {
        ImGui::TableNextRow();
        ImGui::TableSetColumnIndex(1);
        ImGui::TextColored(ImVec4(0.6f, 0.8f, 1, 1), "<%s>:", l.label.c_str());
      }
      ImGui::TableNextRow();
      if (l.addr == s.code_addr)
        ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, IM_COL32(60, 60, 110, 255));
      ImGui::TableNextColumn();
      std::string cpus;
      for (int c : l.cpus) {
        if (!cpus.empty()) cpus += ',';
        cpus += std::to_string(c);
      }
      if (!cpus.empty()) ImGui::TextColored(ImVec4(1, 0.9f, 0.3f, 1), "%s>", cpus.c_str());
      ImGui::TableNextColumn();
      if (l.probed)
        ImGui::TextColored(ImVec4(1, 0.45f, 0.3f, 1), "* %" PRIx64, l.addr);
      else
        ImGui::Text("  %" PRIx64, l.addr);
      ImGui::TableNextColumn();
      ImGui::TextDisabled("%s", l.bytes.c_str());
      ImGui::TableNextColumn();
      if (l.breakpoint && !l.over.empty()) {
        ImGui::TextColored(ImVec4(1, 0.35f, 0.3f, 1), "[%s]", l.over.c_str());
        ImGui::SameLine();
        ImGui::TextColored(ImVec4(0.75f, 0.75f, 0.75f, 1), "over  %s", l.text.c_str());
      } else {
        ImGui::TextUnformatted(l.text.c_str());
      }
      if (!l.probes.empty()) {
        ImGui::SameLine();
        ImGui::TextColored(ImVec4(1, 0.6f, 0.3f, 1), "  ; probe %s%s", l.probes.c_str(), l.breakpoint ? "" : " (disarmed)");
      }
      if (!l.slot_of.empty()) {
        ImGui::SameLine();
        ImGui::TextColored(ImVec4(0.4f, 0.85f, 1, 1), "  ; %s", l.slot_of.c_str());
      }
      if (!l.cpu_sees.empty()) {  // relaxed code model: this CPU has not seen the store yet
        ImGui::SameLine();
        ImGui::TextColored(ImVec4(1, 0.55f, 0.85f, 1), "  ; CPU %d still sees: %s", s.selected_cpu, l.cpu_sees.c_str());
      }
    }
    ImGui::EndTable();
  }
  s.end();
}

}  // namespace ksim::ui
