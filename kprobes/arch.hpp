// The architecture half of the kprobes engine: everything that depends on
// the instruction set. The engine (kprobes/engine.*) is ISA-neutral and
// talks to one of these through this narrow interface; kprobes/x86/ and
// kprobes/rv64/ implement it. Calls happen at registration and once or
// twice per probe hit, never per guest instruction, so a virtual call is
// fine here.
//
// Vocabulary (Linux's): the *probed instruction* at `addr` is copied to an
// *instruction slot* in guest memory (the 64 KiB `.kprobe_slots` area of
// the guest kernel) and a *breakpoint* is written over it. On a hit the
// engine either *emulates* the instruction on the host (x86 "modern"
// mode's call/jmp/jcc/ret/pushf/popf/cli/sti, RV64's PC-relative
// instructions: Linux calls the latter "simulate") or *steps* the copy
// out of line in the slot, then resumes after the probed instruction.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cpu/isa.hpp"
#include "cpu/trap_hooks.hpp"

namespace ksim {
class Bus;
struct Accessor;
class Cpu;
struct Symbol;
}  // namespace ksim

namespace ksim::kprobes {

// Linux-style error numbers (returned negated, as in the kernel).
enum Errno : int {
  kENOENT = 2,
  kENOMEM = 12,
  kEBUSY = 16,
  kEEXIST = 17,
  kEINVAL = 22,
  kE2BIG = 7,
  kERANGE = 34,
  kEILSEQ = 84,
  kEOPNOTSUPP = 95,
};
const char* errno_name(int err);  // "EINVAL" for 22 or -22

// How x86 steps a probed instruction (the two generations).
//  classic: the copy is single-stepped with RFLAGS.TF and fixed up after
//           the #DB (the 2006 paper, Linux before 5.13);
//  modern:  an int3 follows the copy in the slot, and control-flow and
//           flag instructions are emulated without a slot (Linux 5.13+).
// RV64 has one way (Linux's): [insn][ebreak] slots, PC-relative
// instructions simulated.
enum class StepMode { classic, modern };

// Reads guest text as it was before any probe changed it (breakpoints
// replaced by the original bytes): Linux's recover_probed_instruction. The
// arch decodes through this so that other probes' breakpoints do not
// disturb boundary checks. Returns false outside RAM.
using TextReader = std::function<bool(uint64_t addr, uint8_t* out, size_t len)>;

// The probed instruction, analysed at registration.
struct ProbeInsn {
  uint64_t addr = 0;
  uint8_t len = 0;             // instruction length in bytes
  uint8_t orig[16] = {};       // the original bytes (len of them)
  enum class Kind : uint8_t { step, emulate } kind = Kind::step;
  uint8_t bp[4] = {};          // breakpoint written over the start of the insn
  uint8_t bp_len = 0;          // 1 (int3), 2 (c.ebreak) or 4 (ebreak)
  // Slot contents (kind == step), filled by build_slot for a slot address.
  uint8_t slot_bytes[16] = {};
  uint8_t slot_len = 0;
  // The step ends at this offset in the slot: the breakpoint after the copy
  // (modern x86, RV64), or -1 when a #DB ends it (classic x86).
  int8_t step_end = -1;
  // The kprobe-booster's tristate (the OLS 2006 paper, 6.3): -1 never
  // boosted, 0 boostable but not ready (no jump back in the slot yet),
  // 1 ready (the slot ends with a jump back to addr + len, so a hit with
  // no post handler runs the copy and returns with no second trap).
  int8_t boostable = -1;
  std::string text;            // disassembly, for events and the debugger
  // Arch-private facts (decoded operands, fixup class), opaque to the engine.
  uint32_t op = 0;
  uint64_t aux[3] = {};
};

// Jump optimization (optprobes): the detoured region (DCR) a 5-byte jump
// would replace at a probe point, as can_optimize found it.
struct OptRegion {
  uint8_t len = 0;         // bytes: whole instructions, at least the jump's
  uint8_t insns = 0;       // how many instructions
  uint8_t bytes[32] = {};  // their original bytes
  // RV64: the register the jump and the detour use (`auipc`+`jalr`, the
  // port load), dead at the probe point by the function's liveness; -1 on
  // x86 (its jmp rel32 needs none).
  int8_t scratch = -1;
};

// A CPU in a detour buffer's handler call, and what the probe point's
// registers were (Arch::detour_enter fills it, detour_leave undoes it).
struct DetourRegs {
  uint64_t pc = 0, sp = 0, scratch = 0, pushed = 0;
};

// Every register a handler may change, for jprobes (which run a guest
// handler and then put the CPU back exactly as it was at the probe).
struct RegSnapshot {
  uint64_t gpr[32] = {};
  uint64_t pc = 0;
  uint64_t flags = 0;  // x86 RFLAGS; RV64 mstatus
};

// Saved interrupt/trace state of a CPU while the engine owns it (Linux's
// kprobe_old_flags / kprobe_saved_flags / saved_status).
struct SavedFlags {
  uint64_t value = 0;
};

// A device store (address, size, value) made as a CPU; false if it faulted.
using DeviceStore = std::function<bool(uint64_t addr, unsigned size, uint64_t value)>;

class Arch {
 public:
  virtual ~Arch() = default;
  virtual Isa isa() const = 0;

