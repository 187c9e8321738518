#include "ui/model/code_view.hpp"

#include <algorithm>
#include <cstdio>

#include "cpu/hex.hpp"
#include "cpu/rv64/disasm.hpp"
#include "cpu/rv64/insn.hpp"
#include "cpu/x86/insn.hpp"

namespace ksim::ui {

namespace {

struct Decoded {
  unsigned len = 0;
  std::string text;
};

Decoded decode_at(Isa isa, const uint8_t* b, size_t avail, uint64_t pc, const SymbolTable& syms) {
  auto symbolize = [&syms](uint64_t a) { return syms.containing(a) ? syms.format(a) : std::string(); };
  Decoded d;
  if (isa == Isa::x86_64) {
    x86::Insn in = x86::decode(b, avail, pc);
    d.len = in.len ? in.len : 1;
    d.text = in.len ? x86::disassemble(b, avail, pc, symbolize) : "(bad)";
    return d;
  }
  if (avail < 2) return {1, "(bad)"};
  const uint16_t lo = static_cast<uint16_t>(b[0] | b[1] << 8);
  const uint16_t hi = avail >= 4 ? static_cast<uint16_t>(b[2] | b[3] << 8) : 0;
  rv64::Insn in = rv64::decode(lo, hi);
  if (in.len == 4 && avail < 4) in = rv64::decode16(lo);
  d.len = in.len ? in.len : 2;
  d.text = rv64::disassemble(in, pc, symbolize);
  return d;
}

// What the word at `pc` of a probe's instruction slot is (the layout of
// kprobes/x86/slot.cpp and kprobes/rv64: the copy, then what ends the
// step or the booster's jump back, then unused bytes).
std::string slot_note(const std::string& event, const kprobes::ProbeInsn& in, uint64_t slot, uint64_t pc, Isa isa,
                      const SymbolTable& syms) {
  const uint64_t off = pc - slot;
  const std::string of = "slot of " + syms.format(in.addr) + " (" + event + "): ";
  std::string text = in.text;  // (the disassembly's tab, as a space in a sentence)
  std::replace(text.begin(), text.end(), '\t', ' ');
  const char* bp = isa == Isa::x86_64 ? "int3" : "ebreak";
  if (off < in.len)
    return of + "the copy of `" + text + "`, run here out of line (KPROBE_HIT_SS)";
  if (off == in.len && in.boostable == 1 && in.slot_len > in.len)
    return of + "the jump back to " + syms.format(in.addr + in.len) +
           " after the copy (boosted: no trap ends the step)";
  if (in.step_end >= 0 && off == static_cast<uint64_t>(in.step_end))
    return of + "the " + bp + " after the copy: its trap ends the step (KPROBE_HIT_SSDONE, then the post_handler)";
  if (off == in.len && in.step_end < 0)
    return of + "after the copy: RFLAGS.TF's debug trap ends the step, here (classic single-step)";
  return of + "unused (" + bp + " fill)";
}

}  // namespace

std::optional<uint64_t> resolve_location(Debugger& d, const std::string& text) {
  std::string t = text;
  while (!t.empty() && t.back() == ' ') t.pop_back();
  while (!t.empty() && t.front() == ' ') t.erase(t.begin());
  if (t.empty()) return std::nullopt;
  return d.world().machine().symbols().resolve(t);
}

std::vector<CodeLine> code_lines(Debugger& d, uint64_t center, int before, int after, int view_cpu) {
  World& w = d.world();
  Machine& m = w.machine();
  const SymbolTable& syms = m.symbols();
  const Isa isa = m.config().isa;
  kprobes::Engine* eng = w.engine();

  // Decode from the function start so instruction boundaries are right;
  // far from any function, from a little before the center.
  uint64_t start = center;
  if (const Symbol* s = syms.containing(center); s && center - s->addr < 0x200) {
    start = s->addr;
  } else {
    // Far into a function (or in none): from a little before, at the
    // first offset whose decoding lands exactly on the center.
    const uint64_t back = static_cast<uint64_t>(before) * (isa == Isa::x86_64 ? 8 : 4);
    for (uint64_t k = 0; k < 16 && center >= back; ++k) {
      const uint64_t cand = center - back + k;
      std::vector<uint8_t> buf(back + 16);
      if (!m.bus().read_bytes(cand, buf.data(), buf.size())) break;
      if (eng) eng->read_original(cand, buf.data(), buf.size());
      uint64_t pc = cand;
      while (pc < center) pc += decode_at(isa, buf.data() + (pc - cand), buf.size() - (pc - cand), pc, syms).len;
      if (pc == center) {
        start = cand;
        break;
      }
    }
  }
  const uint64_t end = center + static_cast<uint64_t>(after) * 16 + 16;
  std::vector<uint8_t> orig(end - start), now(end - start);
  if (!m.bus().read_bytes(start, now.data(), now.size())) {
    // Partly outside memory: read what exists, byte by byte.
    for (size_t i = 0; i < now.size(); ++i)
      if (!m.bus().read_bytes(start + i, &now[i], 1)) now[i] = 0;
  }
  orig = now;
  if (eng) eng->read_original(start, orig.data(), orig.size());
  // What the viewing CPU would fetch (memory overlaid with its stale view).
  std::vector<uint8_t> seen;
  if (view_cpu >= 0 && view_cpu < m.cpu_count() && m.cpu(view_cpu).code_view_stale()) {
    seen.resize(now.size());
    const size_t n = m.cpu(view_cpu).fetch_view(start, seen.data(), seen.size());
    if (n < seen.size()) std::copy(now.begin() + static_cast<long>(n), now.end(), seen.begin() + static_cast<long>(n));
  }

  // Probe points and slots the session knows.
  struct Known {
    uint64_t addr, slot;
    std::string event;
    uint64_t detour = 0, copy = 0, end = 0;  // its detour buffer (jump optimization)
    unsigned jump_len = 0;                    // the jump over its region, while it is in
    kprobes::ProbeInsn insn;                  // the copy in the slot and what follows it
  };
  std::vector<Known> known;
  unsigned slot_size = 0;
  if (eng && w.session()) {
    slot_size = eng->arch().slot_size();
    for (const auto& p : w.session()->probes()) {
      const kprobes::Kprobe& kp = p->rp ? p->rp->kp : *p->kp;
      if (!kp.rec || !kp.rec->point) continue;
      const kprobes::ProbePoint& pt = *kp.rec->point;
      // (The jump back after the copy: x86's jmp rel32 is 5 bytes, RV64's
      // auipc+jalr 8; kprobes/*/optimize.cpp.)
      const uint64_t jump_back = isa == Isa::x86_64 ? 5 : 8;
      const bool jump_in = pt.opt != kprobes::ProbePoint::Opt::none && pt.opt != kprobes::ProbePoint::Opt::queued;
      known.push_back({pt.addr, pt.slot, p->spec.event, pt.detour, pt.detour_copy,
                       pt.detour_copy + pt.region.len + jump_back, jump_in ? pt.jump_len : 0u, pt.insn});
    }
  }

  std::vector<CodeLine> lines;
  size_t center_index = 0;
  uint64_t pc = start;
  SourceInterleaver source(m.source_lines());
  while (pc < end) {
    const size_t off = pc - start;
    Decoded dec = decode_at(isa, orig.data() + off, orig.size() - off, pc, syms);
    CodeLine l;
    l.addr = pc;
    if (const Symbol* s = syms.containing(pc); s && s->addr == pc) {
      l.label = s->name;
      source.reset();
    }
    if (const auto b = source.next(pc)) {
      const LineTable& lt = m.source_lines();
      l.source_file = lt.short_name(b->file);
      for (uint32_t n = b->first; n <= b->last; ++n) {
        const std::string* text = d.sources().line(lt.path(b->file), n);
        l.source.push_back({n, text ? *text : std::string()});
      }
    }
    l.bytes = insn_bytes(isa, orig.data() + off, std::min<size_t>(dec.len, orig.size() - off));
    l.text = dec.text;
    for (int c = 0; c < m.cpu_count(); ++c)
      if (m.cpu(c).pc() == pc) l.cpus.push_back(c);
    if (eng) {
      if (const kprobes::ProbePoint* p = eng->point_at(pc)) {
        l.probed = true;
        l.breakpoint = p->armed;
      }
      for (const Known& k : known) {
        if (k.addr == pc) {
          l.probed = true;
          l.probes += (l.probes.empty() ? "" : ", ") + k.event;
        }
        if (k.slot && pc >= k.slot && pc < k.slot + slot_size) l.slot_of = slot_note(k.event, k.insn, k.slot, pc, isa, syms);
        if (k.detour && pc >= k.detour && pc < k.end)
          l.slot_of = "detour of " + syms.format(k.addr) + " (" + k.event + "): " +
                      (pc < k.copy                                   ? "handler call"
                       : pc < k.end - (isa == Isa::x86_64 ? 5 : 8) ? "copied region"
                                                                     : "jump back");
      }
      if (!std::equal(orig.begin() + static_cast<long>(off), orig.begin() + static_cast<long>(off + dec.len),
                      now.begin() + static_cast<long>(off))) {
        l.breakpoint = true;
        l.over = decode_at(isa, now.data() + off, now.size() - off, pc, syms).text;
        // An instruction the tail of an optimized probe's jump covers: its
        // bytes decode to nothing meaningful from here.
        for (const Known& k : known) {
          if (pc > k.addr && pc < k.addr + k.jump_len) l.over = "(the jump at " + syms.format(k.addr) + ")";
          if (pc != k.addr || !k.jump_len) continue;
          // The whole jump (RV64: auipc, then jalr) and where it goes.
          l.over.clear();
          for (size_t o = off; o < off + k.jump_len && o < now.size();) {
            Decoded j = decode_at(isa, now.data() + o, now.size() - o, start + o, syms);
            if (!j.len) break;
            l.over += (l.over.empty() ? "" : "; ") + j.text;
            o += j.len;
          }
          l.over += " (to " + hex(k.detour) + ")";
        }
      }
    }
    if (!seen.empty() && !std::equal(now.begin() + static_cast<long>(off),
                                     now.begin() + static_cast<long>(std::min(now.size(), off + dec.len)),
                                     seen.begin() + static_cast<long>(off)))
      l.cpu_sees = decode_at(isa, seen.data() + off, seen.size() - off, pc, syms).text;
    if (pc <= center) center_index = lines.size();
    lines.push_back(std::move(l));
    pc += dec.len;
  }
  const size_t first = center_index >= static_cast<size_t>(before) ? center_index - static_cast<size_t>(before) : 0;
  const size_t last = std::min(lines.size(), center_index + static_cast<size_t>(after));
  return std::vector<CodeLine>(lines.begin() + static_cast<long>(first), lines.begin() + static_cast<long>(last));
}

}  // namespace ksim::ui
