#include "cpu/x86/lapic.hpp"

#include "cpu/timing.hpp"

namespace ksim::x86 {

namespace {
enum : uint64_t {
  kId = 0x20, kVersion = 0x30, kTpr = 0x80, kEoi = 0xb0, kSvr = 0xf0, kIcrLow = 0x300, kIcrHigh = 0x310,
  kLvtTimer = 0x320, kInitial = 0x380, kCurrent = 0x390, kDivide = 0x3e0,
};
constexpr uint32_t kMasked = 1u << 16;
constexpr uint32_t kPeriodic = 1u << 17;
}  // namespace

Lapic::Lapic(int cpus, const Perturbation& perturb, Listener l)
    : cpu_(static_cast<size_t>(cpus)), perturb_(perturb), listener_(std::move(l)) {}

uint64_t Lapic::divide_by(uint32_t d) const {
  // Bits 0, 1 and 3: 000 -> 2, 001 -> 4, 010 -> 8, 011 -> 16, 100 -> 32,
  // 101 -> 64, 110 -> 128, 111 -> 1 (SDM vol. 3, 11.5.4).
  const uint32_t code = (d & 3) | ((d >> 1) & 4);
  return code == 7 ? 1 : (2ull << code);
}

void Lapic::post(int cpu, int vector, uint64_t at, int from) {
  PerCpu& p = cpu_[cpu];
  if (!p.irr.test(vector)) {
    p.arrive[vector] = at;
    p.source[vector] = from;
  } else if (at < p.arrive[vector]) {
    p.later.push_back({vector, p.arrive[vector], p.source[vector]});
    p.arrive[vector] = at;
    p.source[vector] = from;
  } else if (at > p.arrive[vector]) {
    p.later.push_back({vector, at, from});
  }
  p.irr.set(vector);
  if (listener_.changed) listener_.changed(cpu);
}

void Lapic::fire_timer(int cpu, uint64_t cycle) const {
  PerCpu& p = cpu_[cpu];
  if (p.deadline == kNever || cycle < p.deadline) return;
  const int v = p.lvt_timer & 0xff;
  if (!(p.lvt_timer & kMasked)) {
    if (!p.irr.test(v)) {
      p.arrive[v] = p.deadline;
      p.source[v] = -1;
    }
    p.irr.set(v);
  }
  // Periodic: the expiries since then collapse into one pending interrupt
  // (an IRR bit holds one); re-arm at the next period boundary after now.
  if ((p.lvt_timer & kPeriodic) && p.period) {
    const uint64_t periods = (cycle - p.deadline) / p.period + 1;
    p.deadline += periods * p.period;
  } else {
    p.deadline = kNever;
  }
}

int Lapic::pending(int cpu, uint64_t cycle) const {
  fire_timer(cpu, cycle);
  const PerCpu& p = cpu_[cpu];
  if (!(p.svr & 0x100)) return -1;  // software-disabled APIC delivers nothing
  const int in_service = p.isr.highest();
  int result = -1;
  p.irr.for_each_high_to_low([&](int v) {
    if (v < 16) return false;
    if (p.arrive[v] > cycle) return true;  // not arrived yet: look lower
    // Only a higher priority class than the one in service (and the TPR).
    if (in_service >= 0 && (v >> 4) <= (in_service >> 4)) return false;
    if ((v >> 4) <= static_cast<int>((p.tpr >> 4) & 0xf)) return false;
    result = v;
    return false;
  });
  return result;
}

void Lapic::acknowledge(int cpu, int vector, uint64_t cycle) {
  PerCpu& p = cpu_[cpu];
  p.irr.reset(vector);
  p.isr.set(vector);
  p.taken_source[vector] = p.source[vector];
  if (p.later.empty()) return;
  // Posts that arrived by now merged into this one; the earliest of the
  // rest is the vector's next IRR entry.
  std::erase_if(p.later, [&](const PerCpu::Later& l) { return l.vector == vector && l.arrive <= cycle; });
  auto next = p.later.end();
  for (auto it = p.later.begin(); it != p.later.end(); ++it)
    if (it->vector == vector && (next == p.later.end() || it->arrive < next->arrive)) next = it;
  if (next == p.later.end()) return;
  p.irr.set(vector);
  p.arrive[vector] = next->arrive;
  p.source[vector] = next->source;
  p.later.erase(next);
}

uint64_t Lapic::next_event(int cpu, uint64_t now) const {
  fire_timer(cpu, now);
  const PerCpu& p = cpu_[cpu];
  if (!(p.svr & 0x100)) return kNever;  // a disabled APIC delivers nothing
  uint64_t t = (p.lvt_timer & kMasked) ? kNever : p.deadline;
  p.irr.for_each_high_to_low([&](int v) {
    if (v >= 16 && p.arrive[v] > now && p.arrive[v] < t) t = p.arrive[v];
    return true;
  });
  return t;
}

std::vector<uint64_t> Lapic::snapshot() const {
  std::vector<uint64_t> w;
  for (const PerCpu& p : cpu_) {
    for (uint64_t x : p.irr.w) w.push_back(x);
    for (uint64_t x : p.isr.w) w.push_back(x);
    w.insert(w.end(), p.arrive.begin(), p.arrive.end());
    for (int x : p.source) w.push_back(static_cast<uint64_t>(static_cast<int64_t>(x)));
    for (uint64_t x : {uint64_t{p.svr}, uint64_t{p.tpr}, uint64_t{p.icr_high}, uint64_t{p.lvt_timer},
                       uint64_t{p.divide}, uint64_t{p.initial}, p.deadline, p.period, p.ipi_draws, p.timer_draws})
      w.push_back(x);
  }
  // Then each CPU's later posts: a count, then (vector, arrival, source).
  for (const PerCpu& p : cpu_) {
    w.push_back(p.later.size());
    for (const PerCpu::Later& l : p.later) {
      w.push_back(static_cast<uint64_t>(l.vector));
      w.push_back(l.arrive);
      w.push_back(static_cast<uint64_t>(static_cast<int64_t>(l.source)));
    }
  }
  return w;
}

bool Lapic::restore(const std::vector<uint64_t>& w) {
  constexpr size_t kPer = 4 + 4 + 256 + 256 + 10;
  if (w.size() < (kPer + 1) * cpu_.size()) return false;
  size_t k = 0;
  for (PerCpu& p : cpu_) {
    for (uint64_t& x : p.irr.w) x = w[k++];
    for (uint64_t& x : p.isr.w) x = w[k++];
    for (uint64_t& x : p.arrive) x = w[k++];
    for (int& x : p.source) {
      const int64_t v = static_cast<int64_t>(w[k++]);
      if (v < -1 || v >= static_cast<int64_t>(cpu_.size())) return false;
      x = static_cast<int>(v);
    }
    p.svr = static_cast<uint32_t>(w[k++]);
    p.tpr = static_cast<uint32_t>(w[k++]);
    p.icr_high = static_cast<uint32_t>(w[k++]);
    p.lvt_timer = static_cast<uint32_t>(w[k++]);
    p.divide = static_cast<uint32_t>(w[k++]);
    p.initial = static_cast<uint32_t>(w[k++]);
    p.deadline = w[k++];
    p.period = w[k++];
    p.ipi_draws = w[k++];
    p.timer_draws = w[k++];
  }
  for (PerCpu& p : cpu_) {
    if (k >= w.size()) return false;
    const uint64_t n = w[k++];
    if (n > 256 * 4 || w.size() - k < 3 * n) return false;
    p.later.clear();
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t v = w[k++], at = w[k++];
      const int64_t src = static_cast<int64_t>(w[k++]);
      if (v < 16 || v > 255 || src < -1 || src >= static_cast<int64_t>(cpu_.size())) return false;
      p.later.push_back({static_cast<int>(v), at, static_cast<int>(src)});
    }
  }
  return k == w.size();
}

