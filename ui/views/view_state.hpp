// What the ImGui windows share: the debugger, the selection, text fields,
// per-window models that keep state between frames, and the registry of
// widget rectangles the script driver clicks on.
#pragma once
#include <imgui.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ui/model/code_view.hpp"
#include "ui/model/compare.hpp"
#include "ui/model/layout.hpp"
#include "ui/model/source_view.hpp"
#include "ui/model/debugger.hpp"
#include "ui/model/memory_view.hpp"
#include "ui/model/timeline.hpp"

namespace ksim::ui {

struct WidgetRect {
  ImVec2 min, max;
  int frame = 0;  // the frame it was last drawn in
  bool visible = true;  // in sight (not scrolled out of its window)
};

struct ViewState {
  explicit ViewState(Debugger& dbg) : d(dbg) {}
  Debugger& d;
  int frame = 0;
  int selected_cpu = 0;
  bool running = false;
  uint64_t run_chunk = 20'000;  // cycles per frame while running (adapted)
  double mips = 0, fps = 0;
  double build_seconds = 0, timeline_seconds = 0;  // host time spent building frames (the fps script action)

  // `--race`: the violation to show (Control's header, a line on the timeline).
  std::string race_title, race_violation, race_what;
  std::string race_correct, race_broken, race_invariant, race_mark;
  uint64_t race_pc = 0;
  bool race_violated = false;
  uint64_t race_cycle = 0;
  int race_cpu = -1;

  // Control
  int event_filter = 0;  // index into event_filter_names()
  char cycle_text[32] = "0";
  std::string control_message;
  uint64_t landed_seen = ~uint64_t{0};
  uint64_t hash_moves = ~uint64_t{0};
  uint64_t state_hash = 0;

  // Code
  char code_text[96] = "";
  bool code_follow_pc = true;
  uint64_t code_addr = 0;
  std::string code_message;
  std::vector<CodeLine> code_cache;
  uint64_t code_cache_addr = ~uint64_t{0}, code_cache_moves = ~uint64_t{0};
  int code_cache_cpu = -1;
  // Source (a tab of the Code window)
  SourceView source;
  uint64_t source_moves = ~uint64_t{0};
  int source_cpu = -1;
  std::string source_scrolled;  // "file:line" last scrolled to

  // Memory
  char mem_text[96] = "";
  bool mem_follow_sp = true;  // until an address is typed in
  MemoryView memory;
  std::string mem_message;

  // Probes
  char probe_text[256] = "";
  std::string probe_error;
  std::string probe_message;

  // Timeline
  TimelineIndex timeline;
  TimelineRange range;
  bool range_set = false;
  uint64_t range_moves = 0;
  std::string timeline_hover;

  // --compare: run B, kept at A's cycle after every move of A; how the
  // two differ and where their events first part.
  Debugger* b = nullptr;
  std::string compare_a, compare_b, compare_a_note, compare_b_note;
  Difference diff;
  uint64_t b_synced = ~uint64_t{0};
  TimelineIndex b_timeline;

  // Probe state machine: the diagram as last drawn (print fsm).
  float fsm_w = 0, fsm_h = 0;
  bool fsm_clear = true;

  // Console
  int console_cpu = -1;
  bool console_probe_lines = true;
  // An index, not a pointer: the log's texts and probe lines grow (a
  // search ahead adds lines) and move while the cache lives.
  struct ConsoleItem {
    uint64_t cycle;
    int cpu;
    uint32_t ref;  // probe: index into EventLog::lines(); else a text id
    bool probe;
  };
  std::vector<ConsoleItem> console_cache;
  std::string console_key;

  // Layout (--layout, the Control window's choice): which windows are
  // drawn and where; `layout_pending` places them this frame (and zooms
  // the timeline to the lesson's event), otherwise a person's moves and
  // imgui.ini decide.
  const Layout* layout = nullptr;
  bool layout_pending = false;
  // Font scale (--font-scale, Ctrl +/-): the app rebuilds the font when
  // `font_scale_wanted` differs from `font_scale`.
  float font_scale = 1, font_scale_wanted = 1;

  // Script support: where each widget was drawn, by "Window/Label".
  std::map<std::string, WidgetRect> widgets;
  std::string window;  // the window being drawn
  void note(const std::string& label) {
    widgets[window + "/" + label] =
        WidgetRect{ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), frame, ImGui::IsItemVisible()};
    audit(label);
  }
  // Legibility: the last item's text must be in sight, not cut off at its
  // window's edge (nor need a scroll sideways to read). What is cut off
  // this frame is kept by "Window/what" for `print clipped`.
  std::map<std::string, std::string> clipped;
  void audit(const std::string& what);
  // Begins the window where the layout puts it; false (and nothing to end
  // but end()) when it is collapsed or the layout does not show it.
  bool begin(const char* name);
  void end();
  bool began = false;
};

// The windows (one file each in ui/views/).
void draw_control(ViewState& s);
void draw_cpus(ViewState& s);
void draw_code(ViewState& s);
void draw_memory(ViewState& s);
void draw_probes(ViewState& s);
void draw_fsm(ViewState& s);
void draw_timeline(ViewState& s);
void draw_console(ViewState& s);
void draw_race(ViewState& s);
void draw_race_lines(ViewState& s);
void draw_compare(ViewState& s);

// Before the next item: on the line of the item before it when its
// `width` (or a button labelled `label`) still fits there, else on a new line.
void flow(float width);
void flow(const char* label);

// Text wrapped at the window's edge, in `colour`, audited for legibility.
void wrapped(ViewState& s, ImVec4 colour, const std::string& text);

// Widgets that register themselves for scripts.
bool button(ViewState& s, const char* label);
bool input_text(ViewState& s, const char* label, char* buf, size_t size);  // true on Enter
void hex_u64(char* out, size_t n, uint64_t v);

// `v` pixels at the 13 px font, scaled with the font (--font-scale, Ctrl +/-).
inline float px(float v) { return v * ImGui::GetFontSize() / 13.0f; }

// Colours shared by the windows.
ImU32 span_colour(SpanKind k);
ImVec4 age_colour(uint32_t age, bool code);

}  // namespace ksim::ui
