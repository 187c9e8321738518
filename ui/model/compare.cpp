#include "ui/model/compare.hpp"

#include <algorithm>
#include <vector>

#include "ui/model/timeline.hpp"

namespace ksim::ui {

namespace {

bool same(const EventLog& la, size_t i, const EventLog& lb, size_t j) {
  const EventRec& a = la[i];
  const EventRec& b = lb[j];
  return a.cycle == b.cycle && a.cpu == b.cpu && a.kind == b.kind && a.sub == b.sub && a.a == b.a && a.b == b.b &&
         a.c == b.c && la.text(a) == lb.text(b);
}

}  // namespace

// The log's events by (cycle, CPU), the log's order kept among equals: the
// log is in delivery order, in which an engine's event stamped later can
// come before another CPU's earlier one.
std::vector<size_t> by_time(const EventLog& log) {
  std::vector<size_t> order(log.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    return log[x].cycle != log[y].cycle ? log[x].cycle < log[y].cycle : log[x].cpu < log[y].cpu;
  });
  return order;
}

Difference first_difference(Debugger& a, Debugger& b) {
  a.run_to_end();
  b.run_to_end();
  const EventLog& la = a.log();
  const EventLog& lb = b.log();
  const std::vector<size_t> oa = by_time(la), ob = by_time(lb);
  Difference d;
  const size_t n = std::min(oa.size(), ob.size());
  size_t i = 0;
  while (i < n && same(la, oa[i], lb, ob[i])) ++i;
  if (i == oa.size() && i == ob.size()) return d;
  d.found = true;
  d.index = i;
  const SymbolTable& sa = a.world().machine().symbols();
  const SymbolTable& sb = b.world().machine().symbols();
  const bool has_a = i < oa.size(), has_b = i < ob.size();
  d.a = has_a ? describe_event(la, oa[i], sa) : "(no more events: the run ended)";
  d.b = has_b ? describe_event(lb, ob[i], sb) : "(no more events: the run ended)";
  d.cycle = has_a && has_b ? std::min(la[oa[i]].cycle, lb[ob[i]].cycle) : has_a ? la[oa[i]].cycle : lb[ob[i]].cycle;
  d.cpu = has_a && (!has_b || la[oa[i]].cycle <= lb[ob[i]].cycle) ? la[oa[i]].cpu : lb[ob[i]].cpu;
  return d;
}

}  // namespace ksim::ui
