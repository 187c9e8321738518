// Fetching a probe's arguments from a simulated CPU and printing them the
// way ftrace prints a kprobe event's fields:
//
//   " name=value name2=value2"   (each preceded by one space)
//
//   u8..u64   decimal                  s8..s64  signed decimal
//   x8..x64   0x-hex, no padding       char     'c'
//   string    "text" (up to a NUL; at most 255 characters are kept)
//   symbol    sym+0xoff/0xsize, or 0x-hex outside every symbol (%pS)
//   anything that cannot be read: (fault)
//
// Intermediate dereferences read 8 bytes (a pointer); the last one reads
// the type's size. Values that are not read from memory (registers, $argN,
// immediates...) are cut to the type's width, then sign-extended for sN.
// Nothing here changes the CPU or memory.
#pragma once
#include <cstdint>
#include <string>

#include "kprobes/events/probe_spec.hpp"

namespace ksim {
class Bus;
class Cpu;
class SymbolTable;
}  // namespace ksim

namespace ksim::kprobes::events {

// The task the probe hit in, as the guest kernel knows it.
struct TaskInfo {
  std::string comm;
  uint64_t pid = 0;
};

struct FetchContext {
  const Cpu& cpu;
  const Bus& bus;
  const Arch& arch;
  const SymbolTable& symbols;
  bool at_return = false;  // at a function's return: $retval exists only then, else (fault)
  TaskInfo task;           // $comm
};

inline constexpr size_t kMaxFetchString = 256;  // bytes, with the NUL

// One argument's printed value ("0x11", "\"init\"", "(fault)").
std::string format_arg_value(const FetchArg& arg, const FetchContext& ctx);
// Every argument of the spec: " name=value name2=value2", or "" for none.
std::string format_args(const ProbeSpec& spec, const FetchContext& ctx);

}  // namespace ksim::kprobes::events
