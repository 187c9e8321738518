// One line of the ftrace `trace` file for a probe hit, the format Linux
// prints for kprobe events (kernel/trace/trace_output.c's context columns,
// then trace_kprobe.c's event body), with ksim's cycle count as the
// timestamp:
//
//   kprobe:     "%16s-%-5llu [%03d] %5llu: %s: (%s)%s"
//               comm, pid, cpu, cycle, event, ip as sym+0xoff/0xsize, args
//   kretprobe:  "%16s-%-5llu [%03d] %5llu: %s: (%s <- %s)%s"
//               ..., return address as sym+0xoff/0xsize, probed function's name, args
//
//   "       worker0.1-5     [001] 1234567: p_do_fork_0: (do_fork+0x0/0x58) flags=0x11"
//   "            init-1     [000] 98765: r_sys_open_0: (main+0x1c/0x80 <- sys_open) ret=0x3"
//
// No trailing newline. `args` is format_args()'s text (it brings its own
// leading spaces).
#pragma once
#include <cstdint>
#include <string>

namespace ksim {
class SymbolTable;
}

namespace ksim::kprobes::events {

struct HitLine {
  std::string comm;
  uint64_t pid = 0;
  int cpu = 0;
  uint64_t cycle = 0;
  std::string event;
  bool is_return = false;
  uint64_t ip = 0;    // kprobe: the probed address; kretprobe: the return address
  uint64_t func = 0;  // kretprobe: the probed function's address
  std::string args;   // format_args()
};

std::string format_hit_line(const HitLine& hit, const SymbolTable& symbols);

// An address as ftrace prints code addresses: "sym+0xoff/0xsize" with the
// offset (the printk %pS form), "sym" without; "0x..." when no symbol holds
// it, and "0" for address 0. A symbol without an ELF size is measured up
// to the next symbol, as kallsyms does.
std::string format_ip_sym(const SymbolTable& symbols, uint64_t addr, bool with_offset);

}  // namespace ksim::kprobes::events
