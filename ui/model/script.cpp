#include "ui/model/script.hpp"

#include <charconv>
#include <cstdint>
#include <map>
#include <sstream>

namespace ksim::ui {

namespace {

// A decimal that fits in 64 bits.
bool is_number(const std::string& s) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return !s.empty() && ec == std::errc() && end == s.data() + s.size();
}

// verb -> (min args, max args, numeric args from index)
struct Shape {
  size_t min, max;
  int numeric_from;  // -1: none
};
const std::map<std::string, Shape>& shapes() {
  static const std::map<std::string, Shape> s = {
      {"step", {0, 1, 0}},         {"step-cpu", {0, 0, -1}},     {"step-cycle", {0, 0, -1}},
      {"step-back", {0, 1, 0}},    {"run-to-cycle", {1, 1, 0}},  {"run-to-end", {0, 0, -1}},
      {"next-event", {1, 1, -1}},  {"prev-event", {1, 1, -1}},   {"select-cpu", {1, 1, 0}},
      {"click", {1, 1, -1}},       {"type", {2, 2, -1}},         {"drag", {3, 3, -1}},
      {"wheel", {2, 2, -1}},       {"wait", {0, 1, 0}},          {"screenshot", {1, 1, -1}},
      {"print", {1, 1, -1}},       {"fps", {1, 1, 0}},           {"quit", {0, 0, -1}},
      {"key", {1, 1, -1}},         {"layout", {1, 1, -1}},
  };
  return s;
}

bool is_int(const std::string& s) { return is_number(s[0] == '-' && s.size() > 1 ? s.substr(1) : s); }

}  // namespace

std::optional<ScriptKey> key_named(const std::string& name) {
  if (name == "ctrl+=" || name == "ctrl++") return ScriptKey::zoom_in;
  if (name == "ctrl+-") return ScriptKey::zoom_out;
  if (name == "ctrl+0") return ScriptKey::zoom_reset;
  return std::nullopt;
}

uint64_t ScriptAction::number(size_t i, uint64_t dflt) const {
  return i < args.size() ? std::stoull(args[i]) : dflt;
}

const std::vector<std::string>& event_filter_names() {
  static const std::vector<std::string> n = {"hit",  "probe",      "trap",         "interrupt", "ipi",
                                             "ipi-recv", "console", "idle",       "wake",      "arm",
                                             "disarm", "text-write", "stop-machine", "gp-end"};
  return n;
}

bool event_filter_named(const std::string& name, EventFilter& out) {
  out = EventFilter{};
  if (name == "hit") {
    out.kind = EventKind::probe;
    out.texts = {"KPROBE_HIT_ACTIVE", "optimized-hit"};
  } else if (name == "arm" || name == "disarm" || name == "text-write" || name == "gp-end") {
    // Steps of the patching protocols and RCU (kprobes/patching.hpp, rcu.hpp).
    out.kind = EventKind::probe;
    out.texts = {name};
  } else if (name == "stop-machine") {  // a CPU acting on a new multi_cpu_stop state
    out.kind = EventKind::probe;
    out.texts = {"stop_machine"};
  } else if (name == "probe") out.kind = EventKind::probe;
  else if (name == "trap") out.kind = EventKind::trap;
  else if (name == "interrupt") out.kind = EventKind::interrupt;
  else if (name == "ipi") out.kind = EventKind::ipi_send;
  else if (name == "ipi-recv") out.kind = EventKind::ipi_recv;
  else if (name == "console") out.kind = EventKind::console;
  else if (name == "idle") out.kind = EventKind::idle;
  else if (name == "wake") out.kind = EventKind::wake;
  else return false;
  return true;
}

