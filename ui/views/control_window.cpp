// Control: run/pause, the steps forward and back, run to an event kind or
// a cycle; cycle, instructions, state hash and speed.
#include <cinttypes>
#include <cstdlib>

#include "ui/model/script.hpp"
#include "ui/views/view_state.hpp"

namespace ksim::ui {

void draw_control(ViewState& s) {
  if (!s.begin("Control")) return s.end();
  Debugger& d = s.d;
  const Position& p = d.position();
  // --race: the scenario and its violation, here when the layout has no
  // Race window for them.
  if (!s.race_title.empty() && !s.b && !(s.layout && place_of(*s.layout, "Race"))) draw_race_lines(s);

  if (button(s, s.running ? "Pause" : "Run")) s.running = !s.running && !p.ended;
  // A button that pauses and does one move; `msg` is what the move says ("" when fine).
  // Each goes on the line before it while it fits (a larger font wraps the row).
  auto move = [&](const char* text, auto&& act) {
    flow(text);
    if (!button(s, text)) return;
    s.running = false;
    s.control_message = act();
  };
  char label[48];
  std::snprintf(label, sizeof label, "Step CPU %d", s.selected_cpu);
  move(label, [&] {
    return d.step_cpu(s.selected_cpu) ? std::string() : "CPU " + std::to_string(s.selected_cpu) + " did not run";
  });
  move("Step", [&] { return d.step(), std::string(); });
  move("Step cycle", [&] { return d.step_cycle(), std::string(); });
  move("Back 1", [&] { return d.step_back() ? std::string() : std::string("at the first step"); });
  const std::string back_cpu = "Back CPU " + std::to_string(s.selected_cpu);
  move(back_cpu.c_str(), [&] {
    return d.step_back_cpu(s.selected_cpu) ? std::string() : std::string("this CPU has made no step yet");
  });

  const auto& names = event_filter_names();
  const std::string& kind = names[static_cast<size_t>(s.event_filter)];
  ImGui::SetNextItemWidth(px(110));
  if (ImGui::BeginCombo("##kind", kind.c_str())) {
    for (size_t i = 0; i < names.size(); ++i)
      if (ImGui::Selectable(names[i].c_str(), static_cast<int>(i) == s.event_filter)) s.event_filter = static_cast<int>(i);
    ImGui::EndCombo();
  }
  s.note("kind");
  EventFilter f;
  event_filter_named(kind, f);
  move("Prev event", [&] { return d.prev_event(f) ? std::string() : "no earlier " + kind + " event"; });
  move("Next event", [&] { return d.next_event(f) ? std::string() : "no further " + kind + " event"; });
  if (d.landed_event() != EventLog::npos && s.landed_seen != d.moves()) {  // follow the event's CPU
    s.landed_seen = d.moves();
    if (d.log()[d.landed_event()].cpu >= 0) s.selected_cpu = d.log()[d.landed_event()].cpu;
  }

  ImGui::SetNextItemWidth(px(110));
  const bool enter = input_text(s, "##cycle", s.cycle_text, sizeof s.cycle_text);
  flow("Go to cycle");
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
  move("To end", [&] { return d.run_to_end(), std::string(); });
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
  const ImVec4 text = ImGui::GetStyleColorVec4(ImGuiCol_Text);
  char line[160];
  std::snprintf(line, sizeof line, "cycle %" PRIu64 "   (CPUs at %" PRIu64 "..%" PRIu64 ")", d.here(), p.low, p.high);
  wrapped(s, text, line);
  std::snprintf(line, sizeof line, "steps %" PRIu64 "   instructions %" PRIu64, p.steps, instret);
  wrapped(s, text, line);
  std::snprintf(line, sizeof line, "state hash %016" PRIx64 "   trace hash %s", s.state_hash,
                d.world().hasher().hex().c_str());
  wrapped(s, text, line);
  if (p.ended)
    wrapped(s, ImVec4(1, 0.8f, 0.3f, 1),
            "run ended: " + (d.world().result().end == RunResult::End::poweroff
                                 ? "powered off, status " + std::to_string(d.world().result().status)
                                 : d.world().result().reason));
  std::snprintf(line, sizeof line, "%s %.1f MIPS   %.0f frames/s   replays %" PRIu64 " restores %" PRIu64
                " checkpoints %zu", s.running ? "running" : "paused", s.mips, s.fps, d.rebuilds(), d.restores(),
                d.checkpoints());
  wrapped(s, text, line);
  if (!s.control_message.empty()) wrapped(s, ImVec4(1, 0.5f, 0.4f, 1), s.control_message);
  s.end();
}

}  // namespace ksim::ui