bool Lapic::read(const Accessor& who, uint64_t offset, unsigned size, uint64_t& value) {
  if (size != 4 || (offset & 0xf) || who.cpu < 0) return false;
  fire_timer(who.cpu, who.cycle);  // an expiry is raised whatever IF says
  const PerCpu& p = cpu_[who.cpu];
  switch (offset) {
    case kId: value = static_cast<uint64_t>(who.cpu) << 24; return true;
    case kVersion: value = 0x00050014; return true;
    case kTpr: value = p.tpr; return true;
    case kSvr: value = p.svr; return true;
    case kIcrLow: value = 0; return true;  // delivery is never "pending" here
    case kIcrHigh: value = p.icr_high; return true;
    case kLvtTimer: value = p.lvt_timer; return true;
    case kInitial: value = p.initial; return true;
    case kCurrent: {
      if (p.deadline == kNever || who.cycle >= p.deadline) { value = 0; return true; }
      value = (p.deadline - who.cycle) / divide_by(p.divide);
      return true;
    }
    case kDivide: value = p.divide; return true;
    case kEoi: value = 0; return true;
    default: value = 0; return true;  // other registers read as zero
  }
}

uint64_t Lapic::cpus_affected(const Accessor& who, uint64_t offset, unsigned, bool is_write, uint64_t value) const {
  if (!is_write || offset != kIcrLow) return 0;
  // The targets, as write() picks them.
  const uint32_t v = static_cast<uint32_t>(value);
  if (((v >> 8) & 7) != 0) return 0;
  const unsigned shorthand = (v >> 18) & 3;
  const int dest = static_cast<int>(cpu_[static_cast<size_t>(who.cpu)].icr_high >> 24);
  uint64_t mask = 0;
  for (int c = 0; c < static_cast<int>(cpu_.size()); ++c) {
    const bool hit = shorthand == 0   ? (c == dest || dest == 0xff)
                     : shorthand == 1 ? c == who.cpu
                     : shorthand == 2 ? true
                                      : c != who.cpu;
    if (hit) mask |= uint64_t{1} << c;
  }
  return mask;
}

