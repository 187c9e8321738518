// Race (the race layout, ksim-ui --race): the scenario, what it tests,
// and the violation its checker found, with a button to go there.
#include <cinttypes>

#include "ui/views/view_state.hpp"

namespace ksim::ui {

// The race's lines; Control draws them too when the layout has no Race window.
void draw_race_lines(ViewState& s) {
  Debugger& d = s.d;
  ImGui::PushTextWrapPos(0);
  ImGui::TextColored(ImVec4(1, 0.8f, 0.4f, 1), "race %s", s.race_title.c_str());
  s.audit("title");
  if (!s.race_what.empty()) {
    ImGui::TextWrapped("%s", s.race_what.c_str());
    s.audit("what");
  }
  if (s.race_violated) {
    ImGui::TextColored(ImVec4(1, 0.35f, 0.3f, 1), "violation at cycle %" PRIu64 " by CPU %d:", s.race_cycle,
                       s.race_cpu);
    ImGui::TextWrapped("%s", s.race_violation.c_str());
    s.audit("violation");
    if (button(s, "Go to the violation")) {
      s.running = false;
      d.go_to_cycle(s.race_cycle);
      if (s.race_cpu >= 0) s.selected_cpu = s.race_cpu;
    }
  } else {
    ImGui::TextColored(ImVec4(0.5f, 1, 0.5f, 1), "the invariant held");
  }
  ImGui::PopTextWrapPos();
}

void draw_race(ViewState& s) {
  if (s.race_title.empty() || !s.begin("Race")) return s.end();
  draw_race_lines(s);
  s.end();
}

}  // namespace ksim::ui
