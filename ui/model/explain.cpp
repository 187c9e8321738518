#include "ui/model/explain.hpp"

#include <algorithm>

#include "cpu/hex.hpp"
#include "kprobes/patching.hpp"

namespace ksim::ui {

namespace {

// The session probe handling `cpu`'s hit (cb.current), or null.
const kprobes::SessionProbe* probe_at(World& w, uint64_t addr) {
  if (!w.session()) return nullptr;
  for (const auto& p : w.session()->probes()) {
    const kprobes::Kprobe& kp = p->rp ? p->rp->kp : *p->kp;
    if (kp.rec && kp.rec->point && kp.rec->point->addr == addr) return p.get();
  }
  return nullptr;
}

// The pre_handler a kprobe_events probe runs, as trace_kprobe.c has it,
// and what ksim's action adds.
std::string pre_handler(const kprobes::SessionProbe& p) {
  using K = kprobes::Action::Kind;
  const std::string ev = p.spec.event;
  if (p.rp)
    return "pre_handler_kretprobe takes an instance for " + ev +
           " and swaps the return address for the trampoline (its handler, kretprobe_dispatcher, runs at the return)";
  switch (p.action.kind) {
    case K::log: return "kprobe_dispatcher -> kprobe_trace_func writes " + ev + "'s event with its fetch args";
    case K::count: return "kprobe_dispatcher counts " + ev + "'s hit (action count)";
    case K::set_reg: return "kprobe_dispatcher sets " + p.action.text.substr(4) + " (action set), then writes " + ev + "'s event";
    case K::override_ret:
      return "kprobe_dispatcher writes " + ev + "'s event, then overrides the function: return " +
             std::to_string(p.action.value) + " to the caller at once, no step (as bpf_override_return)";
  }
  return "kprobe_dispatcher";
}

}  // namespace

std::string fsm_state_line(Debugger& d, int cpu, FsmNode state) {
  World& w = d.world();
  Machine& m = w.machine();
  kprobes::Engine* eng = w.engine();
  const bool x86 = m.config().isa == Isa::x86_64;
  const bool classic = eng && eng->mode() == kprobes::StepMode::classic;
  const kprobes::CtlBlk* cb = eng ? &eng->ctlblk(cpu) : nullptr;
  const kprobes::ProbePoint* pt = cb && cb->current ? cb->current.get() : nullptr;
  // Between hits (or in a boosted slot, where the hit is over), the probe
  // of this CPU's last hit so far.
  if (!pt && eng) {
    const EventLog& log = d.log();
    for (size_t i = std::min(log.cursor(), log.size()); i-- > 0;) {
      const EventRec& e = log[i];
      if (e.cpu != cpu || e.kind != EventKind::probe) continue;
      const std::string& t = log.text(e);
      if (t != "KPROBE_HIT_ACTIVE" && t != "optimized-hit") continue;
      pt = eng->point_at(e.a);
      break;
    }
  }
  const kprobes::SessionProbe* p = pt ? probe_at(w, pt->addr) : nullptr;
  const std::string where = pt ? m.symbols().format(pt->addr) : std::string("the probe");
  const char* bp = x86 ? "int3" : "ebreak";
  switch (state) {
    case FsmNode::idle: {
      std::string armed;
      int n = 0;
      if (w.session())
        for (const auto& q : w.session()->probes()) {
          const kprobes::Kprobe& kp = q->rp ? q->rp->kp : *q->kp;
          if (!kp.rec || !kp.rec->point || !kp.rec->point->armed) continue;
          if (n++ < 3) armed += (armed.empty() ? "" : ", ") + m.symbols().format(kp.rec->point->addr) + " (" + q->spec.event + ")";
        }
      return "guest code runs; " + (n ? "armed, waiting for a CPU: " + armed + (n > 3 ? ", ..." : "")
                                       : std::string("no probe is armed"));
    }
    case FsmNode::trap:
      return std::string("the CPU hit the ") + bp + " at " + where + ": " +
             (x86 ? (classic ? "do_int3 -> kprobe_handler" : "exc_int3 -> kprobe_int3_handler")
                  : "handle_break -> kprobe_breakpoint_handler") +
             " looks the address up (get_kprobe) and makes it current_kprobe";
    case FsmNode::hit_active:
      return "KPROBE_HIT_ACTIVE: the pre_handler runs: " +
             (p ? pre_handler(*p) : std::string("the probe's pre_handler"));
    case FsmNode::hit_ss: {
      std::string insn = pt ? "`" + pt->insn.text + "`" : std::string("the probed instruction");
      std::replace(insn.begin(), insn.end(), '\t', ' ');
      if (pt && !pt->slot) return "KPROBE_HIT_SS: " + insn + " is emulated by the kernel (simulate_*), no slot";
      const std::string slot = pt ? " at " + m.symbols().format(pt->slot) : std::string();
      std::string end = classic ? "RFLAGS.TF raises a debug trap after it (classic single-step)"
                                : std::string("the ") + bp + " after it traps back";
      if (pt && pt->insn.boostable == 1) end = "the jump after it returns to " + m.symbols().format(pt->addr + pt->insn.len) + " (boosted: no trap)";
      return "KPROBE_HIT_SS: the copy of " + insn + " runs out of line in its slot" + slot + " (setup_singlestep); " + end;
    }
    case FsmNode::hit_ssdone:
      return std::string("KPROBE_HIT_SSDONE: the step is done (") +
             (x86 ? (classic ? "post_kprobe_handler" : "kprobe_post_process") : "post_kprobe_handler") +
             "): the post_handler runs (" +
             (p ? std::string("none: kprobe_events probes have no post_handler") : std::string("if the probe has one")) +
             "), then the CPU resumes after " + where;
    case FsmNode::reenter:
      return "KPROBE_REENTER: a probe hit while another was handled: reenter_kprobe saves current_kprobe "
             "(kprobe_prev), counts the new hit in nmissed, and steps its instruction with no handlers";
  }
  return "";
}

std::string stop_machine_line(Debugger& d) {
  World& w = d.world();
  kprobes::Engine* eng = w.engine();
  if (!eng) return "";
  const kprobes::Patcher& pat = eng->patcher();
  const kprobes::Patcher::StopView v = pat.stop_view();
  if (v.state == kprobes::StopState::none) return "";
  Machine& m = w.machine();
  // The shared state stays at EXIT after the last stopper left: under way
  // only while some CPU still does protocol work.
  bool busy = false;
  for (int c = 0; c < m.cpu_count(); ++c) busy |= !pat.doing(c).empty();
  if (!busy) return "";
  std::string s = std::string("stop_machine (") + kprobes::patching_name(pat.mode()) + "): " +
                  kprobes::stop_state_name(v.state) + ", " + std::to_string(v.thread_ack) + " of " +
                  std::to_string(v.num) + " acks to come (the state moves on when every stopper has acked it).";
  // The CPUs by the state they act on; one with no protocol work is not in
  // its stopper yet, or has left it after EXIT.
  std::string waiting, left;
  for (int c = 0; c < m.cpu_count(); ++c) {
    if (!pat.doing(c).empty()) continue;
    const bool gone = v.state == kprobes::StopState::exit && pat.stop_seen(c) == kprobes::StopState::exit;
    (gone ? left : waiting) += (gone ? (left.empty() ? "" : ", ") : (waiting.empty() ? "" : ", ")) + std::to_string(c);
  }
  for (int k = 1; k <= static_cast<int>(kprobes::StopState::exit); ++k) {
    const auto st = static_cast<kprobes::StopState>(k);
    std::string cpus;
    for (int c = 0; c < m.cpu_count(); ++c)
      if (!pat.doing(c).empty() && pat.stop_seen(c) == st) cpus += (cpus.empty() ? "" : ", ") + std::to_string(c);
    if (cpus.empty()) continue;
    if (st == v.state)
      s += std::string(" On ") + kprobes::stop_state_name(st) + ": CPU " + cpus + ".";
    else
      s += std::string(" Still on ") + kprobes::stop_state_name(st) + " (has not seen the move yet): CPU " + cpus + ".";
  }
  // A CPU whose stopper has not run yet in this stop_machine (seen none).
  std::string fresh;
  for (int c = 0; c < m.cpu_count(); ++c)
    if (!pat.doing(c).empty() && pat.stop_seen(c) == kprobes::StopState::none)
      fresh += (fresh.empty() ? "" : ", ") + std::to_string(c);
  if (!fresh.empty()) s += " In its stopper (or the caller's job), not yet acting on a state: CPU " + fresh + ".";
  if (!waiting.empty()) s += " Not yet in its stopper (its IPI not taken yet): CPU " + waiting + ".";
  if (!left.empty()) s += " Left its stopper after EXIT: CPU " + left + ".";
  return s;
}

}  // namespace ksim::ui
