// Disassembler for decoded RV64 instructions, in the style of GNU objdump.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "cpu/rv64/insn.hpp"

namespace ksim::rv64 {

// Names the target of a branch or jump for display: returns the text to put
// between the angle brackets ("foo", "foo+0x8"), or "" when it has none.
using Symbolizer = std::function<std::string(uint64_t addr)>;

// Text of one decoded instruction in GNU objdump's style: "mnemonic\toperands"
// (a single tab between them; no operands -> just the mnemonic). Branch and
// jump targets are absolute hex addresses without 0x, followed by " <sym+0xoff>"
// when `symbolize` is given and returns a non-empty name for the target.
// Matches `riscv64-unknown-elf-objdump -d` (binutils 2.40) for the same bytes,
// alias choices included, except that objdump's trailing "# address" comments
// (which need the preceding instructions) are never produced; see the comment
// at the top of disasm.cpp for the details.
std::string disassemble(const Insn& in, uint64_t pc, const Symbolizer& symbolize = {});

// ABI register name (zero, ra, sp, ..., t6).
const char* reg_name(unsigned r);

// CSR name for a number (mstatus, mtvec, cycle, ..., or "0x7c0" when unknown),
// as objdump prints it for files that record privileged spec 1.11, which gas
// 2.40 does by default: so 1.12 CSRs such as menvcfg print as numbers.
std::string csr_name(uint32_t num);

}  // namespace ksim::rv64
