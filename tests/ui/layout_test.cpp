// Legibility in the view-model: the probe state machine's labels never
// lie on each other or hide behind a box, at the canvas sizes and fonts a
// classroom uses; every lesson's windows tile the screen; a lesson's
// timeline opens on its event.
#include <catch2/catch.hpp>

#include <cstring>

#include "ui/model/fsm_diagram.hpp"
#include "ui/model/layout.hpp"
#include "ui_support.hpp"

using namespace ksim;
using namespace ksim::ui;
using ksim::test::ui_add;
using ksim::test::ui_kernel;

namespace {

// A monospace font model: `px` high, each character 0.61 em wide (DejaVu
// Sans Mono is 0.60 em, ProggyClean 7 px at 13, 0.54 em): wider than both.
MeasureText mono(float px) {
  return [px](const char* t) { return TextSize{0.61f * px * static_cast<float>(std::strlen(t)), px}; };
}

void check_diagram(const FsmDiagram& d) {
  for (int i = 0; i < kFsmNodes; ++i) {
    CHECK(d.node[i].inside(d.canvas));
    for (int j = i + 1; j < kFsmNodes; ++j) CHECK_FALSE(d.node[i].intersects(d.node[j]));
  }
  for (size_t i = 0; i < d.arrows.size(); ++i) {
    const Box& a = d.arrows[i].label;
    INFO("label " << d.arrows[i].edge.label);
    CHECK(a.inside(d.canvas));
    for (int n = 0; n < kFsmNodes; ++n) CHECK_FALSE(a.intersects(d.node[n]));
    // No other arrow's line strikes through the label (sampled along it).
    for (size_t j = 0; j < d.arrows.size(); ++j) {
      if (j == i) continue;
      const FsmArrow& o = d.arrows[j];
      bool through = false;
      for (int k = 0; k <= 200; ++k) {
        const float x = o.x0 + (o.x1 - o.x0) * static_cast<float>(k) / 200;
        const float y = o.y0 + (o.y1 - o.y0) * static_cast<float>(k) / 200;
        through |= x > a.x0 && x < a.x1 && y > a.y0 && y < a.y1;
      }
      INFO("crossed by " << o.edge.label);
      CHECK_FALSE(through);
    }
    for (size_t j = i + 1; j < d.arrows.size(); ++j) {
      INFO("and " << d.arrows[j].edge.label);
      CHECK_FALSE(a.intersects(d.arrows[j].label));
    }
  }
}

}  // namespace

TEST_CASE("State machine diagram: no label on another, behind a box or under an arrow, at every classroom size",
          "[ui][layout]") {
  // Fonts 13 px (scale 1) to 19.5 px (1.5); canvases from the narrowest a
  // layout gives the window (36 characters: a 1280x800 screen at scale
  // 1.25) to a wide one. From 46 characters (every layout at 1280x800 with
  // scale 1 and at 1920x1080 with 1.5) twelve lines of height are enough;
  // narrower, the window grows the canvas (fsm_window.cpp) up to 24 lines.
  for (float font : {13.0f, 16.25f, 19.5f}) {
    for (float w : {36.0f, 40.0f, 46.0f, 52.0f, 70.0f}) {
      DYNAMIC_SECTION(font << " px, " << w << " characters") {
        float clear_at = 0;
        for (float h = 12; h <= 24 && !clear_at; h += 2) {
          const FsmDiagram d = fsm_diagram(w * 0.61f * font, h * font, mono(font));
          if (!d.clear) continue;
          check_diagram(d);
          clear_at = h;
        }
        INFO("clear from " << clear_at << " lines");
        CHECK(clear_at > 0);
        if (w >= 46) CHECK(clear_at == 12);
        // Taller canvases stay clear.
        for (float h : {20.0f, 28.0f}) {
          const FsmDiagram d = fsm_diagram(w * 0.61f * font, h * font, mono(font));
          CHECK(d.clear);
          check_diagram(d);
        }
      }
    }
  }
}

