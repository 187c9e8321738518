// A race scenario (`ksim race`, kprobes/races/) as a debugger world: the
// same machine, engine settings, probes and operations as `ksim race run`
// builds (the scenario's Setup), for `ksim-ui --race`.
#pragma once
#include <memory>
#include <vector>

#include "kprobes/races/race.hpp"
#include "ui/model/world.hpp"

namespace ksim::ui {

struct RaceWorld {
  WorldSpec spec;
  std::vector<ProbeOp> initial;  // the scenario's probes, registered at cycle 0
  race::Setup setup;
};

RaceWorld race_world(const race::Scenario& sc, const race::Options& o, std::shared_ptr<const ElfImage> kernel);

}  // namespace ksim::ui
