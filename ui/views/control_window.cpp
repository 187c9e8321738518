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
  Machine& m = d.world().machine();

  if (button(s, s.running ? "Pause" : "Run")) s.running = !s.running && !p.ended;
  ImGui::SameLine();
  char label[48];
  std::snprintf(label, sizeof label, "Step CPU %d", s.selected_cpu);
  if (button(s, label)) {
    s.running = false;
    if (!d.step_cpu(s.selected_cpu)) s.control_message = "CPU " + std::to_string(s.selected_cpu) + " did not run";
    else s.control_message.clear();
  }
  ImGui::SameLine();
  if (button(s, "Step")) {
    s.running = false;
    d.step();
  }
  ImGui::SameLine();
  if (button(s, "Step cycle")) {
    s.running = false;
    d.step_cycle();
  }
  ImGui::SameLine();
  if (button(s, "Back 1")) {
    s.running = false;
    if (!d.step_back()) s.control_message = "at the first step";
  }

  const auto& names = event_filter_names();
  ImGui::SetNextItemWidth(110);
  if (ImGui::BeginCombo("##kind", names[static_cast<size_t>(s.event_filter)].c_str())) {
    for (size_t i = 0; i < names.size(); ++i)
      if (ImGui::Selectable(names[i].c_str(), static_cast<int>(i) == s.event_filter)) s.event_filter = static_cast<int>(i);
    ImGui::EndCombo();
  }
  s.note("kind");
  ImGui::SameLine();
  EventFilter f;
  event_filter_named(names[static_cast<size_t>(s.event_filter)], f);
  if (button(s, "Prev event")) {
    s.running = false;
    s.control_message = d.prev_event(f) ? "" : "no earlier " + names[static_cast<size_t>(s.event_filter)] + " event";
  }
  ImGui::SameLine();
  if (button(s, "Next event")) {
    s.running = false;
    s.control_message = d.next_event(f) ? "" : "no further " + names[static_cast<size_t>(s.event_filter)] + " event";
  }
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
  if (button(s, "To end")) {
    s.running = false;
    d.run_to_end();
  }
  ImGui::SameLine();
  if (button(s, "To start")) {
    s.running = false;
    d.go_to_cycle(0);
  }

  if (s.hash_moves != d.moves()) {  // a checkpoint's worth of hashing: once per move
    s.state_hash = d.state_hash();
    s.hash_moves = d.moves();
  }
  uint64_t instret = 0;
  for (int c = 0; c < m.cpu_count(); ++c) instret += m.cpu(c).instret();
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
