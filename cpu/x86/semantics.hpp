// Semantics of the supported x86-64 subset, grouped in semantics.cpp by
// family. Each function executes one decoded instruction precisely: it
// reads its operands, writes results and RFLAGS as the SDM defines, and
// retires the instruction or raises an exception.
#pragma once
#include "cpu/x86/insn.hpp"

namespace ksim::x86 {

#define KSIM_X86_SEMANTICS(X)                                                                     \
  X(add) X(adc) X(sub) X(sbb) X(and) X(or) X(xor) X(cmp) X(test) X(inc) X(dec) X(neg) X(not)      \
  X(mov) X(movzx) X(movsx) X(lea) X(xchg) X(bswap) X(cbw) X(cwd) X(setcc) X(cmovcc)               \
  X(bt) X(bsf) X(bsr) X(flagop) X(nop) X(mfence) X(shift) X(shld) X(mul) X(imul) X(div) X(cmpxchg) X(xadd)  \
  X(push) X(pop) X(pushfq) X(popfq) X(leave) X(jmp) X(call) X(ret) X(jcc) X(string)               \
  X(int3) X(int) X(iretq) X(lidt) X(cli) X(sti) X(hlt) X(cpuid) X(rdtsc) X(rdmsr) X(wrmsr) X(ud)

#define KSIM_X86_DECLARE(name) void exec_##name(X86Cpu&, const Insn&);
KSIM_X86_SEMANTICS(KSIM_X86_DECLARE)
#undef KSIM_X86_DECLARE

}  // namespace ksim::x86
