#include "ui/model/fsm_view.hpp"

#include <algorithm>

namespace ksim::ui {

const char* fsm_node_name(FsmNode n) {
  switch (n) {
    case FsmNode::idle: return "idle";
    case FsmNode::trap: return "breakpoint trap";
    case FsmNode::hit_active: return "KPROBE_HIT_ACTIVE";
    case FsmNode::hit_ss: return "KPROBE_HIT_SS";
    case FsmNode::hit_ssdone: return "KPROBE_HIT_SSDONE";
    case FsmNode::reenter: return "KPROBE_REENTER";
  }
  return "?";
}

const char* fsm_node_short_name(FsmNode n) {
  switch (n) {
    case FsmNode::idle: return "idle";
    case FsmNode::trap: return "bp trap";
    case FsmNode::hit_active: return "HIT_ACTIVE";
    case FsmNode::hit_ss: return "HIT_SS";
    case FsmNode::hit_ssdone: return "HIT_SSDONE";
    case FsmNode::reenter: return "REENTER";
  }
  return "?";
}

const std::vector<FsmArrangement>& fsm_arrangements() {
  static const std::vector<FsmNodeLayout> two_rows = {
      {FsmNode::idle, 0.1f, 0.12f},        {FsmNode::trap, 0.5f, 0.12f},   {FsmNode::hit_active, 0.84f, 0.12f},
      {FsmNode::hit_ssdone, 0.16f, 0.88f}, {FsmNode::hit_ss, 0.5f, 0.88f}, {FsmNode::reenter, 0.84f, 0.88f}};
  static const std::vector<FsmNodeLayout> three_rows = {
      {FsmNode::idle, 0.08f, 0.08f},       {FsmNode::trap, 0.45f, 0.08f},  {FsmNode::hit_active, 0.86f, 0.08f},
      {FsmNode::reenter, 0.86f, 0.5f},     {FsmNode::hit_ssdone, 0.15f, 0.92f}, {FsmNode::hit_ss, 0.6f, 0.92f}};
  static const std::vector<FsmArrangement> a = {{two_rows, false}, {three_rows, false}, {two_rows, true}};
  return a;
}

const std::vector<FsmEdge>& fsm_edges() {
  static const std::vector<FsmEdge> e = {
      {FsmNode::idle, FsmNode::trap, "break"},
      {FsmNode::trap, FsmNode::hit_active, "pre"},
      {FsmNode::trap, FsmNode::idle, "stray"},
      {FsmNode::hit_active, FsmNode::hit_ss, "step"},
      {FsmNode::hit_active, FsmNode::idle, "no step"},  // redirect, boost, detour
      {FsmNode::hit_ss, FsmNode::hit_ssdone, "post"},
      {FsmNode::hit_ssdone, FsmNode::idle, "resume"},
      {FsmNode::hit_active, FsmNode::reenter, "reentry"},
      {FsmNode::reenter, FsmNode::hit_active, "restore"},
  };
  return e;
}

bool fsm_after(const std::string& what, FsmNode before, FsmNode prev_saved, FsmNode& after) {
  if (what == "trap") after = FsmNode::trap;
  else if (what == "KPROBE_HIT_ACTIVE") after = FsmNode::hit_active;
  else if (what == "KPROBE_HIT_SS" || what == "emulate") after = FsmNode::hit_ss;
  else if (what == "KPROBE_HIT_SSDONE") after = FsmNode::hit_ssdone;
  else if (what == "KPROBE_REENTER") after = FsmNode::reenter;
  else if (what == "reenter-done") after = prev_saved;
  // (boost, detour: the hit goes on in a boosted slot or a detour buffer,
  // back in guest code with no step.)
  else if (what == "stray" || what == "foreign" || what == "redirect" || what == "kretprobe-return" ||
           what == "boost" || what == "detour")
    after = FsmNode::idle;
  else return false;
  (void)before;
  return true;
}

std::vector<FsmTransition> fsm_transitions(const EventLog& log, const SymbolTable& syms, int cpu, size_t upto) {
  std::vector<FsmTransition> out;
  FsmNode state = FsmNode::idle, saved = FsmNode::idle;
  const auto& probes = log.of_kind(EventKind::probe);
  for (uint32_t i : probes) {
    if (i >= upto) break;
    const EventRec& r = log[i];
    if (r.cpu != cpu) continue;
    const std::string& what = log.text(r);
    // SSDONE is left at once: the engine resumes the guest in the same phase.
    if (state == FsmNode::hit_ssdone) {
      out.push_back(FsmTransition{i, r.cycle, FsmNode::hit_ssdone, FsmNode::idle, "resume", out.back().where});
      state = FsmNode::idle;
    }
    FsmNode next;
    if (!fsm_after(what, state, saved, next)) continue;
    if (next == FsmNode::reenter) saved = state;
    out.push_back(FsmTransition{i, r.cycle, state, next, what, syms.format(r.a)});
    state = next;
  }
  return out;
}

FsmView fsm_view(Debugger& d, int cpu, size_t max_recent) {
  FsmView v;
  World& w = d.world();
  const SymbolTable& syms = w.machine().symbols();
  if (kprobes::Engine* e = w.engine()) {
    const kprobes::CtlBlk& cb = e->ctlblk(cpu);
    switch (cb.status) {
      case kprobes::KStatus::idle: v.current = cb.phase != kprobes::Phase::none ? FsmNode::trap : FsmNode::idle; break;
      case kprobes::KStatus::hit_active: v.current = FsmNode::hit_active; break;
      case kprobes::KStatus::hit_ss: v.current = FsmNode::hit_ss; break;
      case kprobes::KStatus::hit_ssdone: v.current = FsmNode::hit_ssdone; break;
      case kprobes::KStatus::reenter: v.current = FsmNode::reenter; break;
    }
    if (cb.phase != kprobes::Phase::none) v.phase = kprobes::phase_name(cb.phase);
    if (cb.current) v.current_kprobe = syms.format(cb.current->addr);
    if (cb.prev.point) {
      v.prev_kprobe = syms.format(cb.prev.point->addr);
      v.prev_status = kprobes::status_name(cb.prev.status);
    }
  }
  // Only the recent past: walk back to a breakpoint trap (whose state is
  // known whatever came before) far enough for `max_recent` transitions.
  const EventLog& log = d.log();
  const auto& probes = log.of_kind(EventKind::probe);
  auto it = std::lower_bound(probes.begin(), probes.end(), static_cast<uint32_t>(log.cursor()));
  size_t seen = 0;
  size_t anchor = 0;  // index into `probes` to replay from
  while (it != probes.begin()) {
    --it;
    const EventRec& r = log[*it];
    if (r.cpu != cpu) continue;
    ++seen;
    if (seen > max_recent + 2 && log.text(r) == "trap") {
      anchor = static_cast<size_t>(it - probes.begin());
      break;
    }
  }
  std::vector<FsmTransition> all;
  {
    FsmNode state = FsmNode::idle, saved = FsmNode::idle;
    for (size_t k = anchor; k < probes.size() && probes[k] < log.cursor(); ++k) {
      const uint32_t i = probes[k];
      const EventRec& r = log[i];
      if (r.cpu != cpu) continue;
      const std::string& what = log.text(r);
      if (state == FsmNode::hit_ssdone) {
        all.push_back(FsmTransition{i, r.cycle, FsmNode::hit_ssdone, FsmNode::idle, "resume", ""});
        state = FsmNode::idle;
      }
      FsmNode next;
      if (!fsm_after(what, state, saved, next)) continue;
      if (next == FsmNode::reenter) saved = state;
      all.push_back(FsmTransition{i, r.cycle, state, next, what, ""});
      state = next;
    }
  }
  // Events held for ordering happened already: go on from the last state.
  std::vector<std::pair<uint64_t, Event>> held;  // by (cycle, emission)
  w.machine().events().for_each_held([&](const Event& e, uint64_t seq) {
    if (e.kind == EventKind::probe && e.cpu == cpu) held.push_back({seq, e});
  });
  std::sort(held.begin(), held.end(), [](const auto& a, const auto& b) {
    return a.second.cycle != b.second.cycle ? a.second.cycle < b.second.cycle : a.first < b.first;
  });
  FsmNode state = all.empty() ? FsmNode::idle : all.back().to, saved = FsmNode::idle;
  for (const auto& [seq, e] : held) {
    if (state == FsmNode::hit_ssdone) {
      all.push_back(FsmTransition{EventLog::npos, e.cycle, state, FsmNode::idle, "resume", syms.format(e.a)});
      state = FsmNode::idle;
    }
    FsmNode next;
    if (!fsm_after(e.text, state, saved, next)) continue;
    if (next == FsmNode::reenter) saved = state;
    all.push_back(FsmTransition{EventLog::npos, e.cycle, state, next, e.text, syms.format(e.a)});
    state = next;
  }
  const size_t from = all.size() > max_recent ? all.size() - max_recent : 0;
  v.recent.assign(all.begin() + static_cast<long>(from), all.end());
  for (FsmTransition& t : v.recent)
    if (t.where.empty() && t.event != EventLog::npos) t.where = syms.format(log[t.event].a);
  return v;
}

}  // namespace ksim::ui
