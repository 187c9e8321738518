// Timeline: one lane per CPU on a shared cycle axis. Wheel zooms around
// the mouse, drag pans, hover describes, a click travels (to just after
// the event under the mouse, or to the cycle clicked).
#include <cinttypes>
#include <cmath>

#include "ui/model/probes_view.hpp"
#include "ui/views/view_state.hpp"

namespace ksim::ui {

namespace {

ImU32 mark_colour(EventKind k) {
  switch (k) {
    case EventKind::trap: return IM_COL32(255, 255, 255, 255);
    case EventKind::interrupt: return IM_COL32(120, 190, 255, 255);
    case EventKind::ipi_recv: return IM_COL32(80, 240, 240, 255);
    case EventKind::console: return IM_COL32(170, 170, 170, 255);
    case EventKind::probe: return IM_COL32(255, 90, 255, 255);  // register, arm, disarm, ...
    default: return IM_COL32(255, 0, 255, 255);
  }
}

double nice_step(double raw) {
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= raw) return m * p;
  return 10 * p;
}

}  // namespace

void draw_timeline(ViewState& s) {
  if (!s.begin("Timeline")) return s.end();
  Debugger& d = s.d;
  const int cpus = d.world().machine().cpu_count();
  s.timeline.sync(d.log(), cpus);
  // --compare: run B's lanes under A's, on the same axis.
  if (s.b) s.b_timeline.sync(s.b->log(), cpus);
  const int lanes = s.b ? 2 * cpus : cpus;
  const double now = static_cast<double>(d.here());
  const double end = std::max({now, static_cast<double>(s.timeline.last_cycle()), 1000.0});
  if (!s.range_set) {
    s.range = TimelineRange{0, std::max(now * 1.05, 100'000.0)};
    s.range_set = true;
  }
  // A lesson's layout opens on its event (the hit, the stop_machine, the
  // cycles before a race's violation).
  if (s.layout_pending && s.layout) {
    s.range = lesson_range(s.layout->lesson, s.timeline, d.here(), s.selected_cpu);
    s.range_set = true;
    s.range_moves = d.moves();
  }
  // After a move, keep "now" in view (same zoom, now at 80% of the width).
  if (s.range_moves != d.moves()) {
    s.range_moves = d.moves();
    if (now < s.range.c0 || now > s.range.c1) {
      const double width = s.range.c1 - s.range.c0;
      s.range.c0 = std::max(0.0, now - width * 0.8);
      s.range.c1 = s.range.c0 + width;
    }
  }
  if (button(s, "Fit")) s.range = TimelineRange{0, end * 1.02};
  flow("Zoom in");
  if (button(s, "Zoom in")) s.range.zoom(0.5, now);
  flow("Zoom out");
  if (button(s, "Zoom out")) s.range.zoom(2.0, now);
  char range_text[64];
  std::snprintf(range_text, sizeof range_text, "%.0f .. %.0f   ", s.range.c0, s.range.c1);
  flow(ImGui::CalcTextSize(range_text).x);
  ImGui::TextUnformatted(range_text);
  // The legend, wrapped to the window's width.
  bool first = true;
  for (SpanKind k : {SpanKind::running, SpanKind::idle, SpanKind::trap, SpanKind::hit_active, SpanKind::hit_ss,
                     SpanKind::hit_ssdone, SpanKind::reenter, SpanKind::patching, SpanKind::stopper}) {
    const char* label = k == SpanKind::trap ? "bp trap" : span_kind_name(k);
    const float need = px(16) + ImGui::CalcTextSize(label).x + 2 * ImGui::GetStyle().ItemSpacing.x;
    const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
    if (first || ImGui::GetItemRectMax().x + need < right) ImGui::SameLine();
    first = false;
    ImGui::ColorButton(span_kind_name(k), ImGui::ColorConvertU32ToFloat4(span_colour(k)),
                       ImGuiColorEditFlags_NoTooltip, ImVec2(px(10), px(10)));
    ImGui::SameLine(0, 2);
    ImGui::TextUnformatted(label);
  }
  flow(ImGui::CalcTextSize(" grace period").x);
  ImGui::TextColored(ImVec4(1.0f, 0.85f, 0.3f, 1), " grace period");
  flow(ImGui::CalcTextSize("RCU-tasks").x);
  ImGui::TextColored(ImVec4(0.45f, 0.6f, 1.0f, 1), "RCU-tasks");
  if (s.race_violated) {
    flow(ImGui::CalcTextSize("| violation").x);
    ImGui::TextColored(ImVec4(1, 0.35f, 0.3f, 1), "| violation");
  }

  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float label_w = px(s.b ? 60 : 44), axis_h = px(18);
  const float w = std::max(50.0f, avail.x - label_w), h = std::max(40.0f, avail.y);
  ImGui::InvisibleButton("canvas", ImVec2(avail.x, h));
  s.note("canvas");
  const bool hovered = ImGui::IsItemHovered(), active = ImGui::IsItemActive();
  ImGuiIO& io = ImGui::GetIO();
  const float x0 = origin.x + label_w;
  const float lane_h = std::min(px(40), std::max(px(10), (h - axis_h) / static_cast<float>(lanes)));

  // Gestures.
  static float drag_total = 0;
  if (ImGui::IsItemActivated()) drag_total = 0;
  if (active && (io.MouseDelta.x != 0 || io.MouseDelta.y != 0)) {
    drag_total += std::fabs(io.MouseDelta.x);
    s.range.pan(io.MouseDelta.x, w);
  }
  if (hovered && io.MouseWheel != 0)
    s.range.zoom(std::pow(0.8, io.MouseWheel), s.range.cycle_at(io.MousePos.x - x0, w));
  s.range.clamp(0, end * 1.1 + 1000);
  const double cpp = s.range.cycles_per_pixel(w);
  int lane_hover = static_cast<int>((io.MousePos.y - origin.y - axis_h) / lane_h);
  const double cyc_hover = s.range.cycle_at(io.MousePos.x - x0, w);
  size_t hover_event = EventLog::npos;
  if (hovered && lane_hover >= 0 && lane_hover < cpus && cyc_hover >= 0)  // (A's lanes: the run the windows show)
    hover_event = s.timeline.hit_test(lane_hover, static_cast<uint64_t>(cyc_hover), static_cast<uint64_t>(cpp * 4 + 1));
  if (ImGui::IsItemDeactivated() && drag_total < 3 && cyc_hover >= 0) {
    s.running = false;
    if (hover_event != EventLog::npos)
      d.go_to_event(hover_event);
    else
      d.go_to_cycle(static_cast<uint64_t>(cyc_hover));
  }

  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->PushClipRect(origin, ImVec2(origin.x + avail.x, origin.y + h), true);
  // Axis.
  const double step = nice_step(cpp * 110);
  for (double c = std::ceil(s.range.c0 / step) * step; c < s.range.c1; c += step) {
    const float x = x0 + static_cast<float>(s.range.x_of(c, w));
    dl->AddLine(ImVec2(x, origin.y + axis_h - 4), ImVec2(x, origin.y + h), IM_COL32(255, 255, 255, 25));
    char t[32];
    std::snprintf(t, sizeof t, "%.0f", c);
    dl->AddText(ImVec2(x + 2, origin.y), IM_COL32(180, 180, 190, 255), t);
  }
  // Lanes, binned per pixel column.
  std::vector<Cell> cells;
  const int width = static_cast<int>(w);
  const uint64_t now_u = d.here();
  for (int lane = 0; lane < lanes; ++lane) {
    const bool in_b = lane >= cpus;
    const int c = lane % cpus;
    const float y0 = origin.y + axis_h + lane * lane_h, y1 = y0 + lane_h - 2;
    char name[16];
    if (s.b)
      std::snprintf(name, sizeof name, "%s CPU %d", in_b ? "B" : "A", c);
    else
      std::snprintf(name, sizeof name, "CPU %d", c);
    const ImU32 name_col = c == s.selected_cpu ? IM_COL32(255, 220, 80, 255)
                           : in_b              ? IM_COL32(255, 180, 115, 255)
                           : s.b               ? IM_COL32(140, 215, 255, 255)
                                               : IM_COL32(200, 200, 200, 255);
    dl->AddText(ImVec2(origin.x, y0 + (lane_h - ImGui::GetFontSize()) / 2), name_col, name);
    if (in_b && c == 0) dl->AddLine(ImVec2(origin.x, y0 - 1), ImVec2(x0 + w, y0 - 1), IM_COL32(255, 255, 255, 90));
    (in_b ? s.b_timeline : s.timeline).bin_lane(c, s.range.c0, cpp, width, in_b ? s.b->here() : now_u, cells);
    int x = 0;
    while (x < width) {
      const Cell& a = cells[static_cast<size_t>(x)];
      int e = x + 1;
      while (e < width && cells[static_cast<size_t>(e)].valid == a.valid && cells[static_cast<size_t>(e)].span == a.span &&
             cells[static_cast<size_t>(e)].strongest == a.strongest && (cells[static_cast<size_t>(e)].spans > 0) == (a.spans > 0))
        ++e;
      if (a.valid) {
        const SpanKind k = a.span;
        const float top = k == SpanKind::running ? y0 + lane_h * 0.35f : y0;
        const float bot = k == SpanKind::running ? y1 - lane_h * 0.35f : y1;
        dl->AddRectFilled(ImVec2(x0 + x, top), ImVec2(x0 + e, bot), span_colour(k));
        // Several spans in these columns: a strip with the furthest-in state.
        if (a.spans > 1) dl->AddRectFilled(ImVec2(x0 + x, y0), ImVec2(x0 + e, y0 + 3), span_colour(a.strongest));
      }
      x = e;
    }
    for (x = 0; x < width; ++x) {
      const Cell& a = cells[static_cast<size_t>(x)];
      if (!a.marks) continue;
      const float len = std::min(lane_h * 0.45f, 3.0f + 2.0f * std::log2(1.0f + static_cast<float>(a.marks)));
      dl->AddLine(ImVec2(x0 + x + 0.5f, y0), ImVec2(x0 + x + 0.5f, y0 + len), mark_colour(a.mark_kind));
    }
  }
  // Grace periods: a band across every lane and a bar under the axis
  // (RCU-sched amber, RCU-tasks blue), open ones up to now.
  std::vector<const Band*> bands;
  s.timeline.bands_in(static_cast<uint64_t>(std::max(0.0, s.range.c0)),
                      static_cast<uint64_t>(std::min(s.range.c1, now)) + 1, bands);
  for (const Band* b : bands) {
    if (static_cast<double>(b->begin) > now) continue;
    const double e = b->end == TimelineIndex::kOpen ? now : std::min(now, static_cast<double>(b->end));
    const float xa = x0 + static_cast<float>(s.range.x_of(static_cast<double>(b->begin), w));
    const float xb = std::max(xa + 1.0f, x0 + static_cast<float>(s.range.x_of(e, w)));
    const ImU32 fill = b->tasks ? IM_COL32(90, 140, 255, 28) : IM_COL32(255, 200, 60, 28);
    const ImU32 bar = b->tasks ? IM_COL32(90, 140, 255, 230) : IM_COL32(255, 200, 60, 230);
    dl->AddRectFilled(ImVec2(xa, origin.y + axis_h), ImVec2(xb, origin.y + axis_h + cpus * lane_h), fill);
    const float yb = origin.y + axis_h - (b->tasks ? 7.0f : 4.0f);
    dl->AddRectFilled(ImVec2(xa, yb), ImVec2(xb, yb + 3), bar);
  }
  // IPIs: arrows between lanes, at most one per 3 pixels.
  std::vector<const Arrow*> arrows;
  // (Only those delivered by now: the log also holds events a search or a
  // comparison found ahead.)
  s.timeline.arrows_in(static_cast<uint64_t>(std::max(0.0, s.range.c0)),
                       static_cast<uint64_t>(std::min(s.range.c1, now)) + 1, static_cast<uint64_t>(cpp * 3), arrows);
  for (const Arrow* a : arrows) {
    if (a->to_cycle == TimelineIndex::kOpen || static_cast<double>(a->to_cycle) > now) continue;
    const ImVec2 p0(x0 + static_cast<float>(s.range.x_of(static_cast<double>(a->from_cycle), w)),
                    origin.y + axis_h + (a->from + 0.5f) * lane_h);
    const ImVec2 p1(x0 + static_cast<float>(s.range.x_of(static_cast<double>(a->to_cycle), w)),
                    origin.y + axis_h + (a->to + 0.5f) * lane_h);
    dl->AddLine(p0, p1, IM_COL32(80, 240, 240, 200), 1.2f);
    const float dir = p1.y > p0.y ? -1.0f : 1.0f;
    dl->AddTriangleFilled(p1, ImVec2(p1.x - 4, p1.y + dir * 7), ImVec2(p1.x + 4, p1.y + dir * 7),
                          IM_COL32(80, 240, 240, 220));
  }
  // The probe script's operations: a diamond on the axis at each, hollow
  // while it is still to come, its line on hover.
  std::string op_hover;
  for (const ScriptOpRow& o : script_ops(d)) {
    const float xo = x0 + static_cast<float>(s.range.x_of(static_cast<double>(o.cycle), w));
    if (xo < x0 - 6 || xo > x0 + w + 6) continue;
    const float r = px(5), yo = origin.y + axis_h - r - 1;
    const ImVec2 pts[4] = {ImVec2(xo, yo - r), ImVec2(xo + r, yo), ImVec2(xo, yo + r), ImVec2(xo - r, yo)};
    const ImU32 col = o.done ? IM_COL32(170, 170, 120, 255) : IM_COL32(255, 255, 140, 255);
    if (o.done)
      dl->AddConvexPolyFilled(pts, 4, col);
    else
      dl->AddPolyline(pts, 4, col, ImDrawFlags_Closed, 1.5f);
    if (hovered && std::fabs(io.MousePos.x - xo) <= r && std::fabs(io.MousePos.y - yo) <= r)
      op_hover = "probe script line " + std::to_string(o.line) + ", @" + std::to_string(o.cycle) + ": " + o.text +
                 (o.done ? " (done)" : " (to come)");
  }
  // --compare: where the two runs' events first part.
  if (s.b && s.diff.found) {
    const float xd = x0 + static_cast<float>(s.range.x_of(static_cast<double>(s.diff.cycle), w));
    dl->AddLine(ImVec2(xd, origin.y + axis_h), ImVec2(xd, origin.y + axis_h + lanes * lane_h), IM_COL32(255, 110, 230, 255),
                2);
    dl->AddText(ImVec2(xd + 3, origin.y + axis_h + cpus * lane_h), IM_COL32(255, 110, 230, 255), "first difference");
  }
  // Now: a line, and a marker on the axis that stays visible when the
  // violation's line covers it.
  const float xn = x0 + static_cast<float>(s.range.x_of(now, w));
  dl->AddLine(ImVec2(xn, origin.y), ImVec2(xn, origin.y + h), IM_COL32(255, 230, 60, 255), 2);
  dl->AddTriangleFilled(ImVec2(xn - 6, origin.y), ImVec2(xn + 6, origin.y), ImVec2(xn, origin.y + 9),
                        IM_COL32(255, 230, 60, 255));
  // A race's violation, over everything else, its CPU's lane marked.
  if (s.race_violated) {
    const float xv = x0 + static_cast<float>(s.range.x_of(static_cast<double>(s.race_cycle), w));
    dl->AddLine(ImVec2(xv, origin.y + 9), ImVec2(xv, origin.y + h), IM_COL32(255, 60, 60, 255), 2);
    if (s.race_cpu >= 0 && s.race_cpu < cpus) {
      const float yc = origin.y + axis_h + (static_cast<float>(s.race_cpu) + 0.5f) * lane_h;
      dl->AddCircleFilled(ImVec2(xv, yc), 5, IM_COL32(255, 60, 60, 255));
    }
    // The label beside the line, on its left when the right edge is near.
    const std::string label = "violation, CPU " + std::to_string(s.race_cpu);
    const float tw = ImGui::CalcTextSize(label.c_str()).x;
    const float xl = xv + 3 + tw > x0 + w ? xv - 3 - tw : xv + 3;
    dl->AddText(ImVec2(xl, origin.y + axis_h), IM_COL32(255, 90, 90, 255), label.c_str());
  }
  dl->PopClipRect();

  if (hovered && !op_hover.empty()) {
    ImGui::SetTooltip("%s", op_hover.c_str());
  } else if (hovered) {
    if (hover_event != EventLog::npos)
      s.timeline_hover = describe_event(d.log(), hover_event, d.world().machine().symbols());
    else
      s.timeline_hover = "cycle " + std::to_string(static_cast<uint64_t>(std::max(0.0, cyc_hover))) +
                         (lane_hover >= 0 && lane_hover < cpus ? ", CPU " + std::to_string(lane_hover) : "");
    ImGui::SetTooltip("%s\nclick: go there", s.timeline_hover.c_str());
  }
  s.end();
}

}  // namespace ksim::ui