  // --- Registration ---------------------------------------------------------
  // Analyses the instruction at `addr`. `func` is the function symbol that
  // holds it (nullptr if none): the arch decodes from func->addr and
  // refuses an address that is not an instruction boundary with -EILSEQ.
  // Refusals return a negative Errno and set `why` to one line naming the
  // instruction and the reason ("int3: a breakpoint cannot be probed").
  virtual int analyse(const TextReader& text, uint64_t addr, const Symbol* func, StepMode mode, ProbeInsn& out,
                      std::string& why) const = 0;
  // Fills out.slot_bytes/slot_len/step_end for a copy placed at `slot`
  // (x86 re-encodes RIP-relative displacements for it: -ERANGE if the
  // result does not fit in 32 bits). Only for kind == step.
  virtual int build_slot(ProbeInsn& pi, uint64_t slot, StepMode mode, std::string& why) const = 0;
  // Bytes per slot the engine allocates (x86: 16 = MAX_INSN_SIZE + int3).
  virtual unsigned slot_size() const = 0;
  // Whether `bytes` (at least 4 readable) start with a breakpoint
  // instruction of this ISA (int3; ebreak or c.ebreak).
  virtual bool is_breakpoint(const uint8_t* bytes) const = 0;
  // A breakpoint instruction to fill unused guest code with (and its size).
  virtual unsigned breakpoint_bytes(uint8_t* out) const = 0;

  // Jump optimization: whether the probe point `addr` in `func` can be
  // replaced by a jump to a detour buffer (Linux's can_optimize; on RV64
  // the out-of-tree series' liveness check): 0 with the region, or a
  // negative Errno and one line saying why not.
  virtual int can_optimize(const TextReader& text, uint64_t addr, const Symbol& func, OptRegion& out,
                           std::string& why) const {
    (void)text, (void)addr, (void)func, (void)out;
    why = "no jump optimization on this ISA";
    return -kEOPNOTSUPP;
  }
  // A jump from `at` to `target` (x86: jmp rel32, by Zydis's encoder): the
  // kprobe-booster's jump back from the end of a slot's copy. False where
  // the ISA has no booster (RV64, as mainline Linux) or the jump cannot be
  // encoded.
  virtual bool encode_jump(uint64_t at, uint64_t target, std::vector<uint8_t>& out) const {
    (void)at, (void)target, (void)out;
    return false;
  }
  // The jump optimizer's jump from the probe point `at` of region `r` to
  // its detour buffer (x86: encode_jump; RV64: auipc+jalr through r.scratch).
  virtual bool encode_detour_jump(const OptRegion& r, uint64_t at, uint64_t target, std::vector<uint8_t>& out) const {
    (void)r;
    return encode_jump(at, target, out);
  }
  // How many instructions that jump is: a CPU interrupted between two of
  // them resumes in the middle of it (RV64's auipc, then jalr).
  virtual unsigned detour_jump_insns() const { return 1; }
  // The detour buffer for `r` at `addr`, placed at `buf`: the handler
  // call, the region's instructions (from offset `copy_at`), the jump back
  // to addr + r.len.
  virtual int build_detour(const OptRegion& r, uint64_t addr, uint64_t buf, std::vector<uint8_t>& out,
                           unsigned& copy_at, std::string& why) const {
    (void)r, (void)addr, (void)buf, (void)out, (void)copy_at;
    why = "no jump optimization on this ISA";
    return -kEOPNOTSUPP;
  }
  // A CPU's load in the detour's handler call, at `addr`'s detour: gives
  // the CPU the probe point's registers for the handlers (the PC at addr;
  // x86: rsp and r11 as before the push), remembering what it had in `d`.
  // detour_leave puts the detour's registers back and gives the value the
  // load returns (x86: a handler's change of r11 goes to the pushed copy).
  virtual void detour_enter(Cpu& cpu, const Bus& bus, uint64_t addr, const OptRegion& r, DetourRegs& d) const {
    (void)cpu, (void)bus, (void)addr, (void)r, (void)d;
  }
  virtual void detour_leave(Cpu& cpu, Bus& bus, const OptRegion& r, const DetourRegs& d, uint64_t& value) const {
    (void)cpu, (void)bus, (void)r, (void)d, (void)value;
  }

