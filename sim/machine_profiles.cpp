#include "sim/machine_profiles.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "ksim_machine_sifive_u54.h"
#include "ksim_machine_xeon_e5410.h"
#include "sim/elf/elf_image.hpp"

namespace ksim {

namespace {

struct Builtin {
  const char* name;
  const unsigned char* text;
  const unsigned long* size;
};

const Builtin kBuiltins[] = {
    {"sifive-u54", ksim_machine_sifive_u54, &ksim_machine_sifive_u54_size},
    {"xeon-e5410", ksim_machine_xeon_e5410, &ksim_machine_xeon_e5410_size},
};

std::shared_ptr<const MachineProfile> parse(const std::string& text, const std::string& origin) {
  try {
    return std::make_shared<const MachineProfile>(parse_machine_profile(text, origin));
  } catch (const std::invalid_argument& e) {
    throw InputError(std::string("machine profile ") + e.what());
  }
}

}  // namespace

std::vector<std::string> builtin_machine_names() {
  std::vector<std::string> v;
  for (const Builtin& b : kBuiltins) v.emplace_back(b.name);
  return v;
}

std::string default_machine_name(Isa isa) { return isa == Isa::x86_64 ? "xeon-e5410" : "sifive-u54"; }

MemoryModel default_memory_model(Isa isa) { return isa == Isa::x86_64 ? MemoryModel::tso : MemoryModel::rvwmo; }

std::shared_ptr<const MachineProfile> load_machine_profile(const std::string& name_or_path) {
  for (const Builtin& b : kBuiltins)
    if (name_or_path == b.name)
      return parse(std::string(reinterpret_cast<const char*>(b.text), *b.size), std::string(b.name));
  const bool is_path = name_or_path.find('/') != std::string::npos ||
                       (name_or_path.size() > 8 && name_or_path.ends_with(".machine"));
  if (!is_path) {
    std::string known;
    for (const Builtin& b : kBuiltins) known += std::string(known.empty() ? "" : ", ") + b.name;
    throw InputError("unknown machine `" + name_or_path + "` (built in: " + known + "; or a profile file's path)");
  }
  std::ifstream f(name_or_path, std::ios::binary);
  if (!f) throw InputError("cannot read machine profile " + name_or_path);
  std::ostringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  if (text.size() > (1u << 20)) throw InputError("machine profile " + name_or_path + ": larger than 1 MiB");
  return parse(text, name_or_path);
}

}  // namespace ksim
