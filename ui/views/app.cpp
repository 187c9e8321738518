#include "ui/views/app.hpp"

#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>

#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <vector>

#include "ui/model/code_view.hpp"
#include "ui/model/cpu_view.hpp"
#include "ui/model/explain.hpp"
#include "ui/model/fsm_view.hpp"
#include "ui/model/probes_view.hpp"
#include "ui/model/source_view.hpp"
#include "ui/views/view_state.hpp"

namespace ksim::ui {

namespace {

using Clock = std::chrono::steady_clock;

bool save_png(const std::string& path, int w, int h) {
  std::vector<unsigned char> px(static_cast<size_t>(w) * h * 4), flipped(px.size());
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, px.data());
  for (int y = 0; y < h; ++y)
    std::memcpy(&flipped[static_cast<size_t>(y) * w * 4], &px[static_cast<size_t>(h - 1 - y) * w * 4],
                static_cast<size_t>(w) * 4);
  return stbi_write_png(path.c_str(), w, h, 4, flipped.data(), w * 4) != 0;
}

// Synthesised input for scripts: one action at a time, some over several
// frames (a click is move, press, release).
class ScriptDriver {
 public:
  ScriptDriver(const AppOptions& o, ViewState& s) : o_(o), s_(s) {}
  bool done() const { return quit_ || failed_ || i_ >= o_.script.size(); }
  bool failed() const { return failed_; }
  bool quit() const { return quit_; }
  std::string screenshot;  // set for this frame

  // Before ImGui::NewFrame (after the backend's NewFrame): input and model actions.
  void before_frame(ImGuiIO& io) {
    io.MousePos = mouse_;
    io.MouseDown[0] = down_;
    io.KeysDown[GLFW_KEY_ENTER] = false;
    if (done()) return;
    const ScriptAction& a = o_.script[i_];
    const std::string& v = a.verb;
    Debugger& d = s_.d;
    auto next = [&] {
      ++i_;
      k_ = 0;
    };
    auto widget = [&](ImVec2& centre) {
      auto it = s_.widgets.find(a.args[0]);
      if (it == s_.widgets.end() || it->second.frame < s_.frame - 1) {
        // Give the windows a few frames to appear (the first frames of a run).
        if (++missing_ > 5) fail(a, "no widget '" + a.args[0] + "' on screen");
        return false;
      }
      missing_ = 0;
      // A person cannot click what is scrolled out of sight either.
      if (!it->second.visible) {
        fail(a, "widget '" + a.args[0] + "' is scrolled out of sight");
        return false;
      }
      centre = ImVec2((it->second.min.x + it->second.max.x) / 2, (it->second.min.y + it->second.max.y) / 2);
      return true;
    };
    if (v == "step") d.step(a.number(0, 1)), next();
    else if (v == "step-cpu") d.step_cpu(s_.selected_cpu), next();
    else if (v == "step-cycle") d.step_cycle(), next();
    else if (v == "step-back") d.step_back(a.number(0, 1)), next();
    else if (v == "run-to-cycle") d.go_to_cycle(a.number(0, 0)), next();
    else if (v == "run-to-end") d.run_to_end(), next();
    else if (v == "next-event" || v == "prev-event") {
      EventFilter f;
      event_filter_named(a.args[0], f);
      const bool ok = v == "next-event" ? d.next_event(f) : d.prev_event(f);
      if (!ok) std::printf("script: no %s %s event\n", v == "next-event" ? "next" : "previous", a.args[0].c_str());
      if (ok && d.landed_event() != EventLog::npos && d.log()[d.landed_event()].cpu >= 0)
        s_.selected_cpu = d.log()[d.landed_event()].cpu;
      next();
    } else if (v == "select-cpu") {
      const uint64_t c = a.number(0, 0);
      if (c >= static_cast<uint64_t>(d.world().machine().cpu_count())) return fail(a, "no CPU " + a.args[0]);
      s_.selected_cpu = static_cast<int>(c);
      next();
    } else if (v == "click" || v == "type") {
      ImVec2 c;
      if (k_ == 0 && !widget(c)) return;
      if (k_ == 0) mouse_ = c;
      if (k_ == 1) down_ = true;
      if (k_ == 2) down_ = false;
      if (k_ == 3) io.AddInputCharactersUTF8(a.args[1].c_str());
      if (k_ == 4) io.KeysDown[GLFW_KEY_ENTER] = true;
      io.MousePos = mouse_;
      io.MouseDown[0] = down_;
      if (++k_ == (v == "click" ? 3 : 6)) next();
    } else if (v == "drag") {
      ImVec2 c;
      if (k_ == 0 && !widget(c)) return;
      const float dx = std::stof(a.args[1]), dy = std::stof(a.args[2]);
      if (k_ == 0) mouse_ = c;
      if (k_ == 1) down_ = true;
      if (k_ >= 2 && k_ <= 5) mouse_ = ImVec2(mouse_.x + dx / 4, mouse_.y + dy / 4);
      if (k_ == 6) down_ = false;
      io.MousePos = mouse_;
      io.MouseDown[0] = down_;
      if (++k_ == 7) next();
    } else if (v == "wheel") {
      ImVec2 c;
      if (k_ == 0 && !widget(c)) return;
      if (k_ == 0) mouse_ = c;
      io.MousePos = mouse_;
      if (k_ == 1) io.MouseWheel += std::stof(a.args[1]);
      if (++k_ == 2) next();
    } else if (v == "wait") {
      if (++k_ >= static_cast<int>(a.number(0, 1))) next();
    } else if (v == "screenshot") {
      screenshot = a.args[0];
      next();
    } else if (v == "print") {
      print(a.args[0]);
      next();
    } else if (v == "fps") {
      const int n = static_cast<int>(a.number(0, 0));
      if (k_ == 0) {
        t0_ = Clock::now();
        s_.build_seconds = s_.timeline_seconds = 0;
      }
      if (++k_ > n) {
        const double secs = std::chrono::duration<double>(Clock::now() - t0_).count();
        std::printf("fps: %d frames in %.3f s: %.1f frames/s with %zu events in the log; building the frames "
                    "(all windows, timeline binning included) took %.2f ms per frame, the timeline %.2f ms\n",
                    n, secs, secs > 0 ? n / secs : 0.0, d.log().size(), s_.build_seconds * 1000 / n,
                    s_.timeline_seconds * 1000 / n);
        next();
      }
    } else if (v == "key") {  // Ctrl held with the key for one frame, then released
      static const int glfw_key[] = {GLFW_KEY_EQUAL, GLFW_KEY_MINUS, GLFW_KEY_0};
      const int key = glfw_key[static_cast<int>(*key_named(a.args[0]))];
      io.KeyCtrl = k_ == 0;
      io.KeysDown[key] = k_ == 0;
      if (++k_ == 2) next();
    } else if (v == "layout") {
      s_.layout = find_layout(a.args[0]);
      s_.layout_pending = true;
      next();
    } else if (v == "quit") {
      quit_ = true;
    }
  }

