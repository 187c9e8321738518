// Where the Probe state machine window draws its boxes, arrows and arrow
// labels, computed from the sizes of the texts as the font measures them,
// so that no label hides behind a box or lies on another label, at any
// canvas size and font scale a classroom screen uses (ImGui-free: the view
// passes ImGui::CalcTextSize, the tests a font model).
#pragma once
#include <functional>
#include <vector>

#include "ui/model/fsm_view.hpp"

namespace ksim::ui {

struct Box {
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  bool intersects(const Box& o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
  bool inside(const Box& o) const { return x0 >= o.x0 && y0 >= o.y0 && x1 <= o.x1 && y1 <= o.y1; }
};

struct TextSize {
  float w = 0, h = 0;
};
using MeasureText = std::function<TextSize(const char*)>;

struct FsmArrow {
  FsmEdge edge;
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;  // from the edge of one box to the edge of the other
  Box label;                              // where its label's text goes
};

struct FsmDiagram {
  Box canvas;
  Box node[kFsmNodes];  // indexed by FsmNode
  std::vector<FsmArrow> arrows;
  // False when some label found no place clear of boxes and other labels
  // (the canvas is too small for the font): it is then drawn at the
  // arrow's middle regardless.
  bool clear = true;
  bool short_names = false;  // the boxes hold fsm_node_short_name()
  const char* name(FsmNode n) const { return short_names ? fsm_node_short_name(n) : fsm_node_name(n); }
};

// The diagram in the canvas [0, w) x [0, h).
FsmDiagram fsm_diagram(float w, float h, const MeasureText& measure);

}  // namespace ksim::ui
