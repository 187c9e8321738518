// The ksim-ui application: a GLFW window with the eight windows, driven by
// a person or by a script (ui/model/script.hpp).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ui/model/debugger.hpp"
#include "ui/model/script.hpp"

namespace ksim::ui {

struct AppOptions {
  int width = 1280, height = 800;
  std::string ini = "imgui.ini";  // where the layout is kept
  float font_scale = 1;           // 1: ImGui's 13 px font
  std::string layout;             // --layout; "": race with --race, else overview (imgui.ini kept)
  bool scripted = false;
  std::vector<ScriptAction> script;
  std::string script_name;
  double start_seconds = 0;  // host time at startup (the summary's host time line)
  // `--race`: what is open, and the violation the scenario's checker found.
  struct Race {
    std::string title;      // "torn-write, broken, x86, 4 CPUs, seed 1"
    bool violated = false;
    uint64_t cycle = 0;     // of the violation
    int cpu = -1;           // the CPU that broke the invariant (selected when it opens)
    std::string violation;  // the checker's line
    std::string what;       // the scenario's description (ksim race list)
    std::string correct, broken, invariant;  // race::explained()
    uint64_t pc = 0;        // the offending instruction (0: none)
    std::string mark;       // what is wrong with it, a few words
  };
  std::optional<Race> race;
  // `--compare`: how the two runs differ (the windows show A; B follows it).
  struct Compare {
    std::string a, b;  // "--kprobes-locking rcu", "--kprobes-locking spinlock"
    std::string a_note, b_note;  // a race's outcome in each run, "" otherwise
  };
  std::optional<Compare> compare;
  std::optional<uint64_t> at;  // --at: where to open (a comparison otherwise opens at the first difference)
};

// Runs until the window closes or the script quits. Returns the exit
// status: the same as `ksim run` for the summary printed at a script's
// quit (0 when the guest ended with status 0 or the run is paused there),
// 2 for a script error, 3 when no window can be opened.
// With `other` (--compare), a second run B kept at A's cycle.
int run_app(Debugger& d, const AppOptions& o, Debugger* other = nullptr);

// `ksim run`'s summary for where the debugger stands; returns its exit status.
int print_summary(Debugger& d, double host_seconds);

}  // namespace ksim::ui