bool Lapic::write(const Accessor& who, uint64_t offset, unsigned size, uint64_t value) {
  if (size != 4 || (offset & 0xf) || who.cpu < 0) return false;
  fire_timer(who.cpu, who.cycle);
  PerCpu& p = cpu_[who.cpu];
  const uint32_t v = static_cast<uint32_t>(value);
  switch (offset) {
    case kTpr: p.tpr = v & 0xff; break;
    case kSvr: p.svr = v & 0x1ff; break;
    case kEoi:
      if (int k = p.isr.highest(); k >= 0) p.isr.reset(k);
      break;
    case kIcrHigh: p.icr_high = v; break;
    case kIcrLow: {
      const int vector = v & 0xff;
      const unsigned shorthand = (v >> 18) & 3;
      const int dest = static_cast<int>(p.icr_high >> 24);
      // Only fixed delivery (mode 000) is modelled: INIT, SIPI, NMI, SMI
      // and lowest-priority requests are ignored rather than turned into
      // stray vectors (all CPUs start at the ELF entry anyway).
      if (((v >> 8) & 7) != 0) break;
      for (int c = 0; c < static_cast<int>(cpu_.size()); ++c) {
        const bool hit = shorthand == 0   ? (c == dest || dest == 0xff)  // 0xff: broadcast
                         : shorthand == 1 ? c == who.cpu
                         : shorthand == 2 ? true
                                          : c != who.cpu;
        if (!hit) continue;
        uint64_t at = who.cycle;
        if (c != who.cpu) {
          uint64_t jitter = perturb_.uniform(Perturbation::stream(Perturbation::Stream::ipi, c), cpu_[c].ipi_draws++,
                                             0, timing::kIpiJitterMax);
          at += timing::kIpiLatency + jitter;
          if (listener_.ipi_sent) listener_.ipi_sent(who.cpu, c, vector, who.cycle);
        }
        post(c, vector, at, c != who.cpu ? who.cpu : -1);
      }
      break;
    }
    case kLvtTimer: p.lvt_timer = v & (0xff | kMasked | kPeriodic); break;
    case kDivide: p.divide = v & 0xb; break;
    case kInitial: {
      p.initial = v;
      if (v == 0) {
        p.deadline = kNever;
      } else {
        const uint64_t cycles = static_cast<uint64_t>(v) * divide_by(p.divide);
        const uint64_t jitter = perturb_.uniform(Perturbation::stream(Perturbation::Stream::timer, who.cpu),
                                                 p.timer_draws++, 0, timing::kTimerJitterMax);
        p.deadline = who.cycle + cycles + jitter;
        p.period = cycles;
      }
      break;
    }
    default: break;  // other registers ignore writes
  }
  if (listener_.changed) listener_.changed(who.cpu);
  return true;
}

}  // namespace ksim::x86
