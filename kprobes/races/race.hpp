// Race scenarios (`ksim race`): small runs built on the probe engine and
// the patching protocols, each in two variants. `correct` has every
// protection Linux has; `broken` removes one. An invariant, checked by an
// observer of the event stream (it sees every fetch, store and trap),
// says whether the race happened. A seed picks the timing (when the
// operations come, and the machine's seeded latencies), so a violation is
// reproduced exactly by its seed.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cpu/isa.hpp"
#include "sim/elf/elf_image.hpp"
#include "sim/machine.hpp"

namespace ksim::kprobes {
class Engine;
}

namespace ksim::race {

struct Options {
  Isa isa = Isa::x86_64;
  int cpus = 4;
  uint64_t seed = 1;
  bool broken = false;
  std::string trace;  // a --trace file (JSON Lines, with instructions), or empty
};


struct Outcome {
  bool violated = false;
  uint64_t cycle = 0;     // of the violation
  std::string violation;  // what broke: cycle, CPUs, addresses
  RunResult run;          // how the run ended
  std::string notes;      // what the run did (one line each)
};

// A scenario's machine: the options' ISA, CPUs and seed, the kernel
// loaded, the --trace writer attached if asked.
struct Rig {
  Machine m;
  std::unique_ptr<EventObserver> trace;
  Rig(const ElfImage& kernel, const Options& o);
};

// Runs a probe script (kprobe_events operations at cycles, made by CPU 0)
// on the rig's engine until `until`, with `checker` watching the events.
// Returns how the run ended and, in `hits`, the script's probes' hits.
RunResult run_script(Machine& m, kprobes::Engine& eng, const std::string& script, const char* name, uint64_t until,
                     EventObserver& checker, uint64_t* hits = nullptr);

// Records a violation (the first one counts) and stops the run there.
void violate(Outcome& out, Machine& m, uint64_t cycle, const std::string& what);

struct Scenario {
  const char* name;
  const char* what;  // one line for `ksim race list`
  bool x86, rv64;    // the ISAs it exists on
  Outcome (*run)(const ElfImage& kernel, const Options& o);
};

const std::vector<Scenario>& scenarios();
const Scenario* find(const std::string& name);

}  // namespace ksim::race
