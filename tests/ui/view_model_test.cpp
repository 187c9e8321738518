// docs/DEBUGGER.md, "The view-model": what each window shows, built without
// ImGui, checked against values computed another way (the instruction's
// own decoding, the engine's events, a linear scan).
#include <algorithm>

#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <optional>
#include <cstring>
#include <map>
#include <set>

#include "cpu/rv64/insn.hpp"
#include "cpu/hex.hpp"
#include "sim/machine_profiles.hpp"
#include "ui/model/code_view.hpp"
#include "ui/model/cpu_view.hpp"
#include "ui/model/explain.hpp"
#include "ui/model/fsm_view.hpp"
#include "ui/model/memory_view.hpp"
#include "ui/model/probes_view.hpp"
#include <sstream>
#include "ui/model/script.hpp"
#include "ui/model/source_view.hpp"
#include "cpu/hex.hpp"
#include "kprobes/patching.hpp"
#include "ui/model/timeline.hpp"
#include "support/run_process.hpp"
#include "support/source_file.hpp"
#include "ui_support.hpp"

using namespace ksim;
using namespace ksim::ui;
using ksim::test::ui_add;
using ksim::test::ui_kernel;

namespace {

rv64::Insn insn_at(Debugger& d, uint64_t pc) {
  uint8_t b[4] = {};
  d.world().machine().bus().read_bytes(pc, b, 4);
  return rv64::decode(static_cast<uint16_t>(b[0] | b[1] << 8), static_cast<uint16_t>(b[2] | b[3] << 8));
}

bool writes_rd(rv64::Format f) {
  using F = rv64::Format;
  return f == F::R || f == F::I || f == F::SHIFT || f == F::LOAD || f == F::U || f == F::J || f == F::JALR ||
         f == F::CSR || f == F::CSRI || f == F::AMO || f == F::LR;
}

}  // namespace

