// Test-facing entry point to the x86 core: run a short code snippet on a
// fresh one-CPU x86 machine and report the resulting state. Shared by the
// differential tests (which run the same snippet natively on the host) and
// the x86 instruction tests.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ksim::test {

// Architectural state in and out of a snippet.
struct X86State {
  uint64_t gpr[16] = {};  // rax, rcx, rdx, rbx, rsp, rbp, rsi, rdi, r8..r15 (hardware encoding order)
  uint64_t rflags = 0x2;  // bit 1 reads as 1
};

struct X86Result {
  bool ok = false;        // the snippet ran to its end
  std::string error;      // otherwise: what happened (e.g. "#UD at +0x3: <insn>", "#DE", "#GP")
  uint64_t vector = ~0ull;  // exception vector taken, if any
  X86State state;
};

// Guest physical address where snippets see their data buffer. It is the
// same address the native side maps its buffer at, so addresses held in
// registers mean the same thing on both sides.
inline constexpr uint64_t kX86DataAddr = 0x4010'0000;  // in x86 RAM (memmap::kRamBaseX86)
inline constexpr uint64_t kX86DataSize = 0x1'0000;
inline constexpr uint64_t kX86CodeAddr = 0x4000'1000;

// Runs `code` (placed at kX86CodeAddr, followed by the harness's own stop
// instruction) with `in`, and `data` copied to kX86DataAddr (at most
// kX86DataSize bytes; copied back out into `data` afterwards).
X86Result x86_exec(const std::vector<uint8_t>& code, const X86State& in, std::vector<uint8_t>& data);

}  // namespace ksim::test
