#include "kprobes/session.hpp"

#include <cinttypes>
#include <cstdlib>

#include "cpu/cpu.hpp"
#include "cpu/timing.hpp"
#include "kprobes/events/fetch_args.hpp"
#include "kprobes/events/trace_line.hpp"
#include "sim/elf/symbols.hpp"

namespace ksim::kprobes {

namespace {

bool parse_number(const std::string& s, uint64_t& out) {
  if (s.empty()) return false;
  const char* p = s.c_str();
  bool neg = *p == '-';
  if (neg) ++p;
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(p, &end, 0);
  if (errno || end == p || *end) return false;
  out = neg ? static_cast<uint64_t>(-static_cast<int64_t>(v)) : v;
  return true;
}

}  // namespace

Action parse_action(const std::string& text, const Arch& arch) {
  Action a;
  a.text = text;
  auto bad = [&](const std::string& why) { return SessionError("bad probe action '" + text + "': " + why); };
  if (text == "log") return a;
  if (text == "count") {
    a.kind = Action::Kind::count;
    return a;
  }
  if (text.rfind("set:", 0) == 0) {
    std::string rest = text.substr(4);
    size_t eq = rest.find('=');
    if (eq == std::string::npos || rest.empty() || rest[0] != '%') throw bad("expected set:%REG=VALUE");
    std::string reg = rest.substr(1, eq - 1);
    a.reg = arch.reg_index(reg);
    if (a.reg == -1) throw bad("unknown register '" + reg + "'");
    if (a.reg == -2) throw bad("the PC cannot be set this way (the step would overwrite it); use override");
    if (a.reg == 0 && arch.isa() == Isa::rv64) throw bad("x0 is hard-wired to zero");
    if (!parse_number(rest.substr(eq + 1), a.value)) throw bad("bad value '" + rest.substr(eq + 1) + "'");
    a.kind = Action::Kind::set_reg;
    return a;
  }
  if (text.rfind("override:", 0) == 0) {
    if (!parse_number(text.substr(9), a.value)) throw bad("bad value '" + text.substr(9) + "'");
    a.kind = Action::Kind::override_ret;
    return a;
  }
  throw bad("expected log, count, set:%REG=VALUE or override:VALUE");
}

ProbeSession::ProbeSession(Engine& engine, Sink sink) : eng_(engine), sink_(std::move(sink)) {}

ProbeSession::~ProbeSession() {
  for (auto& p : probes_) {
    if (p->removed) continue;
    if (p->rp)
      eng_.unregister_kretprobe(*p->rp);
    else
      eng_.unregister_kprobe(*p->kp);
  }
}

SessionProbe& ProbeSession::add(const std::string& text) {
  return add(events::parse_probe_spec(text, eng_.arch()));
}

SessionProbe& ProbeSession::add(events::ProbeSpec spec) {
  auto sp = std::make_unique<SessionProbe>();
  sp->spec = std::move(spec);
  const std::string& text = sp->spec.source;
  events::check_fetch_symbols(sp->spec, eng_.machine().symbols());
  for (auto& other : probes_)
    if (!other->removed && other->spec.group == sp->spec.group && other->spec.event == sp->spec.event)
      throw events::SpecError(text, 0, "event '" + sp->spec.group + "/" + sp->spec.event + "' already exists");
  SessionProbe* p = sp.get();
  Kprobe* kp;
  if (p->spec.is_return()) {
    p->rp = std::make_unique<Kretprobe>();
    p->rp->maxactive = p->spec.maxactive;
    p->rp->handler = [this, p](KretprobeInstance& ri, Cpu& cpu) {
      on_hit(*p, cpu, true, ri.ret_addr);
      return 0;
    };
    kp = &p->rp->kp;
  } else {
    p->kp = std::make_unique<Kprobe>();
    p->kp->pre_handler = [this, p](Kprobe&, Cpu& cpu) {
      on_hit(*p, cpu, false, 0);
      if (p->action.kind != Action::Kind::override_ret) return 0;
      // Return to the caller at once with the value (function entry only,
      // checked in set_action).
      const Arch& a = eng_.arch();
      uint64_t ret = 0;
      if (!a.return_address(cpu, eng_.machine().bus(), ret)) return 0;
      uint64_t sp_now = a.stack_pointer(cpu);
      a.set_retval(cpu, p->action.value);
      cpu.set_gpr(a.reg_index("sp"), a.sp_after_return(sp_now));
      cpu.set_pc(ret);
      return 1;
    };
    kp = p->kp.get();
  }
  if (p->spec.has_addr)
    kp->addr = p->spec.addr;
  else {
    kp->symbol_name = p->spec.symbol;
    kp->offset = p->spec.offset;
  }
  int err = p->rp ? eng_.register_kretprobe(*p->rp) : eng_.register_kprobe(*p->kp);
  if (err < 0) throw SessionError("cannot probe '" + text + "': " + eng_.last_error());
  probes_.push_back(std::move(sp));
  return *p;
}

SessionProbe* ProbeSession::find(const std::string& group, const std::string& event) const {
  SessionProbe* found = nullptr;
  for (const auto& p : probes_) {
    if (p->removed || p->spec.event != event || (!group.empty() && p->spec.group != group)) continue;
    if (found) throw SessionError("several probes are named '" + event + "': give GROUP/EVENT");
    found = p.get();
  }
  return found;
}

void ProbeSession::remove(SessionProbe& p) {
  if (p.removed) return;
  if (p.rp)
    eng_.unregister_kretprobe(*p.rp);
  else
    eng_.unregister_kprobe(*p.kp);
  p.removed = true;
}

void ProbeSession::set_enabled(SessionProbe& p, bool on) {
  Kprobe& kp = p.rp ? p.rp->kp : *p.kp;
  if ((on ? eng_.enable_kprobe(kp) : eng_.disable_kprobe(kp)) < 0)
    throw SessionError(std::string(on ? "cannot enable " : "cannot disable ") + p.spec.event + ": " +
                       eng_.last_error());
}

void ProbeSession::set_action(const std::string& event, const std::string& action) {
  // EVENT, or GRP/EVENT when two groups have an event of that name.
  const size_t slash = event.find('/');
  const std::string group = slash == std::string::npos ? "" : event.substr(0, slash);
  const std::string name = slash == std::string::npos ? event : event.substr(slash + 1);
  int matches = 0;
  for (auto& p : probes_)
    if (!p->removed && p->spec.event == name && (group.empty() || p->spec.group == group)) ++matches;
  if (matches > 1)
    throw SessionError("--probe-action: several probes are named '" + event + "': give GROUP/EVENT");
  for (auto& p : probes_) {
    if (p->removed || p->spec.event != name || (!group.empty() && p->spec.group != group)) continue;
    Action a = parse_action(action, eng_.arch());
    if (a.kind == Action::Kind::override_ret && !p->rp) {
      const Symbol* f = eng_.machine().symbols().containing(p->kp->rec ? p->kp->rec->point->addr : 0);
      if (!f || !p->kp->rec || f->addr != p->kp->rec->point->addr)
        throw SessionError("bad probe action '" + action + "' for " + event +
                           ": override needs a probe at a function's entry");
    }
    p->action = a;
    // An override returns from the function: its probe cannot be optimized.
    const bool moves = a.kind == Action::Kind::override_ret && !p->rp;
    if (p->kp && p->kp->moves_pc != moves) {
      p->kp->moves_pc = moves;
      eng_.reconsider(*p->kp);
    }
    return;
  }
  throw SessionError("--probe-action: no probe event named '" + event + "'");
}

void ProbeSession::set_action(const std::string& assignment) {
  size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw SessionError("--probe-action wants EVENT=ACTION, not '" + assignment + "'");
  set_action(assignment.substr(0, eq), assignment.substr(eq + 1));
}

void ProbeSession::on_hit(SessionProbe& p, Cpu& cpu, bool at_return, uint64_t ret_ip) {
  const Action& a = p.action;
  const Arch& arch = eng_.arch();
  if (a.kind == Action::Kind::set_reg) {
    if (a.reg == -2)
      cpu.set_pc(a.value);
    else
      cpu.set_gpr(a.reg, a.value);
  } else if (a.kind == Action::Kind::override_ret && at_return) {
    arch.set_retval(cpu, a.value);
  }
  if (a.kind == Action::Kind::count) return;
  Engine::Task task = eng_.current_task(cpu.id());
  events::FetchContext ctx{cpu, eng_.machine().bus(), arch, eng_.machine().symbols(), at_return,
                           events::TaskInfo{task.comm, task.tid}};
  events::HitLine line;
  line.comm = task.comm;
  line.pid = task.tid;
  line.cpu = cpu.id();
  line.cycle = cpu.cycle();
  line.event = p.spec.event;
  line.is_return = at_return;
  const uint64_t addr = p.kp ? (p.kp->rec ? p.kp->rec->point->addr : 0) : (p.rp->kp.rec ? p.rp->kp.rec->point->addr : 0);
  line.ip = at_return ? ret_ip : addr;
  line.func = addr;
  line.args = events::format_args(p.spec, ctx);
  cpu.add_cycles(timing::kRecordEventCycles + timing::kFetchArgCycles * p.spec.args.size());
  ++p.lines;
  if (sink_) sink_(events::format_hit_line(line, eng_.machine().symbols()));
}

uint64_t ProbeSession::total_hits() const {
  uint64_t n = 0;
  for (const auto& p : probes_) n += p->hits();
  return n;
}

uint64_t ProbeSession::total_missed() const {
  uint64_t n = 0;
  for (const auto& p : probes_) n += p->nmissed();
  return n;
}

std::string ProbeSession::summary() const {
  std::string out;
  for (const auto& p : probes_) {
    char b[64];
    std::snprintf(b, sizeof b, ": hits %" PRIu64 ", nmissed %" PRIu64, p->hits(), p->nmissed());
    out += "  " + p->spec.describe() + b;
    if (p->action.kind != Action::Kind::log) out += ", action " + p->action.text;
    if (p->removed) out += ", removed";
    out += '\n';
  }
  return out;
}

std::string ProbeSession::how_summary() const {
  const Engine& e = eng_;
  const bool x86 = e.arch().isa() == Isa::x86_64;
  std::string out = std::string("kprobes: ") + (e.mode() == StepMode::classic ? "classic" : "modern") +
                    " stepping, " + (e.locking() == Locking::spinlock ? "spinlock" : "rcu") + " locking, patching " +
                    patching_name(e.patching()) + (x86 ? std::string(", booster ") + (e.boost() ? "on" : "off") : "") +
                    ", jump optimization " + (e.optimization() ? "on" : "off") + ", kretprobe return by " +
                    (e.rethook() ? "rethook" : "trampoline breakpoint") + "\n";
  for (const auto& p : probes_) {
    const Kprobe& kp = p->rp ? p->rp->kp : *p->kp;
    char where[32];
    std::snprintf(where, sizeof where, "0x%" PRIx64, p->spec.addr);
    out += "  " + p->spec.event + " at " + (p->spec.has_addr ? std::string(where) : p->spec.symbol) + ": ";
    if (p->removed || !kp.rec || !kp.rec->point) {
      out += "removed\n";
      continue;
    }
    const ProbePoint& pt = *kp.rec->point;
    char b[96];
    if (pt.opt == ProbePoint::Opt::optimized)
      out += "jump-optimized (a jump to its detour buffer; no trap)";
    else if (pt.opt == ProbePoint::Opt::optimizing || pt.opt == ProbePoint::Opt::queued)
      out += "being optimized";
    else if (!pt.slot)
      out += "emulated (no slot)";
    else
      out += "stepped out of line in its slot";
    if (pt.boosted_hits) {
      std::snprintf(b, sizeof b, ", %" PRIu64 " hits boosted (no trap after the copy)", pt.boosted_hits);
      out += b;
    }
    out += '\n';
  }
  return out;
}

}  // namespace ksim::kprobes
