// The narrow, ISA-neutral view of a simulated CPU that the machine, the CLI,
// the kprobes core and the debugger use. The hot execution loop lives in the
// ISA's own class and never goes through this interface.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace ksim {

enum class Isa;

class Cpu {
 public:
  virtual ~Cpu() = default;
  virtual Isa isa() const = 0;
  virtual int id() const = 0;
  virtual uint64_t pc() const = 0;
  virtual void set_pc(uint64_t pc) = 0;
  virtual int gpr_count() const = 0;
  virtual uint64_t gpr(int i) const = 0;
  virtual void set_gpr(int i, uint64_t v) = 0;
  virtual std::string gpr_name(int i) const = 0;
  virtual uint64_t cycle() const = 0;
  // Charges the CPU cycles spent outside its instruction stream (work a
  // host component such as the kprobes engine does on its behalf).
  virtual void add_cycles(uint64_t n) = 0;
  virtual uint64_t instret() const = 0;
  // Timing model v2: loads and stores that hit this CPU's L1 data cache
  // (the rest are counted by the MemorySystem).
  virtual uint64_t l1_hits() const = 0;
  // Timing model v2: fetches of a new line that hit the L1I.
  virtual uint64_t l1i_hits() const = 0;
  // Timing model v2: the CPU's L1I lost the line at `line_addr`; if it is
  // fetching from it, its next fetch looks again.
  virtual void line_evicted(uint64_t line_addr) = 0;
  // Timing model v2: the CPU's L1I was replaced wholesale (a checkpoint
  // restore): whatever it remembers about it goes.
  virtual void icache_replaced() = 0;
  // Runs until the CPU's cycle count reaches `until` or the run is asked to
  // stop; returns early when the CPU is idle (waiting for an interrupt).
  virtual void run(uint64_t until) = 0;
  // Steps: instructions executed plus traps taken. step() runs at most
  // `steps` of them (for stepping and for replay to an exact point) and
  // returns how many it ran; it stops early at `until` or when idle.
  virtual uint64_t step(uint64_t until, uint64_t steps) = 0;
  virtual uint64_t steps() const = 0;
  virtual bool idle() const = 0;
  // The cycle at which an idle CPU wakes on its own (its timer), or
  // UINT64_MAX when only another CPU or device can wake it.
  virtual uint64_t wake_cycle() const = 0;
  // Moves an idle CPU's clock forward (the scheduler lets idle time pass).
  virtual void advance_idle(uint64_t to_cycle) = 0;
  // Re-evaluates pending interrupts after a device changed them.
  virtual void interrupts_changed() = 0;
  // Asks a running CPU to return from run() after its current instruction.
  virtual void request_stop() = 0;

  // Code as this CPU sees it (--code-model, docs/CODE_MODEL.md).
  // Synchronises its instruction fetch with memory: x86, as a serialising
  // instruction (Linux's sync_core()); RV64, as fence.i. Drops its stale
  // view (a code_sync event when it had one).
  virtual void serialize_code() = 0;
  // Drops the stale view whatever its stores' cycles: the CPU sees memory
  // as it is now (instant patching, which no CPU executes).
  virtual void see_code_now() = 0;
  // The bytes this CPU's next fetch at `addr` would see (memory overlaid
  // with its stale view); returns the bytes read: `n`, fewer at the end of
  // RAM, 0 outside it. For the debugger.
  virtual size_t fetch_view(uint64_t addr, uint8_t* out, size_t n) const = 0;
  // Whether it currently holds a stale view of some code.
  virtual bool code_view_stale() const = 0;
  // Takes a breakpoint exception at the current PC as if the instruction
  // there had raised it (x86 #BP with the saved RIP after a one-byte int3;
  // RV64 cause 3, mepc = PC): the trap hooks first, then the guest. For a
  // host component that hands a breakpoint to the guest from outside the
  // CPU's own trap (`ksim race stray-trap`'s broken variant).
  virtual void raise_breakpoint() = 0;
};

}  // namespace ksim
