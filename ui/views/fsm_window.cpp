// Probe state machine: Linux's kprobe states of the selected CPU drawn as
// nodes and arrows, the current one lit; current_kprobe and the saved
// previous one; the recent transitions, each a button to go there.
#include <cinttypes>
#include <algorithm>
#include <cmath>

#include "ui/model/fsm_view.hpp"
#include "ui/views/view_state.hpp"

namespace ksim::ui {

namespace {

// Where the segment from box a to box b leaves each box (half extents ha, hb).
void arrow(ImDrawList* dl, ImVec2 a, ImVec2 ha, ImVec2 b, ImVec2 hb, ImU32 col, const char* label) {
  const float dx = b.x - a.x, dy = b.y - a.y, len = std::sqrt(dx * dx + dy * dy);
  if (len < 1) return;
  const float ux = dx / len, uy = dy / len;
  auto exit = [&](ImVec2 h) {
    const float tx = std::fabs(ux) > 1e-4f ? h.x / std::fabs(ux) : 1e9f;
    const float ty = std::fabs(uy) > 1e-4f ? h.y / std::fabs(uy) : 1e9f;
    return std::min(tx, ty) + 3;
  };
  const float ta = exit(ha), tb = exit(hb);
  const ImVec2 p0(a.x + ux * ta, a.y + uy * ta), p1(b.x - ux * tb, b.y - uy * tb);
  dl->AddLine(p0, p1, col, 1.5f);
  const ImVec2 l(p1.x - ux * 9 - uy * 5, p1.y - uy * 9 + ux * 5), r(p1.x - ux * 9 + uy * 5, p1.y - uy * 9 - ux * 5);
  dl->AddTriangleFilled(p1, l, r, col);
  const ImVec2 ts = ImGui::CalcTextSize(label);
  // Label beside the middle of the arrow, on its left-hand side.
  const ImVec2 mid((p0.x + p1.x) / 2 + uy * (ts.x / 2 + 4), (p0.y + p1.y) / 2 - ux * (ts.y / 2 + 3));
  dl->AddText(ImVec2(mid.x - ts.x / 2, mid.y - ts.y / 2), col, label);
}

}  // namespace

void draw_fsm(ViewState& s) {
  const ImVec2 ds = ImGui::GetIO().DisplaySize;
  if (!s.begin("Probe state machine", ImVec2(ds.x * 0.70f, ds.y * 0.28f), ImVec2(ds.x * 0.30f, ds.y * 0.37f)))
    return s.end();
  const FsmView v = fsm_view(s.d, s.selected_cpu);
  ImGui::Text("CPU %d: %s%s%s", s.selected_cpu, fsm_node_name(v.current), v.phase.empty() ? "" : ", parked: next ",
              v.phase.c_str());
  ImGui::Text("current_kprobe: %s   prev: %s%s%s%s", v.current_kprobe.empty() ? "NULL" : v.current_kprobe.c_str(),
              v.prev_kprobe.empty() ? "none" : v.prev_kprobe.c_str(), v.prev_status.empty() ? "" : " (",
              v.prev_status.c_str(), v.prev_status.empty() ? "" : ")");

  // The diagram.
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float w = ImGui::GetContentRegionAvail().x, h = std::max(120.0f, ImGui::GetContentRegionAvail().y * 0.5f);
  ImGui::InvisibleButton("diagram", ImVec2(w, h));
  s.note("diagram");
  ImDrawList* dl = ImGui::GetWindowDrawList();
  // Node boxes, kept inside the canvas.
  ImVec2 centre[kFsmNodes], half[kFsmNodes];
  for (const FsmNodeLayout& l : fsm_layout()) {
    const int n = static_cast<int>(l.node);
    const ImVec2 ts = ImGui::CalcTextSize(fsm_node_name(l.node));
    half[n] = ImVec2(ts.x / 2 + 6, ts.y / 2 + 5);
    centre[n] = ImVec2(std::clamp(origin.x + l.x * w, origin.x + half[n].x + 2, origin.x + w - half[n].x - 2),
                       std::clamp(origin.y + l.y * h, origin.y + half[n].y + 2, origin.y + h - half[n].y - 2));
  }
  FsmNode last_from = v.current, last_to = v.current;
  if (!v.recent.empty()) {
    last_from = v.recent.back().from;
    last_to = v.recent.back().to;
  }
  for (const FsmEdge& e : fsm_edges()) {
    const bool taken = e.from == last_from && e.to == last_to;
    const int f = static_cast<int>(e.from), t = static_cast<int>(e.to);
    // Two arrows between the same nodes: offset them apart.
    const float off = e.from < e.to ? -4.0f : 4.0f;
    arrow(dl, ImVec2(centre[f].x, centre[f].y + off), half[f], ImVec2(centre[t].x, centre[t].y + off), half[t],
          taken ? IM_COL32(255, 220, 80, 255) : IM_COL32(150, 150, 165, 255), e.label);
  }
  for (const FsmNodeLayout& l : fsm_layout()) {
    const int n = static_cast<int>(l.node);
    const ImVec2 c = centre[n], hh = half[n];
    const bool lit = l.node == v.current;
    dl->AddRectFilled(ImVec2(c.x - hh.x, c.y - hh.y), ImVec2(c.x + hh.x, c.y + hh.y),
                      lit ? IM_COL32(230, 120, 40, 255) : IM_COL32(45, 50, 65, 255), 6);
    dl->AddRect(ImVec2(c.x - hh.x, c.y - hh.y), ImVec2(c.x + hh.x, c.y + hh.y),
                lit ? IM_COL32(255, 230, 120, 255) : IM_COL32(120, 120, 140, 255), 6, 0, lit ? 2.5f : 1);
    dl->AddText(ImVec2(c.x - hh.x + 6, c.y - hh.y + 5), IM_COL32(255, 255, 255, 255), fsm_node_name(l.node));
  }

  ImGui::TextDisabled("recent transitions (click to go there)");
  ImGui::BeginChild("transitions");
  for (size_t i = v.recent.size(); i-- > 0;) {
    const FsmTransition& t = v.recent[i];
    char line[256];
    std::snprintf(line, sizeof line, "%10" PRIu64 "  %s -> %s  (%s) %s%s##%zu", t.cycle, fsm_node_name(t.from),
                  fsm_node_name(t.to), t.what.c_str(), t.where.c_str(),
                  t.event == EventLog::npos ? "  [held]" : "", i);
    if (ImGui::Selectable(line, false)) {
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
