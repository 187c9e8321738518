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

#include <functional>

#include "cpu/isa.hpp"
#include "kprobes/events/probe_script.hpp"
#include "kprobes/arch.hpp"
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
  int cpu = -1;           // the CPU that broke the invariant
  std::string violation;  // what broke: cycle, CPUs, addresses
  uint64_t pc = 0;        // the offending instruction's address (0: none)
  std::string mark;       // a few words for that instruction ("torn: neither the old bytes nor the new")
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
MachineConfig machine_config(const Options& o);

// Everything a scenario's run is made of besides the checker, so that
// `ksim race run` and `ksim-ui --race` build the same run: the engine's
// stepping mode and settings (the protocol, the switch the broken variant
// turns off), probes registered before the run, and operations at cycles
// made by CPU 0 (a probe script, and custom engine work) up to `until`.
struct Setup {
  kprobes::StepMode mode = kprobes::StepMode::modern;
  // The kprobe-booster: off unless the scenario is about it (the races of
  // stepping out of line need the step).
  bool boost = false;
  bool optimize = false;  // x86 jump optimization, likewise
  std::function<void(kprobes::Engine&)> configure;
  // The engine as the scenario wants it: the booster and the optimizer,
  // then `configure`.
  void apply(kprobes::Engine& e) const;
  std::vector<std::string> probes;
  std::string script;
  std::vector<kprobes::events::ProbeOp> extra;  // Kind::custom
  uint64_t until = 0;
  std::string name;  // the script's name in errors
};

// Records a violation (the first one counts) and stops the run there.
void violate(Outcome& out, Machine& m, uint64_t cycle, int cpu, const std::string& what, uint64_t pc = 0,
             const std::string& mark = "");


struct Scenario {
  const char* name;
  const char* what;  // one line for `ksim race list`
  bool x86, rv64;    // the ISAs it exists on
  Setup (*setup)(const Machine& m, const Options& o);
  // The invariant, watching the events of a machine set up so.
  std::unique_ptr<EventObserver> (*checker)(Machine& m, const Options& o, Outcome& out);
  // One line on what the run did, from the engine after it.
  std::string (*notes)(const kprobes::Engine& eng, const Options& o, const Setup& s, uint64_t hits);
  // The built-in guest kernel it runs on (`--image`): "preempt" or
  // "nopreempt". Whether a task can be preempted is part of some races.
  const char* image = "preempt";
  // When the broken variant cannot be caught on ksim's machine today, why
  // (docs/RACES.md); nullptr when it can.
  const char* unreachable = nullptr;
};

// Throws unless the kernel loaded in `m` is the scenario's image (its
// `ksim_kernel_preempt` says whether it is the preemptible one).
void check_kernel(const Scenario& s, Machine& m);

// Builds the scenario's machine and engine, runs it with its checker.
Outcome run(const Scenario& s, const ElfImage& kernel, const Options& o);

const std::vector<Scenario>& scenarios();
// For a person (the debugger's Race window): what the correct variant does,
// what the broken one leaves out, and the invariant the checker holds.
struct Explained {
  const char* correct;
  const char* broken;
  const char* invariant;
};
const Explained& explained(const Scenario& s);

const Scenario* find(const std::string& name);

}  // namespace ksim::race
