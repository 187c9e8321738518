// Control: run/pause, the steps forward and back, run to an event kind or
// a cycle; cycle, instructions, state hash and speed.
#include <cinttypes>
#include <cstdlib>

#include "ui/model/script.hpp"
#include "ui/views/view_state.hpp"

namespace ksim::ui {

void draw_control(ViewState& s) {
  const ImVec2 ds = ImGui::GetIO().DisplaySize;
  if (!s.begin("Control", ImVec2(0, 0), ImVec2(ds.x * 0.34f, ds.y * 0.24f))) return s.end();
  Debugger& d = s.d;
  const Position& p = d.position();
  if (!s.race_title.empty()) {  // --race: the scenario, and its violation (a red line on the timeline)
    ImGui::TextColored(ImVec4(1, 0.8f, 0.4f, 1), "race %s", s.race_title.c_str());
    if (s.race_violated) {
      ImGui::TextColored(ImVec4(1, 0.35f, 0.3f, 1), "violation at cycle %" PRIu64 " by CPU %d:", s.race_cycle,
                         s.race_cpu);
      ImGui::TextWrapped("%s", s.race_violation.c_str());
      if (button(s, "Go to the violation")) {
        s.running = false;
        d.go_to_cycle(s.race_cycle);
        if (s.race_cpu >= 0) s.selected_cpu = s.race_cpu;
      }
    } else {
      ImGui::TextColored(ImVec4(0.5f, 1, 0.5f, 1), "the invariant held");
    }
  }

  if (button(s, s.running ? "Pause" : "Run")) s.running = !s.running && !p.ended;
  ImGui::SameLine();
  // A button that pauses and does one move; `msg` is what the move says ("" when fine).
  auto move = [&](const char* text, auto&& act) {
    if (!button(s, text)) return;
    s.running = false;
    s.control_message = act();
  };
  char label[48];
  std::snprintf(label, sizeof label, "Step CPU %d", s.selected_cpu);
  move(label, [&] {
    return d.step_cpu(s.selected_cpu) ? std::string() : "CPU " + std::to_string(s.selected_cpu) + " did not run";
  });
  ImGui::SameLine();
  move("Step", [&] { return d.step(), std::string(); });
  ImGui::SameLine();
  move("Step cycle", [&] { return d.step_cycle(), std::string(); });
  ImGui::SameLine();
  move("Back 1", [&] { return d.step_back() ? std::string() : std::string("at the first step"); });
  ImGui::SameLine();
  const std::string back_cpu = "Back CPU " + std::to_string(s.selected_cpu);
  move(back_cpu.c_str(), [&] {
    return d.step_back_cpu(s.selected_cpu) ? std::string() : std::string("this CPU has made no step yet");
  });

  const auto& names = event_filter_names();
  const std::string& kind = names[static_cast<size_t>(s.event_filter)];
  ImGui::SetNextItemWidth(110);
  if (ImGui::BeginCombo("##kind", kind.c_str())) {
    for (size_t i = 0; i < names.size(); ++i)
      if (ImGui::Selectable(names[i].c_str(), static_cast<int>(i) == s.event_filter)) s.event_filter = static_cast<int>(i);
    ImGui::EndCombo();
  }
  s.note("kind");
  ImGui::SameLine();
  EventFilter f;
  event_filter_named(kind, f);
  move("Prev event", [&] { return d.prev_event(f) ? std::string() : "no earlier " + kind + " event"; });
  ImGui::SameLine();
  move("Next event", [&] { return d.next_event(f) ? std::string() : "no further " + kind + " event"; });
  if (d.landed_event() != EventLog::npos && s.landed_seen != d.moves()) {  // follow the event's CPU
    s.landed_seen = d.moves();
    if (d.log()[d.landed_event()].cpu >= 0) s.selected_cpu = d.log()[d.landed_event()].cpu;
  }

  ImGui::SetNextItemWidth(110);
  const bool enter = input_text(s, "##cycle", s.cycle_text, sizeof s.cycle_text);
  ImGui::SameLine();
  if (button(s, "Go to cycle") || enter) {
    char* end = nullptr;
    const unsigned long long c = std::strtoull(s.cycle_text, &end, 0);
    if (!end || *end || end == s.cycle_text) {
      s.control_message = std::string("not a cycle: '") + s.cycle_text + "'";
    } else {
      s.running = false;
      d.go_to_cycle(c);
      s.control_message.clear();
    }
  }
  ImGui::SameLine();
  move("To end", [&] { return d.run_to_end(), std::string(); });
  ImGui::SameLine();
  move("To start", [&] { return d.go_to_cycle(0), std::string(); });

  if (s.hash_moves != d.moves()) {  // a checkpoint's worth of hashing: once per move
    s.state_hash = d.state_hash();
    s.hash_moves = d.moves();
  }
  // The world as it is now, not as it was when this window began: a move
  // back rebuilds it (found under AddressSanitizer: a use after free).
  Machine& now = d.world().machine();
  uint64_t instret = 0;
  for (int c = 0; c < now.cpu_count(); ++c) instret += now.cpu(c).instret();
  ImGui::Separator();
  ImGui::Text("cycle %" PRIu64 "   (CPUs at %" PRIu64 "..%" PRIu64 ")", d.here(), p.low, p.high);
  ImGui::Text("steps %" PRIu64 "   instructions %" PRIu64, p.steps, instret);
  ImGui::Text("state hash %016" PRIx64 "   trace hash %s", s.state_hash, d.world().hasher().hex().c_str());
  if (p.ended)
    ImGui::TextColored(ImVec4(1, 0.8f, 0.3f, 1), "run ended: %s", d.world().result().end == RunResult::End::poweroff
                                                                     ? ("powered off, status " +
                                                                        std::to_string(d.world().result().status))
                                                                           .c_str()
                                                                     : d.world().result().reason.c_str());
  ImGui::Text("%s %.1f MIPS   %.0f frames/s   replays %" PRIu64 " restores %" PRIu64 " checkpoints %zu",
              s.running ? "running" : "paused", s.mips, s.fps, d.rebuilds(), d.restores(), d.checkpoints());
  if (!s.control_message.empty()) ImGui::TextColored(ImVec4(1, 0.5f, 0.4f, 1), "%s", s.control_message.c_str());
  s.end();
}

}  // namespace ksim::ui