TEST_CASE("State machine diagram: the label test fails for a layout that overlaps", "[ui][layout]") {
  // The checker itself: a canvas too small for the boxes is not clear,
  // and its boxes do intersect.
  const FsmDiagram d = fsm_diagram(200, 60, mono(13));
  CHECK_FALSE(d.clear);
  bool overlap = false;
  for (int i = 0; i < kFsmNodes; ++i)
    for (int j = i + 1; j < kFsmNodes; ++j) overlap |= d.node[i].intersects(d.node[j]);
  for (size_t i = 0; i < d.arrows.size(); ++i)
    for (size_t j = i + 1; j < d.arrows.size(); ++j) overlap |= d.arrows[i].label.intersects(d.arrows[j].label);
  CHECK(overlap);
}

TEST_CASE("Layouts: each lesson's windows lie on the screen without covering each other", "[ui][layout]") {
  REQUIRE(find_layout("hit"));
  REQUIRE(find_layout("race"));
  REQUIRE(find_layout("stop-machine"));
  REQUIRE(find_layout("overview"));
  REQUIRE(find_layout("compare"));
  CHECK(layout_names() == "hit, race, stop-machine, compare or overview");
  for (const Layout& l : layouts()) {
    INFO(l.name);
    CHECK(place_of(l, "Control"));  // every lesson can step and travel
    CHECK(place_of(l, "Code"));
    CHECK(place_of(l, "Timeline"));
    const float eps = 1e-4f;
    for (size_t i = 0; i < l.places.size(); ++i) {
      const WindowPlace& a = l.places[i];
      CHECK(a.x >= 0);
      CHECK(a.y >= 0);
      CHECK(a.x + a.w <= 1 + eps);
      CHECK(a.y + a.h <= 1 + eps);
      for (size_t j = i + 1; j < l.places.size(); ++j) {
        const WindowPlace& b = l.places[j];
        INFO(a.window << " and " << b.window);
        const bool apart = a.x + a.w <= b.x + eps || b.x + b.w <= a.x + eps || a.y + a.h <= b.y + eps ||
                           b.y + b.h <= a.y + eps;
        CHECK(apart);
      }
    }
  }
  // Code is wider in the lessons about code than in the overview.
  const float overview = place_of(*find_layout("overview"), "Code")->w;
  CHECK(place_of(*find_layout("hit"), "Code")->w > overview);
  CHECK(place_of(*find_layout("race"), "Code")->w > overview);
  CHECK(place_of(*find_layout("race"), "Race"));
  CHECK_FALSE(place_of(*find_layout("race"), "Memory"));
}

TEST_CASE("Layouts: the hit lesson's timeline opens on the whole hit, from its trap to its resume", "[ui][layout]") {
  Debugger d(ui_kernel(2), {ui_add("p do_fork")});
  EventFilter hit;
  hit.kind = EventKind::probe;
  hit.texts = {"KPROBE_HIT_ACTIVE"};
  REQUIRE(d.next_event(hit));
  const int cpu = d.log()[d.landed_event()].cpu;
  const size_t landed = d.landed_event();
  REQUIRE(d.step_cpu(cpu));  // into the hit
  TimelineIndex t;
  t.sync(d.log(), 2);
  const TimelineRange r = lesson_range(Lesson::hit, t, d.here(), cpu);
  // From before the hit's first event (its KPROBE_HIT_ACTIVE, where the
  // search landed) to where the CPU stands in it now.
  const uint64_t hit_cycle = d.log()[landed].cycle;
  CHECK(r.c0 <= static_cast<double>(hit_cycle));
  CHECK(r.c1 >= static_cast<double>(d.here()));
  CHECK(r.c1 - r.c0 < 20'000);  // zoomed: a hit is hundreds of cycles
  // The overview shows everything so far.
  const TimelineRange all = lesson_range(Lesson::overview, t, d.here(), cpu);
  CHECK(all.c0 == 0);
  CHECK(all.c1 >= static_cast<double>(t.last_cycle()));
}
