// The ksim subcommands. Each returns the process exit status.
#pragma once
#include <string>
#include <vector>

#include "cpu/code_model.hpp"
#include "cpu/isa.hpp"
#include "sim/elf/elf_image.hpp"

namespace ksim::cli {

// Exit statuses shared by every command (README, "Exit status").
enum Exit : int {
  kOk = 0,           // guest ended with status 0 / command succeeded
  kGuestFailed = 1,  // guest ended with a non-zero status
  kUsage = 2,        // bad command line
  kBadInput = 3,     // unreadable or malformed input file
  kGuestCrash = 4,   // unhandled trap loop, panic, deadlock
  kCycleLimit = 5,   // --max-cycles reached
  kEngineStop = 6,   // the probe engine stopped the run (a kretprobe BUG, a looping pre_handler, ...)
  kRaceViolated = 6, // `ksim race run`: the scenario's invariant was violated
};

// Thrown for command-line mistakes; main() prints it with a usage hint.
struct UsageError {
  std::string message;
};

int cmd_run(const std::vector<std::string>& args);
int cmd_disasm(const std::vector<std::string>& args);
int cmd_race(const std::vector<std::string>& args);
int cmd_fig4(const std::vector<std::string>& args);

Isa parse_isa(const std::string& s);
// --code-model relaxed|strict (docs/CODE_MODEL.md), for ksim run and ksim-ui.
CodeModel parse_code_model_option(const std::string& s);
inline constexpr const char* kCodeModelHelp =
    "when a CPU sees a store into code: relaxed (x86 at its next serialisation, RV64 after its fence.i, "
    "or once the stale view expires; the architectures' rules) or strict (every CPU at its very next "
    "fetch) (docs/CODE_MODEL.md)";
// The image named by --elf, or else the built-in image named by `image`
// (the guest kernel with or without preemption, or the hello guest).
ElfImage load_image(const std::string& elf_path, const std::string& image, Isa isa);
inline constexpr const char* kDefaultImage = "preempt";

}  // namespace ksim::cli
