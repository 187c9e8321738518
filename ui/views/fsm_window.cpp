// Probe state machine: Linux's kprobe states of the selected CPU drawn as
// nodes and arrows, the current one lit; current_kprobe and the saved
// previous one; the recent transitions, each a button to go there.
#include <cinttypes>
#include <algorithm>
#include <cmath>
#include <string>

#include "ui/model/explain.hpp"
#include "ui/model/fsm_diagram.hpp"
#include "ui/model/fsm_view.hpp"
#include "ui/views/view_state.hpp"

namespace ksim::ui {

namespace {

void arrow(ImDrawList* dl, ImVec2 o, const FsmArrow& a, ImU32 col) {
  const ImVec2 p0(o.x + a.x0, o.y + a.y0), p1(o.x + a.x1, o.y + a.y1);
  const float dx = p1.x - p0.x, dy = p1.y - p0.y, len = std::max(1.0f, std::sqrt(dx * dx + dy * dy));
  const float ux = dx / len, uy = dy / len;
  // The head scales with the font, as the labels do.
  const float k = ImGui::GetFontSize() / 13.0f;
  dl->AddLine(p0, p1, col, 1.5f * k);
  const ImVec2 l(p1.x - ux * 9 * k - uy * 5 * k, p1.y - uy * 9 * k + ux * 5 * k);
  const ImVec2 r(p1.x - ux * 9 * k + uy * 5 * k, p1.y - uy * 9 * k - ux * 5 * k);
  dl->AddTriangleFilled(p1, l, r, col);
  dl->AddText(ImVec2(o.x + a.label.x0, o.y + a.label.y0), col, a.edge.label);
}

}  // namespace

void draw_fsm(ViewState& s) {
  if (!s.begin("Probe state machine"))
    return s.end();
  const FsmView v = fsm_view(s.d, s.selected_cpu);
  ImGui::Text("CPU %d: %s%s%s", s.selected_cpu, fsm_node_name(v.current), v.phase.empty() ? "" : ", parked: next ",
              v.phase.c_str());
  ImGui::Text("current_kprobe: %s   prev: %s%s%s%s", v.current_kprobe.empty() ? "NULL" : v.current_kprobe.c_str(),
              v.prev_kprobe.empty() ? "none" : v.prev_kprobe.c_str(), v.prev_status.empty() ? "" : " (",
              v.prev_status.c_str(), v.prev_status.empty() ? "" : ")");

  // The diagram.
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  // The diagram gets the larger part of the window; its least height fits
  // three rows of boxes with the labels between (twelve lines of text).
  const float w = ImGui::GetContentRegionAvail().x;
  float h = std::max(12 * ImGui::GetTextLineHeight(), ImGui::GetContentRegionAvail().y * 0.5f);
  const MeasureText measure = [](const char* t) {
    const ImVec2 z = ImGui::CalcTextSize(t);
    return TextSize{z.x, z.y};
  };
  // A narrow canvas needs more height for its labels to find clear places
  // (layout_test.cpp): grow it, up to 24 lines; the window scrolls.
  FsmDiagram g = fsm_diagram(w, h, measure);
  for (float more = h; !g.clear && more < 24 * ImGui::GetTextLineHeight();) {
    more += 2 * ImGui::GetTextLineHeight();
    FsmDiagram taller = fsm_diagram(w, more, measure);
    if (taller.clear) {
      g = std::move(taller);
      h = more;
    }
  }
  ImGui::InvisibleButton("diagram", ImVec2(w, h));
  s.note("diagram");
  ImDrawList* dl = ImGui::GetWindowDrawList();
  s.fsm_w = w;
  s.fsm_h = h;
  s.fsm_clear = g.clear;
  FsmNode last_from = v.current, last_to = v.current;
  if (!v.recent.empty()) {
    last_from = v.recent.back().from;
    last_to = v.recent.back().to;
  }
  for (const FsmArrow& a : g.arrows) {
    const bool taken = a.edge.from == last_from && a.edge.to == last_to;
    arrow(dl, origin, a, taken ? IM_COL32(255, 220, 80, 255) : IM_COL32(150, 150, 165, 255));
  }
  const float pad_x = (g.node[0].x1 - g.node[0].x0 - ImGui::CalcTextSize(g.name(FsmNode::idle)).x) / 2;
  for (int n = 0; n < kFsmNodes; ++n) {
    const FsmNode node = static_cast<FsmNode>(n);
    const Box& b = g.node[n];
    const bool lit = node == v.current;
    const ImVec2 p0(origin.x + b.x0, origin.y + b.y0), p1(origin.x + b.x1, origin.y + b.y1);
    dl->AddRectFilled(p0, p1, lit ? IM_COL32(230, 120, 40, 255) : IM_COL32(45, 50, 65, 255), 6);
    dl->AddRect(p0, p1, lit ? IM_COL32(255, 230, 120, 255) : IM_COL32(120, 120, 140, 255), 6, 0, lit ? 2.5f : 1);
    const ImVec2 ts = ImGui::CalcTextSize(g.name(node));
    dl->AddText(ImVec2(p0.x + pad_x, (p0.y + p1.y - ts.y) / 2), IM_COL32(255, 255, 255, 255), g.name(node));
  }

  // What Linux runs in the current state, and in any state under the mouse.
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  for (int n = 0; n < kFsmNodes; ++n) {
    const Box& b = g.node[n];
    if (ImGui::IsItemHovered() && mouse.x >= origin.x + b.x0 && mouse.x < origin.x + b.x1 &&
        mouse.y >= origin.y + b.y0 && mouse.y < origin.y + b.y1) {
      ImGui::BeginTooltip();
      ImGui::PushTextWrapPos(ImGui::GetFontSize() * 30);
      ImGui::TextUnformatted(fsm_state_line(s.d, s.selected_cpu, static_cast<FsmNode>(n)).c_str());
      ImGui::PopTextWrapPos();
      ImGui::EndTooltip();
    }
  }
  wrapped(s, ImVec4(1, 0.85f, 0.55f, 1), fsm_state_line(s.d, s.selected_cpu, v.current));
  ImGui::TextDisabled("recent transitions (click to go there)");
  ImGui::BeginChild("transitions");
  for (size_t i = v.recent.size(); i-- > 0;) {
    const FsmTransition& t = v.recent[i];
    // As much as fits: the cycle and the states, what took the step when
    // it is not the state's own name, and the probe; Linux's long names
    // shortened (HIT_SS) and the detail left out in a narrow window.
    const float room = ImGui::GetContentRegionAvail().x;
    const bool named = t.what != fsm_node_name(t.to);
    std::string line;
    for (int brief = 0; brief < 3; ++brief) {
      auto name = [&](FsmNode n) { return brief ? fsm_node_short_name(n) : fsm_node_name(n); };
      char head[64];
      std::snprintf(head, sizeof head, "%10" PRIu64 "  ", t.cycle);
      line = head + std::string(name(t.from)) + " -> " + name(t.to);
      if (brief < 2) line += (named ? "  (" + t.what + ")" : std::string()) + "  " + t.where;
      if (t.event == EventLog::npos) line += "  [held]";
      if (ImGui::CalcTextSize(line.c_str()).x <= room) break;
    }
    const float text_w = ImGui::CalcTextSize(line.c_str()).x;
    line += "##" + std::to_string(i);
    // As wide as its text (a full-width selectable reaches past the edge).
    if (ImGui::Selectable(line.c_str(), false, 0, ImVec2(text_w, 0))) {
      s.running = false;
      if (t.event != EventLog::npos)
        s.d.go_to_event(t.event);
      else
        s.d.go_to_cycle(t.cycle + 1);
    }
    s.note("transition " + std::to_string(v.recent.size() - 1 - i));
  }
  ImGui::EndChild();
  s.end();
}

}  // namespace ksim::ui
