#include "sim/machine.hpp"
#include "sim/platform.hpp"

namespace ksim {

void Platform::connect_code_views(Machine& m, CodeViews& v) {
  v.on_stale = [&m](int cpu) { m.cpu(cpu).interrupts_changed(); };
  v.has_run = [&m](int cpu) { return m.cpu(cpu).steps() > 0; };
  v.on_stale_fetch = [&m](int cpu, uint64_t cycle, uint64_t addr, const StaleRange& r) {
    if (m.events().empty()) return;
    m.events().emit(Event{cycle, cpu, EventKind::stale_fetch, addr, r.store_cycle,
                          static_cast<uint64_t>(static_cast<int64_t>(r.storer)), ""});
  };
  v.on_sync = [&m](int cpu, uint64_t cycle, uint64_t ranges, uint64_t mark) {
    if (m.events().empty()) return;
    m.events().emit_at_seq(Event{cycle, cpu, EventKind::code_sync, ranges, 0, 0, ""}, mark);
  };
  v.on_mark = [&m] { return m.events().reserve_seq(); };
}

// Field by field, like the CPUs; an empty view is one count.
void Platform::save_code_views(Writer& w, const CodeViews& v, int cpus) {
  w.u64(v.code_ranges().size());
  for (const auto& [start, end] : v.code_ranges()) {
    w.u64(start);
    w.u64(end);
  }
  for (int c = 0; c < cpus; ++c) {
    const auto& rs = v.ranges(c);
    w.u64(rs.size());
    for (const StaleRange& r : rs) {
      w.u64(r.addr);
      w.u64(r.store_cycle);
      w.i32(r.storer);
      w.u8(r.len);
      w.boolean(r.reported);
      w.raw(r.old, sizeof r.old);
      w.u64(r.expires);
      w.u64(r.window_lo);
      w.u64(r.window_hi);
      w.boolean(r.window_entered);
    }
  }
}

void Platform::restore_code_views(Reader& r, CodeViews& v, int cpus) {
  // RAM was just replaced: the page copies follow it, and the views are
  // the checkpoint's.
  v.resync();
  std::vector<std::pair<uint64_t, uint64_t>> code(r.length(16));
  for (auto& [start, end] : code) {
    start = r.u64();
    end = r.u64();
    if (end < start) r.fail("bad code range");
  }
  v.set_code_ranges(std::move(code));
  for (int c = 0; c < cpus; ++c) {
    const uint64_t n = r.length(8 + 8 + 4 + 1 + 1 + timing::kCodeStoreGranule + 25);
    if (n > timing::kStaleCodeMaxStores) r.fail("stale view too long");
    if (n && v.model() != CodeModel::relaxed) r.fail("stale view under the strict code model");
    std::vector<StaleRange> rs(n);
    for (StaleRange& s : rs) {
      s.addr = r.u64();
      s.store_cycle = r.u64();
      s.storer = r.i32();
      s.len = r.u8();
      if (s.len == 0 || s.len > timing::kCodeStoreGranule) r.fail("bad stale range");
      s.reported = r.boolean();
      r.raw(s.old, sizeof s.old);
      s.expires = r.u64();
      s.window_lo = r.u64();
      s.window_hi = r.u64();
      s.window_entered = r.boolean();
      if (s.window_hi < s.window_lo) r.fail("bad stale range window");
    }
    v.set_ranges(c, std::move(rs));
  }
}

}  // namespace ksim
