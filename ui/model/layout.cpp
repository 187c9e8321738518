#include "ui/model/layout.hpp"

#include <algorithm>

namespace ksim::ui {

const std::vector<Layout>& layouts() {
  // Each lesson's windows tile the screen without overlap
  // (view_model_test checks it); the Code window is widest where the
  // lesson is about code (a hit's slot, a torn jump).
  static const std::vector<Layout> l = {
      {"overview", Lesson::overview, "every window",
       {{"Control", 0, 0, .34f, .24f},
        {"CPUs", 0, .24f, .34f, .41f},
        {"Code", .34f, 0, .36f, .43f},
        {"Memory", .34f, .43f, .36f, .22f},
        {"Probes", .70f, 0, .30f, .21f},
        {"Probe state machine", .70f, .21f, .30f, .44f},
        {"Timeline", 0, .65f, .70f, .35f},
        {"Console", .70f, .65f, .30f, .35f}}},
      {"hit", Lesson::hit, "a probe hit: the slot, the state machine, the hit's spans",
       {{"Control", 0, 0, .30f, .22f},
        {"CPUs", 0, .22f, .30f, .43f},
        {"Code", .30f, 0, .40f, .65f},
        {"Probe state machine", .70f, 0, .30f, .45f},
        {"Probes", .70f, .45f, .30f, .20f},
        {"Timeline", 0, .65f, .70f, .35f},
        {"Console", .70f, .65f, .30f, .35f}}},
      {"race", Lesson::race, "a race: what it tests, the offending instruction, the CPUs around it",
       {{"Race", 0, 0, .32f, .28f},
        {"Control", 0, .28f, .32f, .22f},
        {"CPUs", 0, .50f, .32f, .25f},
        {"Code", .32f, 0, .68f, .45f},
        {"Probe state machine", .32f, .45f, .34f, .30f},
        {"Probes", .66f, .45f, .34f, .30f},
        {"Timeline", 0, .75f, 1, .25f}}},
      {"stop-machine", Lesson::stop_machine, "stop_machine: every CPU's state, the patch, the timeline",
       {{"Control", 0, 0, .34f, .22f},
        {"CPUs", 0, .22f, .34f, .43f},
        {"Code", .34f, 0, .38f, .65f},
        {"Probes", .72f, 0, .28f, .30f},
        {"Console", .72f, .30f, .28f, .35f},
        {"Timeline", 0, .65f, 1, .35f}}},
      {"compare", Lesson::compare, "two runs on one cycle axis: where they part, both runs' CPUs",
       {{"Control", 0, 0, .32f, .24f},
        {"Compare", 0, .24f, .32f, .41f},
        {"Code", .32f, 0, .36f, .65f},
        {"CPUs", .68f, 0, .32f, .65f},
        {"Timeline", 0, .65f, 1, .35f}}},
  };
  return l;
}

const Layout* find_layout(const std::string& name) {
  for (const Layout& l : layouts())
    if (name == l.name) return &l;
  return nullptr;
}

std::string layout_names() {
  std::string s;
  const auto& l = layouts();
  // The lessons first, the overview last.
  for (size_t i = 1; i < l.size(); ++i) s += std::string(l[i].name) + (i + 1 < l.size() ? ", " : " or ");
  return s + l[0].name;
}

std::optional<WindowPlace> place_of(const Layout& l, const std::string& window) {
  for (const WindowPlace& p : l.places)
    if (window == p.window) return p;
  return std::nullopt;
}

namespace {

bool hit_kind(SpanKind k) {
  return k == SpanKind::trap || k == SpanKind::hit_active || k == SpanKind::hit_ss || k == SpanKind::hit_ssdone ||
         k == SpanKind::reenter;
}

// [begin, end) widened by its own length on each side, at least `least`
// cycles in all.
TimelineRange around(uint64_t begin, uint64_t end, uint64_t least) {
  const uint64_t len = std::max<uint64_t>(end - begin, 1);
  uint64_t pad = len;
  if (len + 2 * pad < least) pad = (least - len) / 2;
  TimelineRange r;
  r.c0 = static_cast<double>(begin > pad ? begin - pad : 0);
  r.c1 = static_cast<double>(end + pad);
  return r;
}

}  // namespace

TimelineRange lesson_range(Lesson lesson, const TimelineIndex& t, uint64_t here, int cpu) {
  const uint64_t last = std::max<uint64_t>(t.last_cycle(), here);
  auto closed = [&](const Span& s) { return s.end == TimelineIndex::kOpen ? last : s.end; };
  switch (lesson) {
    case Lesson::hit:
      if (cpu >= 0 && cpu < t.lanes()) {
        // The last run of hit spans on the lane that began at or before here.
        const auto& spans = t.spans(cpu);
        for (size_t i = spans.size(); i-- > 0;) {
          if (!hit_kind(spans[i].kind) || spans[i].begin > here) continue;
          size_t first = i;
          while (first > 0 && hit_kind(spans[first - 1].kind) && spans[first - 1].end == spans[first].begin) --first;
          size_t lastk = i;
          while (lastk + 1 < spans.size() && hit_kind(spans[lastk + 1].kind) &&
                 spans[lastk + 1].begin == closed(spans[lastk]))
            ++lastk;
          return around(spans[first].begin, closed(spans[lastk]), 400);
        }
      }
      return around(here > 2000 ? here - 2000 : 0, here, 2500);
    case Lesson::stop_machine: {
      // The stopper and patching spans of every CPU that overlap the one
      // nearest `here` (at or before it).
      uint64_t b = ~uint64_t{0}, e = 0;
      for (int c = 0; c < t.lanes(); ++c)
        for (const Span& s : t.spans(c))
          if ((s.kind == SpanKind::stopper || s.kind == SpanKind::patching) && s.begin <= here &&
              (b == ~uint64_t{0} || s.begin > b))
            b = s.begin;
      if (b == ~uint64_t{0}) return around(here > 2000 ? here - 2000 : 0, here, 2500);
      uint64_t lo = b, hi = b;
      for (int c = 0; c < t.lanes(); ++c)
        for (const Span& s : t.spans(c))
          if ((s.kind == SpanKind::stopper || s.kind == SpanKind::patching) && s.begin <= b && closed(s) >= b) {
            lo = std::min(lo, s.begin);
            hi = std::max(hi, closed(s));
          }
      for (int c = 0; c < t.lanes(); ++c)  // every CPU's span of that stop_machine
        for (const Span& s : t.spans(c))
          if ((s.kind == SpanKind::stopper || s.kind == SpanKind::patching) && s.begin >= lo && s.begin <= hi)
            hi = std::max(hi, closed(s));
      return around(lo, hi, 1000);
    }
    case Lesson::race:
      return around(here > 3000 ? here - 3000 : 0, here, 4000);
    case Lesson::compare:
      return around(here > 2000 ? here - 2000 : 0, here + 2000, 4000);
    case Lesson::overview:
      break;
  }
  TimelineRange r;
  r.c0 = 0;
  r.c1 = static_cast<double>(std::max<uint64_t>(last, 1000));
  return r;
}

}  // namespace ksim::ui
