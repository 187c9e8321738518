#include "kprobes/events/fetch_args.hpp"

#include <cstdio>
#include <optional>

#include "cpu/cpu.hpp"
#include "kprobes/arch.hpp"
#include "kprobes/events/trace_line.hpp"
#include "mem/bus.hpp"
#include "sim/elf/symbols.hpp"

namespace ksim::kprobes::events {

namespace {

constexpr const char* kFault = "(fault)";

// Guest memory is little-endian on both ISAs.
std::optional<uint64_t> read_le(const Bus& bus, uint64_t addr, unsigned size) {
  uint8_t buf[8];
  if (size > sizeof buf || !bus.read_bytes(addr, buf, size)) return std::nullopt;
  uint64_t v = 0;
  for (unsigned i = 0; i < size; ++i) v |= uint64_t{buf[i]} << (8 * i);
  return v;
}

// The value the fetch starts from, before any dereference.
std::optional<uint64_t> fetch_source(const FetchArg& a, const FetchContext& ctx) {
  switch (a.source) {
    case FetchSource::reg:
      if (a.reg < 0 || a.reg >= ctx.cpu.gpr_count()) return std::nullopt;
      return ctx.cpu.gpr(a.reg);
    case FetchSource::pc: return ctx.cpu.pc();
    case FetchSource::stack: return ctx.arch.stack_pointer(ctx.cpu);
    case FetchSource::stack_entry: return read_le(ctx.bus, ctx.arch.stack_pointer(ctx.cpu) + 8 * a.number, 8);
    case FetchSource::arg: {
      uint64_t v = 0;
      if (!ctx.arch.arg(ctx.cpu, ctx.bus, static_cast<int>(a.number), v)) return std::nullopt;
      return v;
    }
    // A return value exists only at the return.
    case FetchSource::retval:
      if (!ctx.at_return) return std::nullopt;
      return ctx.arch.retval(ctx.cpu);
    case FetchSource::imm: return a.number;
    case FetchSource::symbol: {
      const Symbol* s = ctx.symbols.find(a.symbol);
      if (!s) return std::nullopt;
      return s->addr + static_cast<uint64_t>(a.sym_offset);
    }
    case FetchSource::comm:
    case FetchSource::imm_string: break;  // strings, handled by the caller
  }
  return std::nullopt;
}

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

// A NUL-terminated guest string, cut at kMaxFetchString - 1 characters
// like strncpy_from_kernel_nofault; a fault before the end is (fault).
std::string read_string(const Bus& bus, uint64_t addr) {
  std::string s;
  while (s.size() < kMaxFetchString - 1) {
    char c;
    if (!bus.read_bytes(addr + s.size(), &c, 1)) return kFault;
    if (c == '\0') break;
    s.push_back(c);
  }
  return quoted(s);
}

std::string print_value(const FetchType& t, uint64_t v, const SymbolTable& symbols) {
  const unsigned bits = 8u * t.size;
  if (bits < 64) v &= (uint64_t{1} << bits) - 1;
  char buf[32];
  switch (t.cls) {
    case TypeClass::unsigned_dec: std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(v)); break;
    case TypeClass::signed_dec: {
      const unsigned shift = 64 - bits;
      const int64_t s = static_cast<int64_t>(v << shift) >> shift;
      std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(s));
      break;
    }
    case TypeClass::hex: std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v)); break;
    case TypeClass::character: std::snprintf(buf, sizeof buf, "'%c'", static_cast<char>(v)); break;
    case TypeClass::symbol: return format_ip_sym(symbols, v, true);
    case TypeClass::string: return kFault;  // not reached: strings are read, not printed from a value
  }
  return buf;
}

}  // namespace

std::string format_arg_value(const FetchArg& a, const FetchContext& ctx) {
  const FetchType& t = a.type ? *a.type : default_fetch_type();
  if (a.source == FetchSource::comm) return quoted(ctx.task.comm);
  if (a.source == FetchSource::imm_string) return quoted(a.str);
  std::optional<uint64_t> v = fetch_source(a, ctx);
  if (!v) return kFault;
  const bool is_string = t.cls == TypeClass::string;
  for (size_t i = 0; i < a.derefs.size(); ++i) {
    const uint64_t addr = *v + static_cast<uint64_t>(a.derefs[i].offset);
    const bool last = i + 1 == a.derefs.size();
    if (last && is_string) return read_string(ctx.bus, addr);
    v = read_le(ctx.bus, addr, last ? t.size : 8);
    if (!v) return kFault;
  }
  if (is_string) return read_string(ctx.bus, *v);  // the parser always adds a read; kept safe
  return print_value(t, *v, ctx.symbols);
}

std::string format_args(const ProbeSpec& spec, const FetchContext& ctx) {
  std::string out;
  for (const FetchArg& a : spec.args) out += " " + a.name + "=" + format_arg_value(a, ctx);
  return out;
}

}  // namespace ksim::kprobes::events