  // --- Traps ----------------------------------------------------------------
  // A trap raised by a breakpoint instruction; trap.pc is its address.
  virtual bool is_breakpoint_trap(const TrapInfo& t) const = 0;
  // The single-step trap of classic x86 (#DB after a TF step).
  virtual bool is_single_step_trap(const TrapInfo& t) const = 0;
  // Inter-processor interrupts for the patching protocols (kprobes/
  // patching.*): the interrupt the guest kernel takes for an IPI, and
  // raising it on `to` with the same doorbell the guest uses (the x86
  // LAPIC's ICR with the guest's IPI vector; RV64's CLINT msip) through
  // `store` (a device store as the sending CPU).
  virtual bool is_ipi(const TrapInfo& t) const = 0;
  virtual void send_ipi(const DeviceStore& store, int to) const = 0;

  // --- Hit processing -------------------------------------------------------
  // Masks interrupts on the CPU (and clears TF) for the engine's work,
  // remembering the old state; restore() puts it back. Instructions that
  // change the interrupt flag themselves (cli/sti/popf, emulated or
  // stepped) update `saved` so their effect survives restore().
  virtual SavedFlags save_and_mask(Cpu& cpu) const = 0;
  virtual void restore(Cpu& cpu, const SavedFlags& saved) const = 0;
  // Emulates the probed instruction (kind == emulate) on the CPU: updates
  // registers, flags, memory (through `bus`, so the decode cache sees it)
  // and the PC. Returns false if the emulation would fault (e.g. `ret`
  // with a stack outside RAM); the engine then stops the run with a
  // message (the guest would have taken a fault there).
  virtual bool emulate(Cpu& cpu, Bus& bus, const ProbeInsn& pi, SavedFlags& saved) const = 0;
  // Points the CPU at the slot to step the copy (classic x86 also sets TF).
  virtual void begin_step(Cpu& cpu, const ProbeInsn& pi, uint64_t slot) const = 0;
  // Whether this trap ends the step of `pi` from `slot`.
  virtual bool is_step_end(const Cpu& cpu, const TrapInfo& t, const ProbeInsn& pi, uint64_t slot) const = 0;
  // After the step: fixups (classic x86: PC, the return address a stepped
  // call pushed, TF and IF in flags a stepped pushf pushed) and the PC set
  // to where execution resumes (normally addr + len).
  virtual void finish_step(Cpu& cpu, Bus& bus, const ProbeInsn& pi, uint64_t slot, SavedFlags& saved) const = 0;

  virtual RegSnapshot snapshot(const Cpu& cpu) const = 0;
  virtual void restore_snapshot(Cpu& cpu, const RegSnapshot& r) const = 0;

  // --- ABI (kretprobes, jprobes, fetch args) --------------------------------
  // Argument n (1-based) of a function at its entry, per the C ABI
  // (x86-64 SysV: rdi rsi rdx rcx r8 r9 then the stack; RV64: a0-a7 then
  // the stack). Returns false if it would read outside RAM.
  virtual bool arg(const Cpu& cpu, const Bus& bus, int n, uint64_t& out) const = 0;
  virtual uint64_t retval(const Cpu& cpu) const = 0;  // rax / a0
  virtual void set_retval(Cpu& cpu, uint64_t v) const = 0;
  virtual uint64_t stack_pointer(const Cpu& cpu) const = 0;
  // At a function's entry (before its first instruction): where the return
  // address lives and its value (x86: [rsp]; RV64: ra), and replacing it.
  virtual bool return_address(const Cpu& cpu, const Bus& bus, uint64_t& out) const = 0;
  virtual bool set_return_address(Cpu& cpu, Bus& bus, uint64_t v) const = 0;
  // The stack pointer a function's return lands with, given the stack
  // pointer at its entry (x86: +8 for the popped return address; RV64:
  // unchanged). Matches a trampoline hit to the instance it belongs to.
  virtual uint64_t sp_after_return(uint64_t sp_at_entry) const = 0;
  // Register names for fetch args: index into Cpu::gpr for "ax", "rax",
  // "di", "a0", "sp", "x10"...; -1 if unknown. "ip"/"pc" is -2 (the PC).
  virtual int reg_index(const std::string& name) const = 0;
};

std::unique_ptr<Arch> make_x86_arch();
std::unique_ptr<Arch> make_rv64_arch();
std::unique_ptr<Arch> make_arch(Isa isa);

}  // namespace ksim::kprobes
