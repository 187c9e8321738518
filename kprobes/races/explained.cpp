// What each race scenario teaches, for the debugger's Race window: what
// the correct variant does, what the broken one leaves out, and the
// invariant its checker holds (the one-line summaries of docs/RACES.md).
#include <cstring>
#include <stdexcept>

#include "kprobes/races/race.hpp"

namespace ksim::race {

namespace {

struct Entry {
  const char* name;
  Explained e;
};

const Entry kExplained[] = {
    {"sail-past",
     {"the probed instruction runs from a copy in an instruction slot: the breakpoint stays in the text, so every "
      "CPU that reaches it traps",
      "the instruction is stepped in place with its original byte put back: while one CPU steps it, another runs "
      "it with no trap",
      "every execution of the probed instruction is a hit or counted in nmissed"}},
    {"slot-reuse",
     {"a freed slot waits until no CPU can still be on its way to step in it (a grace period) before it is filled "
      "again",
      "a freed slot is filled for the next probe at once, while a CPU sent there may not have run its copy yet",
      "a CPU in a slot executes its own probe's copy"}},
    {"stale-code-x86",
     {"text_poke writes the bytes, then text_poke_sync's IPIs make every CPU serialise (sync_core) before the "
      "patch returns",
      "no sync IPIs: a CPU may go on executing the bytes it fetched before the write",
      "after a patch returns, no CPU executes the bytes it replaced"}},
    {"rv64-no-fence-i",
     {"patch_text under stop_machine: every hart runs fence.i before it leaves",
      "only the hart that patched runs fence.i: the others may execute what they fetched before",
      "after a patch returns, no CPU executes the bytes it replaced"}},
    {"stray-trap",
     {"a breakpoint trap whose probe is gone re-executes the original instruction (the probe was removed after "
      "the trap)",
      "the trap is handed to the kernel as not a kprobe's: the kernel sees a breakpoint it never placed",
      "no probe's breakpoint trap reaches the guest's own handler"}},
    {"torn-write",
     {"text_poke_bp: an int3 over the first byte, then the tail behind it, then the first byte, every CPU synced "
      "between the steps",
      "the five bytes written one at a time with no int3 in front: a CPU may fetch some old bytes and some new",
      "every fetch of the patched instruction sees the old bytes, the int3 or the new bytes, never a mix"}},
    {"boost-preempted",
     {"a boosted slot is freed after an RCU-sched and an RCU-tasks grace period: a task preempted inside it has "
      "switched voluntarily by then, so it has left",
      "freed after RCU-sched only, which a task preempted in the slot does not hold up",
      "no task runs in a boosted slot freed after it entered"}},
    {"kretprobe-maxactive",
     {"an entry that finds no free instance counts a miss (nmissed)", "such an entry counts nothing",
      "returns handled plus misses equal the kernel's own count of calls"}},
    {"dcr-interrupted",
     {"the jump goes in after an RCU-tasks grace period: no CPU is still inside the instructions it covers",
      "the jump is written at once: a CPU interrupted inside the region returns into the middle of it",
      "no CPU runs inside the jump being written"}},
    {"dcr-preempted",
     {"the optimizer waits for an RCU-tasks grace period (a voluntary switch of every task)",
      "it waits for an RCU-sched one, which a task preempted inside the region has passed",
      "no CPU runs inside the jump being written"}},
    {"rv64-split-jump",
     {"the auipc+jalr is taken out in two steps, the jalr last, around an RCU-tasks grace period",
      "both go at once: a task interrupted between the two resumes at the jalr's place, which holds the original "
      "instruction again",
      "a task interrupted between the auipc and the jalr resumes into its jalr"}},
};

}  // namespace

const Explained& explained(const Scenario& s) {
  for (const Entry& e : kExplained)
    if (std::strcmp(e.name, s.name) == 0) return e.e;
  throw std::logic_error(std::string("race ") + s.name + " has no explanation (kprobes/races/explained.cpp)");
}

}  // namespace ksim::race
