// The debugger's explanations, one line each, for a person who does not
// yet know the kprobes code: what Linux runs in each state of the probe
// state machine (with the probe's handlers named), and why the CPUs of a
// stop_machine are in different states at one cycle. Names follow Linux
// (arch/x86/kernel/kprobes/core.c, arch/riscv/kernel/probes/kprobes.c,
// kernel/trace/trace_kprobe.c, kernel/stop_machine.c).
#pragma once
#include <string>

#include "ui/model/debugger.hpp"
#include "ui/model/fsm_view.hpp"

namespace ksim::ui {

// What runs in `state` for the probe `cpu` is handling (or, idle, the
// armed probes), on this machine's ISA and stepping mode.
std::string fsm_state_line(Debugger& d, int cpu, FsmNode state);

// Why the CPUs are where they are in the stop_machine under way: the
// shared state, the acknowledgements it waits for, and which CPUs act on
// which state. "" when no stop_machine is under way.
std::string stop_machine_line(Debugger& d);
// The rule behind it, for a tooltip.
inline const char* stop_machine_rule() {
  return "multi_cpu_stop (kernel/stop_machine.c): every CPU's stopper walks MULTI_STOP_PREPARE, DISABLE_IRQ, RUN "
         "and EXIT together. The shared state moves on only when all of them have acknowledged it (ack_state counts "
         "thread_ack down), and each CPU sees the move when its stopper next polls: so at one cycle some CPUs still "
         "act on the old state while others already act on the new one, and a CPU that has not taken its IPI is not "
         "in a stopper at all.";
}

}  // namespace ksim::ui
