// `ksim run`: boot a guest, stream its console, print the run summary.
//
// The summary's last two lines are always `cycles: <n>` and
// `trace-hash: <16 hex digits>`; scripts and tests rely on that.
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "apps/ksim/options.hpp"
#include "kprobes/engine.hpp"
#include "kprobes/op_queue.hpp"
#include "kprobes/session.hpp"
#include "sim/checkpoint.hpp"
#include "sim/machine.hpp"
#include "sim/machine_profiles.hpp"
#include "sim/trace_writer.hpp"

namespace ksim::cli {

namespace {

// `--stats`: each CPU's memory counters (timing v2), one row per CPU.
void print_memory_stats(const Machine& m) {
  const MemorySystem* mem = m.memory_system();
  if (!mem) {
    std::printf("memory: timing v1 has no caches (--timing v2 for counters)\n");
    return;
  }
  std::printf("memory (%s): per CPU\n", mem->profile().name.c_str());
  std::printf("  %-4s %10s %10s %12s %10s %9s %10s %10s %10s %10s %10s %10s %9s %12s\n", "cpu", "l1i-hits", "l1i-misses",
              "l1-hits", "l1-misses", "upgrades", "l2-hits", "l2-misses", "transfers", "invalidate", "writeback",
              "back-inval", "l1i-lost", "stall-cycles");
  for (int c = 0; c < m.cpu_count(); ++c) {
    const CacheStats& st = mem->stats(c);
    std::printf("  %-4d %10" PRIu64 " %10" PRIu64 " %12" PRIu64 " %10" PRIu64 " %9" PRIu64 " %10" PRIu64 " %10" PRIu64
                " %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %9" PRIu64 " %12" PRIu64 "\n",
                c, m.cpu(c).l1i_hits(), st.l1i_misses, m.cpu(c).l1_hits(), st.l1_misses, st.upgrades, st.l2_hits,
                st.l2_misses, st.transfers, st.invalidations, st.writebacks, st.back_invalidations, st.l1i_invalidations,
                st.stall_cycles);
  }
}

}  // namespace

int cmd_run(const std::vector<std::string>& args) {
  po::options_description opts("ksim run options");
  std::string isa_name = "rv64", elf, image, trace, checkpoint_file, restore;
  U64 max_cycles_opt, quantum_opt, seed_opt, checkpoint_at_opt;
  int cpus = 1;
  std::vector<std::string> probe_specs, probe_actions;
  std::string kprobes_mode = "modern", kprobes_locking = "rcu", probe_script, code_model = "relaxed";
  int kprobes_boost = 1, kprobes_rethook = 1, kprobes_optimization = 1;
  std::string kprobes_patching;
  std::string timing = "v2", machine_name, memory_model;
  int probe_cpu = 0;
  opts.add_options()
      ("isa", po::value(&isa_name)->default_value("rv64"), "instruction set: rv64 or x86")
      ("elf", po::value(&elf), "guest ELF64 executable (default: a built-in image, see --image)")
      ("image", po::value(&image)->default_value(kDefaultImage),
       "built-in image when no --elf: preempt (the guest kernel with timer preemption), nopreempt, fig4 (the "
       "2006 paper's Figure 4 benchmark: every CPU calls fig4_target 65,535 times), hello (RV64)")
      ("cpus", po::value(&cpus)->default_value(1), "number of CPUs (1-64)")
      ("seed", po::value(&seed_opt)->default_value(U64{0}),
       "perturb timer and IPI latencies with this seed (and under --timing v1, which has no caches, memory stalls; "
       "0: no perturbation); same seed, same run")
      ("quantum", po::value(&quantum_opt)->default_value(U64{1}),
       "cycles a CPU may run past the one furthest behind: 1 is exact, larger is faster (still deterministic)")
      ("reference-schedule",
       "decide the schedule after every instruction, on the precise interpreter path (slow): the reference the "
       "default exact schedule must agree with (needs --quantum 1)")
      ("no-run-ahead",
       "exact schedule without CPUs running ahead of each other (same results, slower; for comparison)")
      ("code-model", po::value(&code_model)->default_value("relaxed"), kCodeModelHelp)
      ("timing", po::value(&timing)->default_value("v2"),
       "timing model (docs/TIMING.md): v1 (a constant per instruction class, perfect memory) or v2 (the caches, "
       "coherence and latencies of a named machine, see --machine)")
      ("machine", po::value(&machine_name),
       "timing v2's machine: sifive-u54 (RV64 default), xeon-e5410 (x86 default), or a profile file "
       "(machines/*.machine); implies --timing v2")
      ("memory-model", po::value(&memory_model),
       "timing v2's memory model: sc (stores visible at once), tso (x86-TSO: a FIFO store buffer) or rvwmo (RVWMO "
       "as an in-order core with a store buffer shows it); default the ISA's own (rv64: rvwmo, x86: tso)")
      ("stats", "print each CPU's memory counters at the end (timing v2: L1 and L2 hits and misses, transfers, "
                "invalidations, write-backs, stall cycles)")
      ("max-cycles", po::value(&max_cycles_opt)->default_value(U64{10'000'000'000ull}),
       "stop with exit status 5 when the machine's clock reaches this cycle")
      ("trace", po::value(&trace), "write the event stream to FILE as JSON Lines")
      ("trace-insns", "also write one event per executed instruction (slow)")
      ("trace-cache", "timing v2: add a cache_miss event for every cache miss and upgrade (the line, the access, "
                      "where the line came from) to the event stream, the trace hash included")
      ("checkpoint-at", po::value(&checkpoint_at_opt), "save a checkpoint when the run reaches this cycle (needs --checkpoint-file)")
      ("checkpoint-file", po::value(&checkpoint_file), "file the checkpoint is written to")
      ("restore", po::value(&restore),
       "start from a checkpoint file instead of booting a guest (it fixes the ISA, CPUs, seed, quantum and code "
       "model; "
       "--max-cycles applies anew)")
      ("probe", po::value(&probe_specs)->composing(),
       "add a probe, kprobe_events syntax: 'p[:[GRP/]EVENT] SYM[+OFFS]|ADDR [ARGS]' or "
       "'r[MAXACTIVE][:[GRP/]EVENT] SYM [ARGS]'; args NAME=FETCH[:TYPE] with %REG @ADDR @SYM[+OFFS] "
       "+|-OFFS(FETCH) $argN $retval $comm $stack $stackN (repeatable)")
      ("probe-action", po::value(&probe_actions)->composing(),
       "EVENT=ACTION for a --probe: log (default: one line per hit), count, set:%REG=VALUE, override:VALUE "
       "(repeatable)")
      ("probe-script", po::value(&probe_script),
       "perform probe operations during the run, one a line: '@CYCLE OP' with OP a kprobe_events line (p..., "
       "r..., -:EVENT to remove), 'enable EVENT', 'disable EVENT' or 'kprobes-enabled 0|1'; '#' comments "
       "(docs/KPROBES.md)")
      ("probe-cpu", po::value(&probe_cpu)->default_value(0),
       "the CPU that performs the --probe-script operations (their cost is charged to it)")
      ("probes-list", "print the probe list (debugfs kprobes/list format) at the end")
      ("kprobes-mode", po::value(&kprobes_mode)->default_value("modern"),
       "how x86 steps a probed instruction: modern (int3 after the copy, emulation; Linux 5.13+) or classic "
       "(trap flag and fixups; the 2006 paper)")
      ("kprobes-boost", po::value(&kprobes_boost)->default_value(1),
       "the x86 kprobe-booster (docs/KPROBES_X86.md): 1 (default, as Linux) runs a hit with no post handler "
       "from its slot with a jump back and no second trap; 0 always steps")
      ("kprobes-optimization", po::value(&kprobes_optimization)->default_value(1),
       "jump optimization (debug.kprobes-optimization; docs/KPROBES_X86.md, KPROBES_RV64.md): 1 replaces a probe point's "
       "region with a jump to a detour buffer once an RCU-tasks grace period has passed (default, as Linux); 0 "
       "never")
      ("kprobes-rethook", po::value(&kprobes_rethook)->default_value(1),
       "how a kretprobed function's return reaches the handlers (docs/KPROBES.md): 1 (default) the trap-free "
       "rethook_trampoline (the paper's kretprobe-booster, Linux's rethook), 0 the breakpoint at "
       "kretprobe_trampoline")
      ("kprobes-locking", po::value(&kprobes_locking)->default_value("rcu"),
       "how probe hits on different CPUs synchronise: rcu (per-CPU state, lock-free lookup; Linux since 2.6.13) "
       "or spinlock (one global kprobe_lock around every hit's handler path, as Linux 2.6.9; the 2006 paper's "
       "baseline; it turns --kprobes-boost and --kprobes-optimization off, which 2.6.9 did not have)")
      ("kprobes-patching", po::value(&kprobes_patching),
       "how --probe-script operations reach the text while CPUs run (docs/PATCHING.md): text_poke (x86 default: "
       "write, then sync IPIs), text_poke_smp (x86, 2010: stop_machine), patch_text (RV64 default: stop_machine, "
       "fence.i) or instant (no protocol: every CPU sees the change at once)")
      ("quiet,q", "do not echo the guest console");
  po::variables_map vm;
  if (!parse_options(args, "usage: ksim run [options]", opts, nullptr, vm)) return kOk;

  const uint64_t max_cycles = max_cycles_opt.v, quantum = quantum_opt.v, seed = seed_opt.v,
                 checkpoint_at = checkpoint_at_opt.v;
  const bool reference = vm.count("reference-schedule") > 0;
  Isa isa = parse_isa(isa_name);
  const CodeModel model = parse_code_model_option(code_model);
  if (cpus < 1 || cpus > 64) throw UsageError{"--cpus must be between 1 and 64"};
  if (max_cycles == 0) throw UsageError{"--max-cycles must be positive"};
  if (quantum == 0 || quantum > kMaxQuantum)
    throw UsageError{"--quantum must be between 1 and " + std::to_string(kMaxQuantum)};
  if (reference && quantum != 1) throw UsageError{"--reference-schedule is exact: it needs --quantum 1"};
  if (vm.count("trace-insns") && trace.empty()) throw UsageError{"--trace-insns needs --trace FILE"};
  if (vm.count("checkpoint-at") != vm.count("checkpoint-file"))
    throw UsageError{"--checkpoint-at and --checkpoint-file go together"};
  if (kprobes_mode != "modern" && kprobes_mode != "classic")
    throw UsageError{"--kprobes-mode must be modern or classic"};
  if (kprobes_mode == "classic" && isa != Isa::x86_64)
    throw UsageError{"--kprobes-mode classic is x86 only (RV64 has one way: Linux's)"};
  if (kprobes_boost != 0 && kprobes_boost != 1) throw UsageError{"--kprobes-boost must be 0 or 1"};
  if (kprobes_rethook != 0 && kprobes_rethook != 1) throw UsageError{"--kprobes-rethook must be 0 or 1"};
  if (kprobes_optimization != 0 && kprobes_optimization != 1)
    throw UsageError{"--kprobes-optimization must be 0 or 1"};
  if (kprobes_locking != "rcu" && kprobes_locking != "spinlock")
    throw UsageError{"--kprobes-locking must be rcu or spinlock"};
  spinlock_era(vm, kprobes_locking, kprobes_boost, kprobes_optimization);
  kprobes::Patching patching = kprobes::default_patching(isa);
  if (!kprobes_patching.empty()) {
    if (!kprobes::parse_patching(kprobes_patching, patching))
      throw UsageError{"--kprobes-patching must be text_poke, text_poke_smp, patch_text or instant"};
    if (!kprobes::patching_valid(patching, isa))
      throw UsageError{std::string("--kprobes-patching ") + kprobes_patching + " is not a protocol of " +
                       ksim::isa_name(isa) + " (x86: text_poke, text_poke_smp; RV64: patch_text; both: instant)"};
  }
  const bool probing = !probe_specs.empty() || !probe_script.empty();
  if (probing && (vm.count("checkpoint-at") || !restore.empty()))
    throw UsageError{"--probe and --probe-script cannot be combined with checkpoints yet: they do not hold the probe "
                     "engine's state"};
  if (!probing && (vm.count("probes-list") || !probe_actions.empty()))
    throw UsageError{"--probes-list and --probe-action need at least one --probe (or a --probe-script)"};
  if (probe_script.empty() && !vm["probe-cpu"].defaulted()) throw UsageError{"--probe-cpu needs --probe-script"};
  if (probe_cpu < 0 || probe_cpu >= cpus)
    throw UsageError{"--probe-cpu must name one of the CPUs (0-" + std::to_string(cpus - 1) + ")"};
  MachineConfig timing_cfg;  // checked before anything is read or built
  apply_timing_options(vm, isa, timing, machine_name, memory_model, timing_cfg);
  if (!restore.empty())
    for (const char* o : {"elf", "image", "cpus", "seed", "quantum", "code-model", "timing", "machine", "memory-model"})
      if (vm.count(o) && !vm[o].defaulted())
        throw UsageError{std::string("--") + o + " cannot be combined with --restore: the checkpoint fixes it"};

  // Build the machine: from a checkpoint, or by booting an image.
  std::unique_ptr<Machine> machine;
  uint64_t restored_hash = 0;
  if (!restore.empty()) {
    std::vector<uint8_t> bytes = read_checkpoint_file(restore);
    CheckpointHeader h = read_checkpoint_header(bytes);
    MachineConfig cfg = h.config;
    if (!vm["isa"].defaulted() && cfg.isa != isa)
      throw UsageError{std::string("--isa ") + isa_name + " does not match the checkpoint, which holds " +
                       (cfg.isa == Isa::x86_64 ? "an x86" : "an RV64") + " machine"};
    cfg.max_cycles = max_cycles;
    if (reference && cfg.quantum != 1)
      throw UsageError{"--reference-schedule is exact: the checkpoint was made with --quantum " +
                       std::to_string(cfg.quantum)};
    cfg.reference_schedule = reference;
    cfg.run_ahead = !vm.count("no-run-ahead");
    cfg.trace_cache = vm.count("trace-cache") > 0;
    machine = std::make_unique<Machine>(cfg);
    restore_checkpoint(*machine, bytes);
    restored_hash = h.trace_hash;
    cpus = cfg.cpus;
  } else {
    if (!elf.empty() && !vm["image"].defaulted()) throw UsageError{"--elf and --image exclude each other"};
    ElfImage img = load_image(elf, image, isa);
    MachineConfig cfg;
    cfg.isa = isa;
    cfg.cpus = cpus;
    cfg.max_cycles = max_cycles;
    cfg.quantum = quantum;
    cfg.seed = seed;
    cfg.code_model = model;
    cfg.reference_schedule = reference;
    cfg.run_ahead = !vm.count("no-run-ahead");
    cfg.profile = timing_cfg.profile;
    cfg.memory_model = timing_cfg.memory_model;
    if (vm.count("trace-cache") && !cfg.profile)
      throw UsageError{"--trace-cache needs --timing v2 (model v1 has no caches)"};
    cfg.trace_cache = vm.count("trace-cache") > 0;
    machine = std::make_unique<Machine>(cfg);
    machine->load(img);
  }
  Machine& m = *machine;

  TraceHasher hasher;
  hasher.set_value(restored_hash ? restored_hash : hasher.value());
  m.events().add(&hasher);
  std::unique_ptr<TraceWriter> writer;
  if (!trace.empty()) {
    writer = std::make_unique<TraceWriter>(trace, vm.count("trace-insns") > 0, &m.symbols());
    m.events().add(writer.get());
  }
  bool echo = !vm.count("quiet");
  bool console_ends_with_newline = true;
  // A line at a time: a panic's backtrace line gets its address named
  // (SymbolTable::name_backtrace_line), as kallsyms names it in Linux.
  std::string console_line;
  m.console_sink = [&](char c) {
    if (!echo) return;  // -q: nothing printed, so no line to end before a probe line
    if (c != '\n') {
      console_line += c;
      std::fputc(c, stdout);
      console_ends_with_newline = false;
      return;
    }
    const std::string named = m.symbols().name_backtrace_line(console_line, &m.source_lines());
    std::fputs(named.c_str() + console_line.size(), stdout);
    std::fputc('\n', stdout);
    console_line.clear();
    console_ends_with_newline = true;
  };

  // Probes: the engine at the head of the trap hooks, one line per hit.
  std::unique_ptr<kprobes::Engine> engine;
  std::unique_ptr<kprobes::ProbeSession> session;
  std::unique_ptr<kprobes::ProbeOpQueue> ops;
  if (probing) {
    engine = std::make_unique<kprobes::Engine>(
        m, kprobes_mode == "classic" ? kprobes::StepMode::classic : kprobes::StepMode::modern);
    engine->set_locking(kprobes_locking == "spinlock" ? kprobes::Locking::spinlock : kprobes::Locking::rcu);
    engine->set_boost(kprobes_boost == 1);
    engine->set_optimization(kprobes_optimization == 1);
    // (The default falls back to the breakpoint trampoline in an image
    // without rethook_trampoline; asking for it there is an error.)
    if (!engine->set_rethook(kprobes_rethook == 1) && !vm["kprobes-rethook"].defaulted())
      throw UsageError{"--kprobes-rethook 1: the image has no rethook_trampoline (use --kprobes-rethook 0)"};
    engine->set_patching(patching);
    session = std::make_unique<kprobes::ProbeSession>(*engine, [&](const std::string& line) {
      if (!console_ends_with_newline) std::fputc('\n', stdout);
      std::fputs(line.c_str(), stdout);
      std::fputc('\n', stdout);
      console_ends_with_newline = true;
    });
    try {
      for (const std::string& spec : probe_specs) session->add(spec);
    } catch (const std::runtime_error& e) {  // SpecError, SessionError
      throw UsageError{e.what()};
    }
    if (!probe_script.empty()) {
      const std::string text = read_text_file(probe_script, "probe script");
      try {
        ops = std::make_unique<kprobes::ProbeOpQueue>(
            *session, kprobes::events::parse_probe_script(text, probe_script, engine->arch()), probe_cpu,
            probe_script);
        ops->check();
      } catch (const kprobes::events::ScriptError& e) {
        throw UsageError{e.what()};
      }
    }
    // Actions: for a --probe event now, for an event the script defines
    // when it is defined.
    try {
      for (const std::string& a : probe_actions) {
        const size_t eq = a.find('=');
        if (eq == std::string::npos || eq == 0)
          throw kprobes::SessionError("--probe-action wants EVENT=ACTION, not '" + a + "'");
        const std::string event = a.substr(0, eq), slash_group = event.substr(0, event.find('/'));
        const bool grouped = event.find('/') != std::string::npos;
        if (ops && !session->find(grouped ? slash_group : "", grouped ? event.substr(event.find('/') + 1) : event))
          ops->add_action(event, a.substr(eq + 1));
        else
          session->set_action(a);
      }
    } catch (const std::runtime_error& e) {  // SessionError
      throw UsageError{e.what()};
    }
  }

  auto t0 = std::chrono::steady_clock::now();
  RunResult r;
  if (!checkpoint_file.empty()) {
    RunLimits lim;
    lim.cycle = checkpoint_at;
    r = m.run(lim);
    if (r.end == RunResult::End::paused) {
      write_checkpoint_file(checkpoint_file, save_checkpoint(m, hasher.value()));
      std::fprintf(stderr, "ksim: checkpoint at cycle %" PRIu64 " (%" PRIu64 " steps) written to %s\n",
                   m.now(), m.steps(), checkpoint_file.c_str());
      r = m.run();
    } else {
      std::fprintf(stderr, "ksim: the run ended before cycle %" PRIu64 ": no checkpoint written\n", checkpoint_at);
    }
  } else {
    r = ops ? ops->run(m) : m.run();
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (writer) m.events().remove(writer.get());
  writer.reset();  // flush the trace before printing the summary

  if (echo && !console_ends_with_newline) std::fputc('\n', stdout);
  int status = kOk;
  std::printf("--- ksim summary ---\n");
  switch (r.end) {
    case RunResult::End::poweroff:
      std::printf("exit: guest powered off with status %d\n", r.status);
      status = r.status == 0 ? kOk : kGuestFailed;
      break;
    case RunResult::End::cycle_limit:
      std::printf("exit: cycle limit (%" PRIu64 ") reached\n", max_cycles);
      status = kCycleLimit;
      break;
    case RunResult::End::crash:
      std::printf("exit: guest crash: %s\n", r.reason.c_str());
      status = kGuestCrash;
      break;
    case RunResult::End::hook_stop:
    case RunResult::End::paused:  // not reached: runs here go to the end
      std::printf("exit: stopped by the probe engine: %s\n", r.reason.c_str());
      status = kEngineStop;
      break;
  }
  // The machine's own ISA (a restored checkpoint fixes it, whatever --isa says).
  std::printf("isa: %s, cpus: %d, seed: %" PRIu64 ", quantum: %" PRIu64 "%s\n",
              m.config().isa == Isa::x86_64 ? "x86" : "rv64", m.cpu_count(), m.config().seed, m.config().quantum,
              m.config().reference_schedule ? " (reference schedule)" : "");
  if (const MemorySystem* mem = m.memory_system())
    std::printf("timing: v2, machine %s, memory model %s (caches, coherence, store buffers; docs/TIMING.md)\n",
                mem->profile().name.c_str(),
                mem->model() == MemoryModel::tso ? "tso" : mem->model() == MemoryModel::rvwmo ? "rvwmo" : "sc");
  else
    std::printf("timing: v1 (a constant per instruction class, perfect memory)\n");
  std::printf("instructions: %" PRIu64 "\n", r.instret);
  std::printf("host time: %.3f s (%.1f MIPS)\n", secs, secs > 0 ? r.instret / secs / 1e6 : 0.0);
  if (session) {
    // The same counts as the per-probe lines below, summed: a kprobe (p)
    // counts the hits of its address, a kretprobe (r) the returns it saw.
    std::printf("probes: %" PRIu64 " hits, %" PRIu64 " missed, %" PRIu64 " stray traps\n", session->total_hits(),
                session->total_missed(), engine->stats().strays);
    std::fputs(session->summary().c_str(), stdout);
    std::fputs(session->how_summary().c_str(), stdout);
    if (ops) {
      size_t failed = 0;
      for (const auto& o : ops->outcomes()) failed += o.failed;
      std::printf("probe-script: %zu of %zu operations performed, %zu failed\n", ops->performed(), ops->ops().size(),
                  failed);
      for (size_t i = 0; i < ops->ops().size(); ++i)
        if (ops->outcomes()[i].failed)
          std::printf("  line %d at cycle %" PRIu64 ": %s\n", ops->ops()[i].line, ops->outcomes()[i].at,
                      ops->outcomes()[i].error.c_str());
      const kprobes::Patcher::Totals& pt = engine->patcher().totals();
      if (engine->patcher().protocol())
        std::printf("patching: %s, %" PRIu64 " texts patched, %" PRIu64 " IPIs, %" PRIu64 " stop_machine, %" PRIu64
                    " serialisations\n",
                    kprobes::patching_name(engine->patching()), pt.jobs, pt.ipis, pt.stop_machines, pt.syncs);
      else
        std::printf("patching: instant\n");
    }
    if (vm.count("probes-list")) {
      std::printf("kprobes/list:\n");
      std::fputs(engine->list().c_str(), stdout);
    }
  }
  std::printf("cycles: %" PRIu64 "\n", r.cycles);
  if (vm.count("stats")) print_memory_stats(m);
  std::printf("trace-hash: %s\n", hasher.hex().c_str());
  std::fflush(stdout);
  if (r.end != RunResult::End::poweroff || r.status != 0) {
    if (r.end == RunResult::End::poweroff) std::fprintf(stderr, "ksim: guest exited with status %d\n", r.status);
  }
  return status;
}

}  // namespace ksim::cli
