// The host-side trap hook chain. Every trap a simulated CPU takes (exception
// or interrupt) is offered to the hooks first, in order of priority (lowest
// first; the kprobes engine registers at the head). A hook may:
//   - pass: let the next hook, and finally the guest, see the trap;
//   - handled: the hook dealt with it (it may have changed the CPU's state,
//     e.g. moved the PC); the guest never sees the trap;
//   - stop: end the run (the hook has recorded why).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ksim {

class Cpu;

struct TrapInfo {
  uint64_t cause = 0;   // ISA cause code (RV64 mcause without the interrupt bit)
  uint64_t tval = 0;    // faulting address / instruction bits, 0 otherwise
  uint64_t pc = 0;      // PC of the trapping instruction (or where interrupted)
  bool interrupt = false;
};

enum class HookResult { pass, handled, stop };

class TrapHookChain {
 public:
  using Hook = std::function<HookResult(Cpu&, const TrapInfo&)>;

  // Returns an id for remove(). Hooks of equal priority run in insertion order.
  int add(int priority, Hook hook);
  void remove(int id);
  bool empty() const { return hooks_.empty(); }
  HookResult run(Cpu& cpu, const TrapInfo& trap) const;
  // Whether hooks are running now (host work inside a CPU's trap step).
  bool active() const { return depth_ > 0; }

 private:
  struct Entry {
    int priority;
    int id;
    Hook hook;
  };
  std::vector<Entry> hooks_;
  int next_id_ = 1;
  mutable int depth_ = 0;
};

}  // namespace ksim
