#pragma once

namespace ksim {

// The instruction-set architectures ksim simulates.
enum class Isa { rv64, x86_64 };

inline const char* isa_name(Isa isa) { return isa == Isa::rv64 ? "rv64" : "x86"; }

}  // namespace ksim