 private:
  void fail(const ScriptAction& a, const std::string& why) {
    std::fprintf(stderr, "ksim-ui: %s:%d: %s\n", o_.script_name.c_str(), a.line, why.c_str());
    failed_ = true;
  }
  void print(const std::string& what) {
    Debugger& d = s_.d;
    if (what == "position") {
      std::printf("position: cycle %" PRIu64 " steps %" PRIu64 " low %" PRIu64 " high %" PRIu64
                  " ended %d state-hash %016" PRIx64 " trace-hash %s\n",
                  d.here(), d.position().steps, d.position().low, d.position().high, d.position().ended ? 1 : 0,
                  d.state_hash(), d.world().hasher().hex().c_str());
    } else if (what == "probes") {
      for (const ProbeRow& r : probe_rows(d))
        std::printf("probe: %s %c %s hits %" PRIu64 " nmissed %" PRIu64 "%s%s\n", r.event.c_str(), r.type,
                    r.where.c_str(), r.hits, r.nmissed, r.disabled ? " disabled" : "", r.removed ? " removed" : "");
      std::printf("probes: %zu, enabled %d\n", probe_rows(d).size(), kprobes_enabled(d) ? 1 : 0);
      for (const ScriptOpRow& o : script_ops(d))
        std::printf("script: @%" PRIu64 " %s (line %d) %s\n", o.cycle, o.text.c_str(), o.line,
                    o.done ? "done" : "upcoming");
    } else if (what == "timeline") {
      std::printf("timeline: %.0f %.0f\n", s_.range.c0, s_.range.c1);
    } else if (what == "error") {
      std::printf("error: %s\n", s_.probe_error.empty() ? "(none)" : s_.probe_error.c_str());
    } else if (what == "fsm") {
      const FsmView f = fsm_view(d, s_.selected_cpu);
      std::printf("fsm: cpu %d %s current %s\n", s_.selected_cpu, fsm_node_name(f.current),
                  f.current_kprobe.empty() ? "NULL" : f.current_kprobe.c_str());
      std::printf("fsm-diagram: %.0fx%.0f clear %d\n", s_.fsm_w, s_.fsm_h, s_.fsm_clear ? 1 : 0);
      for (int n = 0; n < kFsmNodes; ++n)
        std::printf("explain %s: %s\n", fsm_node_name(static_cast<FsmNode>(n)),
                    fsm_state_line(d, s_.selected_cpu, static_cast<FsmNode>(n)).c_str());
      // Newest first, numbered as the window's rows ("transition N").
      for (size_t i = f.recent.size(); i-- > 0;)
        std::printf("transition %zu: cycle %" PRIu64 " %s -> %s\n", f.recent.size() - 1 - i, f.recent[i].cycle,
                    fsm_node_name(f.recent[i].from), fsm_node_name(f.recent[i].to));
    } else if (what == "code") {  // the Code window's lines, as shown
      for (const CodeLine& l : code_lines(d, s_.code_addr, 10, 30, s_.selected_cpu)) {
        for (const CodeLine::SourceRow& r : l.source)
          std::printf("code: source %s:%u %s\n", l.source_file.c_str(), r.line, r.text.c_str());
        std::printf("code: %" PRIx64 " %s%s%s%s%s\n", l.addr, l.text.c_str(), l.over.empty() ? "" : " under ",
                    l.over.c_str(), l.slot_of.empty() ? "" : " ; ", l.slot_of.c_str());
        if (s_.race_violated && s_.race_pc == l.addr && !s_.race_mark.empty())
          std::printf("code: %" PRIx64 " violation: %s\n", l.addr, s_.race_mark.c_str());
      }
    } else if (what == "source") {  // the Source tab: the viewed line and every CPU's
      const SourceView v = source_view(d, s_.selected_cpu);
      std::printf("source: cpu %d at %s\n", s_.selected_cpu, v.where.c_str());
      if (!v.missing.empty()) std::printf("source: %s\n", v.missing.c_str());
      for (const SourceViewLine& l : v.lines) {
        if (l.line != v.current && l.cpus.empty()) continue;
        std::string cpus;
        for (int c : l.cpus) cpus += (cpus.empty() ? "" : ",") + std::to_string(c);
        std::printf("source: %s%s:%u [%s] %s\n", l.line == v.current ? "> " : "", v.file.c_str(), l.line,
                    cpus.c_str(), l.text.c_str());
      }
    } else if (what == "memory") {
      std::printf("memory: %zu events, %.1f MiB of event history\n", d.log().size(),
                  static_cast<double>(d.log().memory_bytes()) / (1 << 20));
    } else if (what == "speed") {
      std::printf("speed: %.1f MIPS while running (%s)\n", s_.mips, s_.running ? "running" : "paused");
    } else if (what == "race") {
      if (s_.race_title.empty())
        std::printf("race: none\n");
      else
        std::printf("race: %s; %s\n", s_.race_title.c_str(),
                    s_.race_violated ? ("violation at cycle " + std::to_string(s_.race_cycle) + " by cpu " +
                                        std::to_string(s_.race_cpu))
                                           .c_str()
                                     : "no violation");
      if (!s_.race_correct.empty())
        std::printf("race-correct: %s\nrace-broken: %s\nrace-checked: %s\n", s_.race_correct.c_str(),
                    s_.race_broken.c_str(), s_.race_invariant.c_str());
      if (s_.race_violated && s_.race_pc)
        std::printf("race-offending: %" PRIx64 " %s\n", s_.race_pc, s_.race_mark.c_str());
    } else if (what == "compare") {
      if (!s_.b) {
        std::printf("compare: none\n");
      } else {
        std::printf("compare: A %s; B %s\n", s_.compare_a.c_str(), s_.compare_b.c_str());
        if (!s_.compare_a_note.empty()) std::printf("compare-a-run: %s\n", s_.compare_a_note.c_str());
        if (!s_.compare_b_note.empty()) std::printf("compare-b-run: %s\n", s_.compare_b_note.c_str());
        if (s_.diff.found)
          std::printf("compare: first difference at event %zu, cycle %" PRIu64 "\ncompare-a: %s\ncompare-b: %s\n",
                      s_.diff.index, s_.diff.cycle, s_.diff.a.c_str(), s_.diff.b.c_str());
        else
          std::printf("compare: no difference\n");
        std::printf("compare: A at cycle %" PRIu64 " state-hash %016" PRIx64 ", B at cycle %" PRIu64
                    " state-hash %016" PRIx64 "\n",
                    d.here(), d.state_hash(), s_.b->here(), s_.b->state_hash());
      }
    } else if (what == "clipped") {  // the last frame's texts cut off at a window's edge
      if (s_.clipped.empty()) std::printf("clipped: none\n");
      for (const auto& [where, text] : s_.clipped) std::printf("clipped: %s\n", where.c_str());
    } else if (what == "font") {
      std::printf("font: %.1f px, scale %.2f, layout %s\n", ImGui::GetFontSize(), s_.font_scale,
                  s_.layout ? s_.layout->name : "none");
    } else if (what == "cpu") {
      const CpuRow r = cpu_row(d, s_.selected_cpu);
      std::printf("cpu: %d pc %s%s%s%s steps %" PRIu64 " instret %" PRIu64 " %s\n", r.id, r.pc_sym.c_str(),
                  r.pc_line.empty() ? "" : " (", r.pc_line.c_str(), r.pc_line.empty() ? "" : ")", r.steps, r.instret,
                  r.doing.c_str());
      if (const std::string why = stop_machine_line(d); !why.empty()) std::printf("stop-machine: %s\n", why.c_str());
      if (!r.caches.empty()) std::printf("caches: %s\n", r.caches.c_str());  // timing v2
      if (const std::string h = line_holders(d, s_.memory.addr()); !h.empty()) std::printf("holders: %s\n", h.c_str());
    }
    std::fflush(stdout);
  }

