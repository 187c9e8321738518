// Declarations of every instruction's semantics, one exec_<id> per row of
// insn_table.def. The definitions live in exec_*.cpp, grouped by extension.
#pragma once
#include "cpu/rv64/insn.hpp"

namespace ksim::rv64 {

#define X(id, mn, mask, match, fmt, cls, probe) void exec_##id(Hart&, const Insn&);
#include "cpu/rv64/insn_table.def"
#undef X
void exec_illegal(Hart&, const Insn&);
// Decode-on-first-use: the cache's empty entries point here.
void exec_decode(Hart&, const Insn&);
// Placeholder for fetches outside RAM: raises an instruction access fault.
void exec_fetch_fault(Hart&, const Insn&);

}  // namespace ksim::rv64
