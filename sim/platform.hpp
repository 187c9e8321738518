// The ISA-specific half of a machine: the interrupt controller and timer
// device, the CPUs, and how a CPU's trap is described in events.
#pragma once
#include <memory>
#include <vector>

#include "cpu/code_view.hpp"
#include "cpu/cpu.hpp"
#include "mem/ownership.hpp"
#include "sim/serial.hpp"

namespace ksim {

class Machine;

class Platform {
 public:
  virtual ~Platform() = default;
  virtual std::vector<Cpu*> cpus() = 0;
  // The CPUs' views of code (docs/CODE_MODEL.md).
  virtual CodeViews& code_views() = 0;
  // Why a CPU that stopped itself because the guest crashed (a trap loop)
  // did so (run_slot() reports the crash: kSlotCrashed).
  virtual std::string crash_reason(int cpu) = 0;
  virtual void set_trace_insns(bool on) = 0;

  // The scheduler's one call per slot: runs CPU `cpu` until its clock
  // reaches `until` (steps == 0, the fast path), or for at most `steps`
  // steps on the precise path; stores in `ready` when the CPU next has
  // something to do (its clock, or its wake-up cycle when idle, UINT64_MAX
  // when only another CPU can wake it) and returns SlotStatus bits. One
  // virtual call instead of one per question (run, cycle, idle, crashed,
  // stopped): exact SMP switches CPUs every instruction or two.
  // kSlotCrashed: the guest crashed (a trap loop); kSlotHookStopped: a trap
  // hook returned HookResult::stop.
  // kSlotSync: the CPU runs ahead and stopped before a sync point.
  enum SlotStatus : uint32_t { kSlotIdle = 1, kSlotCrashed = 2, kSlotHookStopped = 4, kSlotSync = 8 };
  virtual uint32_t run_slot(int cpu, uint64_t until, uint64_t steps, uint64_t& ready) = 0;

  // Running ahead (docs/SCHEDULING.md): the CPU state a run-ahead starts
  // from, going back to it, and how the CPU's memory accesses are checked.
  virtual void save_ahead_point(int cpu) = 0;
  virtual void restore_ahead_point(int cpu) = 0;
  virtual void set_access_mode(int cpu, AccessMode m) = 0;
  // The cycle at which the CPU's last trap was taken (a crash or a hook's
  // stop ends the run at that step).
  virtual uint64_t last_trap_cycle(int cpu) const = 0;

  // Checkpoints: CPUs, devices and shared CPU structures.
  virtual void save(Writer& w) const = 0;
  virtual void restore(Reader& r) = 0;

 protected:
  // The CPUs' views of code (cpu/code_view.hpp), the same on both ISAs
  // (sim/code_views.cpp): a CPU that gains a stale view ends its slice (to
  // leave its fast path), its stale fetches and syncs are events, and the
  // views are part of a checkpoint.
  static void connect_code_views(Machine& m, CodeViews& v);
  static void save_code_views(Writer& w, const CodeViews& v, int cpus);
  static void restore_code_views(Reader& r, CodeViews& v, int cpus);

  // run_slot() for a core class `C` (final, so nothing here is a virtual
  // call): both platforms' implementation.
  template <typename C>
  static uint32_t run_core_slot(C& c, uint64_t until, uint64_t steps, uint64_t& ready) {
    if (steps)
      c.step(until, steps);
    else
      c.run(until);
    uint32_t st = 0;
    if (c.idle()) {
      st |= kSlotIdle;
      ready = c.wake_cycle();
    } else {
      ready = c.cycle();
    }
    if (c.crashed()) st |= kSlotCrashed;
    if (c.hook_stopped()) st |= kSlotHookStopped;
    if (c.sync_stopped()) st |= kSlotSync;
    return st;
  }
};

std::unique_ptr<Platform> make_rv64_platform(Machine& m);
std::unique_ptr<Platform> make_x86_platform(Machine& m);

}  // namespace ksim
