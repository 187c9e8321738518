// Running the ksim binary from a test: the binary the build made (or
// $KSIM_BIN), with a deadline, and a result that must be a normal exit.
#pragma once
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "support/run_process.hpp"

namespace ksim::test {

inline std::string ksim_bin() {
  const char* env = std::getenv("KSIM_BIN");
  return env != nullptr && *env != '\0' ? env : KSIM_BINARY_DIR "/apps/ksim/ksim";
}

inline ProcessResult run_ksim(std::vector<std::string> args, std::chrono::seconds timeout = std::chrono::seconds(120)) {
  args.insert(args.begin(), ksim_bin());
  REQUIRE(std::filesystem::exists(args[0]));
  ProcessResult r = run_process(args, timeout);
  REQUIRE_FALSE(r.timed_out);
  REQUIRE(r.exited);
  return r;
}

}  // namespace ksim::test
