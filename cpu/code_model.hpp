// Which code a CPU's instruction fetch sees after a store into code
// (docs/CODE_MODEL.md): `relaxed`, the default, lets a CPU go on fetching
// the bytes it may have prefetched until it serialises (x86) or executes
// fence.i (RV64), as the architectures allow; `strict` shows every store to
// every CPU at its very next fetch (ksim's behaviour before the model).
#pragma once
#include <cstdint>
#include <string_view>

namespace ksim {

enum class CodeModel : uint8_t { relaxed, strict };

constexpr std::string_view code_model_name(CodeModel m) { return m == CodeModel::strict ? "strict" : "relaxed"; }

// Parses "relaxed" or "strict"; false for anything else.
constexpr bool parse_code_model(std::string_view s, CodeModel& out) {
  if (s == "relaxed") out = CodeModel::relaxed;
  else if (s == "strict") out = CodeModel::strict;
  else return false;
  return true;
}

}  // namespace ksim
