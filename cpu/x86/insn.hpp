// Decoded x86-64 instructions: Zydis decodes once, and the result is
// condensed into this compact form that the interpreter executes from the
// decode cache (no re-decoding, no Zydis structures on the hot path).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace ksim::x86 {

class X86Cpu;
struct Insn;
using ExecFn = void (*)(X86Cpu&, const Insn&);

enum class OpKind : uint8_t { none, reg, mem, imm };

// A register operand names one of the 16 GPRs (hardware order: rax, rcx,
// rdx, rbx, rsp, rbp, rsi, rdi, r8..r15) at a width; `high8` selects
// AH/CH/DH/BH (bits 15:8 of rax/rcx/rdx/rbx).
struct Operand {
  OpKind kind = OpKind::none;
  uint8_t size = 0;      // bytes: 1, 2, 4, 8 (memory: the access size)
  uint8_t reg = 0;       // reg: GPR number
  bool high8 = false;
  // mem: base/index GPR numbers or kNoReg / kRip; segment fs/gs adds a base.
  uint8_t base = 0, index = 0, scale = 0, seg = 0;
  bool addr32 = false;   // mem: 32-bit address size (67 prefix): wraps at 4 GiB
  int64_t disp = 0;      // mem displacement; imm: the value (sign-extended)
};
inline constexpr uint8_t kNoReg = 0xff;
inline constexpr uint8_t kRip = 0xfe;
inline constexpr uint8_t kSegNone = 0, kSegFs = 1, kSegGs = 2;

struct Insn {
  ExecFn exec = nullptr;
  uint16_t mnemonic = 0;   // ZydisMnemonic
  uint8_t len = 0;         // bytes
  uint8_t opsize = 0;      // operand width in bytes (Zydis operand_width / 8)
  uint8_t cycles = 0;      // base cost (cpu/timing.hpp)
  uint8_t cond = 0;        // condition code for jcc/setcc/cmovcc (0..15, SDM order)
  uint8_t rep = 0;         // 0, kRep (rep/repe), kRepne
  bool lock = false;
  uint8_t nops = 0;        // explicit operands
  // Memory operands it reads, the stack's included (pop, ret): timing
  // model v2 charges each the profile's L1 hit latency (X86Cpu::decode_at).
  uint8_t mem_reads = 0;
  Operand op[3];
};
inline constexpr uint8_t kRep = 1, kRepne = 2;

// The fast path's compact form of a decoded instruction (32 bytes, one per
// byte address of a code page, next to the full Insn the precise path
// uses). `fn` is a handler specialised for the instruction's operation and
// operand form (cpu/x86/fast.hpp); it runs the instruction with the loop's
// cycle and retired counts in host registers and tail-calls the next
// entry's handler (threaded code). Anything a handler does not serve (a
// device access, a trap, a system instruction) hands back to the loop,
// which runs the full Insn precisely (a MOV's device load runs it in the
// loop: fast::load_precise).
struct Fast;
struct FastNext {
  const Fast* ip;  // the next entry, or nullptr: run X86Cpu::precise_ip precisely
  uint64_t cycle;
};
using FastFn = FastNext (*)(X86Cpu&, const Fast*, uint64_t cycle, uint64_t retired);
struct Fast {
  FastFn fn = nullptr;
  int64_t imm = 0;       // immediate operand, or the branch displacement
  int32_t disp = 0;      // memory operand: displacement (RIP-relative: the absolute address)
  uint8_t len = 0, cycles = 0;
  uint8_t dst = 0, src = 0;  // GPR numbers of the register operands
  uint8_t base = 0, index = 0, shift = 0;  // memory operand: gpr[base] + (gpr[index] << shift) + disp
  uint8_t amode = 0;     // bit 0: has a base register, bit 1: has an index register
  uint8_t cc = 0;        // condition code (jcc, setcc, cmovcc)
  uint8_t pad[3] = {};
};
static_assert(sizeof(Fast) == 32);

// Decodes the instruction at `bytes` (at most `avail` bytes readable),
// located at `rip`. Unsupported or undecodable bytes give an Insn whose
// exec raises #UD (and len is what Zydis decoded, at least 1).
Insn decode(const uint8_t* bytes, size_t avail, uint64_t rip);

// Intel-syntax text of the instruction at `bytes` (Zydis formatter). With
// a symbolizer, the target of a relative jump, call or jcc is followed by
// " <symbol+0xoff>" (what `symbolize` returns for it; nothing when it
// returns ""), as the RV64 disassembler and objdump print it.
using Symbolizer = std::function<std::string(uint64_t addr)>;
std::string disassemble(const uint8_t* bytes, size_t avail, uint64_t rip, const Symbolizer& symbolize = {});

}  // namespace ksim::x86
