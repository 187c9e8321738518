// The pieces of a probe spec that are not parsing: errors with a caret, the
// type table, the canonical text, and the late check of @SYM arguments.
#include "kprobes/events/probe_spec.hpp"

#include <array>
#include <cstdio>

#include "sim/elf/symbols.hpp"

namespace ksim::kprobes::events {

namespace {

// The spec as shown in an error: one line, so the caret lines up.
std::string one_line(std::string_view spec) {
  std::string s(spec);
  for (char& c : s) {
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

std::string error_text(std::string_view spec, size_t column, const std::string& reason) {
  return "bad probe spec: " + reason + "\n  " + one_line(spec) + "\n  " + std::string(column, ' ') + "^";
}

// ftrace's basic types. The hex types print "0x%x" without padding; char
// prints '%c'; symbol prints %pS (sym+0xoff/0xsize); string is quoted.
constexpr std::array kTypes = {
    FetchType{"u8", 1, TypeClass::unsigned_dec},  FetchType{"u16", 2, TypeClass::unsigned_dec},
    FetchType{"u32", 4, TypeClass::unsigned_dec}, FetchType{"u64", 8, TypeClass::unsigned_dec},
    FetchType{"s8", 1, TypeClass::signed_dec},    FetchType{"s16", 2, TypeClass::signed_dec},
    FetchType{"s32", 4, TypeClass::signed_dec},   FetchType{"s64", 8, TypeClass::signed_dec},
    FetchType{"x8", 1, TypeClass::hex},           FetchType{"x16", 2, TypeClass::hex},
    FetchType{"x32", 4, TypeClass::hex},          FetchType{"x64", 8, TypeClass::hex},
    FetchType{"char", 1, TypeClass::character},   FetchType{"string", 8, TypeClass::string},
    FetchType{"symbol", 8, TypeClass::symbol},
};

}  // namespace

SpecError::SpecError(std::string_view spec, size_t column, const std::string& reason)
    : std::runtime_error(error_text(spec, column, reason)), reason_(reason), column_(column) {}

const FetchType* find_fetch_type(std::string_view name) {
  for (const FetchType& t : kTypes) {
    if (name == t.name) return &t;
  }
  return nullptr;
}

const FetchType& default_fetch_type() { return *find_fetch_type("x64"); }

std::string ProbeSpec::describe() const {
  std::string out(1, is_return() ? 'r' : 'p');
  if (is_return() && maxactive > 0) out += std::to_string(maxactive);
  out.append(":").append(group).append("/").append(event).append(" ");
  if (has_addr) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(addr));
    out += buf;
  } else {
    out += symbol;
    if (offset != 0) out.append("+").append(std::to_string(offset));
  }
  for (const FetchArg& a : args) out += " " + a.name + "=" + a.text;
  return out;
}

void check_fetch_symbols(const ProbeSpec& spec, const SymbolTable& symbols) {
  for (const FetchArg& a : spec.args) {
    if (a.source == FetchSource::symbol && symbols.find(a.symbol) == nullptr) {
      throw SpecError(spec.source, a.symbol_column, "unknown symbol '" + a.symbol + "'");
    }
  }
}

}  // namespace ksim::kprobes::events
