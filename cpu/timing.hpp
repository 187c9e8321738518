// The timing model: every cycle cost ksim charges, in one place.
//
// Model v1 is a scalar, in-order, single-issue core with a perfect cache:
// each instruction costs a fixed number of cycles by class, plus a penalty
// for taken control transfers. It stands for a simple embedded pipeline
// (the classic five-stage RISC of Hennessy & Patterson, "Computer
// Organization and Design", ch. 4: one instruction per cycle, a redirect
// bubble on taken branches, multi-cycle multiply and divide units).
// The per-class numbers below are the model's assumptions, not
// measurements of a particular chip; where a published figure guided the
// choice it is named. A later refinement (pipeline hazards, caches) replaces
// these constants here and nowhere else. No constant is tuned to make a
// benchmark come out right.
#pragma once
#include <cstdint>

namespace ksim::timing {

// Instruction classes shared by both ISAs' instruction tables.
enum class Class : uint8_t {
  alu,        // integer ALU, LUI/AUIPC, moves
  mul,        // integer multiply
  div,        // integer divide / remainder
  load,       // memory read
  store,      // memory write
  branch,     // conditional branch (not-taken cost; taken adds kTakenPenalty)
  jump,       // unconditional direct or indirect jump, call, return
  atomic,     // LR/SC/AMO, locked read-modify-write
  csr,        // CSR / system-register access (serialising)
  fence,      // FENCE, FENCE.I, memory barriers
  system,     // ECALL, EBREAK, MRET, WFI, traps that do not retire
  count_
};

// Base cost in cycles of one instruction of each class.
inline constexpr uint8_t kClassCycles[static_cast<int>(Class::count_)] = {
    1,   // alu: one pipeline slot
    3,   // mul: result latency of a pipelined multiplier (an assumption
         //      typical of small in-order cores, not a figure of one chip)
    20,  // div: iterative divider, mid-range of the variable latencies such
         //      in-order cores document; modelled as fixed for now
    2,   // load: one cycle plus the load-use slot, cache always hits
    1,   // store: store buffer absorbs it
    1,   // branch: not taken
    2,   // jump: always redirects fetch (one bubble)
    5,   // atomic: read, modify, write back, held exclusive
    3,   // csr: serialising access to machine state
    3,   // fence: drains the (modelled) store buffer
    3,   // system: pipeline flush
};

// x86 rep string instructions (MOVS STOS LODS CMPS SCAS, load class) cost
// their class cost per iteration and once more at retirement, as the
// precise semantics charged before iterations became interruptible: a
// simple microcoded loop of one memory access per element and a final
// exit, in the spirit of the in-order model above (the SDM gives no
// per-iteration figure; this is the model's assumption, not a chip's).

// Extra cycles when a conditional branch is taken (fetch redirect bubble).
inline constexpr uint8_t kTakenPenalty = 1;

// Cycles to enter a trap handler (flush + vector fetch), charged on every
// exception and interrupt delivery, on top of the faulting instruction.
inline constexpr uint8_t kTrapEntryCycles = 5;

// CLINT timebase: mtime ticks once per this many core cycles (a 100 MHz
// core with a 10 MHz timebase, QEMU virt's timebase frequency).
inline constexpr uint64_t kTimebaseDivider = 10;

// Latency from a CLINT msip write to the interrupt being visible to the
// target hart (an interconnect hop).
inline constexpr uint64_t kIpiLatency = 20;

// --- Seeded perturbation (--seed S, S != 0; cpu/perturb.hpp) --------------
// Memory stalls: each hart, at intervals drawn uniformly from
// [kStallIntervalMin, kStallIntervalMax] cycles, stalls for a length drawn
// from [1, kStallMax] cycles, standing for cache misses and DRAM refresh
// that the base model does not simulate. Interrupt arrival: a timer
// interrupt becomes pending up to kTimerJitterMax cycles after mtime
// reaches mtimecmp, and an IPI up to kIpiJitterMax cycles after
// kIpiLatency. The ranges are chosen to be small against a timer tick and
// large against one instruction, so seeds reorder races without changing
// what a program computes.
inline constexpr uint64_t kStallIntervalMin = 200;
inline constexpr uint64_t kStallIntervalMax = 2000;
inline constexpr uint64_t kStallMax = 40;
inline constexpr uint64_t kTimerJitterMax = 50;
inline constexpr uint64_t kIpiJitterMax = 30;

// --- The kprobes engine (kprobes/) ----------------------------------------
// The engine is host code, but a probe hit must cost the probed CPU what
// Linux's probe path would cost it, so that probes perturb timing the way
// they do on hardware and races between CPUs stay realistic. Each constant
// is the guest cost of one step of Linux's x86-64 path, estimated by
// counting the instructions of that step in the kernel source at the
// model's rates above (about one cycle per instruction plus the loads),
// not measured on a chip. They are charged on top of kTrapEntryCycles for
// every breakpoint trap, including the engine's own parking traps.
// Cross-check: with a one-handler kprobe these sum to roughly 300 cycles
// per hit, the same order as the 0.5-1 us per kprobe hit of the Linux
// documentation's table on 1-3 GHz machines (well under it, since that
// figure includes cache misses this model does not have).
//
// Trap entry to the probe handler: saving pt_regs (about 20 stores) and the
// exception dispatch (do_int3 / notifier chain).
inline constexpr uint64_t kKprobeTrapCycles = 40;
// get_kprobe(): hash the address, walk a short hlist.
inline constexpr uint64_t kKprobeLookupCycles = 15;
// Calling one user handler and returning (indirect call, prologue and
// epilogue, the aggregate loop's bookkeeping). The handler body is host
// code; built-in actions add their own costs below.
inline constexpr uint64_t kKprobeHandlerCycles = 10;
// Setting up the out-of-line step: PC to the slot, flags, IRQ masking.
inline constexpr uint64_t kKprobeStepSetupCycles = 10;
// Emulating a control-flow or flag instruction instead of stepping it.
inline constexpr uint64_t kKprobeEmulateCycles = 15;
// The second trap's handling after a step: identify the step end, fix up.
inline constexpr uint64_t kKprobeStepEndCycles = 25;
// Returning to the guest: restore pt_regs and the flags, iret.
inline constexpr uint64_t kKprobeResumeCycles = 30;
// Kretprobe entry: take an instance from the free list, save the return
// address, plant the trampoline, add to the task's list.
inline constexpr uint64_t kKretprobeEntryCycles = 30;
// Kretprobe return: trampoline register save, find the task's instance,
// recycle it, restore.
inline constexpr uint64_t kKretprobeReturnCycles = 60;
// An optimized probe's hit, in its detour buffer (Linux's optprobe_template
// and optimized_callback): push rsp and flags, save 15 registers, the call,
// the kprobe_running() check and setting/resetting current_kprobe,
// restore: about 40 instructions, with no trap entry or iret.
inline constexpr uint64_t kOptimizedCallbackCycles = 40;
// Linux's OPTIMIZE_DELAY: the optimizer is delayed work that runs 5
// jiffies after the first probe queued for it, so that probes registered
// together share one RCU-tasks grace period (kernel/kprobes.c). A jiffy of
// the mini kernel (CONFIG_HZ 10000) on the model's 100 MHz core (the CLINT
// timebase above) is 10,000 cycles.
inline constexpr uint64_t kOptimizeDelayCycles = 5 * 10'000;
// Jprobe: save the registers and MIN_STACK_SIZE (64) bytes of stack, and
// restore both at jprobe_return (a 64-byte memcpy plus 20 registers each).
inline constexpr uint64_t kJprobeSaveCycles = 45;
inline constexpr uint64_t kJprobeRestoreCycles = 45;
// Built-in handler actions: one fetch argument (a register or memory read
// and the ring-buffer store), and the fixed cost of recording an event.
inline constexpr uint64_t kFetchArgCycles = 8;
inline constexpr uint64_t kRecordEventCycles = 40;
// Registration work charged to the calling CPU: decoding and copying the
// instruction, allocating a slot, the hash insert (register).
inline constexpr uint64_t kKprobeRegisterCycles = 2000;
// One text_poke(): map the page through the poking mm, switch to it,
// memcpy, switch back, unmap and flush the TLB entry (arch/x86/kernel/
// alternative.c, __text_poke, about 800 instructions with the page-table
// walk); RV64's patch_text_nosync (fixmap, copy, flush) is charged the
// same. The synchronisation that follows (sync IPIs, stop_machine) is not
// in it: kprobes/patching.cpp executes it on the CPUs concerned.
inline constexpr uint64_t kTextPokeCycles = 800;
// --- Text patching protocols (kprobes/patching.cpp, docs/PATCHING.md) -------
// What each CPU executes is simulated step by step; these are the costs of
// the steps, counted from the Linux code at this model's class rates.
// text_mutex lock or unlock, uncontended (a cmpxchg and a branch).
inline constexpr uint64_t kTextMutexCycles = 10;
// Sending one IPI: smp_call_function's csd setup for one CPU (queue the
// call, about 10 stores and an atomic) plus the doorbell store.
inline constexpr uint64_t kIpiSendCycles = 20;
// One iteration of a wait loop on another CPU's progress: cpu_relax()
// (pause 1) plus a load and a taken branch, as kKprobeLockSpinCycles.
inline constexpr uint64_t kPatchSpinCycles = 5;
// An IPI handler's call-function work around the callback: dequeue the
// csd, call it, release the csd lock (about 15 instructions and an atomic).
inline constexpr uint64_t kIpiCallCycles = 20;
// sync_core(): iret to self, the serialising instruction modern x86 uses
// (a frame of 5 pushes and the iretq, class costs above).
inline constexpr uint64_t kSyncCoreCycles = 12;
// fence.i: the fence class cost.
inline constexpr uint64_t kFenceICycles = 1;
// stop_machine(): taking cpus_read_lock, filling the multi_stop_data and
// queueing a cpu_stop_work for every CPU (per CPU: kIpiSendCycles more).
inline constexpr uint64_t kStopMachineSetupCycles = 100;
// The stopper thread running after the IPI that woke it: the scheduler's
// switch into it and, at the end, back (a context switch each way, about
// 100 instructions).
inline constexpr uint64_t kStopperSwitchCycles = 100;
// multi_cpu_stop(): one iteration of its loop (cpu_relax, READ_ONCE of the
// state, compare), a state's action (local_irq_disable, or reading the
// active mask), and ack_state()'s atomic_dec_and_test (atomic class).
inline constexpr uint64_t kStopperPollCycles = 5;
inline constexpr uint64_t kStopperStateCycles = 5;
inline constexpr uint64_t kStopperAckCycles = 5;
// Legacy locking (`--kprobes-locking spinlock`, docs/KPROBES.md): Linux
// 2.6.9's one global kprobe_lock, taken by lock_kprobes() at the top of
// kprobe_handler and released by unlock_kprobes() in post_kprobe_handler
// (arch/i386/kernel/kprobes.c, 2.6.9; the 2006 OLS paper's section 5).
// Costs are the i386 spinlock's instructions at this model's class rates:
// spin_lock is `lock decb; js` (atomic 5 + branch 1), spin_unlock is
// `movb $1` (store 1), and a CPU that finds the lock held spins in
// `rep; nop; cmpb $0,lock; jle` (pause 1 + load 2 + taken branch 2) until
// it reads the lock free, then retries the locked decrement. No cache-line
// transfer is charged: the model has no caches (above).
inline constexpr uint64_t kKprobeLockAcquireCycles = 6;
inline constexpr uint64_t kKprobeLockReleaseCycles = 1;
inline constexpr uint64_t kKprobeLockSpinCycles = 5;

// --- Code as CPUs see it (--code-model relaxed; docs/CODE_MODEL.md) ------
// How long a CPU may go on fetching the bytes a store into code replaced
// when nothing makes it look again: the stale view of a store made at cycle
// T by any CPU ends, for every CPU that holds it, at its first fetch at or
// after T + kStaleCodeMaxCycles (its own clock). Neither architecture gives
// a bound: the Intel SDM (vol. 3A, "Handling Self- and Cross-Modifying
// Code") only says the executing processor may keep executing the old
// bytes until it executes a serialising instruction, and the RISC-V
// unprivileged specification (Zifencei) only that instruction fetches see
// stores after a fence.i on the fetching hart. A real CPU loses its copy
// when a prefetch buffer or an instruction-cache line is evicted, which
// depends on what it runs; this constant stands for that eviction, a model
// parameter rather than a measurement. 50,000 cycles (0.5 ms at the 100 MHz
// the CLINT timebase assumes) is long against every step of a patching
// protocol (kTextPokeCycles, kKprobeRegisterCycles: 25 to 60 times longer),
// so a protocol that forgets to serialise shows its race, and short against
// a run (the guest kernel runs for millions of cycles), so a CPU that never
// serialises still sees new code eventually.
inline constexpr uint64_t kStaleCodeMaxCycles = 50'000;
// The store granularity of the stale view: a CPU's store instruction is one
// store (seen whole or not at all, whatever its width), and so is a host
// write through the bus (Bus::write_bytes, the kprobes engine's text
// writes) of at most this many bytes; a longer host write is the naturally
// aligned stores of this many bytes that cover it, as the kernel's memcpy
// in text_poke moves 8 bytes at a time (the SDM, vol. 3A "Guaranteed Atomic
// Operations", makes an aligned 8-byte store atomic; RV64's sd likewise).
inline constexpr unsigned kCodeStoreGranule = 8;
// The most stores one CPU's stale view holds, standing for the capacity of
// its prefetch buffer and instruction cache: a store beyond it evicts the
// oldest (the CPU then sees that store, which it may always do). 64 stores
// of up to 8 bytes is far more than any patching step writes at once (a
// breakpoint, a 5-byte jump, one slot) and keeps the slow fetch path's
// overlap check short.
inline constexpr unsigned kStaleCodeMaxStores = 64;

constexpr uint8_t cycles(Class c) { return kClassCycles[static_cast<int>(c)]; }

}  // namespace ksim::timing
