// ksim-ui: the debugger (docs/DEBUGGER.md). Takes `ksim run`'s options for the
// machine and the probes, opens paused at cycle 0 (or --at CYCLE), and
// runs with a window, or without a person under --script FILE.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>
#include <sstream>

#include "apps/ksim/options.hpp"
#include "kprobes/races/race.hpp"
#include "sim/machine_profiles.hpp"
#include "ui/model/race_world.hpp"
#include "ui/views/app.hpp"

using namespace ksim;
using namespace ksim::cli;

namespace {

// `--race NAME --variant V --seed S`: the scenario is run once as `ksim
// race run` runs it, to find its violation; the debugger then builds the
// same run (the scenario's Setup) and opens at the violation's cycle.
// A run opened from the command line, not yet shown.
struct Opened {
  std::unique_ptr<ui::Debugger> d;
  ui::AppOptions app;
};

void open_race(const po::variables_map& vm, const std::string& name, const std::string& variant,
               const std::string& isa_text, int cpus, uint64_t seed, Opened& out) {
  ui::AppOptions& app = out.app;
  const race::Scenario* sc = race::find(name);
  if (!sc) throw UsageError{"no race scenario '" + name + "' (ksim race list)"};
  if (variant != "correct" && variant != "broken") throw UsageError{"--race needs --variant correct or broken"};
  for (const char* o : {"elf", "probe", "probe-script", "probe-action", "kprobes-mode", "kprobes-locking",
                        "kprobes-patching", "kprobes-boost", "kprobes-optimization", "kprobes-rethook",
                        "reference-schedule", "quantum", "code-model", "timing", "machine", "memory-model"})
    if (vm.count(o) && !vm[o].defaulted()) throw UsageError{std::string("--") + o + " does not go with --race"};
  race::Options o;
  o.isa = vm["isa"].defaulted() ? (sc->x86 ? Isa::x86_64 : Isa::rv64) : parse_isa(isa_text);
  if ((o.isa == Isa::x86_64 && !sc->x86) || (o.isa == Isa::rv64 && !sc->rv64))
    throw UsageError{name + " has no " + isa_name(o.isa) + " version"};
  o.cpus = vm["cpus"].defaulted() ? 4 : cpus;
  if (o.cpus < 2) throw UsageError{"--cpus must be at least 2 for a race"};
  o.seed = seed;
  o.broken = variant == "broken";
  auto kernel = std::make_shared<const ElfImage>(load_image("", sc->image, o.isa));
  const race::Outcome outcome = race::run(*sc, *kernel, o);

  ui::RaceWorld w = ui::race_world(*sc, o, kernel);
  auto d = std::make_unique<ui::Debugger>(w.spec, w.initial);
  ui::AppOptions::Race r;
  r.title = name + ", " + variant + ", " + isa_name(o.isa) + ", " + std::to_string(o.cpus) + " CPUs, seed " +
            std::to_string(o.seed);
  r.violated = outcome.violated;
  r.cycle = outcome.cycle;
  r.cpu = outcome.cpu;
  r.violation = outcome.violated ? outcome.violation : outcome.notes;
  r.what = sc->what;
  const race::Explained& ex = race::explained(*sc);
  r.correct = ex.correct;
  r.broken = ex.broken;
  r.invariant = ex.invariant;
  r.pc = outcome.violated ? outcome.pc : 0;
  r.mark = outcome.mark;
  app.race = r;
  if (vm.count("at")) {
    d->go_to_cycle(vm["at"].as<U64>().v);
    app.at = vm["at"].as<U64>().v;
  } else if (outcome.violated)
    d->go_to_cycle(outcome.cycle);
  out.d = std::move(d);
}

// Parses the options and builds the run they describe, without showing it;
// false when --help was printed.
bool open(const std::vector<std::string>& args, Opened& opened) {
  po::options_description opts("ksim-ui options");
  std::string isa_name = "rv64", elf, image, script, ini = "imgui.ini";
  U64 max_cycles_opt, quantum_opt, seed_opt, at_opt;
  int cpus = 1, width = 1280, height = 800;
  float font_scale = 1;
  std::string layout_name;
  std::vector<std::string> probe_specs, probe_actions;
  std::string kprobes_mode = "modern", code_model = "relaxed", kprobes_locking = "rcu", patching_name, probe_script;
  int probe_cpu = 0;
  int kprobes_boost = 1, kprobes_optimization = 1, kprobes_rethook = 1;
  std::string race_name, race_variant, timing = "v2", machine_name, memory_model;
  opts.add_options()
      ("isa", po::value(&isa_name)->default_value("rv64"), "instruction set: rv64 or x86")
      ("elf", po::value(&elf), "guest ELF64 executable (default: a built-in image, see --image)")
      ("image", po::value(&image)->default_value(kDefaultImage), "built-in image when no --elf: preempt, nopreempt, fig4, hello")
      ("cpus", po::value(&cpus)->default_value(1), "number of CPUs (1-64)")
      ("seed", po::value(&seed_opt)->default_value(U64{0}), "latency perturbation seed (0: none)")
      ("quantum", po::value(&quantum_opt)->default_value(U64{1}), "scheduling quantum: 1 is exact")
      ("reference-schedule", "the per-instruction reference schedule (slow)")
      ("code-model", po::value(&code_model)->default_value("relaxed"), kCodeModelHelp)
      ("timing", po::value(&timing)->default_value("v2"),
       "timing model: v1 (a constant per instruction class, perfect memory) or v2 (a named machine's caches, "
       "coherence and store buffers; the CPUs window shows their counters, the Memory window who holds a line)")
      ("machine", po::value(&machine_name), "timing v2's machine: sifive-u54, xeon-e5410 or a profile file")
      ("memory-model", po::value(&memory_model), "timing v2's memory model: sc, tso or rvwmo (default the ISA's own)")
      ("max-cycles", po::value(&max_cycles_opt)->default_value(U64{10'000'000'000ull}), "the run's cycle limit")
      ("probe", po::value(&probe_specs)->composing(), "a probe in the kprobe_events syntax, registered at cycle 0 (repeatable)")
      ("probe-action", po::value(&probe_actions)->composing(), "EVENT=ACTION for a --probe (repeatable)")
      ("kprobes-mode", po::value(&kprobes_mode)->default_value("modern"), "x86 stepping: modern or classic")
      ("kprobes-locking", po::value(&kprobes_locking)->default_value("rcu"), "how hits synchronise: rcu or spinlock (Linux 2.6.9: no booster, no jump optimization)")
      ("kprobes-boost", po::value(&kprobes_boost)->default_value(1), "the x86 kprobe-booster: 1 (default) or 0")
      ("kprobes-optimization", po::value(&kprobes_optimization)->default_value(1),
       "jump optimization: 1 (default, as Linux; a detour buffer annotated in Code, the optimizer's steps on the "
       "timeline) or 0")
      ("kprobes-rethook", po::value(&kprobes_rethook)->default_value(1),
       "kretprobe return: 1 (default) the trap-free rethook_trampoline, 0 the breakpoint trampoline")
      ("kprobes-patching", po::value(&patching_name),
       "text patching: text_poke, text_poke_smp (x86), patch_text (RV64) or instant (default: the ISA's Linux protocol)")
      ("probe-script", po::value(&probe_script), "probe operations at given cycles, one per line (as ksim run)")
      ("probe-cpu", po::value(&probe_cpu)->default_value(0), "the CPU that performs the script's operations")
      ("race", po::value(&race_name), "open a race scenario (ksim race list) at its violation, with --variant and --seed")
      ("variant", po::value(&race_variant), "with --race: correct or broken")
      ("at", po::value(&at_opt), "open at this cycle instead of 0 (with --race: instead of the violation)")
      ("script", po::value(&script), "run this script of actions instead of waiting for a person (docs/DEBUGGER.md)")
      ("width", po::value(&width)->default_value(1280), "window width")
      ("height", po::value(&height)->default_value(800), "window height")
      ("compare", po::value<std::string>(),
       "OPTION=VALUE: a second run, the same but for that option (variant with --race, kprobes-locking, "
       "kprobes-optimization, kprobes-boost, kprobes-mode, kprobes-patching, kprobes-rethook, code-model, seed, "
       "quantum, timing, memory-model), on one cycle axis from their first difference; stepping moves both")
      ("ini", po::value(&ini)->default_value("imgui.ini"), "where the window layout is kept ('' : nowhere)")
      ("font-scale", po::value(&font_scale)->default_value(1.0f, "1"),
       "text size for a projector: 1 is 13 px, 1.5 for 1920x1080 at the back of a room (Ctrl +/- while it runs)")
      ("layout", po::value(&layout_name), ("the windows one lesson needs, placed and zoomed: " + ui::layout_names() +
                                            " (default: race with --race, else overview)").c_str());
  po::variables_map vm;
  if (!parse_options(args, "usage: ksim-ui [options]", opts, nullptr, vm, /*exact=*/true)) return false;
  const bool reference = vm.count("reference-schedule") > 0;
  const Isa isa = parse_isa(isa_name);
  if (cpus < 1 || cpus > 64) throw UsageError{"--cpus must be between 1 and 64"};
  if (max_cycles_opt.v == 0) throw UsageError{"--max-cycles must be positive"};
  if (quantum_opt.v == 0 || quantum_opt.v > kMaxQuantum)
    throw UsageError{"--quantum must be between 1 and " + std::to_string(kMaxQuantum)};
  if (reference && quantum_opt.v != 1) throw UsageError{"--reference-schedule is exact: it needs --quantum 1"};
  if (kprobes_mode != "modern" && kprobes_mode != "classic") throw UsageError{"--kprobes-mode must be modern or classic"};
  if (kprobes_mode == "classic" && isa != Isa::x86_64) throw UsageError{"--kprobes-mode classic is x86 only"};
  if (probe_specs.empty() && probe_script.empty() && !probe_actions.empty())
    throw UsageError{"--probe-action needs a --probe or a --probe-script"};
  if (kprobes_locking != "rcu" && kprobes_locking != "spinlock") throw UsageError{"--kprobes-locking must be rcu or spinlock"};
  for (int k : {kprobes_boost, kprobes_optimization, kprobes_rethook})
    if (k != 0 && k != 1) throw UsageError{"--kprobes-boost, --kprobes-optimization and --kprobes-rethook take 0 or 1"};
  spinlock_era(vm, kprobes_locking, kprobes_boost, kprobes_optimization);
  if (probe_script.empty() && !vm["probe-cpu"].defaulted()) throw UsageError{"--probe-cpu needs --probe-script"};
  if (probe_cpu < 0 || probe_cpu >= cpus)
    throw UsageError{"--probe-cpu must name one of the CPUs (0-" + std::to_string(cpus - 1) + ")"};
  std::optional<kprobes::Patching> patching;
  if (vm.count("kprobes-patching")) {
    kprobes::Patching p;
    if (!kprobes::parse_patching(patching_name, p) || !kprobes::patching_valid(p, isa))
      throw UsageError{"--kprobes-patching " + patching_name + " is not a protocol of " + isa_name};
    patching = p;
  }
  if (width < 320 || height < 240 || width > 8192 || height > 8192)
    throw UsageError{"--width and --height must be between 320x240 and 8192x8192"};
  if (!elf.empty() && !vm["image"].defaulted()) throw UsageError{"--elf and --image exclude each other"};

  if (!(font_scale >= 0.5f && font_scale <= 4))
    throw UsageError{"--font-scale must be between 0.5 and 4"};
  if (!layout_name.empty() && !ui::find_layout(layout_name))
    throw UsageError{"--layout must be " + ui::layout_names()};
  ui::AppOptions app;
  app.font_scale = font_scale;
  app.layout = layout_name;
  app.width = width;
  app.height = height;
  app.ini = ini;
  if (!ini.empty()) {
    // ImGui writes the layout there at exit and says nothing when it cannot.
    const std::filesystem::path dir = std::filesystem::absolute(ini).parent_path();
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec) || access(dir.c_str(), W_OK) != 0 ||
        (std::filesystem::exists(ini, ec) && (!std::filesystem::is_regular_file(ini, ec) || access(ini.c_str(), W_OK) != 0)))
      throw InputError(ini + ": cannot write the window layout there (--ini FILE, or --ini '' for nowhere)");
  }
  if (!script.empty()) {
    const std::string text = read_text_file(script, "script");
    try {
      app.script = ui::parse_script(text, script);
    } catch (const ui::ScriptError& e) {
      throw UsageError{e.what()};
    }
    app.scripted = true;
    app.script_name = script;
  }

  if (!race_name.empty()) {
    opened.app = app;
    open_race(vm, race_name, race_variant, isa_name, cpus, seed_opt.v, opened);
    return true;
  }
  if (!race_variant.empty()) throw UsageError{"--variant goes with --race"};

  ui::WorldSpec spec;
  spec.config.isa = isa;
  spec.config.cpus = cpus;
  spec.config.seed = seed_opt.v;
  spec.config.quantum = quantum_opt.v;
  spec.config.max_cycles = max_cycles_opt.v;
  spec.config.reference_schedule = reference;
  spec.config.code_model = parse_code_model_option(code_model);
  apply_timing_options(vm, isa, timing, machine_name, memory_model, spec.config);
  spec.image = std::make_shared<const ElfImage>(load_image(elf, image, isa));
  spec.mode = kprobes_mode == "classic" ? kprobes::StepMode::classic : kprobes::StepMode::modern;
  spec.locking = kprobes_locking == "spinlock" ? kprobes::Locking::spinlock : kprobes::Locking::rcu;
  spec.patching = patching;
  spec.boost = kprobes_boost == 1;
  spec.optimize = kprobes_optimization == 1;
  spec.rethook = kprobes_rethook == 1;
  if (!probe_script.empty()) {
    spec.script = read_text_file(probe_script, "probe script");
    spec.script_file = probe_script;
    spec.script_cpu = probe_cpu;
  }
  std::vector<ui::ProbeOp> ops;
  for (const std::string& p : probe_specs) ops.push_back({ui::ProbeOp::Kind::add, p, 0});
  // An action names a --probe event, or one the script defines later.
  for (const std::string& a : probe_actions) {
    const std::string event = a.substr(0, a.find('='));
    const bool on_probe = std::any_of(probe_specs.begin(), probe_specs.end(), [&](const std::string& p) {
      const size_t colon = p.find(':'), space = p.find(' ');
      return colon != std::string::npos && colon < space && p.substr(colon + 1, space - colon - 1) == event;
    });
    if (on_probe || probe_script.empty())
      ops.push_back({ui::ProbeOp::Kind::action, a, 0});
    else
      spec.script_actions.push_back(a);
  }
  std::unique_ptr<ui::Debugger> d;
  try {
    d = std::make_unique<ui::Debugger>(spec, ops);
  } catch (const std::runtime_error& e) {  // a refused --probe, --probe-action or --probe-script
    throw UsageError{e.what()};
  }
  if (vm.count("at")) {
    d->go_to_cycle(at_opt.v);
    app.at = at_opt.v;
  }
  opened.d = std::move(d);
  opened.app = app;
  return true;
}

// `--compare OPTION=VALUE`: what the second run may change.
const char* const kComparable[] = {"variant",         "kprobes-locking", "kprobes-optimization", "kprobes-boost",
                                   "kprobes-mode",    "kprobes-patching", "kprobes-rethook",     "code-model",
                                   "seed",            "quantum",          "timing",              "memory-model"};

// Each comparable option's default, for the first run's label when the
// command line does not give it (the defaults of the options above).
std::string default_of(const std::string& name) {
  if (name == "kprobes-locking") return "rcu";
  if (name == "kprobes-optimization" || name == "kprobes-boost" || name == "kprobes-rethook") return "1";
  if (name == "kprobes-mode") return "modern";
  if (name == "kprobes-patching") return "(the ISA's protocol)";
  if (name == "code-model") return "relaxed";
  if (name == "seed") return "0";
  if (name == "quantum") return "1";
  if (name == "timing") return "v2";
  if (name == "memory-model") return "(the ISA's own)";
  return "(none)";
}

// The command line without option `name` (as `--name V` or `--name=V`).
std::vector<std::string> without(const std::vector<std::string>& args, const std::string& name) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--" + name) {
      ++i;  // and its value
      continue;
    }
    if (args[i].rfind("--" + name + "=", 0) == 0) continue;
    out.push_back(args[i]);
  }
  return out;
}

