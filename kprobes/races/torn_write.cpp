// torn-write: a 5-byte nop that every CPU executes on every timer tick
// (the kernel's ksim_patch_site) becomes a `jmp` while they run.
//   correct: text_poke_bp (int3 on the first byte, sync, the tail, sync,
//            the first byte, sync; a CPU at the int3 emulates the jmp).
//   broken:  the five bytes stored one at a time, with no synchronisation.
// Invariant: no CPU fetches an instruction at the site made of old and new
// bytes (anything but the nop, the jmp or text_poke_bp's int3).
#include <cstring>

#include "cpu/hex.hpp"
#include "kprobes/engine.hpp"
#include "kprobes/races/race.hpp"

namespace ksim::race {

namespace {

struct SiteChecker : EventObserver {
  Machine* m = nullptr;
  uint64_t site = 0, old5 = 0, new5 = 0;
  uint64_t from = 0;  // the patch's cycle: fetches before it are the nop's
  Outcome* out = nullptr;
  bool wants_insns() const override { return m->now() >= from; }
  void on_event(const Event& e) override {
    if (e.kind != EventKind::insn || e.a != site || out->violated) return;
    const uint64_t five = e.b & 0xff'ffff'ffffull;
    if ((e.b & 0xff) == 0xcc || five == old5 || five == new5) return;
    // In memory order, as objdump and the Code window print x86 bytes.
    auto bytes = [](uint64_t v) {
      uint8_t b[5];
      std::memcpy(b, &v, 5);
      return insn_bytes(Isa::x86_64, b, 5);
    };
    violate(*out, *m, e.cycle, e.cpu,
            "cycle " + std::to_string(e.cycle) + ": cpu " + std::to_string(e.cpu) + " fetched " + bytes(five) +
                " at " + m->describe(site) + ", neither the nop " + bytes(old5) + " nor the jmp " +
                bytes(new5),
            site, "torn: neither the old bytes nor the new");
  }
};

// The patch's cycle: anywhere over two timer periods after the kernel is up.
uint64_t patch_cycle(const Options& o) { return 200'000 + (o.seed * 7'919) % 20'000; }

std::vector<uint8_t> jmp_to_alt(const Machine& m, uint64_t& site) {
  const Symbol* s = m.symbols().find("ksim_patch_site");
  const Symbol* alt = m.symbols().find("ksim_patch_alt");
  if (!s || !alt) throw InputError("torn-write needs ksim_patch_site and ksim_patch_alt in the kernel");
  site = s->addr;
  const int32_t rel = static_cast<int32_t>(alt->addr - (s->addr + 5));
  std::vector<uint8_t> jmp = {0xe9, 0, 0, 0, 0};
  std::memcpy(&jmp[1], &rel, 4);
  return jmp;
}

}  // namespace

Setup torn_write_setup(const Machine& m, const Options& o) {
  Setup s;
  s.name = "torn-write";
  uint64_t site = 0;
  const std::vector<uint8_t> jmp = jmp_to_alt(m, site);
  kprobes::events::ProbeOp op;
  op.kind = kprobes::events::ProbeOp::Kind::custom;
  op.cycle = patch_cycle(o);
  op.text = o.broken ? "write ksim_patch_site one byte at a time" : "text_poke_bp ksim_patch_site";
  op.run = [site, jmp, broken = o.broken](kprobes::Engine& eng) {
    if (eng.text_poke_bp(site, jmp, !broken) < 0) throw std::runtime_error(eng.last_error());
  };
  s.extra.push_back(std::move(op));
  s.until = patch_cycle(o) + 60'000;  // the patch takes a few thousand cycles; ticks every 10,000
  return s;
}

std::unique_ptr<EventObserver> torn_write_checker(Machine& m, const Options& o, Outcome& out) {
  auto chk = std::make_unique<SiteChecker>();
  chk->m = &m;
  chk->out = &out;
  const std::vector<uint8_t> jmp = jmp_to_alt(m, chk->site);
  m.bus().read_bytes(chk->site, &chk->old5, 5);
  std::memcpy(&chk->new5, jmp.data(), 5);
  chk->from = patch_cycle(o);
  return chk;
}

std::string torn_write_notes(const kprobes::Engine& eng, const Options& o, const Setup&, uint64_t) {
  const uint64_t jobs = eng.patcher().totals().jobs;
  return std::string("patch of ksim_patch_site from cycle ") + std::to_string(patch_cycle(o)) +
         (o.broken ? ", one byte at a time" : ", text_poke_bp") + "; " +
         (jobs == 0 ? "still patching when the run stopped"
                    : jobs == 1 ? "the patch finished" : std::to_string(jobs) + " patches finished");
}

}  // namespace ksim::race
