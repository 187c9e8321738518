// Race (the race layout, ksim-ui --race): the scenario, the violation its
// checker found (with a button to go there), then what the two variants do
// and what the checker holds.
#include <cinttypes>

#include "ui/views/view_state.hpp"

namespace ksim::ui {

// The race's lines; Control draws them too when the layout has no Race window.
void draw_race_lines(ViewState& s) {
  Debugger& d = s.d;
  ImGui::PushTextWrapPos(0);
  ImGui::TextColored(ImVec4(1, 0.8f, 0.4f, 1), "race %s", s.race_title.c_str());
  s.audit("title");
  if (s.race_violated) {
    ImGui::TextColored(ImVec4(1, 0.35f, 0.3f, 1), "violation at cycle %" PRIu64 " by CPU %d:", s.race_cycle,
                       s.race_cpu);
    wrapped(s, ImGui::GetStyleColorVec4(ImGuiCol_Text), s.race_violation);
    if (button(s, "Go to the violation")) {
      s.running = false;
      d.go_to_cycle(s.race_cycle);
      if (s.race_cpu >= 0) s.selected_cpu = s.race_cpu;
    }
  } else {
    ImGui::TextColored(ImVec4(0.5f, 1, 0.5f, 1), "the invariant held");
  }
  // What the two variants do, and what is checked (else the one-line summary).
  if (s.race_correct.empty() && !s.race_what.empty()) wrapped(s, ImGui::GetStyleColorVec4(ImGuiCol_Text), s.race_what);
  if (!s.race_correct.empty()) {
    wrapped(s, ImVec4(0.5f, 0.9f, 0.5f, 1), "correct: " + s.race_correct);
    wrapped(s, ImVec4(1, 0.55f, 0.45f, 1), "broken: " + s.race_broken);
    wrapped(s, ImVec4(0.75f, 0.8f, 1, 1), "checked: " + s.race_invariant);
  }
  ImGui::PopTextWrapPos();
}

void draw_race(ViewState& s) {
  if (s.race_title.empty() || !s.begin("Race")) return s.end();
  draw_race_lines(s);
  s.end();
}

}  // namespace ksim::ui
