// The machine profiles ksim knows (machines/*.machine, built into the
// binary) and how `--machine` finds one: a built-in name, or the path of a
// profile file (anything with a '/' or ending in .machine).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "cpu/isa.hpp"
#include "mem/cache/profile.hpp"
#include "mem/cache/store_buffer.hpp"

namespace ksim {

// The built-in profiles' names, in a fixed order.
std::vector<std::string> builtin_machine_names();
// The profile model v2 uses for an ISA when --machine is not given:
// sifive-u54 for RV64, xeon-e5410 for x86.
std::string default_machine_name(Isa isa);
// The ISA's own memory model, v2's default: rvwmo for RV64, tso for x86.
MemoryModel default_memory_model(Isa isa);
// A built-in name or a profile file; throws InputError (one line) for an
// unknown name, an unreadable file or a malformed profile.
std::shared_ptr<const MachineProfile> load_machine_profile(const std::string& name_or_path);

}  // namespace ksim
