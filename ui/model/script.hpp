// `ksim-ui --script FILE`: actions that drive the debugger without a
// person, one per line (a line starting with '#' is a comment; widget
// labels may contain spaces and '#'):
//
//   step [N]                 N machine steps (default 1), in schedule order
//   step-cpu                 one step of the selected CPU
//   step-cycle               one cycle
//   step-back [N]            N machine steps back
//   run-to-cycle N           forward or back to cycle N
//   run-to-end               until the run ends
//   next-event KIND          KIND: hit, probe, trap, interrupt, ipi, ipi-recv, console, idle, wake
//   prev-event KIND
//   select-cpu N
//   click WINDOW/LABEL       a synthesised left click on a widget
//   type WINDOW/LABEL TEXT   click into a text field, type TEXT, press Enter
//   drag WINDOW/LABEL DX DY  press on the widget, move by (DX, DY) pixels, release
//   wheel WINDOW/LABEL N     N wheel notches over the widget (positive: away, zooms in)
//   wait [N]                 N frames (default 1, at most kMaxFrames)
//   screenshot FILE          the window as PNG
//   print WHAT               position | probes | timeline | error | fsm | cpu | speed | memory | race | code |
//                            source | clipped (texts cut off at a window's edge) | font (size and scale) |
//                            compare (--compare: the first difference, both runs' cycles and hashes)
//   key KEYS                 ctrl+= (or ctrl++), ctrl+- or ctrl+0: the font larger, smaller, as it started
//   layout NAME              hit | race | stop-machine | overview: as --layout, now
//                            (to stdout, for tests)
// Numbers are decimal and fit in 64 bits; anything else is a ScriptError
// naming the line.
//   fps N                    draw N frames (at most kMaxFrames), print the frame rate
//   quit                     print `ksim run`'s summary and exit
#pragma once
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ui/model/debugger.hpp"
#include "ui/model/layout.hpp"

namespace ksim::ui {

// The most frames a `wait` or `fps` draws (ten minutes at 60 frames/s).
inline constexpr uint64_t kMaxFrames = 36'000;

struct ScriptAction {
  std::string verb;
  std::vector<std::string> args;  // `type`: args[1] is the rest of the line
  int line = 0;
  uint64_t number(size_t i, uint64_t dflt) const;
};

class ScriptError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The key chords a script can press (the font's size).
enum class ScriptKey { zoom_in, zoom_out, zoom_reset };
std::optional<ScriptKey> key_named(const std::string& name);

// Parses a whole script; a bad line is a ScriptError naming it.
std::vector<ScriptAction> parse_script(const std::string& text, const std::string& name);

// The event filter a script (or the Control window) names: "hit" is a
// probe event KPROBE_HIT_ACTIVE (a breakpoint hit) or optimized-hit (a
// jump-optimized one); false for an unknown name.
bool event_filter_named(const std::string& name, EventFilter& out);
// The names, in the order the Control window lists them.
const std::vector<std::string>& event_filter_names();

}  // namespace ksim::ui
