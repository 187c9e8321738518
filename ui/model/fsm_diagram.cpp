#include "ui/model/fsm_diagram.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

namespace ksim::ui {

namespace {

// Padding inside a box around its name, and the clearance kept between a
// label and anything else: in units of the text height, so they scale
// with the font.
constexpr float kPadX = 0.45f, kPadY = 0.35f, kGap = 0.2f;

Box grow(const Box& b, float d) { return Box{b.x0 - d, b.y0 - d, b.x1 + d, b.y1 + d}; }

// Whether the segment (x0,y0)-(x1,y1) passes through box b (Liang-Barsky
// clipping of the segment against the box).
bool crosses(float x0, float y0, float x1, float y1, const Box& b) {
  float t0 = 0, t1 = 1;
  const float dx = x1 - x0, dy = y1 - y0;
  const float p[4] = {-dx, dx, -dy, dy}, q[4] = {x0 - b.x0, b.x1 - x0, y0 - b.y0, b.y1 - y0};
  for (int i = 0; i < 4; ++i) {
    if (p[i] == 0) {
      if (q[i] < 0) return false;  // parallel and outside
      continue;
    }
    const float r = q[i] / p[i];
    if (p[i] < 0) t0 = std::max(t0, r);
    else t1 = std::min(t1, r);
    if (t0 > t1) return false;
  }
  return true;
}

}  // namespace

namespace {

FsmDiagram arrange(const FsmArrangement& arr, float w, float h, const MeasureText& measure) {
  FsmDiagram d;
  d.short_names = arr.short_names;
  d.canvas = Box{0, 0, w, h};
  const float line = measure("Ag").h;
  const float gap = kGap * line;

  // Boxes: at their unit-square places, kept inside the canvas.
  float cx[kFsmNodes], cy[kFsmNodes];
  for (const FsmNodeLayout& l : arr.places) {
    const int n = static_cast<int>(l.node);
    const TextSize ts = measure(d.name(l.node));
    const float hx = ts.w / 2 + kPadX * line, hy = ts.h / 2 + kPadY * line;
    cx[n] = std::clamp(l.x * w, hx + 2, std::max(hx + 2, w - hx - 2));
    cy[n] = std::clamp(l.y * h, hy + 2, std::max(hy + 2, h - hy - 2));
    d.node[n] = Box{cx[n] - hx, cy[n] - hy, cx[n] + hx, cy[n] + hy};
  }
  // Boxes of one row pushed apart where their places make them touch:
  // rightwards from the left, then leftwards from the right edge.
  std::vector<int> order;
  for (const FsmNodeLayout& l : arr.places) order.push_back(static_cast<int>(l.node));
  std::sort(order.begin(), order.end(), [&](int a, int b) { return cy[a] != cy[b] ? cy[a] < cy[b] : cx[a] < cx[b]; });
  auto shift = [&](int n, float dx) {
    cx[n] += dx;
    d.node[n].x0 += dx;
    d.node[n].x1 += dx;
  };
  for (size_t i = 1; i < order.size(); ++i) {
    const int a = order[i - 1], b = order[i];
    if (cy[a] == cy[b] && d.node[b].x0 < d.node[a].x1 + 2 * gap) shift(b, d.node[a].x1 + 2 * gap - d.node[b].x0);
  }
  for (size_t i = order.size(); i-- > 0;) {
    const int b = order[i];
    float limit = w - 2;
    if (i + 1 < order.size() && cy[order[i + 1]] == cy[b]) limit = d.node[order[i + 1]].x0 - 2 * gap;
    if (d.node[b].x1 > limit) shift(b, limit - d.node[b].x1);
  }
  // Boxes that touch each other or stick out: this arrangement does not fit.
  for (int i = 0; i < kFsmNodes; ++i) {
    if (!d.node[i].inside(d.canvas)) d.clear = false;
    for (int j = i + 1; j < kFsmNodes; ++j)
      if (grow(d.node[i], gap).intersects(d.node[j])) d.clear = false;
  }

  // Arrows: between the box edges along the line joining the centres; the
  // two arrows of a pair of boxes go side by side, apart along the normal.
  std::vector<Box> taken(std::begin(d.node), std::end(d.node));
  for (Box& b : taken) b = grow(b, gap);
  for (const FsmEdge& e : fsm_edges()) {
    const int f = static_cast<int>(e.from), t = static_cast<int>(e.to);
    const float dx = cx[t] - cx[f], dy = cy[t] - cy[f], len = std::max(1.0f, std::hypot(dx, dy));
    const float ux = dx / len, uy = dy / len, nx = -uy, ny = ux;
    bool paired = false;
    for (const FsmEdge& o : fsm_edges()) paired |= o.from == e.to && o.to == e.from;
    const float off = paired ? 0.3f * line : 0;
    auto leave = [&](const Box& b) {  // distance from the centre to b's edge along u
      const float hx = (b.x1 - b.x0) / 2, hy = (b.y1 - b.y0) / 2;
      const float tx = std::fabs(ux) > 1e-4f ? hx / std::fabs(ux) : 1e9f;
      const float ty = std::fabs(uy) > 1e-4f ? hy / std::fabs(uy) : 1e9f;
      return std::min(tx, ty) + 3;
    };
    FsmArrow a;
    a.edge = e;
    const float ta = leave(d.node[f]), tb = leave(d.node[t]);
    a.x0 = cx[f] + ux * ta + nx * off;
    a.y0 = cy[f] + uy * ta + ny * off;
    a.x1 = cx[t] - ux * tb + nx * off;
    a.y1 = cy[t] - uy * tb + ny * off;
    d.arrows.push_back(a);
  }

  // Labels: the first place along the arrow, its own side before the
  // other (a pair's labels then fall on opposite sides), clear of every
  // box, every label placed before it, every other arrow and the canvas
  // edge.
  static const float kAlong[] = {0.5f, 0.4f, 0.6f, 0.3f, 0.7f, 0.2f, 0.8f, 0.1f, 0.9f};
  for (FsmArrow& a : d.arrows) {
    const TextSize ts = measure(a.edge.label);
    const float dx = a.x1 - a.x0, dy = a.y1 - a.y0, len = std::max(1.0f, std::hypot(dx, dy));
    const float nx = -dy / len, ny = dx / len;
    // How far the label's centre must be from the line for its box to
    // clear it, whatever the line's direction.
    const float clear_d = std::fabs(nx) * ts.w / 2 + std::fabs(ny) * ts.h / 2 + gap;
    bool placed = false;
    for (int pass = 0; pass < 12 && !placed; ++pass) {
      const float side = pass < 6 ? 1.0f : -1.0f;
      const int far = pass % 6;
      for (float t : kAlong) {
        const float mx = a.x0 + dx * t + nx * side * (clear_d + far * line);
        const float my = a.y0 + dy * t + ny * side * (clear_d + far * line);
        const Box b{mx - ts.w / 2, my - ts.h / 2, mx + ts.w / 2, my + ts.h / 2};
        if (!b.inside(d.canvas)) continue;
        bool free = true;
        for (const Box& o : taken) free = free && !b.intersects(o);
        const Box clear_of = grow(b, gap);
        for (const FsmArrow& other : d.arrows)
          free = free && (&other == &a || !crosses(other.x0, other.y0, other.x1, other.y1, clear_of));
        if (!free) continue;
        a.label = b;
        taken.push_back(grow(b, gap));
        placed = true;
        break;
      }
    }
    if (!placed) {
      d.clear = false;
      const float mx = a.x0 + dx / 2, my = a.y0 + dy / 2;
      a.label = Box{mx - ts.w / 2, my - ts.h / 2, mx + ts.w / 2, my + ts.h / 2};
    }
  }
  return d;
}

}  // namespace

FsmDiagram fsm_diagram(float w, float h, const MeasureText& measure) {
  std::optional<FsmDiagram> first;
  for (const FsmArrangement& a : fsm_arrangements()) {
    FsmDiagram d = arrange(a, w, h, measure);
    if (d.clear) return d;
    if (!first) first = d;
  }
  return *first;  // nothing fits: the widest, labels at their arrows' middles
}

}  // namespace ksim::ui
