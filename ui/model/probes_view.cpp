#include "ui/model/probes_view.hpp"

namespace ksim::ui {

std::vector<ProbeRow> probe_rows(Debugger& d) {
  std::vector<ProbeRow> rows;
  World& w = d.world();
  if (!w.session()) return rows;
  for (const auto& p : w.session()->probes()) {
    const kprobes::Kprobe& kp = p->rp ? p->rp->kp : *p->kp;
    ProbeRow r;
    r.event = p->spec.group + "/" + p->spec.event;
    r.definition = p->spec.describe();
    r.type = p->rp ? 'r' : 'k';
    r.removed = kp.rec == nullptr;
    r.addr = kp.rec && kp.rec->point ? kp.rec->point->addr : 0;
    r.where = r.addr ? w.machine().symbols().format(r.addr) : p->spec.symbol;
    r.disabled = (kp.flags & kprobes::kFlagDisabled) != 0;
    r.hits = p->hits();
    r.nmissed = p->nmissed();
    r.action = p->action.text.empty() ? "log" : p->action.text;
    rows.push_back(std::move(r));
  }
  return rows;
}

std::vector<ScriptOpRow> script_ops(Debugger& d) {
  std::vector<ScriptOpRow> rows;
  const kprobes::ProbeOpQueue* q = d.world().script();
  if (!q) return rows;
  for (size_t i = 0; i < q->ops().size(); ++i) {
    const kprobes::events::ProbeOp& op = q->ops()[i];
    rows.push_back({op.cycle, op.text, op.line, i < q->performed()});
  }
  return rows;
}

std::string kprobes_list(Debugger& d) { return d.world().engine() ? d.world().engine()->list() : std::string(); }

bool kprobes_enabled(Debugger& d) { return !d.world().engine() || d.world().engine()->enabled(); }

}  // namespace ksim::ui
