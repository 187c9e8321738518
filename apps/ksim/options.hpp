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
