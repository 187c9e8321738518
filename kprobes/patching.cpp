// The text patching protocols (see patching.hpp): the caller's job, the
// sync IPIs' handler and multi_cpu_stop, as steps of simulated CPUs.
#include "kprobes/patching.hpp"

#include <algorithm>
#include <cstring>

#include "cpu/timing.hpp"
#include "kprobes/engine.hpp"

namespace ksim::kprobes {

namespace {
// IPI_KPROBES in the guest kernel's include/kernel/percpu.h.
constexpr uint32_t kIpiKprobes = 0x4;
}  // namespace

const char* patching_name(Patching p) {
  switch (p) {
    case Patching::instant: return "instant";
    case Patching::text_poke: return "text_poke";
    case Patching::text_poke_smp: return "text_poke_smp";
    case Patching::patch_text: return "patch_text";
  }
  return "?";
}

bool parse_patching(const std::string& s, Patching& out) {
  for (Patching p : {Patching::instant, Patching::text_poke, Patching::text_poke_smp, Patching::patch_text})
    if (s == patching_name(p)) {
      out = p;
      return true;
    }
  return false;
}

Patching default_patching(Isa isa) { return isa == Isa::x86_64 ? Patching::text_poke : Patching::patch_text; }

bool patching_valid(Patching p, Isa isa) {
  switch (p) {
    case Patching::instant: return true;
    case Patching::text_poke:
    case Patching::text_poke_smp: return isa == Isa::x86_64;
    case Patching::patch_text: return isa == Isa::rv64;
  }
  return false;
}

const char* stop_state_name(StopState s) {
  switch (s) {
    case StopState::none: return "NONE";
    case StopState::prepare: return "MULTI_STOP_PREPARE";
    case StopState::disable_irq: return "MULTI_STOP_DISABLE_IRQ";
    case StopState::run: return "MULTI_STOP_RUN";
    case StopState::exit: return "MULTI_STOP_EXIT";
  }
  return "?";
}

Patcher::Patcher(Engine& e) : e_(e), cpus_(static_cast<size_t>(e.machine().cpu_count())) {}

void Patcher::emit(const Cpu& cpu, const char* what, uint64_t b, uint64_t c) {
  const uint64_t addr = jobs_.empty() ? 0 : jobs_.front().addr;
  e_.emit(cpu, addr, what, b, c);
}

// --- Queueing -------------------------------------------------------------------

void Patcher::begin_op(int caller) {
  if (op_depth_++ == 0) {
    op_caller_ = caller;
    op_queued_ = false;
    op_online_ = protocol() && online(caller);
  }
}

void Patcher::end_op() {
  if (--op_depth_ > 0 || !op_queued_) return;
  op_queued_ = false;
  // The caller takes its jobs at its next interrupt: a self-IPI (unless it
  // is already working through the queue, or asked).
  PerCpu& pc = cpus_[static_cast<size_t>(op_caller_)];
  if (pc.doing == Doing::job || pc.want_job || jobs_.front().cpu != op_caller_) return;
  pc.want_job = true;
  Cpu& c = e_.machine().cpu(op_caller_);
  send_ipi(c, op_caller_);
}

void Patcher::queue(const std::shared_ptr<ProbePoint>& p) {
  if (p->queued) return;  // its job patches to whatever is wanted when it runs
  p->queued = true;
  Job j;
  j.point = p;
  j.cpu = op_caller_;
  j.addr = p->addr;
  jobs_.push_back(std::move(j));
  op_queued_ = true;
}

void Patcher::queue_bytes(uint64_t addr, std::vector<uint8_t> bytes, bool int3_protocol,
                          std::shared_ptr<const ProbeInsn> emulate, std::function<void(Cpu*)> done) {
  Job j;
  j.cpu = op_caller_;
  j.addr = addr;
  j.kind = !int3_protocol ? JobKind::bytewise : mode_ == Patching::text_poke ? JobKind::bp : JobKind::stopped;
  j.bytes = std::move(bytes);
  j.emulate = std::move(emulate);
  j.done = std::move(done);
  jobs_.push_back(std::move(j));
  op_queued_ = true;
}

void Patcher::flush(bool charge) {
  while (!jobs_.empty()) {
    Job j = jobs_.front();
    jobs_.pop_front();
    if (j.kind != JobKind::point) {  // the new bytes, at once
      e_.machine().bus().write_bytes(j.addr, j.bytes.data(), j.bytes.size(),
                                     Accessor{j.cpu, e_.machine().cpu(j.cpu).cycle()});
      if (j.done) j.done(nullptr);
      continue;
    }
    j.point->queued = false;
    ProbePoint& p = *j.point;
    const bool want = e_.breakpoint_goal(p);
    if (want != p.armed) {
      e_.write_point(p, want, Accessor{j.cpu, e_.machine().cpu(j.cpu).cycle()});
      if (charge) {  // as instant patching does
        e_.machine().cpu(j.cpu).add_cycles(timing::kTextPokeCycles);
        e_.machine().cpu_clock_changed(j.cpu);
      }
    }
    e_.point_patched(p);
  }
  for (PerCpu& pc : cpus_) pc = PerCpu{};
  step_ = Step::start;
  ms_ = StopData{};
  poke_addr_ = 0;
}

// Online, as the kernel's cpu_online_mask: the CPU has its per-CPU area
// set up (its current task is set), so it can take an IPI. A CPU still in
// early boot is left out of the protocols, as Linux leaves out CPUs not
// yet online.
bool Patcher::online(int k) const {
  const GuestLayout& g = e_.layout();
  uint64_t curr = 0;
  e_.machine().bus().read_bytes(g.percpu_areas + static_cast<uint64_t>(k) * g.percpu_size + g.off_curr, &curr, 8);
  return curr != 0;
}

// As the kernel's smp_send_ipi(to, IPI_KPROBES): the request bit in the
// target's per-CPU word first, then the doorbell. The kernel's handler
// acknowledges the doorbell before it takes the requests, so a request
// never gets lost in a doorbell already rung.
void Patcher::send_ipi(Cpu& from, int to) {
  ++totals_.ipis;
  Machine& m = e_.machine();
  const GuestLayout& g = e_.layout();
  const Accessor who{from.id(), from.cycle()};
  const uint64_t word = g.percpu_areas + static_cast<uint64_t>(to) * g.percpu_size + g.off_ipi_pending;
  uint32_t req = 0;
  m.bus().read_bytes(word, &req, 4);
  req |= kIpiKprobes;
  m.bus().write_bytes(word, &req, 4, who);
  e_.arch().send_ipi([&](uint64_t addr, unsigned size, uint64_t v) { return m.host_device_store(who, addr, size, v); },
                     to);
}

// --- The IPI's work, at ksim_kprobes_ipi ---------------------------------------------

HookResult Patcher::on_ipi_work(Cpu& cpu) {
  PerCpu& pc = cpus_[static_cast<size_t>(cpu.id())];
  uint8_t bp[4];
  cpu.set_pc(e_.layout().ipi_work + e_.arch().breakpoint_bytes(bp));  // resume at its `ret`
  cpu.add_cycles(timing::kIpiCallCycles);
  if (pc.want_sync) {
    // text_poke_sync's callback, do_sync_core; the caller's wait ends when
    // every CPU has run it (the csd lock release).
    pc.want_sync = false;
    sync_self(cpu);
    ++acks_;
    acks_at_ = std::max(acks_at_, cpu.cycle());
    emit(cpu, "sync-ack");
  }
  if (pc.doing == Doing::none) {
    if (pc.want_stop) {
      pc.want_stop = false;
      pc.doing = Doing::stopper;
      pc.seen = StopState::none;
      cpu.add_cycles(timing::kStopperSwitchCycles);
    } else if (pc.want_job && !jobs_.empty() && jobs_.front().cpu == cpu.id()) {
      pc.want_job = false;
      pc.doing = Doing::job;
      step_ = Step::start;
    }
  }
  if (pc.doing != Doing::none) cpu.request_stop();  // parked: the work goes step by step
  return HookResult::handled;
}

std::string Patcher::doing(int cpu) const {
  const PerCpu& pc = cpus_[static_cast<size_t>(cpu)];
  switch (pc.doing) {
    case Doing::none: return "";
    case Doing::job:  // the caller runs its own stopper inside its job
      // (In the stop_machine, the state its own stopper acts on, as for
      // every other CPU: the shared state may have moved on without it.)
      return std::string("patching job (") + patching_name(mode_) + ")" +
             (step_ == Step::stop && ms_.state != StopState::none
                  ? std::string(", stop_machine: ") + stop_state_name(pc.seen == StopState::none ? ms_.state : pc.seen)
                  : std::string());
    case Doing::sync: return "serialising for text_poke_sync";
    case Doing::stopper:
      return std::string("stop_machine: ") + stop_state_name(pc.seen == StopState::none ? StopState::prepare : pc.seen);
  }
  return "";
}

void Patcher::resume(Cpu& cpu) {
  PerCpu& pc = cpus_[static_cast<size_t>(cpu.id())];
  Machine& m = e_.machine();
  for (;;) {
    bool more = false;
    if (pc.doing == Doing::job) {
      in_job_ = true;
      more = step_job(cpu);
      in_job_ = false;
    } else if (pc.doing == Doing::stopper) {
      more = step_stopper(cpu);
      if (!more) cpu.add_cycles(timing::kStopperSwitchCycles);  // back to the interrupted task
    }
    if (!more) {
      pc.doing = Doing::none;
      // A job queued for this CPU while it was a stopper: take it now.
      if (pc.want_job && !jobs_.empty() && jobs_.front().cpu == cpu.id()) {
        pc.want_job = false;
        pc.doing = Doing::job;
        step_ = Step::start;
        more = true;
      }
    }
    if (!more) return;  // back to guest code (the IPI handler it entered)
    if (!m.may_continue(cpu.id())) {
      cpu.request_stop();
      return;
    }
  }
}

// --- text_poke_bp's int3 handler (poke_int3_handler) ----------------------------------

bool Patcher::poke_handler(Cpu& cpu, const TrapInfo& t) {
  if (!poke_addr_ || t.pc != poke_addr_) return false;
  // A CPU reached the temporary int3: it executes the new instruction by
  // emulation and goes on after it, as Linux's int3_emulate_*.
  const ProbeInsn& pi = *poke_insn_;
  cpu.add_cycles(timing::kKprobeTrapCycles + timing::kKprobeEmulateCycles);
  e_.emit(cpu, poke_addr_, "poke-int3");
  if (pi.kind == ProbeInsn::Kind::emulate) {
    SavedFlags f = e_.arch().save_and_mask(cpu);
    cpu.set_pc(poke_addr_);
    e_.arch().emulate(cpu, e_.machine().bus(), pi, f);
    e_.arch().restore(cpu, f);
  } else {
    cpu.set_pc(poke_addr_ + pi.len);  // a nop
  }
  return true;
}

// --- The caller's job --------------------------------------------------------------

void Patcher::sync_self(Cpu& cpu) {
  ++totals_.syncs;
  cpu.serialize_code();  // the CPU sees the text as memory holds it from here
  if (e_.arch().isa() == Isa::x86_64) {
    cpu.add_cycles(timing::kSyncCoreCycles);
    emit(cpu, "sync_core");
  } else {
    cpu.add_cycles(timing::kFenceICycles);
    emit(cpu, "fence.i");
  }
}

void Patcher::write_bytes(Cpu& cpu, uint64_t addr, const uint8_t* b, size_t n) {
  std::vector<uint8_t> old(n);
  Bus& bus = e_.machine().bus();
  bus.read_bytes(addr, old.data(), n);
  bus.write_bytes(addr, b, n, Accessor{cpu.id(), cpu.cycle()});
  uint64_t o = 0, w = 0;
  std::memcpy(&o, old.data(), std::min<size_t>(n, 8));
  std::memcpy(&w, b, std::min<size_t>(n, 8));
  e_.emit(cpu, addr, "text-write", o, w);
  cpu.add_cycles(timing::kTextPokeCycles);
}

void Patcher::write_text(Cpu& cpu) {
  Job& j = jobs_.front();
  if (j.kind == JobKind::bp) {
    // text_poke_bp's three writes (arch/x86/kernel/alternative.c): an int3
    // over the first byte, the tail, then the new first byte.
    uint8_t bp[4];
    e_.arch().breakpoint_bytes(bp);
    if (j.phase == 0) {
      poke_addr_ = j.addr;
      poke_insn_ = j.emulate;
      write_bytes(cpu, j.addr, bp, 1);
    } else if (j.phase == 1) {
      if (j.bytes.size() > 1) write_bytes(cpu, j.addr + 1, j.bytes.data() + 1, j.bytes.size() - 1);
    } else {
      // The handler stays until the sync after this write (finish_job), as
      // Linux's stays until text_poke_sync() has returned: a CPU that has
      // not synced yet may still execute the int3 it saw. Unless the new
      // first byte is itself a breakpoint (an unoptimized probe's int3):
      // from here that one is the probe's, and its hits are kprobe hits
      // (Linux's poke_int3_handler does not consume an INT3 it poked).
      write_bytes(cpu, j.addr, j.bytes.data(), 1);
      if (j.bytes[0] == bp[0]) poke_addr_ = 0;
    }
    return;
  }
  if (j.kind == JobKind::bytewise) {  // one store, as a plain memcpy does
    write_bytes(cpu, j.addr + j.phase, j.bytes.data() + j.phase, 1);
    return;
  }
  if (j.kind == JobKind::stopped) {  // every other CPU waits in stop_machine
    write_bytes(cpu, j.addr, j.bytes.data(), j.bytes.size());
    return;
  }
  ProbePoint& p = *jobs_.front().point;
  const bool want = e_.breakpoint_goal(p);
  if (want != p.armed) e_.write_point(p, want, Accessor{cpu.id(), cpu.cycle()});
  cpu.add_cycles(timing::kTextPokeCycles);
}

void Patcher::finish_job(Cpu& cpu) {
  Job j = jobs_.front();
  if (j.kind != JobKind::point) {
    if (j.kind == JobKind::bp) poke_addr_ = 0;  // every CPU synced: no int3 left anywhere
    ++totals_.jobs;
    totals_.last_job_cycles = cpu.cycle() - job_start_;
    emit(cpu, "patch-done", 2, totals_.last_job_cycles);
    jobs_.pop_front();
    step_ = Step::start;
    if (j.done) j.done(&cpu);
    return;
  }
  ProbePoint& p = *j.point;
  ++totals_.jobs;
  totals_.last_job_cycles = cpu.cycle() - job_start_;
  e_.emit(cpu, p.addr, "patch-done", p.armed ? 1 : 0, totals_.last_job_cycles);
  jobs_.pop_front();
  p.queued = false;
  e_.point_patched(p);
  // Changed again while this job ran (an operation during the protocol):
  // another round.
  if (!p.retired && e_.breakpoint_goal(p) != p.armed) {
    p.queued = true;
    jobs_.push_back(j);
  }
  step_ = Step::start;
}

bool Patcher::step_job(Cpu& cpu) {
  const int me = cpu.id();
  const int n = e_.machine().cpu_count();
  switch (step_) {
    case Step::start: {
      if (jobs_.empty() || jobs_.front().cpu != me) {
        // Done, or the next job is another caller's: wake it.
        if (!jobs_.empty()) {
          PerCpu& next = cpus_[static_cast<size_t>(jobs_.front().cpu)];
          if (!next.want_job && next.doing != Doing::job) {
            next.want_job = true;
            send_ipi(cpu, jobs_.front().cpu);
          }
        }
        return false;
      }
      job_start_ = cpu.cycle();
      if (jobs_.front().kind == JobKind::bp) {
        emit(cpu, "patch-begin", 2, static_cast<uint64_t>(mode_));
        cpu.add_cycles(timing::kTextMutexCycles);
        step_ = Step::poke;
        return true;
      }
      if (jobs_.front().kind == JobKind::bytewise) {
        emit(cpu, "patch-begin", 3, static_cast<uint64_t>(mode_));
        step_ = Step::bytes;
        return true;
      }
      if (jobs_.front().kind == JobKind::stopped) {
        emit(cpu, "patch-begin", 4, static_cast<uint64_t>(mode_));
        cpu.add_cycles(timing::kTextMutexCycles);
        step_ = Step::stop_setup;
        return true;
      }
      ProbePoint& p = *jobs_.front().point;
      if (e_.breakpoint_goal(p) == p.armed) {  // nothing left to change
        jobs_.front().point->queued = false;
        Job j = jobs_.front();
        jobs_.pop_front();
        e_.point_patched(*j.point);
        return true;
      }
      emit(cpu, "patch-begin", e_.breakpoint_goal(p) ? 1 : 0, static_cast<uint64_t>(mode_));
      cpu.add_cycles(timing::kTextMutexCycles);
      step_ = mode_ == Patching::text_poke ? Step::poke : Step::stop_setup;
      return true;
    }
    case Step::poke: {
      // text_poke, then text_poke_sync: on_each_cpu(do_sync_core, NULL, 1).
      write_text(cpu);
      acks_needed_ = 0;
      acks_ = 0;
      acks_at_ = 0;
      for (int k = 0; k < n && !omit_sync_; ++k) {  // (broken on purpose: no sync IPIs)
        if (k == me || !online(k)) continue;
        ++acks_needed_;
        cpus_[static_cast<size_t>(k)].want_sync = true;
        cpu.add_cycles(timing::kIpiSendCycles);
        send_ipi(cpu, k);
      }
      sync_self(cpu);
      step_ = Step::sync_wait;
      return true;
    }
    case Step::bytes: {
      // No protocol: the bytes go in one store at a time, with scheduling
      // points between them (the broken way to patch live code).
      Job& j = jobs_.front();
      write_text(cpu);
      if (++j.phase == static_cast<int>(j.bytes.size())) finish_job(cpu);
      return true;
    }
    case Step::sync_wait:
      if (acks_ == acks_needed_ && acks_at_ <= cpu.cycle()) {
        if (jobs_.front().kind == JobKind::bp && jobs_.front().phase < 2) {
          ++jobs_.front().phase;  // the next of text_poke_bp's writes, then its sync
          step_ = Step::poke;
          return true;
        }
        cpu.add_cycles(timing::kTextMutexCycles);
        finish_job(cpu);
        return true;
      }
      cpu.add_cycles(timing::kPatchSpinCycles);
      return true;
    case Step::stop_setup: {
      // stop_machine(): every CPU's stopper is woken; this CPU runs its own.
      ++totals_.stop_machines;
      stop_start_ = cpu.cycle();
      ms_ = StopData{};
      ms_.num = 1;
      cpu.add_cycles(timing::kStopMachineSetupCycles);
      for (int k = 0; k < n; ++k) {
        if (k == me || !online(k)) continue;
        ++ms_.num;
        cpus_[static_cast<size_t>(k)].want_stop = true;
        cpu.add_cycles(timing::kIpiSendCycles);
        send_ipi(cpu, k);
      }
      ms_.thread_ack = ms_.num;
      ms_.state = StopState::prepare;
      ms_.state_at = cpu.cycle();
      cpus_[static_cast<size_t>(me)].seen = StopState::none;
      step_ = Step::stop;
      return true;
    }
    case Step::stop:
      if (step_stopper(cpu)) return true;
      step_ = Step::done;
      return true;
    case Step::done:
      // stop_machine returns when every stopper has finished.
      if (ms_.exited == ms_.num && ms_.exited_at <= cpu.cycle()) {
        totals_.last_stop_cycles = cpu.cycle() - stop_start_;
        emit(cpu, "stop_machine-done", totals_.last_stop_cycles);
        cpu.add_cycles(timing::kTextMutexCycles);
        finish_job(cpu);
        return true;
      }
      cpu.add_cycles(timing::kPatchSpinCycles);
      return true;
  }
  return false;
}

// --- multi_cpu_stop ------------------------------------------------------------------

void Patcher::ack_state(Cpu& cpu) {
  cpu.add_cycles(timing::kStopperAckCycles);
  if (--ms_.thread_ack == 0) {  // the last acknowledgement moves everyone on
    ms_.thread_ack = ms_.num;
    ms_.state = static_cast<StopState>(static_cast<uint8_t>(ms_.state) + 1);
    ms_.state_at = cpu.cycle();
  }
}

bool Patcher::step_stopper(Cpu& cpu) {
  PerCpu& pc = cpus_[static_cast<size_t>(cpu.id())];
  // A state change is seen once it is done (a CPU behind in time still
  // reads the state it acted on: no state moves on without its ack).
  const StopState now_state = ms_.state_at <= cpu.cycle() ? ms_.state : pc.seen;
  if (now_state != pc.seen) {
    pc.seen = now_state;
    emit(cpu, "stop_machine", static_cast<uint64_t>(now_state));
    switch (now_state) {
      case StopState::disable_irq: cpu.add_cycles(timing::kStopperStateCycles); break;  // already off: in the IPI
      case StopState::run:
        pc.fn_arrived = pc.fn_done = false;
        if (!stopper_run(cpu, pc)) return true;  // waits inside the callback
        break;
      case StopState::exit:
        ++ms_.exited;
        ms_.exited_at = std::max(ms_.exited_at, cpu.cycle());
        return false;
      default: break;
    }
    ack_state(cpu);
    return true;
  }
  if (pc.seen == StopState::run && !pc.fn_done) {
    if (stopper_run(cpu, pc)) ack_state(cpu);
    return true;
  }
  cpu.add_cycles(timing::kStopperPollCycles);
  return true;
}

// The RUN state's callback on every CPU: patch_text_cb (RV64: the last to
// arrive patches) or stop_machine_text_poke (x86 2010: the first does);
// the others wait until it is written, then every CPU serialises.
bool Patcher::stopper_run(Cpu& cpu, PerCpu& pc) {
  if (!pc.fn_arrived) {
    pc.fn_arrived = true;
    cpu.add_cycles(timing::kStopperAckCycles);  // the atomic arrival
    const int order = ++ms_.arrived;
    const bool patcher = mode_ == Patching::patch_text ? order == ms_.num : order == 1;
    if (patcher) {
      write_text(cpu);
      ms_.patched = true;
      ms_.patched_at = cpu.cycle();
      sync_self(cpu);
      pc.fn_done = true;
      return true;
    }
  }
  if (ms_.patched && ms_.patched_at <= cpu.cycle()) {
    if (!omit_sync_) sync_self(cpu);  // (broken on purpose: only the patcher serialises)
    pc.fn_done = true;
    return true;
  }
  cpu.add_cycles(timing::kPatchSpinCycles);
  return false;
}

}  // namespace ksim::kprobes