  const AppOptions& o_;
  ViewState& s_;
  size_t i_ = 0;
  int k_ = 0;
  ImVec2 mouse_{-1, -1};
  bool down_ = false, quit_ = false, failed_ = false;
  int missing_ = 0;
  Clock::time_point t0_;
};

// Ctrl + / Ctrl - / Ctrl 0: the font larger, smaller, as it started.
void font_keys(ViewState& s, float initial) {
  const ImGuiIO& io = ImGui::GetIO();
  if (!io.KeyCtrl) return;
  if (ImGui::IsKeyPressed(GLFW_KEY_EQUAL) || ImGui::IsKeyPressed(GLFW_KEY_KP_ADD))
    s.font_scale_wanted = std::min(4.0f, s.font_scale * 1.25f);
  if (ImGui::IsKeyPressed(GLFW_KEY_MINUS) || ImGui::IsKeyPressed(GLFW_KEY_KP_SUBTRACT))
    s.font_scale_wanted = std::max(0.5f, s.font_scale / 1.25f);
  if (ImGui::IsKeyPressed(GLFW_KEY_0) || ImGui::IsKeyPressed(GLFW_KEY_KP_0)) s.font_scale_wanted = initial;
}

// The font at `scale`: ImGui's own (ProggyClean, drawn for 13 px) at 1;
// larger or smaller, DejaVu Sans Mono (Debian's fonts-dejavu-core), whose
// outlines stay sharp at any size, or ProggyClean scaled when it is
// missing. Sizes in the style (padding, spacing, scrollbars) scale too.
// Called between frames, with the window's GL context current.
void apply_font(float scale, const ImGuiStyle& base, bool remake_texture) {
  static const char* kDejaVu = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf";
  ImGuiIO& io = ImGui::GetIO();
  io.Fonts->Clear();
  ImFontConfig cfg;
  cfg.SizePixels = std::round(13.0f * scale);
  if (scale != 1.0f && access(kDejaVu, R_OK) == 0)
    io.Fonts->AddFontFromFileTTF(kDejaVu, cfg.SizePixels, &cfg);
  else
    io.Fonts->AddFontDefault(&cfg);
  ImGui::GetStyle() = base;
  ImGui::GetStyle().ScaleAllSizes(scale);
  // The 1.86 backend's first NewFrame makes the texture with its other
  // device objects; after that, a new font needs a new texture made here.
  if (remake_texture) {
    ImGui_ImplOpenGL3_DestroyFontsTexture();
    ImGui_ImplOpenGL3_CreateFontsTexture();
  }
}

void draw_all(ViewState& s) {
  s.clipped.clear();
  // --compare: B follows every move of A, to A's cycle.
  if (s.b && s.b_synced != s.d.moves()) {
    s.b->go_to_cycle(s.d.here());
    s.b_synced = s.d.moves();
  }
  draw_control(s);
  draw_cpus(s);
  draw_code(s);
  draw_memory(s);
  draw_probes(s);
  draw_fsm(s);
  const auto t0 = Clock::now();
  draw_timeline(s);
  s.timeline_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
  draw_console(s);
  draw_race(s);
  draw_compare(s);
  s.layout_pending = false;
}

}  // namespace

