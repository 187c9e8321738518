// The list of race scenarios (`ksim race list`).
#include "kprobes/races/race.hpp"

#include "kprobes/engine.hpp"
#include "kprobes/events/probe_script.hpp"
#include "kprobes/op_queue.hpp"
#include "kprobes/session.hpp"
#include "sim/trace_writer.hpp"

namespace ksim::race {

// Each scenario's setup, checker and notes (in its own file).
#define KSIM_RACE(fn)                                                                        \
  Setup fn##_setup(const Machine& m, const Options& o);                                     \
  std::unique_ptr<EventObserver> fn##_checker(Machine& m, const Options& o, Outcome& out); \
  std::string fn##_notes(const kprobes::Engine& eng, const Options& o, const Setup& s, uint64_t hits);
KSIM_RACE(torn_write)
KSIM_RACE(sail_past)
KSIM_RACE(slot_reuse)
KSIM_RACE(stale_code)
KSIM_RACE(stray_trap)
KSIM_RACE(boost_preempted)
KSIM_RACE(kretprobe_maxactive)
KSIM_RACE(dcr_interrupted)
KSIM_RACE(dcr_preempted)
KSIM_RACE(rv64_split_jump)
#undef KSIM_RACE
#define KSIM_RACE_FNS(fn) fn##_setup, fn##_checker, fn##_notes

const std::vector<Scenario>& scenarios() {
  static const std::vector<Scenario> list = {
      {"sail-past",
       "a kprobe on the kernel's hottest function stepped out of line (correct) or in place with the original "
       "byte back (broken); every execution of the probed instruction must be a hit or counted in nmissed",
       true, false, KSIM_RACE_FNS(sail_past)},
      {"slot-reuse",
       "probes removed and defined again while CPUs step in their slots: a freed slot waits for its grace "
       "period (correct) or is reused at once (broken); a CPU must execute its probe's copy in the slot",
       true, true, KSIM_RACE_FNS(slot_reuse), "preempt",
       "a CPU is between its breakpoint trap and its step for about 75 cycles (cpu/timing.hpp: trap, lookup, "
       "handler, step set-up), and the definition that reuses a slot comes at least 800 cycles after the removal "
       "that freed it (the removal's cost): no hit spans both"},
      {"stale-code-x86",
       "a kprobe armed and disarmed under the relaxed code model with text_poke and its sync IPIs (correct) or "
       "without them (broken); after a patch returns no CPU may execute the bytes it replaced",
       true, false, KSIM_RACE_FNS(stale_code)},
      {"rv64-no-fence-i",
       "the same with patch_text under stop_machine, every hart running fence.i (correct) or only the one that "
       "patched (broken)",
       false, true, KSIM_RACE_FNS(stale_code)},
      {"stray-trap",
       "a probe removed between a CPU's breakpoint trap and its lookup: the original instruction re-executed "
       "(correct) or the trap handed to the kernel as not a kprobe's (broken); no probe's breakpoint may reach "
       "the guest",
       true, true, KSIM_RACE_FNS(stray_trap)},
      {"torn-write",
       "a live 5-byte nop turned into a jmp while every CPU runs it: text_poke_bp (correct) or one byte at a "
       "time (broken); no CPU may fetch a mix of old and new bytes",
       true, false, KSIM_RACE_FNS(torn_write)},
      {"boost-preempted",
       "a boosted kprobe removed on the preemptible kernel: its slot freed after RCU-sched and RCU-tasks grace "
       "periods (correct) or RCU-sched only (broken); no task may run in a boosted slot freed after it entered",
       true, false, KSIM_RACE_FNS(boost_preempted)},
      {"kretprobe-maxactive",
       "a kretprobe with maxactive 4 on the recursive fib_recursive: an entry with no free instance counted in "
       "nmissed (correct) or not (broken); returns handled plus misses must equal the kernel's own call count",
       true, true, KSIM_RACE_FNS(kretprobe_maxactive)},
      {"dcr-interrupted",
       "a kprobe on the hottest function jump-optimized after an RCU-tasks grace period (correct) or at once "
       "(broken); no CPU may run inside the jump being written",
       true, false, KSIM_RACE_FNS(dcr_interrupted), "nopreempt"},
      {"dcr-preempted",
       "the same after an RCU-tasks grace period (correct) or an RCU-sched one (broken), which a task preempted "
       "inside the region has passed",
       true, false, KSIM_RACE_FNS(dcr_preempted)},
      {"rv64-split-jump",
       "a jump-optimized kprobe on the hottest function unoptimized again and again: the auipc+jalr taken out in "
       "two steps around an RCU-tasks grace period (correct) or at once (broken); a task interrupted between "
       "the two must resume into its jalr",
       false, true, KSIM_RACE_FNS(rv64_split_jump)},
  };
  return list;
}

MachineConfig machine_config(const Options& o) {
  MachineConfig cfg;
  cfg.isa = o.isa;
  cfg.cpus = o.cpus;
  cfg.seed = o.seed;
  return cfg;
}

Rig::Rig(const ElfImage& kernel, const Options& o) : m(machine_config(o)) {
  m.load(kernel);
  if (o.trace.empty()) return;
  trace = std::make_unique<TraceWriter>(o.trace, true, &m.symbols());
  m.events().add(trace.get());
}

void Setup::apply(kprobes::Engine& e) const {
  e.set_boost(boost);
  e.set_optimization(optimize);
  if (configure) configure(e);
}

void check_kernel(const Scenario& s, Machine& m) {
  const Symbol* pre = m.symbols().find("ksim_kernel_preempt");
  uint64_t v = 0;
  if (!pre || !m.bus().read_bytes(pre->addr, &v, 8))
    throw std::runtime_error(std::string(s.name) + ": the kernel has no ksim_kernel_preempt");
  const std::string image = v ? "preempt" : "nopreempt";
  if (image != s.image)
    throw std::runtime_error(std::string(s.name) + " runs on the " + s.image + " kernel, not the " + image + " one");
}

Outcome run(const Scenario& sc, const ElfImage& kernel, const Options& o) {
  Rig rig(kernel, o);
  Machine& m = rig.m;
  check_kernel(sc, m);
  const Setup setup = sc.setup(m, o);
  kprobes::Engine eng(m, setup.mode);
  setup.apply(eng);
  kprobes::ProbeSession session(eng, nullptr);
  for (const std::string& p : setup.probes) session.add(p);
  std::vector<kprobes::events::ProbeOp> ops = kprobes::events::parse_probe_script(setup.script, setup.name, eng.arch());
  ops.insert(ops.end(), setup.extra.begin(), setup.extra.end());
  kprobes::ProbeOpQueue q(session, std::move(ops), 0, setup.name);
  Outcome out;
  std::unique_ptr<EventObserver> checker = sc.checker(m, o, out);
  m.events().add(checker.get());
  out.run = q.run_until(m, setup.until);
  m.events().remove(checker.get());
  for (const auto& op : q.outcomes())
    if (op.failed) throw std::runtime_error(std::string(sc.name) + ": an operation failed: " + op.error);
  uint64_t hits = 0;
  for (const auto& p : session.probes()) hits += p->hits();
  out.notes = sc.notes(eng, o, setup, hits);
  return out;
}

void violate(Outcome& out, Machine& m, uint64_t cycle, int cpu, const std::string& what, uint64_t pc,
             const std::string& mark) {
  if (out.violated) return;
  out.violated = true;
  out.cycle = cycle;
  out.cpu = cpu;
  out.violation = what;
  out.pc = pc;
  out.mark = mark;
  m.request_stop("race violation: " + what);
}

const Scenario* find(const std::string& name) {
  for (const Scenario& s : scenarios())
    if (name == s.name) return &s;
  return nullptr;
}

}  // namespace ksim::race
