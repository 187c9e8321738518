// Boost.Program_options glue shared by the subcommands: parse, turn every
// parser exception into a UsageError, print --help.
#pragma once
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "apps/ksim/commands.hpp"

namespace ksim::cli {

namespace po = boost::program_options;

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
  if (!ok) throw po::invalid_option_value(s + " (expected a non-negative integer)");
  out = boost::any(U64{v});
}

// Returns false when --help was given (help already printed).
inline bool parse_options(const std::vector<std::string>& args, const char* usage_line,
                          po::options_description& opts, po::positional_options_description* pos,
                          po::variables_map& vm) {
  opts.add_options()("help,h", "show this help");
  try {
    auto parser = po::command_line_parser(args).options(opts);
    if (pos) parser.positional(*pos);
    po::store(parser.run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError{e.what()};
  }
  if (vm.count("help")) {
    std::cout << usage_line << "\n\n" << opts << "\n";
    return false;
  }
  return true;
}

}  // namespace ksim::cli
