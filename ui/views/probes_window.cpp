// Probes: the session's probes with hits and nmissed, enable/disable and
// remove, the kprobes/enabled knob, a line to add a probe, and the
// debugfs list.
#include <cinttypes>

#include "ui/model/probes_view.hpp"
#include "ui/views/view_state.hpp"

namespace ksim::ui {

void draw_probes(ViewState& s) {
  const ImVec2 ds = ImGui::GetIO().DisplaySize;
  if (!s.begin("Probes", ImVec2(ds.x * 0.70f, 0), ImVec2(ds.x * 0.30f, ds.y * 0.28f))) return s.end();
  Debugger& d = s.d;
  auto op = [&](ProbeOp::Kind k, const std::string& arg) {
    s.running = false;
    s.probe_error = d.probe_op(ProbeOp{k, arg, s.selected_cpu});
    s.probe_message = s.probe_error.empty() ? std::string(op_name(k)) + " " + arg + ": done at cycle " +
                                                  std::to_string(d.here())
                                            : "";
  };
  ImGui::SetNextItemWidth(-70);
  const bool enter = input_text(s, "##spec", s.probe_text, sizeof s.probe_text);
  ImGui::SameLine();
  if ((button(s, "Add") || enter) && s.probe_text[0]) {
    op(ProbeOp::Kind::add, s.probe_text);
    if (s.probe_error.empty()) s.probe_text[0] = 0;
  }
  ImGui::TextDisabled("kprobe_events line, e.g. p:myfork do_fork flags=$arg1 or r sys_open ret=$retval");
  if (!s.probe_error.empty()) ImGui::TextColored(ImVec4(1, 0.4f, 0.35f, 1), "error: %s", s.probe_error.c_str());
  else if (!s.probe_message.empty()) ImGui::TextColored(ImVec4(0.5f, 0.9f, 0.5f, 1), "%s", s.probe_message.c_str());

  bool enabled = kprobes_enabled(d);
  if (ImGui::Checkbox("kprobes/enabled", &enabled)) op(ProbeOp::Kind::knob, enabled ? "1" : "0");
  s.note("kprobes/enabled");

  const auto rows = probe_rows(d);
  if (ImGui::BeginTable("probes", 6, ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY,
                        ImVec2(0, ImGui::GetContentRegionAvail().y * 0.6f))) {
    ImGui::TableSetupColumn("event");
    ImGui::TableSetupColumn("t");
    ImGui::TableSetupColumn("where", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableSetupColumn("hits");
    ImGui::TableSetupColumn("nmissed");
    ImGui::TableSetupColumn("");
    ImGui::TableHeadersRow();
    for (const ProbeRow& r : rows) {
      ImGui::PushID(r.event.c_str());
      ImGui::TableNextColumn();
      const std::string name = r.event.substr(r.event.find('/') + 1);
      ImGui::TextUnformatted(name.c_str());
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s\naction: %s", r.definition.c_str(), r.action.c_str());
      ImGui::TableNextColumn();
      ImGui::Text("%c", r.type);
      ImGui::TableNextColumn();
      ImGui::Text("%s%s%s", r.where.c_str(), r.disabled ? " [DISABLED]" : "", r.removed ? " [removed]" : "");
      ImGui::TableNextColumn();
      ImGui::Text("%" PRIu64, r.hits);
      ImGui::TableNextColumn();
      ImGui::Text("%" PRIu64, r.nmissed);
      ImGui::TableNextColumn();
      if (!r.removed) {
        const std::string toggle = (r.disabled ? "Enable " : "Disable ") + name;
        if (ImGui::SmallButton(r.disabled ? "Enable" : "Disable"))
          op(r.disabled ? ProbeOp::Kind::enable : ProbeOp::Kind::disable, name);
        s.note(toggle);
        ImGui::SameLine();
        if (ImGui::SmallButton("Remove")) op(ProbeOp::Kind::remove, name);
        s.note("Remove " + name);
      }
      ImGui::PopID();
    }
    ImGui::EndTable();
  }
  if (ImGui::CollapsingHeader("debugfs kprobes/list", ImGuiTreeNodeFlags_DefaultOpen)) {
    const std::string list = kprobes_list(d);
    ImGui::TextUnformatted(list.empty() ? "(no probes)" : list.c_str());
  }
  s.end();
}

}  // namespace ksim::ui
