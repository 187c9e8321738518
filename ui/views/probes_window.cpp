// Probes: the session's probes with hits and nmissed, enable/disable and
// remove, the kprobes/enabled knob, a line to add a probe, and the
// debugfs list.
#include <algorithm>
#include <cinttypes>
#include <sstream>

#include "ui/model/probes_view.hpp"
#include "ui/views/view_state.hpp"

namespace ksim::ui {

void draw_probes(ViewState& s) {
  if (!s.begin("Probes")) return s.end();
  Debugger& d = s.d;
  auto op = [&](ProbeOp::Kind k, const std::string& arg) {
    s.running = false;
    s.probe_error = d.probe_op(ProbeOp{k, arg, s.selected_cpu});
    s.probe_message = s.probe_error.empty() ? std::string(op_name(k)) + " " + arg + ": done at cycle " +
                                                  std::to_string(d.here())
                                            : "";
  };
  ImGui::SetNextItemWidth(-px(70));
  const bool enter = input_text(s, "##spec", s.probe_text, sizeof s.probe_text);
  ImGui::SameLine();
  if ((button(s, "Add") || enter) && s.probe_text[0]) {
    op(ProbeOp::Kind::add, s.probe_text);
    if (s.probe_error.empty()) s.probe_text[0] = 0;
  }
  wrapped(s, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled),
          "kprobe_events line, e.g. p:myfork do_fork flags=$arg1 or r sys_open ret=$retval");
  if (!s.probe_error.empty()) wrapped(s, ImVec4(1, 0.4f, 0.35f, 1), "error: " + s.probe_error);
  else if (!s.probe_message.empty()) wrapped(s, ImVec4(0.5f, 0.9f, 0.5f, 1), s.probe_message);

  bool enabled = kprobes_enabled(d);
  if (ImGui::Checkbox("kprobes/enabled", &enabled)) op(ProbeOp::Kind::knob, enabled ? "1" : "0");
  s.note("kprobes/enabled");

  // One entry per probe: what and where, its counts, then its buttons,
  // each on the line before it while it fits (no table: columns would cut
  // a long symbol or the buttons off in a narrow window).
  const auto rows = probe_rows(d);
  ImGui::BeginChild("probes", ImVec2(0, ImGui::GetContentRegionAvail().y * 0.6f));
  for (const ProbeRow& r : rows) {
    ImGui::PushID(r.event.c_str());
    const std::string name = r.event.substr(r.event.find('/') + 1);
    char counts[96];
    std::snprintf(counts, sizeof counts, "  hits %" PRIu64 "  nmissed %" PRIu64, r.hits, r.nmissed);
    const std::string line = name + "  " + r.type + "  " + r.where + (r.disabled ? " [DISABLED]" : "") +
                             (r.removed ? " [removed]" : "") + counts;
    wrapped(s, r.removed ? ImVec4(0.6f, 0.6f, 0.6f, 1) : ImGui::GetStyleColorVec4(ImGuiCol_Text), line);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s\naction: %s", r.definition.c_str(), r.action.c_str());
    if (!r.removed) {
      const std::string toggle = (r.disabled ? "Enable " : "Disable ") + name;
      const char* toggle_label = r.disabled ? "Enable" : "Disable";
      flow(toggle_label);
      if (ImGui::SmallButton(toggle_label)) op(r.disabled ? ProbeOp::Kind::enable : ProbeOp::Kind::disable, name);
      s.note(toggle);
      flow("Remove");
      if (ImGui::SmallButton("Remove")) op(ProbeOp::Kind::remove, name);
      s.note("Remove " + name);
    }
    ImGui::Separator();
    ImGui::PopID();
  }
  // The probe script's next operations (marked on the timeline too).
  const auto ops = script_ops(d);
  int shown = 0;
  for (const ScriptOpRow& o : ops) {
    if (o.done) continue;
    if (shown++ == 0) ImGui::TextDisabled("probe script, next:");
    if (shown > 5) {
      ImGui::TextDisabled("  ... %zu more", static_cast<size_t>(std::count_if(ops.begin(), ops.end(), [](const ScriptOpRow& r) { return !r.done; })) - 5);
      break;
    }
    char at[48];
    std::snprintf(at, sizeof at, "  @%" PRIu64 "  ", o.cycle);
    wrapped(s, ImVec4(0.85f, 0.85f, 0.55f, 1), at + o.text + "  (line " + std::to_string(o.line) + ")");
  }
  ImGui::EndChild();
  if (ImGui::CollapsingHeader("debugfs kprobes/list", ImGuiTreeNodeFlags_DefaultOpen)) {
    const std::string list = kprobes_list(d);
    std::istringstream lines(list.empty() ? "(no probes)" : list);
    for (std::string l; std::getline(lines, l);) wrapped(s, ImGui::GetStyleColorVec4(ImGuiCol_Text), l);
  }
  s.end();
}

}  // namespace ksim::ui
