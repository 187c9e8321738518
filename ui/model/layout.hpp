// Window layouts per lesson (`ksim-ui --layout`): which windows a lesson
// needs and where they go, as fractions of the screen, and how far the
// timeline zooms in on the event in question. Data, not code: one table.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ui/model/timeline.hpp"

namespace ksim::ui {

struct WindowPlace {
  const char* window;    // the ImGui window name ("Code", "Probe state machine")
  float x, y, w, h;      // fractions of the display
};

enum class Lesson : uint8_t { overview, hit, race, stop_machine, compare };

struct Layout {
  const char* name;  // as --layout takes it
  Lesson lesson;
  const char* what;  // one line for --help and the Control window
  std::vector<WindowPlace> places;
};

const std::vector<Layout>& layouts();
const Layout* find_layout(const std::string& name);
// "hit, race, stop-machine or overview"
std::string layout_names();
// The place of `window` in `l`, or nullopt when the lesson does not show it.
std::optional<WindowPlace> place_of(const Layout& l, const std::string& window);

// The cycles the timeline shows when a lesson opens at `here` with `cpu`
// selected: the probe hit (its trap to its resume) `cpu` is in or last
// went through; the stop_machine (every CPU's stopper span) around `here`;
// the last few thousand cycles before a race's violation or around two
// runs' first difference; the whole run.
TimelineRange lesson_range(Lesson lesson, const TimelineIndex& t, uint64_t here, int cpu);

}  // namespace ksim::ui
