// Small random multi-CPU programs, run under each exact schedule and
// compared (tests/schedule_diff_test.cpp; issue 21).
//
// The default schedule runs CPUs ahead of each other and puts them back
// when another CPU observes them (docs/SCHEDULING.md); it must give what
// the plain exact schedule (--no-run-ahead) and the per-step reference
// (--reference-schedule) give, in every register, every byte of memory,
// every cycle and the trace. The guest kernel never reads code as data,
// never races LR/SC with a neighbour's store and never rewrites code
// another CPU runs; these programs do all of that, on both ISAs:
//  - loads and stores of every width (some misaligned, some straddling a
//    256-byte ownership block) to a shared area, a private area per CPU
//    and the code itself;
//  - LR/SC pairs (RV64; some SCs alone, which fail), AMOs and x86 locked
//    read-modify-writes, fences, fence.i and cpuid;
//  - stores into "patch slots" (`addi rX, rX, imm` on RV64, `add r64,
//    imm32` on x86) that any CPU executes, whole or in part, so CPUs run
//    code another CPU rewrites, under the relaxed or the strict code model;
//  - delay loops and data-dependent branches, so that CPUs drift apart;
//  - data beside code (the areas on a code page) or on their own pages;
//  - a seeded latency perturbation (memory stalls) on half of them.
// Each CPU runs its body 1 to 8 times (so that code another CPU rewrote
// runs again), then adds 1 to a done counter; CPU 0 waits for all of
// them, then powers off. Program `index` of `seed` comes from its own
// generator, so one program reproduces alone.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cpu/code_model.hpp"
#include "cpu/isa.hpp"
#include "sim/machine.hpp"

namespace ksim::test::smp {

struct Program {
  Isa isa = Isa::rv64;
  int cpus = 2;
  CodeModel model = CodeModel::relaxed;
  uint64_t perturb_seed = 0;  // MachineConfig::seed
  bool beside_code = false;   // data areas on a code page
  uint64_t base = 0;          // RAM base: the image is loaded there
  std::vector<uint8_t> image;
  std::vector<uint64_t> entry;                            // per CPU
  std::vector<std::vector<std::pair<int, uint64_t>>> regs;  // per CPU: (GPR, value) at reset
  std::vector<std::pair<uint64_t, uint64_t>> code;        // per CPU: [start, end) of its code
  // One line: ISA, CPUs, code model, seed of the perturbation, layout.
  std::string describe() const;
  // Every CPU's code, disassembled.
  std::string listing() const;
};

Program generate(Isa isa, uint64_t seed, uint64_t index);

enum class Schedule { run_ahead, no_run_ahead, reference };
const char* name(Schedule s);

struct CpuState {
  uint64_t pc = 0, cycle = 0, instret = 0, steps = 0;
  bool idle = false;
  std::vector<uint64_t> gpr;
  std::vector<std::pair<const char*, uint64_t>> extra;  // ISA state: RFLAGS, CSRs, the LR reservation
};

struct Outcome {
  std::string error;  // what the run threw (an internal error), if it did
  RunResult result;
  std::vector<CpuState> cpus;
  std::vector<uint8_t> memory;  // the image's range after the run
  uint64_t trace_hash = 0;
  uint64_t events = 0;
  AheadStats ahead;
};

Outcome run(const Program& p, Schedule s);
// The first difference between two outcomes, or "" when they agree.
std::string difference(const Outcome& a, const Outcome& b);

}  // namespace ksim::test::smp
