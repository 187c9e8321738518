// The x86-64 System V calling convention as kretprobes, jprobes and fetch
// args see it, and register snapshots.
#include <array>
#include <string_view>

#include "cpu/x86/x86_cpu.hpp"
#include "kprobes/x86/arch_x86.hpp"

namespace ksim::kprobes {

namespace {

using ksim::x86::X86Cpu;
const X86Cpu& x86(const Cpu& c) { return static_cast<const X86Cpu&>(c); }
X86Cpu& x86(Cpu& c) { return static_cast<X86Cpu&>(c); }

// GPR numbers in hardware order.
enum Gpr : int { rax, rcx, rdx, rbx, rsp, rbp, rsi, rdi, r8, r9, r10, r11, r12, r13, r14, r15 };
constexpr int kPc = -2;

// Integer arguments 1-6; the 7th and later are on the stack above the
// return address.
constexpr std::array<int, 6> kArgRegs = {rdi, rsi, rdx, rcx, r8, r9};

// Register names fetch args accept: Linux's pt_regs names (as in
// kprobe_events' %ax, %di) and the full 64-bit names.
struct RegName {
  std::string_view name;
  int index;
};
constexpr RegName kRegNames[] = {
    {"ax", rax},   {"bx", rbx},   {"cx", rcx},   {"dx", rdx},   {"si", rsi},   {"di", rdi},   {"bp", rbp},
    {"sp", rsp},   {"ip", kPc},   {"rax", rax},  {"rbx", rbx},  {"rcx", rcx},  {"rdx", rdx},  {"rsi", rsi},
    {"rdi", rdi},  {"rbp", rbp},  {"rsp", rsp},  {"rip", kPc},  {"r8", r8},    {"r9", r9},    {"r10", r10},
    {"r11", r11},  {"r12", r12},  {"r13", r13},  {"r14", r14},  {"r15", r15},
};

}  // namespace

RegSnapshot X86Arch::snapshot(const Cpu& cpu) const {
  const auto& s = x86(cpu).s;
  RegSnapshot r;
  for (int i = 0; i < 16; ++i) r.gpr[i] = s.gpr[i];
  r.pc = s.rip;
  r.flags = s.rflags;
  return r;
}

void X86Arch::restore_snapshot(Cpu& cpu, const RegSnapshot& r) const {
  auto& s = x86(cpu).s;
  for (int i = 0; i < 16; ++i) s.gpr[i] = r.gpr[i];
  s.rip = r.pc;
  s.rflags = r.flags;
  cpu.interrupts_changed();  // IF may differ
}

bool X86Arch::arg(const Cpu& cpu, const Bus& bus, int n, uint64_t& out) const {
  const auto& s = x86(cpu).s;
  if (n < 1) return false;
  if (n <= static_cast<int>(kArgRegs.size())) {
    out = s.gpr[kArgRegs[n - 1]];
    return true;
  }
  const uint64_t at = s.gpr[rsp] + 8ull * static_cast<uint64_t>(n - static_cast<int>(kArgRegs.size()));
  return bus.read_bytes(at, &out, 8);
}

uint64_t X86Arch::retval(const Cpu& cpu) const { return x86(cpu).s.gpr[rax]; }
void X86Arch::set_retval(Cpu& cpu, uint64_t v) const { x86(cpu).s.gpr[rax] = v; }
uint64_t X86Arch::stack_pointer(const Cpu& cpu) const { return x86(cpu).s.gpr[rsp]; }

bool X86Arch::return_address(const Cpu& cpu, const Bus& bus, uint64_t& out) const {
  return bus.read_bytes(x86(cpu).s.gpr[rsp], &out, 8);
}

bool X86Arch::set_return_address(Cpu& cpu, Bus& bus, uint64_t v) const {
  return bus.write_bytes(x86(cpu).s.gpr[rsp], &v, 8);
}

int X86Arch::reg_index(const std::string& name) const {
  for (const RegName& r : kRegNames)
    if (r.name == name) return r.index;
  return -1;
}

}  // namespace ksim::kprobes
