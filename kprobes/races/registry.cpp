// The list of race scenarios (`ksim race list`).
#include "kprobes/races/race.hpp"

#include "kprobes/engine.hpp"
#include "kprobes/events/probe_script.hpp"
#include "kprobes/op_queue.hpp"
#include "kprobes/session.hpp"
#include "sim/trace_writer.hpp"

namespace ksim::race {

Outcome torn_write(const ElfImage& kernel, const Options& o);
Outcome sail_past(const ElfImage& kernel, const Options& o);
Outcome slot_reuse(const ElfImage& kernel, const Options& o);
Outcome stale_code(const ElfImage& kernel, const Options& o);
Outcome stray_trap(const ElfImage& kernel, const Options& o);

const std::vector<Scenario>& scenarios() {
  static const std::vector<Scenario> list = {
      {"sail-past",
       "a kprobe on the kernel's hottest function stepped out of line (correct) or in place with the original "
       "byte back (broken); every execution of the probed instruction must be a hit or counted in nmissed",
       true, false, sail_past},
      {"slot-reuse",
       "probes removed and defined again while CPUs step in their slots: a freed slot waits for its grace "
       "period (correct) or is reused at once (broken); no slot may change under a CPU stepping in it",
       true, true, slot_reuse},
      {"stale-code-x86",
       "a kprobe armed and disarmed under the relaxed code model with text_poke and its sync IPIs (correct) or "
       "without them (broken); after a patch returns no CPU may execute the bytes it replaced",
       true, false, stale_code},
      {"rv64-no-fence-i",
       "the same with patch_text under stop_machine, every hart running fence.i (correct) or only the one that "
       "patched (broken)",
       false, true, stale_code},
      {"stray-trap",
       "a probe removed between a CPU's breakpoint trap and its lookup: the original instruction re-executed "
       "(correct) or the trap handed to the kernel as not a kprobe's (broken); no probe's breakpoint may reach "
       "the guest",
       true, true, stray_trap},
      {"torn-write",
       "a live 5-byte nop turned into a jmp while every CPU runs it: text_poke_bp (correct) or one byte at a "
       "time (broken); no CPU may fetch a mix of old and new bytes",
       true, false, torn_write},
  };
  return list;
}

namespace {
MachineConfig config(const Options& o) {
  MachineConfig cfg;
  cfg.isa = o.isa;
  cfg.cpus = o.cpus;
  cfg.seed = o.seed;
  return cfg;
}
}  // namespace

Rig::Rig(const ElfImage& kernel, const Options& o) : m(config(o)) {
  m.load(kernel);
  if (o.trace.empty()) return;
  trace = std::make_unique<TraceWriter>(o.trace, true, &m.symbols());
  m.events().add(trace.get());
}

RunResult run_script(Machine& m, kprobes::Engine& eng, const std::string& script, const char* name, uint64_t until,
                     EventObserver& checker, uint64_t* hits) {
  kprobes::ProbeSession session(eng, nullptr);
  kprobes::ProbeOpQueue q(session, kprobes::events::parse_probe_script(script, name, eng.arch()), 0, name);
  m.events().add(&checker);
  RunResult r = q.run_until(m, until);
  m.events().remove(&checker);
  if (hits)
    for (const auto& p : session.probes()) *hits += p->hits();
  return r;
}

void violate(Outcome& out, Machine& m, uint64_t cycle, const std::string& what) {
  if (out.violated) return;
  out.violated = true;
  out.cycle = cycle;
  out.violation = what;
  m.request_stop("race violation: " + what);
}

const Scenario* find(const std::string& name) {
  for (const Scenario& s : scenarios())
    if (name == s.name) return &s;
  return nullptr;
}

}  // namespace ksim::race
