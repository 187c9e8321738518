#include "sim/events.hpp"

#include <algorithm>
#include <cstdio>

namespace ksim {

const char* event_kind_name(EventKind k) {
  switch (k) {
    case EventKind::insn: return "insn";
    case EventKind::trap: return "trap";
    case EventKind::interrupt: return "interrupt";
    case EventKind::console: return "console";
    case EventKind::ipi_send: return "ipi_send";
    case EventKind::ipi_recv: return "ipi_recv";
    case EventKind::idle: return "idle";
    case EventKind::wake: return "wake";
    case EventKind::exit: return "exit";
    case EventKind::probe: return "probe";
    case EventKind::probe_op: return "probe_op";
    case EventKind::stale_fetch: return "stale_fetch";
    case EventKind::code_sync: return "code_sync";
    case EventKind::cache_miss: return "cache_miss";
  }
  return "?";
}

void EventStream::remove(EventObserver* o) {
  std::erase(observers_, o);
  std::erase(immediate_, o);
}

namespace {
// Heap order: std::push_heap keeps the largest on top, so "greater" puts
// the earliest (cycle, cpu, seq) there; exit events after everything else.
struct Later {
  template <typename H>
  bool operator()(const H& x, const H& y) const {
    const bool xe = x.e.kind == EventKind::exit, ye = y.e.kind == EventKind::exit;
    if (xe != ye) return xe;
    if (x.e.cycle != y.e.cycle) return x.e.cycle > y.e.cycle;
    if (x.e.cpu != y.e.cpu) return x.e.cpu > y.e.cpu;
    return x.seq > y.seq;
  }
};
}  // namespace

void EventStream::push_heap() { std::push_heap(held_.begin(), held_.end(), Later{}); }

void EventStream::release_below_slow(uint64_t cycle) {
  while (!held_.empty() && (cycle == ~uint64_t{0} || (held_.front().e.cycle < cycle &&
                                                       held_.front().e.kind != EventKind::exit))) {
    std::pop_heap(held_.begin(), held_.end(), Later{});
    Held h = std::move(held_.back());
    held_.pop_back();
    deliver(h.e);
  }
}

void EventStream::set_ordered(bool on) {
  if (!on) {
    drain();
    released_below_ = 0;
  }
  ordered_ = on;
}

void EventStream::save(Writer& w) const {
  // In delivery order, so the file does not depend on the heap's layout.
  std::vector<Held> v = held_;
  std::sort(v.begin(), v.end(), [](const Held& x, const Held& y) { return Later{}(y, x); });
  w.u64(v.size());
  for (const Held& h : v) {
    w.u64(h.e.cycle);
    w.i32(h.e.cpu);
    w.u8(static_cast<uint8_t>(h.e.kind));
    w.u64(h.e.a);
    w.u64(h.e.b);
    w.u64(h.e.c);
    w.str(h.e.text);
    w.u8(h.e.sub);
  }
}

void EventStream::restore(Reader& r) {
  uint64_t n = r.length(8 + 4 + 1 + 24 + 8 + 1);
  std::vector<Held> v;
  for (uint64_t i = 0; i < n; ++i) {
    Event e;
    e.cycle = r.u64();
    e.cpu = r.i32();
    uint8_t kind = r.u8();
    if (kind > static_cast<uint8_t>(EventKind::cache_miss)) r.fail("bad event kind");
    e.kind = static_cast<EventKind>(kind);
    e.a = r.u64();
    e.b = r.u64();
    e.c = r.u64();
    e.text = r.str();
    e.sub = r.u8();
    v.push_back(Held{std::move(e), i});
  }
  held_ = std::move(v);
  std::make_heap(held_.begin(), held_.end(), Later{});
  seq_ = n;
  released_below_ = 0;
}

bool EventStream::wants_insns() const {
  return std::any_of(observers_.begin(), observers_.end(), [](auto* o) { return o->wants_insns(); });
}

void TraceHasher::mix(const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  for (size_t i = 0; i < n; ++i) {
    h_ ^= b[i];
    h_ *= 0x100000001b3ull;
  }
}

void TraceHasher::on_event(const Event& e) {
  if (e.kind == EventKind::insn) return;
  // Fixed-width little-endian fields, so the hash does not depend on struct
  // padding or the host.
  uint8_t kind = static_cast<uint8_t>(e.kind);
  int32_t cpu = e.cpu;
  mix(&e.cycle, 8);
  mix(&cpu, 4);
  mix(&kind, 1);
  mix(&e.a, 8);
  mix(&e.b, 8);
  mix(&e.c, 8);
  mix(&e.sub, 1);
  if (e.kind == EventKind::console || e.kind == EventKind::probe || e.kind == EventKind::probe_op) {
    uint64_t len = e.text.size();
    mix(&len, 8);
    mix(e.text.data(), e.text.size());
  }
}

std::string TraceHasher::hex() const {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h_));
  return buf;
}

}  // namespace ksim