int print_summary(Debugger& d, double secs) {
  World& w = d.world();
  Machine& m = w.machine();
  const RunResult& r = w.result();
  uint64_t instret = 0, cycles = 0;
  for (int c = 0; c < m.cpu_count(); ++c) {
    instret += m.cpu(c).instret();
    cycles = std::max(cycles, m.cpu(c).cycle());
  }
  int status = 0;
  std::printf("--- ksim summary ---\n");
  if (!w.ended()) {
    std::printf("exit: paused at cycle %" PRIu64 " (ksim-ui)\n", d.here());
  } else {
    switch (r.end) {
      case RunResult::End::poweroff:
        std::printf("exit: guest powered off with status %d\n", r.status);
        status = r.status == 0 ? 0 : 1;
        break;
      case RunResult::End::cycle_limit:
        std::printf("exit: cycle limit (%" PRIu64 ") reached\n", m.config().max_cycles);
        status = 5;
        break;
      case RunResult::End::crash:
        std::printf("exit: guest crash: %s\n", r.reason.c_str());
        status = 4;
        break;
      case RunResult::End::hook_stop:
      case RunResult::End::paused:
        std::printf("exit: stopped by the probe engine: %s\n", r.reason.c_str());
        status = 6;
        break;
    }
    cycles = r.cycles;
  }
  std::printf("isa: %s, cpus: %d, seed: %" PRIu64 ", quantum: %" PRIu64 "%s\n",
              m.config().isa == Isa::x86_64 ? "x86" : "rv64", m.cpu_count(), m.config().seed, m.config().quantum,
              m.config().reference_schedule ? " (reference schedule)" : "");
  std::printf("instructions: %" PRIu64 "\n", instret);
  std::printf("host time: %.3f s (%.1f MIPS)\n", secs, secs > 0 ? instret / secs / 1e6 : 0.0);
  if (w.session()) {
    std::printf("probes: %" PRIu64 " hits, %" PRIu64 " missed, %" PRIu64 " stray traps\n", w.session()->total_hits(),
                w.session()->total_missed(), w.engine()->stats().strays);
    std::fputs(w.session()->summary().c_str(), stdout);
    std::fputs(w.session()->how_summary().c_str(), stdout);
  }
  std::printf("cycles: %" PRIu64 "\n", cycles);
  std::printf("trace-hash: %s\n", w.hasher().hex().c_str());
  std::fflush(stdout);
  return status;
}

