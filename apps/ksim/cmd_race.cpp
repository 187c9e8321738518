// `ksim race`: the race scenarios (kprobes/races/), listed or run by seed.
//   ksim race list
//   ksim race run NAME --variant correct|broken --seed S [--isa ISA] [--cpus N]
// Exit 0: the invariant held. Exit 6: it was violated (a `violation:` line
// and a `reproduce:` line that reruns exactly that case).
#include <cstdio>

#include "apps/ksim/options.hpp"
#include "kprobes/races/race.hpp"

namespace ksim::cli {

namespace {

int race_list() {
  for (const race::Scenario& s : race::scenarios()) {
    std::string isas = s.x86 && s.rv64 ? "x86, rv64" : s.x86 ? "x86" : "rv64";
    std::printf("%-18s %s [%s; %s kernel]\n", s.name, s.what, isas.c_str(), s.image);
  }
  return kOk;
}

int race_run(const std::vector<std::string>& args) {
  std::string name, variant, isa_text, trace;
  int cpus = 4;
  U64 seed_opt{1};
  po::options_description opts("ksim race run NAME options");
  opts.add_options()
      ("variant", po::value(&variant), "correct (every protection) or broken (one removed)")
      ("seed", po::value(&seed_opt)->default_value(U64{1}), "picks the timing; the same seed gives the same run")
      ("isa", po::value(&isa_text), "x86 or rv64 (default: the scenario's first)")
      ("cpus", po::value(&cpus)->default_value(4), "number of CPUs (2-64)")
      ("trace", po::value(&trace), "write every event, instructions included, to FILE (JSON Lines)");
  po::positional_options_description pos;
  pos.add("name", 1);
  opts.add_options()("name", po::value(&name), "the scenario (see `ksim race list`)");
  po::variables_map vm;
  if (!parse_options(args, "usage: ksim race run NAME --variant correct|broken --seed S [--isa ISA] [--cpus N]", opts,
                     &pos, vm))
    return kOk;
  const race::Scenario* s = race::find(name);
  if (name.empty()) throw UsageError{"name a scenario (ksim race list)"};
  if (!s) throw UsageError{"no race scenario '" + name + "' (ksim race list)"};
  if (variant != "correct" && variant != "broken") throw UsageError{"--variant must be correct or broken"};
  if (cpus < 2 || cpus > 64) throw UsageError{"--cpus must be between 2 and 64 (a race needs two CPUs)"};
  race::Options o;
  o.isa = isa_text.empty() ? (s->x86 ? Isa::x86_64 : Isa::rv64) : parse_isa(isa_text);
  if ((o.isa == Isa::x86_64 && !s->x86) || (o.isa == Isa::rv64 && !s->rv64))
    throw UsageError{std::string(name) + " has no " + isa_name(o.isa) + " version"};
  o.cpus = cpus;
  o.seed = seed_opt.v;
  o.broken = variant == "broken";
  o.trace = trace;
  const ElfImage kernel = load_image("", s->image, o.isa);
  race::Outcome out = race::run(*s, kernel, o);
  std::printf("race: %s, variant %s, %s, %s kernel, %d cpus, seed %llu\n", name.c_str(), variant.c_str(),
              isa_name(o.isa), s->image, cpus, static_cast<unsigned long long>(o.seed));
  if (!out.notes.empty()) std::printf("%s\n", out.notes.c_str());
  std::printf("cycles: %llu\n", static_cast<unsigned long long>(out.run.cycles));
  if (out.violated) {
    std::printf("violation: %s\n", out.violation.c_str());
    std::printf("reproduce: ksim race run %s --variant %s --seed %llu --isa %s --cpus %d\n", name.c_str(),
                variant.c_str(), static_cast<unsigned long long>(o.seed), isa_name(o.isa), cpus);
    return kRaceViolated;
  }
  if (out.run.end == RunResult::End::crash || out.run.end == RunResult::End::hook_stop) {
    std::printf("the run ended early: %s\n", out.run.reason.c_str());
    return kGuestCrash;
  }
  std::printf("invariant held\n");
  if (o.broken && s->unreachable) std::printf("note: this broken variant is not caught on ksim's machine: %s\n", s->unreachable);
  return kOk;
}

}  // namespace

int cmd_race(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::printf("usage: ksim race list\n       ksim race run NAME --variant correct|broken --seed S [--isa ISA] "
                "[--cpus N]\nexit status: 0 the invariant held, 6 it was violated\n");
    return args.empty() ? kUsage : kOk;
  }
  if (args[0] == "list") return race_list();
  if (args[0] == "run") return race_run(std::vector<std::string>(args.begin() + 1, args.end()));
  throw UsageError{"expected `list` or `run NAME ...`"};
}

}  // namespace ksim::cli
