// The list of race scenarios (`ksim race list`).
#include "kprobes/races/race.hpp"

namespace ksim::race {

Outcome torn_write(const ElfImage& kernel, const Options& o);

const std::vector<Scenario>& scenarios() {
  static const std::vector<Scenario> list = {
      {"torn-write",
       "a live 5-byte nop turned into a jmp while every CPU runs it: text_poke_bp (correct) or one byte at a "
       "time (broken); no CPU may fetch a mix of old and new bytes",
       true, false, torn_write},
  };
  return list;
}

const Scenario* find(const std::string& name) {
  for (const Scenario& s : scenarios())
    if (name == s.name) return &s;
  return nullptr;
}

}  // namespace ksim::race