int run_app(Debugger& d, const AppOptions& o, Debugger* other) {
  const auto t_start = Clock::now();
  if (!glfwInit()) {
    std::fprintf(stderr, "ksim-ui: cannot open a window (no display? try xvfb-run -a)\n");
    return 3;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 0);
  if (o.scripted) glfwWindowHint(GLFW_RESIZABLE, GLFW_FALSE);
  GLFWwindow* win = glfwCreateWindow(o.width, o.height, "ksim-ui", nullptr, nullptr);
  if (!win) {
    std::fprintf(stderr, "ksim-ui: cannot create a %dx%d OpenGL 3.0 window\n", o.width, o.height);
    glfwTerminate();
    return 3;
  }
  glfwMakeContextCurrent(win);
  glfwSwapInterval(o.scripted ? 0 : 1);
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = o.ini.empty() ? nullptr : o.ini.c_str();
  ImGui::StyleColorsDark();
  ImGui::GetStyle().WindowRounding = 3;
  const ImGuiStyle base_style = ImGui::GetStyle();
  ImGui_ImplGlfw_InitForOpenGL(win, true);
  ImGui_ImplOpenGL3_Init("#version 130");

  ViewState s(d);
  s.font_scale = 0;  // none yet: built before the first frame
  s.font_scale_wanted = o.font_scale;
  // An explicit layout places its windows over what imgui.ini remembers;
  // a race and a comparison open in their lessons' layouts.
  s.layout = find_layout(!o.layout.empty() ? o.layout : other ? "compare" : o.race ? "race" : "overview");
  s.layout_pending = !o.layout.empty() || o.race.has_value() || other;
  if (other) {  // both runs at their first difference
    s.b = other;
    s.compare_a = o.compare ? o.compare->a : "A";
    s.compare_b = o.compare ? o.compare->b : "B";
    if (o.compare) {
      s.compare_a_note = o.compare->a_note;
      s.compare_b_note = o.compare->b_note;
    }
    s.diff = first_difference(d, *other);
    d.go_to_cycle(o.at ? *o.at : s.diff.found ? s.diff.cycle : 0);
    other->go_to_cycle(d.here());  // B at A's cycle before the first frame
    s.b_synced = d.moves();
    if (s.diff.found && s.diff.cpu >= 0 && s.diff.cpu < d.world().machine().cpu_count()) s.selected_cpu = s.diff.cpu;
  }
  if (o.race) {
    s.race_title = o.race->title;
    s.race_violated = o.race->violated;
    s.race_cycle = o.race->cycle;
    s.race_cpu = o.race->cpu;
    s.race_violation = o.race->violation;
    s.race_what = o.race->what;
    s.race_correct = o.race->correct;
    s.race_broken = o.race->broken;
    s.race_invariant = o.race->invariant;
    s.race_pc = o.race->pc;
    s.race_mark = o.race->mark;
    if (s.race_violated && s.race_cpu >= 0) s.selected_cpu = s.race_cpu;  // the CPU that broke it
  }
  ScriptDriver script(o, s);
  int status = 0;
  auto last = Clock::now();
  double fps_acc = 0;
  int fps_frames = 0;
  while (!glfwWindowShouldClose(win)) {
    glfwPollEvents();
    if (s.font_scale_wanted != s.font_scale) {
      apply_font(s.font_scale_wanted, base_style, s.font_scale != 0);
      s.font_scale = s.font_scale_wanted;
    }
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    if (o.scripted) {
      script.before_frame(io);
      if (script.failed()) {
        status = 2;
        break;
      }
      if (script.quit()) {
        status = print_summary(d, std::chrono::duration<double>(Clock::now() - t_start).count());
        break;
      }
      if (script.done()) {  // a script without quit ends the same way
        status = print_summary(d, std::chrono::duration<double>(Clock::now() - t_start).count());
        break;
      }
    }
    // Running: as many cycles per frame as fit in about 12 ms.
    if (s.running) {
      Machine& m = d.world().machine();
      uint64_t before = 0;
      for (int c = 0; c < m.cpu_count(); ++c) before += m.cpu(c).instret();
      const auto t0 = Clock::now();
      d.run_for(s.run_chunk);
      const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
      uint64_t after = 0;
      for (int c = 0; c < m.cpu_count(); ++c) after += m.cpu(c).instret();
      if (after >= before && secs > 0) s.mips = static_cast<double>(after - before) / secs / 1e6;
      if (secs < 0.008) s.run_chunk = s.run_chunk * 3 / 2 + 1;
      else if (secs > 0.016 && s.run_chunk > 1000) s.run_chunk = s.run_chunk * 2 / 3;
      if (d.position().ended) s.running = false;
    }
    const auto b0 = Clock::now();
    ImGui::NewFrame();
    font_keys(s, o.font_scale);
    draw_all(s);
    ImGui::Render();
    s.build_seconds += std::chrono::duration<double>(Clock::now() - b0).count();
    int fw = 0, fh = 0;
    glfwGetFramebufferSize(win, &fw, &fh);
    glViewport(0, 0, fw, fh);
    glClearColor(0.08f, 0.08f, 0.1f, 1);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    if (!script.screenshot.empty()) {
      if (!save_png(script.screenshot, fw, fh)) {
        std::fprintf(stderr, "ksim-ui: cannot write %s\n", script.screenshot.c_str());
        status = 2;
        break;
      }
      std::printf("screenshot: %s %dx%d\n", script.screenshot.c_str(), fw, fh);
      std::fflush(stdout);
      script.screenshot.clear();
    }
    glfwSwapBuffers(win);
    ++s.frame;
    const auto now = Clock::now();
    fps_acc += std::chrono::duration<double>(now - last).count();
    last = now;
    if (++fps_frames == 20) {
      s.fps = fps_acc > 0 ? fps_frames / fps_acc : 0;
      fps_acc = 0;
      fps_frames = 0;
    }
  }
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(win);
  glfwTerminate();
  return status;
}

}  // namespace ksim::ui
