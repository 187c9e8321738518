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
  }
  return "?";
}

void EventStream::remove(EventObserver* o) { std::erase(observers_, o); }

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
  uint64_t len = e.text.size();
  mix(&e.cycle, 8);
  mix(&cpu, 4);
  mix(&kind, 1);
  mix(&e.a, 8);
  mix(&e.b, 8);
  mix(&e.c, 8);
  mix(&len, 8);
  mix(e.text.data(), e.text.size());
}

std::string TraceHasher::hex() const {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h_));
  return buf;
}

}  // namespace ksim
