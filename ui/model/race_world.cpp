#include "ui/model/race_world.hpp"

namespace ksim::ui {

RaceWorld race_world(const race::Scenario& sc, const race::Options& o, std::shared_ptr<const ElfImage> kernel) {
  RaceWorld w;
  w.spec.config = race::machine_config(o);
  w.spec.image = std::move(kernel);
  {
    Machine m(w.spec.config);  // the setup reads the kernel's symbols
    m.load(*w.spec.image);
    race::check_kernel(sc, m);
    w.setup = sc.setup(m, o);
  }
  w.spec.mode = w.setup.mode;
  w.spec.configure = [setup = w.setup](kprobes::Engine& e) { setup.apply(e); };
  w.spec.script = w.setup.script;
  w.spec.script_file = w.setup.name;
  w.spec.extra_ops = w.setup.extra;
  for (const std::string& p : w.setup.probes) w.initial.push_back({ProbeOp::Kind::add, p, 0});
  return w;
}

}  // namespace ksim::ui