std::vector<ScriptAction> parse_script(const std::string& text, const std::string& name) {
  std::vector<ScriptAction> out;
  std::istringstream in(text);
  std::string raw;
  int line = 0;
  while (std::getline(in, raw)) {
    ++line;
    if (auto h = raw.find_first_not_of(" \t"); h == std::string::npos || raw[h] == '#') continue;
    std::istringstream ls(raw);
    ScriptAction a;
    a.line = line;
    if (!(ls >> a.verb)) continue;
    auto bad = [&](const std::string& why) { return ScriptError(name + ":" + std::to_string(line) + ": " + why); };
    auto it = shapes().find(a.verb);
    if (it == shapes().end()) throw bad("unknown action '" + a.verb + "'");
    if (a.verb == "type") {
      std::string target, rest;
      ls >> target;
      std::getline(ls, rest);
      if (!rest.empty() && rest[0] == ' ') rest.erase(0, 1);
      if (target.empty() || rest.empty()) throw bad("type needs WINDOW/LABEL and the text to type");
      a.args = {target, rest};
    } else {
      for (std::string w; ls >> w;) a.args.push_back(w);
      // Widget labels may hold spaces ("Control/Step CPU 0"): the name is
      // everything but the trailing numbers.
      const size_t numbers = a.verb == "drag" ? 2 : a.verb == "wheel" ? 1 : 0;
      if ((a.verb == "click" || a.verb == "drag" || a.verb == "wheel") && a.args.size() > numbers + 1) {
        std::vector<std::string> joined{a.args[0]};
        for (size_t i = 1; i + numbers < a.args.size(); ++i) joined[0] += " " + a.args[i];
        for (size_t i = a.args.size() - numbers; i < a.args.size(); ++i) joined.push_back(a.args[i]);
        a.args = joined;
      }
    }
    const Shape& s = it->second;
    if (a.args.size() < s.min || a.args.size() > s.max)
      throw bad(a.verb + " takes " + (s.min == s.max ? std::to_string(s.min) : std::to_string(s.min) + " to " +
                                                                                  std::to_string(s.max)) +
                " argument(s)");
    if (s.numeric_from >= 0)
      for (size_t i = static_cast<size_t>(s.numeric_from); i < a.args.size(); ++i)
        if (!is_number(a.args[i])) throw bad("'" + a.args[i] + "' is not an integer from 0 to 18446744073709551615");
    // Counts of frames are drawn one by one, and a CPU is one of at most 64.
    if ((a.verb == "wait" || a.verb == "fps") && !a.args.empty() && a.number(0, 0) > kMaxFrames)
      throw bad(a.verb + " takes at most " + std::to_string(kMaxFrames) + " frames");
    if (a.verb == "select-cpu" && a.number(0, 0) >= 64) throw bad("select-cpu takes a CPU number below 64");
    if ((a.verb == "drag" && (!is_int(a.args[1]) || !is_int(a.args[2]))) || (a.verb == "wheel" && !is_int(a.args[1])))
      throw bad("expected integer pixel/notch amounts");
    if (a.verb == "key" && !key_named(a.args[0])) throw bad("key takes ctrl+= (or ctrl++), ctrl+- or ctrl+0");
    if (a.verb == "layout" && !find_layout(a.args[0])) throw bad("layout takes " + layout_names());
    if ((a.verb == "next-event" || a.verb == "prev-event")) {
      EventFilter f;
      if (!event_filter_named(a.args[0], f)) throw bad("unknown event kind '" + a.args[0] + "'");
    }
    if (a.verb == "print") {
      static const char* whats[] = {"position", "probes", "timeline", "error", "fsm", "cpu", "speed", "memory", "race",
                                    "code",   "source", "clipped", "font", "compare"};
      bool ok = false;
      for (const char* w : whats) ok |= a.args[0] == w;
      if (!ok) throw bad("print takes position, probes, timeline, error, fsm, cpu, speed, memory, race, code, source, clipped, font or compare");
    }
    if ((a.verb == "click" || a.verb == "type" || a.verb == "drag" || a.verb == "wheel") &&
        a.args[0].find('/') == std::string::npos)
      throw bad("widgets are named WINDOW/LABEL");
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace ksim::ui
