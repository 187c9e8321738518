#include "ui/model/cpu_view.hpp"

#include <algorithm>

#include "cpu/hex.hpp"
#include "cpu/rv64/hart.hpp"
#include "cpu/x86/x86_cpu.hpp"

namespace ksim::ui {

CpuRow cpu_row(Debugger& d, int id) {
  World& w = d.world();
  Machine& m = w.machine();
  Cpu& cpu = m.cpu(id);
  CpuRow r;
  r.id = id;
  r.pc = cpu.pc();
  r.pc_sym = m.symbols().format(r.pc);
  r.pc_line = m.source_lines().describe(r.pc);
  r.pc_changed = d.reg_changed(id, cpu.gpr_count());
  r.cycle = cpu.cycle();
  r.instret = cpu.instret();
  r.steps = cpu.steps();
  if (auto* h = dynamic_cast<rv64::Hart*>(&cpu)) {
    r.priv = h->s.priv == rv64::Priv::M ? "M" : "U";
    r.irq_enabled = (h->s.mstatus & rv64::kMstatusMIE) != 0;
  } else if (auto* x = dynamic_cast<x86::X86Cpu*>(&cpu)) {
    r.priv = "ring " + std::to_string(x->s.cs & 3);
    r.irq_enabled = (x->s.rflags & x86::kIF) != 0;
  }
  for (int i = 0; i < cpu.gpr_count(); ++i) r.regs.push_back(RegRow{cpu.gpr_name(i), cpu.gpr(i), d.reg_changed(id, i)});
  if (const MemorySystem* mem = m.memory_system()) {
    const CacheStats& st = mem->stats(id);
    r.caches = "L1I " + std::to_string(cpu.l1i_hits()) + " hits " + std::to_string(st.l1i_misses) + " misses  " +
               "L1 " + std::to_string(cpu.l1_hits()) + " hits " + std::to_string(st.l1_misses) + " misses " +
               std::to_string(st.upgrades) + " upgrades  L2 " + std::to_string(st.l2_hits) + " hits " +
               std::to_string(st.l2_misses) + " misses  " + std::to_string(st.transfers) + " transfers  " +
               std::to_string(st.stall_cycles) + " stall cycles  store buffer " +
               std::to_string(mem->buffer(id).size()) + " (" + std::to_string(st.buffered_stores) +
               " buffered)";
  }

  kprobes::Engine* eng = w.engine();
  if (eng && eng->layout().has_abi) {
    kprobes::Engine::Task t = eng->current_task(id);
    r.task = t.comm + "-" + std::to_string(t.tid);
  }
  if (w.ended()) {
    r.state = CpuRow::Doing::ended;
    r.doing = "stopped: the run has ended";
  } else if (eng && !eng->patcher().doing(id).empty()) {
    r.state = CpuRow::Doing::parked;
    r.doing = "kernel text patching: " + eng->patcher().doing(id);
  } else if (eng && eng->ctlblk(id).phase != kprobes::Phase::none) {
    const kprobes::CtlBlk& cb = eng->ctlblk(id);
    r.state = CpuRow::Doing::parked;
    r.doing = std::string("parked in the kprobes engine: next phase ") + kprobes::phase_name(cb.phase) + " (trap at " +
              m.symbols().format(cb.trap_addr) + ")";
  } else if (eng && eng->ctlblk(id).status != kprobes::KStatus::idle) {
    const kprobes::CtlBlk& cb = eng->ctlblk(id);
    r.state = CpuRow::Doing::probe;
    const bool in_slot = r.pc >= eng->layout().slots_begin && r.pc < eng->layout().slots_end;
    r.doing = std::string(kprobes::status_name(cb.status)) + " for " +
              (cb.current ? m.symbols().format(cb.current->addr) : std::string("?")) +
              (in_slot ? ": stepping the copy in its slot" : ": guest handler code");
  } else if (cpu.idle()) {
    r.state = CpuRow::Doing::idle;
    const uint64_t wake = cpu.wake_cycle();
    r.doing = wake == ~uint64_t{0} ? "idle: waiting for an interrupt from another CPU"
                                   : "idle: waiting for an interrupt (timer at cycle " + std::to_string(wake) + ")";
  } else {
    r.state = CpuRow::Doing::guest;
    r.doing = "guest code";
  }
  return r;
}

std::string line_holders(Debugger& d, uint64_t addr) {
  Machine& m = d.world().machine();
  const MemorySystem* mem = m.memory_system();
  if (!mem || !m.bus().ram().contains(addr, 1)) return "";
  const uint64_t line = addr & ~uint64_t{mem->profile().l1d.line_bytes - 1};
  static const char* const kState[] = {"I", "S", "E", "M"};
  std::string out = "line " + hex(line) + ":";
  bool any = false;
  for (int c = 0; c < m.cpu_count(); ++c) {
    const Mesi st = mem->l1_state(c, line);
    if (st == kMesiI) continue;
    out += std::string(any ? "," : "") + " cpu " + std::to_string(c) + " " + kState[st];
    any = true;
  }
  if (!any) out += " in no L1";
  for (int k = 0; k < mem->clusters(); ++k) {
    if (!mem->l2_holds(k, line)) continue;
    int lo = m.cpu_count(), hi = -1;
    for (int c = 0; c < m.cpu_count(); ++c)
      if (mem->cluster(c) == k) lo = std::min(lo, c), hi = std::max(hi, c);
    out += "; L2 of cpus " + std::to_string(lo) + (hi > lo ? "-" + std::to_string(hi) : "");
  }
  return out;
}

}  // namespace ksim::ui
