// Boost.Program_options glue shared by the subcommands: parse, turn every
// parser exception into a UsageError, print --help.
#pragma once
#include <boost/program_options.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "apps/ksim/commands.hpp"
#include "sim/machine.hpp"
#include "sim/machine_profiles.hpp"

namespace ksim::cli {

namespace po = boost::program_options;

// A value refused with a hint of what was expected: the hint goes after
// Boost's message, not inside the quoted value it repeats.
struct BadValue : po::invalid_option_value {
  std::string hint;
  BadValue(const std::string& value, std::string expected) : po::invalid_option_value(value), hint(std::move(expected)) {}
};

// An unsigned 64-bit option value. Boost's own unsigned parsing accepts
// "-1" and wraps it to 2^64-1; this one takes decimal digits only.
struct U64 {
  uint64_t v = 0;
};
inline std::ostream& operator<<(std::ostream& o, const U64& u) { return o << u.v; }
inline void validate(boost::any& out, const std::vector<std::string>& values, U64*, int) {
  po::validators::check_first_occurrence(out);
  const std::string& s = po::validators::get_single_string(values);
  uint64_t v = 0;
  bool ok = !s.empty() && s.size() <= 20;
  for (char c : s) {
    if (c < '0' || c > '9') {
      ok = false;
      break;
    }
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) {
      ok = false;
      break;
    }
    v = v * 10 + d;
  }
  if (!ok) throw BadValue(s, "a non-negative integer below 2^64");
  out = boost::any(U64{v});
}

// Returns false when --help was given (help already printed).
// `exact`: option names only as written in full (no unambiguous prefix
// taken for the name, which ksim-ui's --compare, rewriting the command
// line, needs).
inline bool parse_options(const std::vector<std::string>& args, const char* usage_line,
                          po::options_description& opts, po::positional_options_description* pos,
                          po::variables_map& vm, bool exact = false) {
  opts.add_options()("help,h", "show this help");
  try {
    auto parser = po::command_line_parser(args).options(opts);
    if (exact) parser.style(po::command_line_style::default_style & ~po::command_line_style::allow_guessing);
    if (pos) parser.positional(*pos);
    po::store(parser.run(), vm);
    po::notify(vm);
  } catch (const BadValue& e) {
    throw UsageError{std::string(e.what()) + " (expected " + e.hint + ")"};
  } catch (const po::error& e) {
    throw UsageError{e.what()};
  }
  if (vm.count("help")) {
    std::cout << usage_line << "\n\n" << opts << "\n";
    return false;
  }
  return true;
}

// The text of a file a person named (a probe script, a debugger script):
// a missing file, a folder or an unreadable one is an InputError (exit
// status 3) naming `what`, never an empty text.
inline std::string read_text_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) throw InputError(path + ": cannot read the " + what + ": no such file");
  if (!std::filesystem::is_regular_file(st)) throw InputError(path + ": cannot read the " + what + ": not a regular file");
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) throw InputError(path + ": cannot read the " + what);
  return text.str();
}

// --kprobes-locking spinlock is Linux 2.6.9's one kprobe_lock, which came
// before the kprobe-booster (2.6.17) and jump optimization (2.6.34): a
// boosted or optimized hit would never take it, and the run would measure
// nothing of what its flags say. So with spinlock both default to off, and
// asking for either is refused.
inline void spinlock_era(const po::variables_map& vm, const std::string& locking, int& boost, int& optimization) {
  if (locking != "spinlock") return;
  for (const char* o : {"kprobes-boost", "kprobes-optimization"})
    if (vm.count(o) && !vm[o].defaulted() && vm[o].as<int>() != 0)
      throw UsageError{std::string("--") + o + " 1 cannot go with --kprobes-locking spinlock: Linux 2.6.9's "
                       "kprobe_lock predates the booster and jump optimization, whose hits would never take it"};
  boost = 0;
  optimization = 0;
}

// `--timing`, `--machine` and `--memory-model` (ksim run and ksim-ui):
// checks them (UsageError for a bad value or combination) and sets the
// machine's profile and memory model for timing v2 (docs/TIMING.md).
inline void apply_timing_options(const po::variables_map& vm, Isa isa, std::string timing,
                                 const std::string& machine, const std::string& model, MachineConfig& cfg) {
  if (timing != "v1" && timing != "v2") throw UsageError{"--timing must be v1 or v2"};
  if (!machine.empty() && timing == "v1" && !vm["timing"].defaulted())
    throw UsageError{"--machine is timing v2's: it cannot be combined with --timing v1"};
  if (!machine.empty()) timing = "v2";
  if (!model.empty() && model != "sc" && model != "tso" && model != "rvwmo")
    throw UsageError{"--memory-model must be sc, tso or rvwmo"};
  if (model == "rvwmo" && isa == Isa::x86_64)
    throw UsageError{"--memory-model rvwmo is weaker than x86 promises (its code assumes TSO): use tso or sc"};
  if (!model.empty() && model != "sc" && timing == "v1")
    throw UsageError{"--memory-model " + model + " needs --timing v2 (model v1 has no store buffers)"};
  if (timing != "v2") return;
  cfg.profile = load_machine_profile(machine.empty() ? default_machine_name(isa) : machine);
  cfg.memory_model = model.empty()      ? default_memory_model(isa)
                     : model == "tso"   ? MemoryModel::tso
                     : model == "rvwmo" ? MemoryModel::rvwmo
                                        : MemoryModel::sc;
}

}  // namespace ksim::cli
