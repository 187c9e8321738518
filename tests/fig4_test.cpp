// --image fig4 (docs/FIG4.md): the 2006 OLS paper's Figure 4 benchmark on
// both ISAs, through the CLI: it runs on 1 and 4 CPUs and computes what the
// recurrence gives, a probe on fig4_target is hit CPUs x 65,535 times, and
// the shape the docs report: with rcu the run takes as long on 4 CPUs as
// on 1, with the spinlock it takes longer, and longer than with rcu.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "support/ksim_cli.hpp"

using ksim::test::ProcessResult;
using ksim::test::run_ksim;

namespace {

uint64_t number_after(const std::string& out, const std::string& label) {
  std::smatch m;
  REQUIRE(std::regex_search(out, m, std::regex("\n" + label + " (\\d+)")));
  return std::stoull(m[1]);
}

// What every CPU computes: acc += fig4_target(i, acc), fig4_target(a, b) =
// ((a << 3) ^ (b >> 5)) + (a | 1) - (b & 0xff), in 64-bit arithmetic.
std::string expected_result(uint64_t calls) {
  uint64_t acc = 0;
  for (uint64_t i = 0; i < calls; ++i) acc += ((i << 3) ^ (acc >> 5)) + (i | 1) - (acc & 0xff);
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(acc));
  return buf;
}

}  // namespace

TEST_CASE("the fig4 image (--image fig4): every CPU calls fig4_target 65535 times and a probe on it is hit CPUs x 65535 times: rcu "
          "stays flat and the spinlock grows",
          "[fig4][cli]") {
  const std::string isa = GENERATE("rv64", "x86");
  const std::string result = expected_result(65535);
  std::map<std::string, uint64_t> cycles;
  for (int cpus : {1, 4}) {
    const std::string n = std::to_string(cpus);
    // (Model v1: the hit's and the call's costs below are its, docs/FIG4.md.)
    ProcessResult plain = run_ksim({"run", "--timing", "v1", "--isa", isa, "--image", "fig4", "--cpus", n});
    INFO(isa << " " << cpus << "\n" << plain.out << plain.err);
    REQUIRE(plain.status == 0);
    CHECK(plain.out.find("fig4: " + n + " cpus x 65535 calls of fig4_target, result " + result + "\n") !=
          std::string::npos);
    cycles["none" + n] = number_after(plain.out, "cycles:");
    for (const std::string locking : {"rcu", "spinlock"}) {
      ProcessResult r = run_ksim({"run", "--timing", "v1", "--isa", isa, "--image", "fig4", "--cpus", n, "-q", "--probe", "p fig4_target",
                                  "--probe-action", "p_fig4_target_0=count", "--kprobes-locking", locking,
                                  "--kprobes-boost", "0", "--kprobes-optimization", "0"});  // the paper's hits: both traps (docs/FIG4.md)
      INFO(locking << "\n" << r.out << r.err);
      REQUIRE(r.status == 0);
      CHECK(r.out.find("probes: " + std::to_string(cpus * 65535) + " hits, 0 missed, 0 stray traps\n") !=
            std::string::npos);
      cycles[locking + n] = number_after(r.out, "cycles:");
    }
  }
  INFO(isa << ": none " << cycles["none1"] << "/" << cycles["none4"] << ", rcu " << cycles["rcu1"] << "/"
           << cycles["rcu4"] << ", spinlock " << cycles["spinlock1"] << "/" << cycles["spinlock4"]);
  // No probe and rcu: the CPUs do not slow each other down (within 1%).
  CHECK(cycles["none4"] < cycles["none1"] * 101 / 100);
  CHECK(cycles["rcu4"] < cycles["rcu1"] * 101 / 100);
  // A hit (~140 cycles) costs several times the call (~25): docs/FIG4.md.
  CHECK(cycles["rcu1"] > cycles["none1"] * 6);
  CHECK(cycles["rcu1"] < cycles["none1"] * 8);
  // The spinlock: 4 CPUs wait for each other.
  CHECK(cycles["spinlock4"] > cycles["rcu4"] * 3 / 2);
  CHECK(cycles["spinlock4"] > cycles["spinlock1"] * 3 / 2);
  CHECK(cycles["spinlock1"] > cycles["rcu1"]);
}

