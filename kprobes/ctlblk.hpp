// The per-CPU kprobe control block (Linux's struct kprobe_ctlblk plus the
// per-CPU current_kprobe), extended with what a simulated engine needs to
// split a hit into steps: the phase the CPU is in and where it resumes.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "kprobes/arch.hpp"

namespace ksim::kprobes {

struct ProbePoint;

// Linux's kprobe_status values (include/linux/kprobes.h), plus idle.
enum class KStatus : uint8_t {
  idle = 0,         // no kprobe running on this CPU
  hit_active = 1,   // KPROBE_HIT_ACTIVE: handlers running
  hit_ss = 2,       // KPROBE_HIT_SS: stepping the probed instruction
  reenter = 4,      // KPROBE_REENTER: stepping a probe hit inside another
  hit_ssdone = 8,   // KPROBE_HIT_SSDONE: step done, post handlers
};
const char* status_name(KStatus s);

// The phase a parked CPU resumes with (see engine.hpp): every phase
// boundary is a scheduling point.
enum class Phase : uint8_t {
  none,        // not parked
  lookup,      // trapped at trap_addr; next: find the probe, pre handlers,
               // then step or emulate (the post handlers run at the step's
               // own trap)
  ret,         // trapped at the kretprobe trampoline; next: return handler
  jret,        // trapped in jprobe_return; next: restore, then step
};
const char* phase_name(Phase p);

struct PrevKprobe {
  std::shared_ptr<ProbePoint> point;
  KStatus status = KStatus::idle;
  SavedFlags flags;
};

struct CtlBlk {
  // Linux's state.
  std::shared_ptr<ProbePoint> current;  // current_kprobe (the probe point)
  KStatus status = KStatus::idle;
  SavedFlags flags;                     // kprobe_old_flags / saved_status
  PrevKprobe prev;                      // one saved level, as in Linux

  // ksim's phase machine.
  Phase phase = Phase::none;
  uint64_t trap_addr = 0;   // where the breakpoint trap was taken
  SavedFlags trap_flags;    // the CPU's flags at that trap
  uint64_t resume_pc = 0;   // where the guest continues after the post phase
  uint64_t pass_once_at = ~uint64_t{0};  // a foreign breakpoint to hand to the guest

  // Jprobes: the registers and stack top saved at the probe.
  bool jprobe_active = false;
  RegSnapshot jprobe_regs;
  uint64_t jprobe_sp = 0;
  std::vector<uint8_t> jprobe_stack;

  // Grace periods: `busy` from a breakpoint trap until the CPU is back in
  // guest code with no kprobe running; `completed` counts such returns.
  bool busy = false;
  uint64_t busy_seq = 0;   // value of `completed` when this busy spell began
  uint64_t completed = 0;

  // --kprobes-locking spinlock: spinning on kprobe_lock since this cycle.
  bool lock_waiting = false;
  uint64_t lock_wait_since = 0;

  // Statistics.
  uint64_t hits = 0, reentries = 0, strays = 0;
};

}  // namespace ksim::kprobes
