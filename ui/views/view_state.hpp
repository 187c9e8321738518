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
#include "ui/model/source_view.hpp"
#include "ui/model/debugger.hpp"
#include "ui/model/memory_view.hpp"
#include "ui/model/timeline.hpp"

namespace ksim::ui {

struct WidgetRect {
  ImVec2 min, max;
  int frame = 0;  // the frame it was last drawn in
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
  std::string race_title, race_violation;
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

  // Script support: where each widget was drawn, by "Window/Label".
  std::map<std::string, WidgetRect> widgets;
  std::string window;  // the window being drawn
  void note(const std::string& label) {
    widgets[window + "/" + label] = WidgetRect{ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), frame};
  }
  bool begin(const char* name, ImVec2 pos, ImVec2 size);
  void end();
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

// Widgets that register themselves for scripts.
bool button(ViewState& s, const char* label);
bool input_text(ViewState& s, const char* label, char* buf, size_t size);  // true on Enter
void hex_u64(char* out, size_t n, uint64_t v);

// Colours shared by the windows.
ImU32 span_colour(SpanKind k);
ImVec4 age_colour(uint32_t age, bool code);

}  // namespace ksim::ui