// The value option `name` has on the command line, or "".
std::string value_of(const std::vector<std::string>& args, const std::string& name) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--" + name && i + 1 < args.size()) return args[i + 1];
    if (args[i].rfind("--" + name + "=", 0) == 0) return args[i].substr(name.size() + 3);
  }
  return "";
}

int ui_main(const std::vector<std::string>& args) {
  const std::string compare = value_of(args, "compare");
  Opened a;
  if (!open(without(args, "compare"), a)) return kOk;
  if (compare.empty()) return ui::run_app(*a.d, a.app);
  // The second run: the same command line with that one option changed.
  const size_t eq = compare.find('=');
  const std::string name = compare.substr(0, eq), value = eq == std::string::npos ? "" : compare.substr(eq + 1);
  std::string names;
  for (const char* n : kComparable) names += (names.empty() ? "" : ", ") + std::string(n);
  if (eq == std::string::npos || value.empty() ||
      std::none_of(std::begin(kComparable), std::end(kComparable), [&](const char* n) { return name == n; }))
    throw UsageError{"--compare takes OPTION=VALUE, OPTION one of " + names};
  const bool race = !value_of(args, "race").empty();
  if (name == "variant" && !race) throw UsageError{"--compare variant=... needs --race"};
  // A race's run is its scenario's: only its variant and seed can differ.
  if (race && name != "variant" && name != "seed")
    throw UsageError{"--compare " + name + "=...: with --race only variant or seed can differ"};
  const std::string before = value_of(args, name);
  if (before == value || (before.empty() && default_of(name) == value))
    throw UsageError{"--compare " + compare + ": the first run has that already"};
  std::vector<std::string> bargs = without(without(args, "compare"), name);
  bargs.insert(bargs.end(), {"--" + name, value});
  Opened b;
  open(bargs, b);
  a.app.compare = ui::AppOptions::Compare{"--" + name + " " + (before.empty() ? default_of(name) : before),
                                          "--" + name + " " + value, "", ""};
  auto note = [](const Opened& o) {
    if (!o.app.race) return std::string();
    const auto& r = *o.app.race;
    return r.violated ? "violation at cycle " + std::to_string(r.cycle) + " by CPU " + std::to_string(r.cpu) + ": " +
                            r.violation
                      : std::string("the invariant held");
  };
  a.app.compare->a_note = note(a);
  a.app.compare->b_note = note(b);
  return ui::run_app(*a.d, a.app, b.d.get());
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    return ui_main(args);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "ksim-ui: %s\n(see `ksim-ui --help`)\n", e.message.c_str());
    return kUsage;
  } catch (const InputError& e) {
    std::fprintf(stderr, "ksim-ui: %s\n", e.what());
    return kBadInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ksim-ui: internal error: %s\n", e.what());
    return kGuestCrash;
  }
}
