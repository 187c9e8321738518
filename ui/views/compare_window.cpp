// Compare (ksim-ui --compare): the two runs' settings, where their events
// first part, and every CPU of both runs at the same cycle. The other
// windows show run A; B follows A's moves to its cycle.
#include <cinttypes>

#include "ui/model/cpu_view.hpp"
#include "ui/views/view_state.hpp"

namespace ksim::ui {

void draw_compare(ViewState& s) {
  if (!s.b || !s.begin("Compare")) return s.end();
  const ImVec4 text = ImGui::GetStyleColorVec4(ImGuiCol_Text);
  const ImVec4 col_a(0.55f, 0.85f, 1, 1), col_b(1, 0.7f, 0.45f, 1);
  if (!s.race_title.empty()) wrapped(s, ImVec4(1, 0.8f, 0.4f, 1), "race " + s.race_title);
  wrapped(s, col_a, "A: " + s.compare_a + (s.compare_a_note.empty() ? "" : ": " + s.compare_a_note));
  wrapped(s, col_b, "B: " + s.compare_b + (s.compare_b_note.empty() ? "" : ": " + s.compare_b_note));
  if (!s.diff.found) {
    wrapped(s, ImVec4(0.5f, 1, 0.5f, 1), "the two runs' events are the same from start to end");
  } else {
    wrapped(s, ImVec4(1, 0.45f, 0.9f, 1),
            "first difference: event " + std::to_string(s.diff.index) + ", cycle " + std::to_string(s.diff.cycle));
    wrapped(s, col_a, "A: " + s.diff.a);
    wrapped(s, col_b, "B: " + s.diff.b);
    if (button(s, "Go to the first difference")) {
      s.running = false;
      s.d.go_to_cycle(s.diff.cycle);
    }
  }
  ImGui::Separator();
  char line[160];
  std::snprintf(line, sizeof line, "A at cycle %" PRIu64 ", B at cycle %" PRIu64 " (B follows A)", s.d.here(),
                s.b->here());
  wrapped(s, text, line);
  // Every CPU of both runs: what it does and where, at this cycle.
  const int cpus = s.d.world().machine().cpu_count();
  for (int c = 0; c < cpus; ++c) {
    const CpuRow a = cpu_row(s.d, c), b = cpu_row(*s.b, c);
    const bool differ = a.pc != b.pc || a.doing != b.doing;
    wrapped(s, differ ? ImVec4(1, 0.9f, 0.3f, 1) : text, "CPU " + std::to_string(c) + (differ ? " (differs)" : ""));
    wrapped(s, col_a, "  A: " + a.doing + ", " + a.pc_sym + (a.pc_line.empty() ? "" : " (" + a.pc_line + ")"));
    wrapped(s, col_b, "  B: " + b.doing + ", " + b.pc_sym + (b.pc_line.empty() ? "" : " (" + b.pc_line + ")"));
  }
  s.end();
}

}  // namespace ksim::ui
