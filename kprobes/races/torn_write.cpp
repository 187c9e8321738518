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
  Outcome* out = nullptr;
  bool wants_insns() const override { return true; }
  void on_event(const Event& e) override {
    if (e.kind != EventKind::insn || e.a != site || out->violated) return;
    const uint64_t five = e.b & 0xff'ffff'ffffull;
    if ((e.b & 0xff) == 0xcc || five == old5 || five == new5) return;
    char buf[160];
    std::snprintf(buf, sizeof buf, "cycle %llu: cpu %d fetched %010llx at ksim_patch_site (%s), neither the nop "
                  "%010llx nor the jmp %010llx",
                  static_cast<unsigned long long>(e.cycle), e.cpu, static_cast<unsigned long long>(five),
                  hex(site).c_str(), static_cast<unsigned long long>(old5), static_cast<unsigned long long>(new5));
    violate(*out, *m, e.cycle, buf);
  }
};

Outcome run_torn_write(const ElfImage& kernel, const Options& o) {
  Rig rig(kernel, o);
  Machine& m = rig.m;
  kprobes::Engine eng(m);
  Outcome out;
  const Symbol* site = m.symbols().find("ksim_patch_site");
  const Symbol* alt = m.symbols().find("ksim_patch_alt");
  if (!site || !alt) throw InputError("torn-write needs ksim_patch_site and ksim_patch_alt in the kernel");
  const int32_t rel = static_cast<int32_t>(alt->addr - (site->addr + 5));
  std::vector<uint8_t> jmp = {0xe9, 0, 0, 0, 0};
  std::memcpy(&jmp[1], &rel, 4);
  SiteChecker chk;
  chk.m = &m;
  chk.site = site->addr;
  chk.out = &out;
  m.bus().read_bytes(site->addr, &chk.old5, 5);
  std::memcpy(&chk.new5, jmp.data(), 5);
  // The seed picks when the patch starts, anywhere over two timer periods
  // after the kernel is up.
  const uint64_t at = 200'000 + (o.seed * 7'919) % 20'000;
  RunLimits lim;
  lim.cycle = at;
  out.run = m.run(lim);
  if (out.run.end != RunResult::End::paused) return out;
  m.events().add(&chk);  // from here: every fetch is looked at
  eng.begin_op(0);
  if (eng.text_poke_bp(site->addr, jmp, !o.broken) < 0) throw std::runtime_error(eng.last_error());
  eng.end_op();
  lim.cycle = at + 60'000;  // the patch takes a few thousand cycles; ticks every 10,000
  out.run = m.run(lim);
  out.notes = std::string("patch of ksim_patch_site from cycle ") + std::to_string(at) +
              (o.broken ? ", one byte at a time" : ", text_poke_bp") + "; " +
              std::to_string(eng.patcher().totals().jobs) + " patch done";
  m.events().remove(&chk);
  return out;
}

}  // namespace

Outcome torn_write(const ElfImage& kernel, const Options& o) { return run_torn_write(kernel, o); }

}  // namespace ksim::race
