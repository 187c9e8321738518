// ksim: command-line entry point. `ksim <command> [options]`.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "apps/ksim/commands.hpp"

namespace {

const char* kUsageText =
    "usage: ksim <command> [options]\n"
    "\n"
    "commands:\n"
    "  run      run a guest (default: the built-in guest) and print a summary\n"
    "  disasm   disassemble a guest image, whole or by symbol\n"
    "  race     run a race scenario by seed, correct or broken (`ksim race list`)\n"
    "  fig4     the 2006 paper's Figure 4: cycles with no probe, a spinlock and RCU\n"
    "\n"
    "`ksim <command> --help` describes a command's options.\n"
    "exit status: 0 guest passed, 1 guest failed, 2 usage error, 3 bad input file,\n"
    "             4 guest crash, 5 cycle limit reached, 6 stopped by the probe engine\n"
    "             (ksim race run: 6 the race's invariant was violated)\n";

}  // namespace

int main(int argc, char** argv) {
  using namespace ksim::cli;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs(kUsageText, stderr);
    return Exit::kUsage;
  }
  std::string cmd = args.front();
  args.erase(args.begin());
  try {
    if (cmd == "--help" || cmd == "-h" || cmd == "help") {
      std::fputs(kUsageText, stdout);
      return kOk;
    }
    if (cmd == "run") return cmd_run(args);
    if (cmd == "disasm") return cmd_disasm(args);
    if (cmd == "race") return cmd_race(args);
    if (cmd == "fig4") return cmd_fig4(args);
    std::fprintf(stderr, "ksim: unknown command '%s'\n\n%s", cmd.c_str(), kUsageText);
    return Exit::kUsage;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "ksim %s: %s\n(see `ksim %s --help`)\n", cmd.c_str(), e.message.c_str(), cmd.c_str());
    return Exit::kUsage;
  } catch (const ksim::InputError& e) {
    std::fprintf(stderr, "ksim: %s\n", e.what());
    return Exit::kBadInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ksim: internal error: %s\n", e.what());
    return Exit::kGuestCrash;
  }
}
