#include "ui/model/timeline.hpp"

#include <algorithm>

#include "cpu/timing.hpp"
#include "kprobes/patching.hpp"

namespace ksim::ui {

const char* span_kind_name(SpanKind k) {
  switch (k) {
    case SpanKind::running: return "running";
    case SpanKind::idle: return "idle";
    case SpanKind::trap: return "breakpoint trap";
    case SpanKind::hit_active: return "KPROBE_HIT_ACTIVE";
    case SpanKind::hit_ss: return "KPROBE_HIT_SS";
    case SpanKind::hit_ssdone: return "KPROBE_HIT_SSDONE";
    case SpanKind::reenter: return "KPROBE_REENTER";
    case SpanKind::patching: return "patching";
    case SpanKind::stopper: return "stop_machine";
    case SpanKind::count: break;
  }
  return "?";
}

namespace {
constexpr uint64_t kStopExit = static_cast<uint64_t>(kprobes::StopState::exit);

SpanKind span_of(FsmNode n) {
  switch (n) {
    case FsmNode::idle: return SpanKind::running;
    case FsmNode::trap: return SpanKind::trap;
    case FsmNode::hit_active: return SpanKind::hit_active;
    case FsmNode::hit_ss: return SpanKind::hit_ss;
    case FsmNode::hit_ssdone: return SpanKind::hit_ssdone;
    case FsmNode::reenter: return SpanKind::reenter;
  }
  return SpanKind::running;
}
}  // namespace

void TimelineIndex::open(Lane& l, uint64_t c, SpanKind k, uint32_t ev) {
  close(l, c);
  if (k != SpanKind::running) l.spans.push_back(Span{c, kOpen, k, ev});
}

void TimelineIndex::close(Lane& l, uint64_t c) {
  if (!l.spans.empty() && l.spans.back().end == kOpen) {
    Span& s = l.spans.back();
    s.end = std::max(c, s.begin + 1);
  }
}

void TimelineIndex::add(const EventLog& log, uint32_t i) {
  const EventRec& r = log[i];
  last_cycle_ = std::max(last_cycle_, r.cycle);
  if (r.cpu < 0 || static_cast<size_t>(r.cpu) >= lanes_.size()) return;
  Lane& l = lanes_[static_cast<size_t>(r.cpu)];
  switch (r.kind) {
    case EventKind::idle:
      l.idle = true;
      open(l, r.cycle, SpanKind::idle, i);
      break;
    case EventKind::wake:
      l.idle = false;
      close(l, r.cycle);
      break;
    case EventKind::trap:
    case EventKind::interrupt:
    case EventKind::console:
      l.marks.push_back(Mark{r.cycle, i, r.kind});
      break;
    case EventKind::ipi_send:
      if (r.a < lanes_.size()) {
        arrows_.push_back(Arrow{r.cycle, kOpen, r.cpu, static_cast<int>(r.a), i});
        pending_ipis_[r.a].push_back(static_cast<uint32_t>(arrows_.size() - 1));
      }
      break;
    case EventKind::ipi_recv: {
      auto& q = pending_ipis_[static_cast<size_t>(r.cpu)];
      auto it = std::find_if(q.begin(), q.end(), [&](uint32_t a) { return arrows_[a].from == static_cast<int>(r.a); });
      if (it != q.end()) {
        arrows_[*it].to_cycle = r.cycle;
        q.erase(it);
      }
      l.marks.push_back(Mark{r.cycle, i, r.kind});
      break;
    }
    case EventKind::probe: {
      FsmNode next;
      const std::string& what = log.text(r);
      if (!fsm_after(what, l.state, l.saved, next)) {
        // A probe operation charged to this CPU, or a step of a patching
        // protocol it executes (kprobes/patching.hpp): a tick.
        // The jump optimizer's steps (kprobes/optprobe.cpp) are ticks too:
        // queued, its grace period, the jump written, hits through it, the
        // jump taken out, the detour buffer freed.
        static const char* const kTicks[] = {"register", "unregister", "arm", "disarm", "patch-begin", "patch-done",
                                             "sync-ack", "sync_core", "fence.i", "stop_machine", "stop_machine-done",
                                             "text-write", "poke-int3", "slot-free", "optimize-queued",
                                             "optimize-refused", "optimizer", "synchronize_rcu_tasks", "optimize", "optimized",
                                             "optimized-hit", "unoptimize", "unoptimize-rest",
                                             "detour-free"};
        if (std::any_of(std::begin(kTicks), std::end(kTicks), [&](const char* t) { return what == t; }))
          l.marks.push_back(Mark{r.cycle, i, r.kind});
        patching_span(l, r, what, i);
        band(r, what, i);
        break;
      }
      if (next == FsmNode::reenter) l.saved = l.state;
      open(l, r.cycle, span_of(next), i);
      l.state = next;
      if (next == FsmNode::hit_ssdone) {
        // SSDONE is left at once: the engine resumes the guest in the same
        // phase. Its span shows the resume cost the CPU is charged
        // (cpu/timing.hpp), as no event marks the return to guest code.
        close(l, r.cycle + timing::kKprobeResumeCycles);
        l.state = FsmNode::idle;
      }
      break;
    }
    default: break;
  }
}

// The patching work a CPU does, as spans: its job from patch-begin to
// patch-done, and inside it (or alone, on the other CPUs) stop_machine
// from the first state the CPU acts on to MULTI_STOP_EXIT.
void TimelineIndex::patching_span(Lane& l, const EventRec& r, const std::string& what, uint32_t i) {
  if (what == "patch-begin") {
    l.in_job = true;
    open(l, r.cycle, SpanKind::patching, i);
  } else if (what == "patch-done") {
    l.in_job = false;
    if (!l.in_stop) close(l, r.cycle);
  } else if (what == "stop_machine") {
    if (!l.in_stop) {
      l.in_stop = true;
      open(l, r.cycle, SpanKind::stopper, i);
    }
    if (r.b == kStopExit) {
      l.in_stop = false;
      if (l.in_job)
        open(l, r.cycle, SpanKind::patching, i);
      else
        close(l, r.cycle);
    }
  }
}

void TimelineIndex::band(const EventRec& r, const std::string& what, uint32_t i) {
  const bool tasks = what.rfind("tasks-", 0) == 0;
  const std::string w = tasks ? what.substr(6) : what;
  if (w == "gp-start") {
    bands_.push_back(Band{r.cycle, kOpen, tasks, i});
  } else if (w == "gp-end") {
    for (auto it = bands_.rbegin(); it != bands_.rend(); ++it)
      if (it->tasks == tasks && it->end == kOpen) {
        it->end = std::max(r.cycle, it->begin + 1);
        break;
      }
  }
}

void TimelineIndex::bands_in(uint64_t c0, uint64_t c1, std::vector<const Band*>& out) const {
  out.clear();
  for (const Band& b : bands_)
    if (b.begin < c1 && (b.end == kOpen || b.end > c0)) out.push_back(&b);
}

void TimelineIndex::sync(const EventLog& log, int cpus) {
  if (log.generation() != generation_ || lanes_.size() != static_cast<size_t>(cpus) || log.size() < seen_) {
    lanes_.assign(static_cast<size_t>(cpus), Lane{});
    arrows_.clear();
    bands_.clear();
    pending_ipis_.assign(static_cast<size_t>(cpus), {});
    seen_ = 0;
    last_cycle_ = 0;
    generation_ = log.generation();
  }
  for (; seen_ < log.size(); ++seen_) add(log, static_cast<uint32_t>(seen_));
}

void TimelineIndex::bin_lane(int cpu, double c0, double cpp, int width, uint64_t now, std::vector<Cell>& out) const {
  out.assign(static_cast<size_t>(std::max(width, 0)), Cell{});
  const Lane& l = lanes_[static_cast<size_t>(cpu)];
  for (int x = 0; x < width; ++x) {
    const double fa = c0 + x * cpp, fb = c0 + (x + 1) * cpp;
    if (fb <= 0) continue;
    const uint64_t a = fa < 0 ? 0 : static_cast<uint64_t>(fa);
    uint64_t b = static_cast<uint64_t>(fb);
    if (b <= a) b = a + 1;
    Cell& cell = out[static_cast<size_t>(x)];
    if (a >= now) continue;
    cell.valid = true;
    // Spans are sorted and disjoint: by begin and by end alike.
    auto first = std::upper_bound(l.spans.begin(), l.spans.end(), a,
                                  [](uint64_t c, const Span& s) { return c < s.end; });
    auto last = std::lower_bound(first, l.spans.end(), b, [](const Span& s, uint64_t c) { return s.begin < c; });
    cell.spans = static_cast<uint32_t>(last - first);
    if (cell.spans) {
      SpanKind best = first->kind;
      int n = 0;
      for (auto it = first; it != last && n < 8; ++it, ++n)
        if (it->kind > best) best = it->kind;
      cell.strongest = best;
      if (cell.spans == 1) {
        cell.span = first->kind;
      } else {
        const uint64_t mid = a + (b - a) / 2;
        auto at = std::upper_bound(first, last, mid, [](uint64_t c, const Span& s) { return c < s.end; });
        cell.span = at != last && at->begin <= mid ? at->kind : SpanKind::running;
      }
    }
    auto m0 = std::lower_bound(l.marks.begin(), l.marks.end(), a, [](const Mark& m, uint64_t c) { return m.cycle < c; });
    auto m1 = std::lower_bound(m0, l.marks.end(), b, [](const Mark& m, uint64_t c) { return m.cycle < c; });
    cell.marks = static_cast<uint32_t>(m1 - m0);
    if (cell.marks) cell.mark_kind = m0->kind;
  }
}

void TimelineIndex::arrows_in(uint64_t c0, uint64_t c1, uint64_t min_gap, std::vector<const Arrow*>& out) const {
  out.clear();
  auto it = std::lower_bound(arrows_.begin(), arrows_.end(), c0,
                             [](const Arrow& a, uint64_t c) { return a.from_cycle < c; });
  uint64_t next_ok = 0;
  for (; it != arrows_.end() && it->from_cycle < c1; ++it) {
    if (it->from_cycle < next_ok) {  // sub-pixel: skip ahead by binary search
      it = std::lower_bound(it, arrows_.end(), next_ok, [](const Arrow& a, uint64_t c) { return a.from_cycle < c; });
      if (it == arrows_.end() || it->from_cycle >= c1) break;
    }
    out.push_back(&*it);
    next_ok = it->from_cycle + std::max<uint64_t>(min_gap, 1);
  }
}

size_t TimelineIndex::hit_test(int cpu, uint64_t cycle, uint64_t tol) const {
  if (cpu < 0 || cpu >= lanes()) return EventLog::npos;
  const Lane& l = lanes_[static_cast<size_t>(cpu)];
  size_t best = EventLog::npos;
  uint64_t best_d = tol + 1;
  auto consider = [&](uint64_t c, uint32_t ev) {
    const uint64_t d = c > cycle ? c - cycle : cycle - c;
    if (d < best_d) {
      best_d = d;
      best = ev;
    }
  };
  const uint64_t lo = cycle > tol ? cycle - tol : 0;
  for (auto it = std::lower_bound(l.marks.begin(), l.marks.end(), lo,
                                  [](const Mark& m, uint64_t c) { return m.cycle < c; });
       it != l.marks.end() && it->cycle <= cycle + tol; ++it)
    consider(it->cycle, it->event);
  for (auto it = std::lower_bound(l.spans.begin(), l.spans.end(), lo,
                                  [](const Span& s, uint64_t c) { return s.begin < c; });
       it != l.spans.end() && it->begin <= cycle + tol; ++it)
    consider(it->begin, it->event);
  return best;
}

std::string describe_event(const EventLog& log, size_t i, const SymbolTable& syms) {
  if (i >= log.size()) return "";
  const EventRec& r = log[i];
  std::string s = "cycle " + std::to_string(r.cycle) + ", CPU " + std::to_string(r.cpu) + ": ";
  switch (r.kind) {
    case EventKind::trap:
      s += "trap cause " + std::to_string(r.a) + " at " + syms.format(r.c) + (r.sub ? " (handled by a hook)" : "");
      break;
    case EventKind::interrupt: s += "interrupt cause " + std::to_string(r.a) + " at " + syms.format(r.c); break;
    case EventKind::console: s += "console: " + log.text(r); break;
    case EventKind::ipi_send: s += "IPI to CPU " + std::to_string(r.a); break;
    case EventKind::ipi_recv: s += "IPI from CPU " + std::to_string(r.a); break;
    case EventKind::idle: s += "idle"; break;
    case EventKind::wake: s += "wakes"; break;
    case EventKind::exit: s += "exit: " + log.text(r); break;
    case EventKind::probe: s += "probe " + log.text(r) + " at " + syms.format(r.a); break;
    case EventKind::insn: s += "instruction"; break;
    case EventKind::probe_op: s += "probe operation: " + log.text(r); break;
    case EventKind::stale_fetch:
      s += "stale fetch at " + syms.format(r.a) + " (does not see CPU " + std::to_string(static_cast<int64_t>(r.c)) +
           "'s store of cycle " + std::to_string(r.b) + ")";
      break;
    case EventKind::code_sync: s += "code sync (" + std::to_string(r.a) + " stale stores dropped)"; break;
    case EventKind::cache_miss: {
      static const char* const kAccess[] = {"load", "store", "fetch", "upgrade"};
      s += std::string(r.b < 4 ? kAccess[r.b] : "access") + " miss on line " + syms.format(r.a) + " from " +
           (r.c >= kFromCpu ? "CPU " + std::to_string(r.c - kFromCpu) : r.c == kFromL2 ? "the L2" : "memory");
      break;
    }
  }
  return s;
}

void TimelineRange::zoom(double factor, double anchor) {
  c0 = anchor - (anchor - c0) * factor;
  c1 = anchor + (c1 - anchor) * factor;
  if (c1 - c0 < 16) c1 = c0 + 16;
}

void TimelineRange::pan(double pixels, double width) {
  const double d = pixels * cycles_per_pixel(width);
  c0 -= d;
  c1 -= d;
}

void TimelineRange::clamp(double lo, double hi) {
  const double w = c1 - c0;
  if (c0 < lo) {
    c0 = lo;
    c1 = lo + w;
  }
  if (c1 > hi && hi - w >= lo) {
    c1 = hi;
    c0 = hi - w;
  }
}

}  // namespace ksim::ui