// docs/FIG4.md, "Two CPUs do not wait": the seeded 2-CPU figures the page
// gives, read from the page and run.
TEST_CASE("FIG4.md's seeded 2-CPU figures: spinlock, rcu without and with jump optimization", "[fig4][cli][docs]") {
  std::ifstream page(KSIM_SOURCE_DIR "/docs/FIG4.md");
  std::stringstream text;
  text << page.rdbuf();
  std::string md = text.str();
  std::replace(md.begin(), md.end(), '\n', ' ');
  std::smatch m;
  REQUIRE(std::regex_search(md, m, std::regex(R"(--kprobes-locking spinlock`:\s+([\d,]+) cycles, against ([\d,]+) with )"
                                              R"(`--kprobes-locking rcu\s+--kprobes-optimization 0`, on RV64; with `rcu` alone )"
                                              R"(the probe is\s+jump-optimized and the run takes ([\d,]+)\))")));
  auto num = [](std::string s) {
    s.erase(std::remove(s.begin(), s.end(), ','), s.end());
    return s;
  };
  const std::vector<std::string> base = {"run", "-q", "--timing", "v1", "--image", "fig4", "--cpus", "2", "--seed", "3",
                                         "--probe", "p fig4_target", "--probe-action", "p_fig4_target_0=count"};
  const std::vector<std::pair<std::vector<std::string>, std::string>> runs = {
      {{"--kprobes-locking", "spinlock"}, num(m[1])},
      {{"--kprobes-locking", "rcu", "--kprobes-optimization", "0"}, num(m[2])},
      {{"--kprobes-locking", "rcu"}, num(m[3])}};
  for (const auto& [extra, cycles] : runs) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    ProcessResult r = run_ksim(args);
    INFO(extra.back());
    CHECK(r.status == 0);
    std::smatch c;
    REQUIRE(std::regex_search(r.out, c, std::regex("\ncycles: (\\d+)\n")));
    CHECK(c[1].str() == cycles);
  }
}

// `ksim fig4 --isa --cpus` prints those rows of FIG4.md's table; a bad list
// is a usage error.
TEST_CASE("ksim fig4 --isa rv64 --cpus 1,2 prints FIG4.md's rows for 1 and 2 CPUs", "[fig4][cli]") {
  ProcessResult r = run_ksim({"fig4", "--timing", "v1", "--isa", "rv64", "--cpus", "1,2"});
  CHECK(r.status == 0);
  std::ifstream page(KSIM_SOURCE_DIR "/docs/FIG4.md");
  std::stringstream text;
  text << page.rdbuf();
  const std::string md = text.str();
  const size_t rv = md.find("### rv64\n");
  REQUIRE(rv != std::string::npos);
  for (const char* row : {"\n| 1 | 65535 | ", "\n| 2 | 131070 | "}) {
    const size_t at = md.find(row, rv);
    REQUIRE(at != std::string::npos);
    const std::string line = md.substr(at + 1, md.find('\n', at + 1) - at);
    CHECK(r.out.find(line) != std::string::npos);
  }
  CHECK(r.out.find("| 4 |") == std::string::npos);
  CHECK(run_ksim({"fig4", "--cpus", "0"}).status == 2);
  CHECK(run_ksim({"fig4", "--cpus", "1,x"}).status == 2);
  CHECK(run_ksim({"fig4", "--dat", "/tmp/x.dat"}).status == 2);  // two ISAs, one data file
  // Timing v2: one machine profile describes one ISA; the model's options
  // are checked as ksim run checks them.
  const ProcessResult two = run_ksim({"fig4", "--machine", "sifive-u54"});
  CHECK(two.status == 2);
  CHECK(two.err.find("--machine describes one ISA's machine: give one --isa") != std::string::npos);
  CHECK(run_ksim({"fig4", "--isa", "x86", "--machine", "sifive-u54", "--cpus", "1"}).status != 0);
  CHECK(run_ksim({"fig4", "--timing", "v3"}).status == 2);
  CHECK(run_ksim({"fig4", "--isa", "x86", "--timing", "v2", "--memory-model", "rvwmo"}).status == 2);
}