TEST_CASE("After one step the highlighted registers are exactly those the instruction wrote", "[ui][cpus]") {
  Debugger d(ui_kernel(1), {});
  d.go_to_cycle(400'000);
  int checked = 0, with_rd = 0;
  for (int i = 0; i < 300; ++i) {
    Cpu& cpu = d.world().machine().cpu(0);
    const uint64_t pc = cpu.pc(), instret = cpu.instret();
    const rv64::Insn in = insn_at(d, pc);
    std::vector<uint64_t> before;
    for (int r = 0; r < cpu.gpr_count(); ++r) before.push_back(cpu.gpr(r));
    REQUIRE(d.step_cpu(0));
    if (cpu.instret() != instret + 1) continue;  // a trap was the step
    const CpuRow row = cpu_row(d, 0);
    std::set<int> changed;
    for (size_t r = 0; r < row.regs.size(); ++r)
      if (row.regs[r].changed) changed.insert(static_cast<int>(r));
    std::set<int> expected;
    const rv64::OpInfo& info = rv64::op_info(in.op);
    if (writes_rd(info.format) && in.rd != 0 && cpu.gpr(in.rd) != before[in.rd]) expected.insert(in.rd);
    INFO("pc " << std::hex << pc << " " << info.mnemonic);
    CHECK(changed == expected);
    CHECK(row.pc_changed);
    ++checked;
    with_rd += !expected.empty();
  }
  CHECK(checked > 250);
  CHECK(with_rd > 100);
}

TEST_CASE("CPUs view: privilege, interrupt enable and what the CPU is doing", "[ui][cpus]") {
  Debugger d(ui_kernel(2), {});
  CpuRow r0 = cpu_row(d, 0);
  CHECK(r0.priv == "M");  // RV64 harts reset into machine mode
  CHECK_FALSE(r0.irq_enabled);
  CHECK(r0.state == CpuRow::Doing::guest);
  CHECK(r0.pc_sym == d.world().machine().symbols().format(d.world().spec().image->entry));
  // The kernel's secondary CPU idles in wfi before long.
  bool saw_idle = false;
  for (int i = 0; i < 200 && !saw_idle; ++i) {
    d.step_cycle();
    for (int c = 0; c < 2; ++c) saw_idle |= cpu_row(d, c).state == CpuRow::Doing::idle;
  }
  d.go_to_cycle(3'000'000);
  for (int c = 0; c < 2 && !saw_idle; ++c) saw_idle |= cpu_row(d, c).state == CpuRow::Doing::idle;
  CHECK(saw_idle);
}

// Timing v2 (docs/TIMING.md): the CPUs view shows each CPU's memory
// counters, the same numbers the machine keeps; the Memory window's line
// holders name the CPUs whose L1 holds a line, in the state the memory
// system records, and the L2 that holds it.
TEST_CASE("CPUs and Memory views under timing v2: cache counters and who holds a line", "[ui][cpus][memory]") {
  WorldSpec spec = ui_kernel(2);
  spec.config.profile = load_machine_profile("sifive-u54");
  spec.config.memory_model = MemoryModel::rvwmo;
  Debugger d(spec, {});
  d.go_to_cycle(1'000'000);
  const Machine& m = d.world().machine();
  const MemorySystem* mem = m.memory_system();
  REQUIRE(mem != nullptr);
  for (int c = 0; c < 2; ++c) {
    const CpuRow r = cpu_row(d, c);
    const CacheStats& st = mem->stats(c);
    CHECK(r.caches.find("L1I " + std::to_string(m.cpu(c).l1i_hits()) + " hits " + std::to_string(st.l1i_misses) +
                        " misses  L1 " + std::to_string(m.cpu(c).l1_hits()) + " hits " + std::to_string(st.l1_misses) +
                        " misses") == 0);
    CHECK(m.cpu(c).l1i_hits() > 0);
    CHECK(st.l1i_misses > 0);
    CHECK(r.caches.find(std::to_string(st.transfers) + " transfers") != std::string::npos);
  }
  CHECK(m.cpu(0).l1_hits() > 0);
  // CPU 0's stack line: in its L1 (modified or exclusive), and in the L2.
  const uint64_t sp = m.cpu(0).gpr(2);
  const std::string holders = line_holders(d, sp);
  const char* st = mem->l1_state(0, sp) == kMesiM ? " M" : mem->l1_state(0, sp) == kMesiE ? " E" : " S";
  CHECK(holders.find("line " + hex(sp & ~uint64_t{63}) + ": cpu 0" + st) == 0);
  CHECK(holders.find("; L2 of cpus 0-1") != std::string::npos);
  // Under v1 there is nothing to show.
  Debugger v1(ui_kernel(2), {});
  CHECK(cpu_row(v1, 0).caches.empty());
  CHECK(line_holders(v1, sp).empty());
}

TEST_CASE("Mid-step the state machine shows KPROBE_HIT_SS with the probe current and the PC in its slot",
          "[ui][fsm]") {
  Debugger d(ui_kernel(2, 1), {ui_add("p do_fork")});
  REQUIRE(d.next_event(EventKind::probe));
  // Find this world's first KPROBE_HIT_SS and land just after it.
  size_t ss = EventLog::npos;
  for (int i = 0; i < 50 && ss == EventLog::npos; ++i) {
    for (uint32_t k : d.log().of_kind(EventKind::probe))
      if (d.log().text(d.log()[k]) == "KPROBE_HIT_SS") {
        ss = k;
        break;
      }
    if (ss == EventLog::npos) d.next_event(EventKind::probe);
  }
  REQUIRE(ss != EventLog::npos);
  const int cpu = d.log()[ss].cpu;
  d.go_to_event(ss);
  FsmView v = fsm_view(d, cpu);
  CHECK(v.current == FsmNode::hit_ss);
  CHECK(v.current_kprobe == "do_fork");
  CHECK(v.prev_kprobe.empty());
  const uint64_t pc = d.world().machine().cpu(cpu).pc();
  CHECK(pc >= d.world().engine()->layout().slots_begin);
  CHECK(pc < d.world().engine()->layout().slots_end);
  CHECK(cpu_row(d, cpu).state == CpuRow::Doing::probe);
  // The transitions so far: idle -> trap -> HIT_ACTIVE -> HIT_SS, at the events' cycles.
  REQUIRE(v.recent.size() >= 3);
  const auto& t = v.recent;
  CHECK(t[t.size() - 3].from == FsmNode::idle);
  CHECK(t[t.size() - 3].to == FsmNode::trap);
  CHECK(t[t.size() - 2].to == FsmNode::hit_active);
  CHECK(t.back().to == FsmNode::hit_ss);
  CHECK(t.back().cycle == d.log()[ss].cycle);
  // The code view shows the breakpoint over do_fork's first instruction and the slot's owner.
  const uint64_t fork = *resolve_location(d, "do_fork");
  auto lines = code_lines(d, fork, 0, 2);
  REQUIRE(!lines.empty());
  CHECK(lines[0].addr == fork);
  CHECK(lines[0].probed);
  CHECK(lines[0].breakpoint);
  CHECK((lines[0].over == "ebreak" || lines[0].over == "c.ebreak"));
  CHECK(lines[0].probes == "p_do_fork_0");
  auto slot = code_lines(d, pc, 0, 1);
  REQUIRE(!slot.empty());
  CHECK_THAT(slot[0].slot_of, Catch::StartsWith("slot of do_fork (p_do_fork_0): "));
  CHECK(slot[0].text == lines[0].text);  // the slot holds a copy of the probed instruction
}

TEST_CASE("A click on a timeline event lands just after that event's cycle", "[ui][timeline]") {
  Debugger d(ui_kernel(4, 2), {ui_add("p vfs_read")});
  d.go_to_cycle(3'000'000);
  TimelineIndex tl;
  tl.sync(d.log(), 4);
  const auto& spans = tl.spans(1);
  REQUIRE(!spans.empty());
  const Span s = spans[spans.size() / 2];
  const size_t hit = tl.hit_test(1, s.begin + 2, 10);
  REQUIRE(hit == s.event);
  d.go_to_event(hit);
  CHECK(d.here() == s.begin + 1);
  CHECK(d.position().target.kind == Target::Kind::cycle);
}

TEST_CASE("Timeline binning: each column holds exactly the marks and spans of its cycle range", "[ui][timeline]") {
  EventLog log;
  auto ev = [&](uint64_t c, int cpu, EventKind k, uint64_t a = 0, const char* text = "") {
    Event e;
    e.cycle = c;
    e.cpu = cpu;
    e.kind = k;
    e.a = a;
    e.text = text;
    log.on_event(e);
  };
  // cpu 0: traps every 10 cycles from 0 to 990; idle [500, 700); a probe hit at 800.
  for (uint64_t c = 0; c < 1000; c += 10) {
    if (c == 500) ev(500, 0, EventKind::idle);
    if (c == 700) ev(700, 0, EventKind::wake);
    if (c == 800) {
      ev(800, 0, EventKind::probe, 0x1000, "trap");
      ev(805, 0, EventKind::probe, 0x1000, "KPROBE_HIT_ACTIVE");
      ev(806, 0, EventKind::probe, 0x1000, "KPROBE_HIT_SS");
      ev(820, 0, EventKind::probe, 0x1000, "step-done");
      ev(821, 0, EventKind::probe, 0x1000, "KPROBE_HIT_SSDONE");
    }
    ev(c, 0, EventKind::trap);
  }
  ev(1000, 1, EventKind::ipi_send, 0);
  ev(1020, 0, EventKind::ipi_recv, 1);
  TimelineIndex tl;
  tl.sync(log, 2);
  std::vector<Cell> cells;
  tl.bin_lane(0, 0, 100, 12, 1100, cells);  // 100 cycles per column
  REQUIRE(cells.size() == 12);
  for (int x = 0; x < 10; ++x) CHECK(cells[x].marks == 10);
  CHECK(cells[10].marks == 1);  // the ipi_recv at 1020
  CHECK_FALSE(cells[11].valid);
  CHECK(cells[4].spans == 0);
  CHECK(cells[5].span == SpanKind::idle);
  CHECK(cells[6].span == SpanKind::idle);
  CHECK(cells[7].spans == 0);
  CHECK(cells[8].span == SpanKind::hit_ssdone);  // at cycle 850, the middle: in SSDONE [821, 851)
  CHECK(cells[8].strongest == SpanKind::hit_ssdone);
  CHECK(cells[8].spans == 4);
  tl.bin_lane(0, 750, 100, 1, 1100, cells);  // [750, 850): middle 800, in the trap span
  CHECK(cells[0].span == SpanKind::trap);
  tl.bin_lane(0, 770, 80, 1, 1100, cells);  // [770, 850): middle 810, in HIT_SS
  CHECK(cells[0].span == SpanKind::hit_ss);
  REQUIRE(tl.arrows().size() == 1);
  CHECK(tl.arrows()[0].from == 1);
  CHECK(tl.arrows()[0].to == 0);
  CHECK(tl.arrows()[0].to_cycle == 1020);
  // Zoomed in on the hit: one cycle per column.
  tl.bin_lane(0, 800, 1, 30, 1100, cells);
  CHECK(cells[0].span == SpanKind::trap);
  CHECK(cells[0].marks == 1);
  CHECK(cells[5].span == SpanKind::hit_active);
  CHECK(cells[6].span == SpanKind::hit_ss);
  CHECK(cells[19].span == SpanKind::hit_ss);
  CHECK(cells[21].span == SpanKind::hit_ssdone);
}

TEST_CASE("Timeline binning of a million events stays within a frame budget", "[ui][timeline]") {
  EventLog log;
  Event e;
  for (uint64_t i = 0; i < 1'000'000; ++i) {
    e.cycle = i * 7;
    e.cpu = static_cast<int>(i % 4);
    e.kind = i % 3 ? EventKind::trap : (i % 2 ? EventKind::idle : EventKind::wake);
    log.on_event(e);
  }
  TimelineIndex tl;
  tl.sync(log, 4);
  std::vector<Cell> cells;
  uint64_t total = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int frame = 0; frame < 30; ++frame)
    for (int cpu = 0; cpu < 4; ++cpu) {
      tl.bin_lane(cpu, 0, 7'000'000.0 / 1800, 1800, 7'000'000, cells);
      for (const Cell& c : cells) total += c.marks;
    }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(total == 30ull * 666'666);  // every trap counted once per frame
  CHECK(secs < 1.0);                // 30 frames' binning well inside one second
}

TEST_CASE("Event indexing: by kind, first at or after, last before, against a linear scan", "[ui][events]") {
  Debugger d(ui_kernel(4, 6), {});
  d.go_to_cycle(2'000'000);
  const EventLog& log = d.log();
  REQUIRE(log.size() > 100);
  for (EventKind k : {EventKind::trap, EventKind::ipi_send, EventKind::console, EventKind::idle}) {
    size_t n = 0;
    for (size_t i = 0; i < log.size(); ++i) n += log[i].kind == k;
    CHECK(log.of_kind(k).size() == n);
    for (uint64_t c : {0ull, 123'456ull, 1'000'000ull, 1'999'999ull}) {
      size_t first = log.size(), last = EventLog::npos;
      for (size_t i = 0; i < log.size(); ++i)
        if (log[i].kind == k) {
          if (log[i].cycle >= c && first == log.size()) first = i;
          if (log[i].cycle < c) last = i;
        }
      CHECK(log.first_at_or_after(k, c) == first);
      CHECK(log.last_before(k, c) == last);
    }
  }
  for (size_t i = 1; i < log.size(); ++i) CHECK(log[i - 1].cycle <= log[i].cycle);
}

TEST_CASE("Next and previous event of a kind land just after it", "[ui][events]") {
  Debugger d(ui_kernel(2, 4), {});
  REQUIRE(d.next_event(EventKind::ipi_send));
  const size_t first = d.log().of_kind(EventKind::ipi_send).front();
  CHECK(d.here() == d.log()[first].cycle + 1);
  REQUIRE(d.next_event(EventKind::ipi_send));
  const size_t second = d.log().of_kind(EventKind::ipi_send)[1];
  CHECK(d.here() == d.log()[second].cycle + 1);
  REQUIRE(d.prev_event(EventKind::ipi_send));
  CHECK(d.here() == d.log()[first].cycle + 1);
  CHECK_FALSE(d.prev_event(EventKind::ipi_send));
}

TEST_CASE("Probe operations: add, bad line, disable, knob, remove, and they replay in time", "[ui][probes]") {
  Debugger d(ui_kernel(2, 8), {});
  CHECK(probe_rows(d).empty());
  d.go_to_cycle(500'000);
  CHECK(d.probe_op({ProbeOp::Kind::add, "p:myread vfs_read", 0}).empty());
  // A bad line: an error, nothing registered.
  const std::string err = d.probe_op({ProbeOp::Kind::add, "p:bad no_such_function", 0});
  CHECK_FALSE(err.empty());
  CHECK(d.probe_op({ProbeOp::Kind::add, "q nonsense", 0}) != "");
  CHECK(d.probe_op({ProbeOp::Kind::remove, "nobody", 0}) == "no probe named 'nobody'");
  REQUIRE(probe_rows(d).size() == 1);
  CHECK(probe_rows(d)[0].event == "kprobes/myread");
  CHECK(kprobes_list(d).find("k  vfs_read+0x0") != std::string::npos);
  d.go_to_cycle(3'000'000);
  const uint64_t hits = probe_rows(d)[0].hits;
  REQUIRE(hits > 0);
  CHECK(d.log().lines().size() == hits);  // one ftrace line per hit (action log)

  CHECK(d.probe_op({ProbeOp::Kind::disable, "myread", 0}).empty());
  CHECK(kprobes_list(d).find("[DISABLED]") != std::string::npos);
  CHECK(probe_rows(d)[0].disabled);
  CHECK(d.probe_op({ProbeOp::Kind::enable, "myread", 0}).empty());
  CHECK(d.probe_op({ProbeOp::Kind::knob, "0", 0}).empty());
  CHECK_FALSE(kprobes_enabled(d));
  CHECK(d.probe_op({ProbeOp::Kind::knob, "1", 0}).empty());
  d.go_to_cycle(5'000'000);
  const uint64_t hits5 = probe_rows(d)[0].hits;
  const uint64_t h5 = d.state_hash();
  // Back before the probe existed: nothing registered; forward again: same hits and state.
  d.go_to_cycle(400'000);
  CHECK(probe_rows(d).empty());
  d.go_to_cycle(5'000'000);
  REQUIRE(probe_rows(d).size() == 1);
  CHECK(probe_rows(d)[0].hits == hits5);
  CHECK(d.state_hash() == h5);
  CHECK(d.log().mismatches() == 0);

  // A new operation in the past changes the future: later operations are dropped.
  d.go_to_cycle(1'000'000);
  CHECK(d.probe_op({ProbeOp::Kind::remove, "myread", 0}).empty());
  CHECK(probe_rows(d)[0].removed);
  d.go_to_cycle(5'000'000);
  CHECK(probe_rows(d)[0].hits < hits5);
  CHECK(kprobes_list(d).empty() == (kprobes_list(d).find("vfs_read") == std::string::npos));
}

TEST_CASE("Memory view: the bytes a store wrote are marked as changed by the last move", "[ui][memory]") {
  Debugger d(ui_kernel(1), {});
  d.go_to_cycle(300'000);
  MemoryView mv;
  for (int i = 0; i < 2000; ++i) {
    Cpu& cpu = d.world().machine().cpu(0);
    const rv64::Insn in = insn_at(d, cpu.pc());
    const rv64::OpInfo& info = rv64::op_info(in.op);
    if (info.format != rv64::Format::STORE) {
      d.step_cpu(0);
      continue;
    }
    const uint64_t addr = cpu.gpr(in.rs1) + static_cast<uint64_t>(static_cast<int64_t>(in.imm));
    const unsigned width = std::strcmp(info.mnemonic, "sd") == 0 ? 8 : std::strcmp(info.mnemonic, "sw") == 0 ? 4
                           : std::strcmp(info.mnemonic, "sh") == 0 ? 2 : 1;
    const uint64_t value = cpu.gpr(in.rs2);
    mv.set_range(addr - 16, 48);
    mv.refresh(d);
    std::vector<uint8_t> old(48);
    for (size_t k = 0; k < 48; ++k) old[k] = mv.bytes()[k].value;
    const uint64_t instret = cpu.instret();
    d.step_cpu(0);
    if (cpu.instret() != instret + 1) continue;  // an interrupt came first
    mv.refresh(d);
    for (size_t k = 0; k < 48; ++k) {
      const uint64_t a = addr - 16 + k;
      const bool in_store = a >= addr && a < addr + width;
      const uint8_t expect = in_store ? static_cast<uint8_t>(value >> (8 * (a - addr))) : old[k];
      CHECK(mv.bytes()[k].value == expect);
      CHECK((mv.bytes()[k].age == 0) == (in_store && expect != old[k]));
    }
    CHECK_FALSE(mv.bytes()[16].code);
    return;
  }
  FAIL("no store executed");
}

TEST_CASE("x86: ring 0, interrupt flag, and exact travel with a probe", "[ui][x86]") {
  Debugger d(ui_kernel(2, 3, Isa::x86_64), {ui_add("p do_fork")});
  CHECK(cpu_row(d, 0).priv == "ring 0");
  d.go_to_cycle(800'000);
  const uint64_t h = d.state_hash();
  d.step(25);
  const uint64_t h25 = d.state_hash();
  d.go_to_cycle(2'000'000);
  d.go_to_cycle(800'000);
  CHECK(d.state_hash() == h);
  d.step(25);
  CHECK(d.state_hash() == h25);
  bool irq_on = false;
  for (int c = 0; c < 2; ++c) irq_on |= cpu_row(d, c).irq_enabled;
  CHECK(irq_on);  // the kernel runs its threads with interrupts on
  CHECK(d.log().mismatches() == 0);
}

namespace {
std::string testing_join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += x + " ";
  return s;
}
}  // namespace

TEST_CASE("A probe added in the Probes window shows on the timeline at the cycle it was made", "[ui][timeline]") {
  Debugger d(ui_kernel(2, 5), {});
  d.go_to_cycle(600'000);
  REQUIRE(d.probe_op({ProbeOp::Kind::add, "p:myread vfs_read", 1}).empty());
  d.go_to_cycle(700'000);
  TimelineIndex tl;
  tl.sync(d.log(), 2);
  // The registration, then the arming protocol run by the caller CPU 1
  // (RV64: stop_machine, with its states on both lanes; the last CPU to
  // arrive writes the breakpoint), at or after the cycle the op was made.
  std::vector<std::string> seen, other;
  for (int lane = 0; lane < 2; ++lane)
    for (const Mark& m : tl.marks(lane))
      if (m.kind == EventKind::probe) {
        CHECK(m.cycle >= 600'000);
        CHECK(m.cycle < 700'000);
        (lane == 1 ? seen : other).push_back(d.log().text(d.log()[m.event]));
      }
  INFO(testing_join(seen) << "/ " << testing_join(other));
  REQUIRE(seen.size() >= 3);
  CHECK(seen.front() == "register");
  CHECK(seen[1] == "patch-begin");
  CHECK(seen.back() == "patch-done");
  CHECK(std::count(seen.begin(), seen.end(), "stop_machine") == 4);   // PREPARE .. EXIT
  CHECK(std::count(other.begin(), other.end(), "stop_machine") == 4);
  CHECK(std::count(seen.begin(), seen.end(), "arm") + std::count(other.begin(), other.end(), "arm") == 1);
}

TEST_CASE("Timeline: after a hit's SSDONE the lane is back to running", "[ui][timeline]") {
  EventLog log;
  auto ev = [&](uint64_t c, const char* text) {
    Event e;
    e.cycle = c;
    e.kind = EventKind::probe;
    e.a = 0x1000;
    e.text = text;
    log.on_event(e);
  };
  ev(100, "trap");
  ev(110, "KPROBE_HIT_ACTIVE");
  ev(111, "KPROBE_HIT_SS");
  ev(140, "KPROBE_HIT_SSDONE");
  TimelineIndex tl;
  tl.sync(log, 1);
  REQUIRE(tl.spans(0).size() == 4);
  CHECK(tl.spans(0).back().kind == SpanKind::hit_ssdone);
  CHECK(tl.spans(0).back().begin == 140);
  CHECK(tl.spans(0).back().end == 140 + 30);  // kKprobeResumeCycles
  std::vector<Cell> cells;
  tl.bin_lane(0, 0, 100, 10, 1000, cells);
  CHECK(cells[1].spans == 4);
  CHECK(cells[2].spans == 0);  // running again, up to now
  CHECK(cells[9].spans == 0);
}

TEST_CASE("Timeline: a patching job, stop_machine on every CPU and the grace period of a removal as spans and a band",
          "[ui][timeline]") {
  Debugger d(ui_kernel(2, 5), {});
  d.go_to_cycle(600'000);
  REQUIRE(d.probe_op({ProbeOp::Kind::add, "p:myread vfs_read", 1}).empty());
  d.go_to_cycle(700'000);
  REQUIRE(d.probe_op({ProbeOp::Kind::remove, "myread", 1}).empty());
  d.go_to_cycle(900'000);
  TimelineIndex tl;
  tl.sync(d.log(), 2);
  // Independently, from the events themselves: each lane's stop_machine
  // states (the first to MULTI_STOP_EXIT) and the caller's patch-begin /
  // patch-done, and the gp-start / gp-end cycles.
  const uint64_t exit_state = static_cast<uint64_t>(kprobes::StopState::exit);
  std::vector<std::pair<uint64_t, uint64_t>> stops[2], jobs;
  std::vector<std::pair<uint64_t, uint64_t>> gps;
  for (size_t i = 0; i < d.log().size(); ++i) {
    const EventRec& r = d.log()[i];
    if (r.kind != EventKind::probe || r.cpu < 0 || r.cpu > 1) continue;
    const std::string w = d.log().text(r);
    auto& st = stops[r.cpu];
    if (w == "stop_machine" && (st.empty() || st.back().second != 0)) st.push_back({r.cycle, 0});
    if (w == "stop_machine" && r.b == exit_state) st.back().second = r.cycle;
    if (w == "patch-begin") jobs.push_back({r.cycle, 0});
    if (w == "patch-done") jobs.back().second = r.cycle;
    if (w == "gp-start") gps.push_back({r.cycle, 0});
    if (w == "gp-end") gps.back().second = r.cycle;
  }
  REQUIRE(jobs.size() == 2);  // arm, disarm
  for (int lane = 0; lane < 2; ++lane) {
    REQUIRE(stops[lane].size() == 2);
    std::vector<std::pair<uint64_t, uint64_t>> got;
    for (const Span& sp : tl.spans(lane))
      if (sp.kind == SpanKind::stopper) got.push_back({sp.begin, sp.end});
    CHECK(got == stops[lane]);
  }
  // The caller's job: patching before and after its own stop_machine.
  for (auto [b, e] : jobs) {
    bool starts = false, ends = false;
    for (const Span& sp : tl.spans(1)) {
      starts |= sp.kind == SpanKind::patching && sp.begin == b;
      ends |= sp.kind == SpanKind::patching && sp.end == e;
    }
    CHECK(starts);
    CHECK(ends);
  }
  REQUIRE(gps.size() >= 1);
  REQUIRE(tl.bands().size() == gps.size());
  for (size_t k = 0; k < gps.size(); ++k) {
    CHECK(tl.bands()[k].begin == gps[k].first);
    CHECK(tl.bands()[k].end == gps[k].second);
    CHECK_FALSE(tl.bands()[k].tasks);
  }
  std::vector<const Band*> in;
  tl.bands_in(gps[0].first, gps[0].first + 1, in);
  CHECK(in.size() == 1);
}

TEST_CASE("Code view under the relaxed model: a CPU that has not seen a store into code shows what it would still "
          "execute there; the storer (x86) and a CPU after it serialises do not",
          "[ui][code]") {
  for (Isa isa : {Isa::x86_64, Isa::rv64}) {
    INFO(isa_name(isa));
    Debugger d(ui_kernel(2, 0, isa), {});
    d.go_to_cycle(300'000);
    Machine& m = d.world().machine();
    const uint64_t fn = m.symbols().find("do_fork")->addr;
    const std::string before = code_lines(d, fn, 0, 1)[0].text;
    // CPU 0 stores a breakpoint over do_fork's first instruction.
    uint8_t bp[4];
    const unsigned n = isa == Isa::x86_64 ? 1 : 4;
    if (isa == Isa::x86_64)
      bp[0] = 0xcc;
    else {
      const uint32_t ebreak = 0x00100073;
      std::memcpy(bp, &ebreak, 4);
    }
    REQUIRE(m.bus().write_bytes(fn, bp, n, Accessor{0, m.cpu(0).cycle()}));
    REQUIRE(m.cpu(1).code_view_stale());
    auto l1 = code_lines(d, fn, 0, 1, 1)[0];
    CHECK(l1.text == (isa == Isa::x86_64 ? "int3" : "ebreak"));  // memory now
    CHECK(l1.cpu_sees == before);                                  // CPU 1 still has the old instruction
    // x86: the storing CPU sees its own store; RV64: not until fence.i.
    auto l0 = code_lines(d, fn, 0, 1, 0)[0];
    CHECK(l0.cpu_sees == (isa == Isa::x86_64 ? "" : before));
    m.cpu(1).serialize_code();
    CHECK(code_lines(d, fn, 0, 1, 1)[0].cpu_sees.empty());
  }
}

TEST_CASE("Next event of the protocol kinds: a stop_machine state, an arm, the end of a grace period",
          "[ui][events]") {
  Debugger d(ui_kernel(2, 5), {});
  d.go_to_cycle(600'000);
  REQUIRE(d.probe_op({ProbeOp::Kind::add, "p:myread vfs_read", 1}).empty());
  d.go_to_cycle(650'000);
  REQUIRE(d.probe_op({ProbeOp::Kind::remove, "myread", 1}).empty());
  d.go_to_cycle(600'000);
  for (const char* kind : {"stop-machine", "arm", "disarm", "gp-end"}) {
    INFO(kind);
    EventFilter f;
    REQUIRE(event_filter_named(kind, f));
    REQUIRE(d.next_event(f));
    const EventRec& r = d.log()[d.landed_event()];
    const std::string text = d.log().text(r);
    CHECK(text == (std::string(kind) == "stop-machine" ? "stop_machine" : kind));
    CHECK(r.cycle >= 600'000);
  }
}

TEST_CASE("Next event hit finds a jump-optimized hit as well as a breakpoint hit", "[ui][events]") {
  // Issue 22: with `--probe 'p do_fork'` (optimized by default) "hit"
  // found nothing while the probe had 1,536 hits.
  for (bool optimize : {true, false}) {
    INFO("optimize " << optimize);
    WorldSpec spec = ui_kernel(4);
    spec.optimize = optimize;
    Debugger d(spec, {ui_add("p do_fork")});
    EventFilter f;
    REQUIRE(event_filter_named("hit", f));
    // The probe starts as a breakpoint and is optimized a little later.
    int found = 0, optimized = 0;
    uint64_t last = 0;
    while (found < 40 && d.next_event(f, 20'000'000)) {
      const EventRec& r = d.log()[d.landed_event()];
      CHECK(r.cycle >= last);
      last = r.cycle;
      optimized += d.log().text(r) == "optimized-hit";
      ++found;
    }
    CHECK(found == 40);
    CHECK((optimize ? optimized > 0 : optimized == 0));
    // The probe counted every one of them.
    const auto rows = probe_rows(d);
    REQUIRE(!rows.empty());
    CHECK(rows[0].hits >= 40);
  }
}

TEST_CASE("CPUs view: a CPU inside stop_machine says so, with the state it acted on", "[ui][cpus]") {
  Debugger d(ui_kernel(2, 5), {});
  d.go_to_cycle(600'000);
  REQUIRE(d.probe_op({ProbeOp::Kind::add, "p:myread vfs_read", 1}).empty());
  EventFilter f;
  REQUIRE(event_filter_named("stop-machine", f));
  REQUIRE(d.next_event(f));
  const EventRec& r = d.log()[d.landed_event()];
  REQUIRE(r.b != static_cast<uint64_t>(kprobes::StopState::exit));  // the first state: still inside
  const CpuRow row = cpu_row(d, r.cpu);
  INFO(row.doing);
  CHECK(row.doing.rfind("kernel text patching: ", 0) == 0);
  CHECK(row.doing.find("stop_machine: MULTI_STOP_") != std::string::npos);
  CHECK(row.state == CpuRow::Doing::parked);
}

TEST_CASE("Code view: an optimized probe shows the jump over its region, and its detour buffer is annotated",
          "[ui][code][optprobe]") {
  for (Isa isa : {Isa::x86_64, Isa::rv64}) {
    INFO(isa_name(isa));
    WorldSpec spec = ui_kernel(2, 0, isa);
    spec.optimize = true;
    Debugger d(spec, {ui_add("p:f do_fork")});
    d.go_to_cycle(10'000);
    const kprobes::ProbePoint* p = d.world().engine()->point_at(d.world().machine().symbols().find("do_fork")->addr);
    REQUIRE(p);
    REQUIRE(p->opt == kprobes::ProbePoint::Opt::optimized);
    // At do_fork: the original instruction, the jump memory holds over it.
    const CodeLine at = code_lines(d, p->addr, 0, 1)[0];
    CHECK(at.probed);
    CHECK(at.over.rfind(isa == Isa::x86_64 ? "jmp" : "auipc", 0) == 0);
    // The buffer: its handler call, the region's copy, the jump back, each
    // line named for the probe (the engine's own layout of the buffer).
    std::map<std::string, int> parts;
    for (const CodeLine& l : code_lines(d, p->detour, 0, 12)) {
      if (l.addr >= p->detour_copy + p->region.len + (isa == Isa::x86_64 ? 5 : 8)) break;
      INFO(l.text << " ; " << l.slot_of);
      REQUIRE(l.slot_of.rfind("detour of do_fork (f): ", 0) == 0);
      const std::string part = l.slot_of.substr(l.slot_of.find(": ") + 2);
      ++parts[part];
      if (l.addr < p->detour_copy) CHECK(part == "handler call");
      else if (l.addr < p->detour_copy + p->region.len) CHECK(part == "copied region");
      else CHECK(part == "jump back");
    }
    CHECK(parts["handler call"] == (isa == Isa::x86_64 ? 3 : 2));  // push, load, pop / lui, ld
    CHECK(parts["copied region"] == p->region.insns);
    CHECK(parts["jump back"] == (isa == Isa::x86_64 ? 1 : 2));     // jmp / auipc, jalr
  }
}

TEST_CASE("Timeline: the jump optimizer's steps are ticks on the lanes of the CPUs that take them",
          "[ui][timeline][optprobe]") {
  for (Isa isa : {Isa::x86_64, Isa::rv64}) {
    INFO(isa_name(isa));
    WorldSpec spec = ui_kernel(2, 3, isa);
    spec.optimize = true;
    Debugger d(spec, {});
    d.go_to_cycle(300'000);
    REQUIRE(d.probe_op({ProbeOp::Kind::add, "p:f do_fork", 1}).empty());
    d.go_to_cycle(1'500'000);
    REQUIRE(d.probe_op({ProbeOp::Kind::remove, "f", 1}).empty());
    d.go_to_cycle(3'000'000);
    TimelineIndex tl;
    tl.sync(d.log(), 2);
    // Each step's first tick, against the engine's own events in the log.
    std::map<std::string, uint64_t> tick, logged;
    for (int lane = 0; lane < 2; ++lane)
      for (const Mark& m : tl.marks(lane)) {
        if (m.kind != EventKind::probe) continue;
        const std::string what = d.log().text(d.log()[m.event]);
        if (!tick.count(what) || m.cycle < tick[what]) tick[what] = m.cycle;
      }
    for (uint32_t k : d.log().of_kind(EventKind::probe)) {
      const std::string what = d.log().text(d.log()[k]);
      if (!logged.count(what)) logged[what] = d.log()[k].cycle;
    }
    std::vector<std::string> steps = {"optimize-queued", "synchronize_rcu_tasks", "optimize", "optimized",
                                      "optimized-hit", "unoptimize", "detour-free"};
    if (isa == Isa::rv64) steps.push_back("unoptimize-rest");
    for (const std::string& s : steps) {
      INFO(s);
      REQUIRE(logged.count(s));
      REQUIRE(tick.count(s));
      CHECK(tick[s] == logged[s]);
    }
    CHECK(tick["optimize-queued"] < tick["optimize"]);
    CHECK(tick["optimize"] < tick["optimized"]);
    CHECK(tick["optimized"] < tick["unoptimize"]);
    CHECK(tick["unoptimize"] < tick["detour-free"]);
  }
}

TEST_CASE("Probe state machine: a boosted hit and a hit sent to a detour buffer go back to idle with no step",
          "[ui][fsm][optprobe]") {
  // x86 with the booster: every do_fork hit after the first is boosted.
  WorldSpec boosted = ui_kernel(2, 0, Isa::x86_64);
  Debugger b(boosted, {ui_add("p do_fork")});
  b.go_to_cycle(400'000);
  // RV64 with optimization, registered during the run: hits while queued
  // go from the ebreak to the detour buffer.
  WorldSpec opt = ui_kernel(2, 0, Isa::rv64);
  opt.optimize = true;
  Debugger o(opt, {});
  o.go_to_cycle(300'000);
  REQUIRE(o.probe_op({ProbeOp::Kind::add, "p do_fork", 1}).empty());
  o.go_to_cycle(1'000'000);
  for (auto [d, what] : {std::pair<Debugger*, const char*>{&b, "boost"}, {&o, "detour"}}) {
    INFO(what);
    size_t n = 0;
    for (int cpu = 0; cpu < 2; ++cpu)
      for (const FsmTransition& t :
           fsm_transitions(d->log(), d->world().machine().symbols(), cpu, d->log().size())) {
        if (t.what != what) continue;
        ++n;
        CHECK(t.from == FsmNode::hit_active);
        CHECK(t.to == FsmNode::idle);
      }
    CHECK(n > 0);
  }
}

// Issue 22: the Code window showed an RV64 word in memory order (37f5eefe)
// where `ksim disasm` and objdump show the parcel (feeef537), and the
// torn-write race printed x86 bytes as a number (0000441fe9) where the
// Code window shows them in memory order. One convention per ISA, its
// tools': the Code window's bytes are `ksim disasm`'s (which
// tests/rv64_disasm_test.cpp checks against objdump for RV64).
TEST_CASE("Code view: instruction bytes as ksim disasm and objdump print them, on both ISAs", "[ui][code]") {
  for (Isa isa : {Isa::rv64, Isa::x86_64}) {
    INFO(isa_name(isa));
    Debugger d(ui_kernel(1, 0, isa), {});
    const std::vector<CodeLine> lines = code_lines(d, d.world().machine().symbols().find("do_fork")->addr, 0, 6);
    const ksim::test::ProcessResult r = ksim::test::run_process(
        {KSIM_BINARY_DIR "/apps/ksim/ksim", "disasm", "--isa", isa == Isa::rv64 ? "rv64" : "x86", "do_fork"});
    REQUIRE(r.status == 0);
    int compared = 0;
    for (const CodeLine& l : lines) {
      // "addr:\tBYTES  \ttext" in ksim disasm's listing.
      char key[32];
      std::snprintf(key, sizeof key, "\n%llx:\t", static_cast<unsigned long long>(l.addr));
      const size_t at = r.out.find(key);
      REQUIRE(at != std::string::npos);
      const size_t from = at + std::strlen(key), tab = r.out.find('\t', from);
      std::string listed = r.out.substr(from, tab - from);
      while (!listed.empty() && listed.back() == ' ') listed.pop_back();
      CHECK(l.bytes == listed);
      ++compared;
    }
    CHECK(compared >= 6);
  }
}

TEST_CASE("Source view: the viewed CPU's file and line, every CPU tagged on its own line, both ISAs",
          "[ui][source]") {
  for (Isa isa : {Isa::rv64, Isa::x86_64}) {
    DYNAMIC_SECTION(isa_name(isa)) {
      Debugger d(ui_kernel(4, 0, isa), {});
      d.go_to_cycle(250'000);
      Machine& m = d.world().machine();
      const LineTable& lt = m.source_lines();
      int shown = 0;
      for (int c = 0; c < 4; ++c) {
        const SourceView v = source_view(d, c);
        const auto loc = lt.at(m.cpu(c).pc());
        CHECK(v.where == m.describe(m.cpu(c).pc()));
        if (!loc) {
          CHECK_FALSE(v.missing.empty());
          continue;
        }
        ++shown;
        REQUIRE(v.missing.empty());
        CHECK(v.file == lt.short_name(loc->file));
        CHECK(v.current == loc->line);
        REQUIRE(v.lines.size() >= v.current);
        CHECK(v.lines[v.current - 1].text == ksim::test::file_line(lt.path(loc->file), loc->line));
        // Every CPU in this file is tagged on its line, and no other line.
        for (int k = 0; k < 4; ++k) {
          const auto at = lt.at(m.cpu(k).pc());
          for (const SourceViewLine& l : v.lines) {
            const bool tagged = std::count(l.cpus.begin(), l.cpus.end(), k) > 0;
            CHECK(tagged == (at && at->file == loc->file && at->line == l.line));
          }
        }
      }
      CHECK(shown >= 2);
    }
  }
}

TEST_CASE("Code view: C lines before the instructions they start, as the line table places them", "[ui][source]") {
  for (Isa isa : {Isa::rv64, Isa::x86_64}) {
    DYNAMIC_SECTION(isa_name(isa)) {
      Debugger d(ui_kernel(1, 0, isa), {});
      Machine& m = d.world().machine();
      const LineTable& lt = m.source_lines();
      const uint64_t fork = m.symbols().find("do_fork")->addr;
      const std::vector<CodeLine> lines = code_lines(d, fork, 0, 40);
      REQUIRE(lines.front().addr == fork);
      int blocks = 0;
      std::optional<SourceLoc> prev;
      for (const CodeLine& l : lines) {
        const auto loc = lt.at(l.addr);
        REQUIRE(loc);
        const bool starts = !prev || !(*prev == *loc);
        INFO(hex(l.addr));
        CHECK(l.source.empty() == !starts);
        if (starts) {
          REQUIRE_FALSE(l.source.empty());
          CHECK(l.source_file == lt.short_name(loc->file));
          CHECK(l.source.back().line == loc->line);
          CHECK(l.source.back().text == ksim::test::file_line(lt.path(loc->file), loc->line));
          ++blocks;
        }
        prev = loc;
      }
      CHECK(blocks >= 8);
    }
  }
}

TEST_CASE("Explanations: each probe state says what Linux runs there, with the probe's handlers named", "[ui][explain]") {
  for (Isa isa : {Isa::rv64, Isa::x86_64}) {
    DYNAMIC_SECTION(isa_name(isa)) {
      Debugger d(ui_kernel(2, 0, isa), {ui_add("p do_fork")});
      EventFilter hit;
      REQUIRE(event_filter_named("hit", hit));
      REQUIRE(d.next_event(hit));
      const int cpu = d.log()[d.landed_event()].cpu;
      Machine& m = d.world().machine();
      const uint64_t fork = m.symbols().find("do_fork")->addr;
      // The probed instruction as the Code window decodes the image's bytes.
      const std::vector<CodeLine> at = code_lines(d, fork, 0, 1);
      REQUIRE(at.front().addr == fork);
      std::string insn = at.front().text;
      std::replace(insn.begin(), insn.end(), '\t', ' ');  // as a sentence quotes it
      CHECK_THAT(fsm_state_line(d, cpu, FsmNode::hit_active),
                 Catch::Contains("kprobe_trace_func writes p_do_fork_0's event"));
      CHECK_THAT(fsm_state_line(d, cpu, FsmNode::hit_ss), Catch::Contains("the copy of `" + insn + "`"));
      CHECK_THAT(fsm_state_line(d, cpu, FsmNode::trap),
                 Catch::Contains(isa == Isa::rv64 ? "kprobe_breakpoint_handler" : "kprobe_int3_handler"));
      CHECK_THAT(fsm_state_line(d, cpu, FsmNode::hit_ssdone), Catch::Contains("resumes after do_fork"));
      CHECK_THAT(fsm_state_line(d, cpu, FsmNode::reenter), Catch::Contains("nmissed"));
      CHECK_THAT(fsm_state_line(d, cpu, FsmNode::idle), Catch::Contains("do_fork (p_do_fork_0)"));
    }
  }
  // A kretprobe's entry handler, and an override.
  Debugger r(ui_kernel(1), {ui_add("r:ret do_fork"), ui_add("p:ov sys_open")});
  EventFilter hit;
  REQUIRE(event_filter_named("hit", hit));
  REQUIRE(r.next_event(hit));
  const int cpu = r.log()[r.landed_event()].cpu;
  const std::string line = fsm_state_line(r, cpu, FsmNode::hit_active);
  CHECK((line.find("pre_handler_kretprobe takes an instance for ret") != std::string::npos ||
         line.find("ov's event") != std::string::npos));
}

TEST_CASE("Explanations: the instruction slot's words, each what it is", "[ui][explain]") {
  for (Isa isa : {Isa::rv64, Isa::x86_64}) {
    DYNAMIC_SECTION(isa_name(isa)) {
      WorldSpec spec = ui_kernel(2, 0, isa);
      spec.boost = false;  // x86: the step ends at an int3, as on RV64
      Debugger d(spec, {ui_add("p do_fork")});
      EventFilter hit;
      REQUIRE(event_filter_named("hit", hit));
      REQUIRE(d.next_event(hit));
      Machine& m = d.world().machine();
      const uint64_t fork = m.symbols().find("do_fork")->addr;
      const std::vector<CodeLine> at = code_lines(d, fork, 0, 1);
      const kprobes::ProbePoint* pt = d.world().engine()->point_at(fork);
      REQUIRE(pt);
      REQUIRE(pt->slot);
      const std::vector<CodeLine> slot = code_lines(d, pt->slot, 0, 4);
      REQUIRE(slot.size() >= 3);
      // The copy decodes as the original did; the next word is the
      // breakpoint that ends the step; then the fill.
      CHECK(slot[0].text == at.front().text);
      std::string copy = at.front().text;
      std::replace(copy.begin(), copy.end(), '\t', ' ');
      CHECK_THAT(slot[0].slot_of, Catch::Contains("the copy of `" + copy + "`"));
      CHECK(slot[1].text == (isa == Isa::rv64 ? "ebreak" : "int3"));
      CHECK_THAT(slot[1].slot_of, Catch::Contains(std::string("the ") + slot[1].text + " after the copy"));
      CHECK_THAT(slot[2].slot_of, Catch::Contains("unused"));
    }
  }
}

TEST_CASE("Explanations: a stop_machine says which CPUs act on which state, as their stoppers' events show",
          "[ui][explain]") {
  WorldSpec spec = ui_kernel(4);
  spec.script = "@100000 p:myfork do_fork\n";  // one stop_machine: patch_text arming it
  spec.script_file = "t.probes";
  Debugger d(spec, {});
  EventFilter sm;
  REQUIRE(event_filter_named("stop-machine", sm));
  REQUIRE(d.next_event(sm));
  int checked = 0;
  for (int step = 0; step < 400 && checked < 40; ++step) {
    const std::string line = stop_machine_line(d);
    if (line.empty()) break;
    // Each CPU's state: its last stop_machine event since this one began.
    // (Events delivered so far: the log also holds those a search found ahead.)
    const EventLog& log = d.log();
    std::vector<int> seen(4, 0);
    for (size_t i = 0; i < std::min(log.cursor(), log.size()); ++i)
      if (log[i].kind == EventKind::probe && log.text(log[i]) == "stop_machine" && log[i].cpu >= 0)
        seen[log[i].cpu] = static_cast<int>(log[i].b);
    for (int c = 0; c < 4; ++c) {
      const char* state = seen[c] ? kprobes::stop_state_name(static_cast<kprobes::StopState>(seen[c])) : nullptr;
      INFO(line << "\ncpu " << c);
      if (!state) {  // acting on no state yet: listed as not in its stopper, or not yet acting
        bool listed = false;
        for (const std::string head : {"Not yet in its stopper (its IPI not taken yet): CPU ",
                                       "In its stopper (or the caller's job), not yet acting on a state: CPU "}) {
          const size_t h = line.find(head);
          if (h == std::string::npos) continue;
          const std::string list = line.substr(h + head.size(), line.find('.', h) - h - head.size());
          listed |= (", " + list + ",").find(", " + std::to_string(c) + ",") != std::string::npos;
        }
        CHECK(listed);
        continue;
      }
      // The CPU is listed under its state.
      const size_t where = line.find(std::string(state) + ": CPU");
      const size_t also = line.find(std::string(state) + " (has not seen the move yet): CPU");
      CHECK((where != std::string::npos || also != std::string::npos));
    }
    ++checked;
    d.step();
  }
  CHECK(checked >= 10);
}

TEST_CASE("Probe script operations: listed with their cycles and lines, done once the run has passed them",
          "[ui][script-ops]") {
  // The script's operations as read from the file, independently.
  const std::string path = std::string(KSIM_SOURCE_DIR) + "/docs/examples/churn.probes";
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::vector<std::pair<uint64_t, int>> want;  // cycle, line
  {
    std::istringstream lines(text.str());
    int n = 0;
    for (std::string l; std::getline(lines, l);) {
      ++n;
      if (!l.empty() && l[0] == '@') want.emplace_back(std::stoull(l.substr(1)), n);
    }
  }
  REQUIRE(want.size() >= 8);
  WorldSpec spec = ui_kernel(4);
  spec.script = text.str();
  spec.script_file = path;
  Debugger d(spec, {});
  for (uint64_t at : {uint64_t{0}, uint64_t{450'000}, uint64_t{1'300'000}}) {
    d.go_to_cycle(at);
    const auto ops = script_ops(d);
    REQUIRE(ops.size() == want.size());
    for (size_t i = 0; i < ops.size(); ++i) {
      INFO("at " << at << ", op " << i);
      CHECK(ops[i].cycle == want[i].first);
      CHECK(ops[i].line == want[i].second);
      CHECK(ops[i].done == (want[i].first < at));
    }
  }
}
