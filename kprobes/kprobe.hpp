// The probe objects a user of the engine registers, shaped after Linux's
// <linux/kprobes.h>: struct kprobe, struct kretprobe (with its instances)
// and struct jprobe. The caller owns them and keeps them alive while they
// are registered; the engine writes their statistics (nmissed, hits) back.
//
// Handlers are host C++ callables. They run "on" a simulated CPU, with its
// interrupts masked, and may read and change its registers and memory (a
// pre_handler that moves the PC and returns non-zero skips the step). A
// handler never runs after its probe's unregister call has returned, even
// for a hit that was already in flight on another CPU (Linux gets the same
// guarantee by waiting for an RCU grace period inside unregister).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ksim {
class Cpu;
}

namespace ksim::kprobes {

struct ProbeRec;  // the engine's record of a registered probe
struct KretprobeInstance;

// Kprobe flags (Linux's KPROBE_FLAG_*).
enum : uint32_t {
  kFlagGone = 1u << 0,       // the probed code went away (shown in the list)
  kFlagDisabled = 1u << 1,   // registered but not hitting
  kFlagOptimized = 1u << 2,  // jump-optimized (a later issue)
};

struct Kprobe {
  // Where: an address, or a symbol plus offset (exactly one of the two).
  uint64_t addr = 0;
  std::string symbol_name;
  uint64_t offset = 0;

  // Called before the probed instruction runs. Returning non-zero means the
  // handler has set the CPU up to continue elsewhere: no step, no post.
  std::function<int(Kprobe&, Cpu&)> pre_handler;
  // Called after the probed instruction ran (stepped or emulated).
  std::function<void(Kprobe&, Cpu&, unsigned long flags)> post_handler;
  // Called when the stepped instruction (or a guest-side handler, for a
  // jprobe) faults, with the ISA's trap number. Non-zero: handled; the CPU
  // continues where the handler left its PC (if that is still the slot,
  // the handler fixed the cause and the copy is stepped again). Zero: the
  // guest sees the fault, at the probed address.
  std::function<int(Kprobe&, Cpu&, int trapnr)> fault_handler;

  // ksim: the pre_handler may move the PC (an override). An optimized probe
  // ignores such a move (its handlers run from the detour buffer), so a
  // probe with this set is never jump-optimized; Engine::reconsider() after
  // changing it on a registered probe.
  bool moves_pc = false;
  uint32_t flags = 0;    // kFlagDisabled may be set before registering
  uint64_t nmissed = 0;  // hits whose handlers were skipped (reentry)
  uint64_t hits = 0;     // handler runs (a ksim addition)

  // Set by the engine while registered.
  ProbeRec* rec = nullptr;
};

// One in-flight return of a kretprobed function.
struct KretprobeInstance {
  struct Kretprobe* rp = nullptr;  // null once the kretprobe is unregistered
  uint64_t ret_addr = 0;           // the real return address
  uint64_t sp = 0;                 // stack pointer at function entry
  uint64_t task = 0;               // the guest task that made the call
  uint64_t entry_cycle = 0;
  int cpu = 0;                     // CPU of the entry
  std::vector<uint8_t> data;       // data_size bytes of handler-private data
};

struct Kretprobe {
  Kprobe kp;  // the entry probe (function entry only)
  // At the return; its return value is ignored, as in Linux.
  std::function<int(KretprobeInstance&, Cpu&)> handler;
  // At the entry, with the instance; non-zero: no return handler for it.
  std::function<int(KretprobeInstance&, Cpu&)> entry_handler;
  int maxactive = 0;       // 0: max(10, 2 * NR_CPUS)
  size_t data_size = 0;    // per instance, at most kMaxDataSize
  uint64_t nmissed = 0;    // entries with no free instance
  uint64_t hits = 0;       // return handler runs
  static constexpr size_t kMaxDataSize = 4096;
};

// A jprobe (Linux removed them in 4.15; kept for teaching): the entry is a
// GUEST function with the probed function's signature that ends by calling
// jprobe_return(). The engine saves the registers and the top of the stack
// at the probe, runs the guest handler, and restores both at
// jprobe_return() before stepping the probed instruction.
struct Jprobe {
  Kprobe kp;
  uint64_t entry = 0;        // guest handler address, or
  std::string entry_symbol;  // its symbol
};

}  // namespace ksim::kprobes
