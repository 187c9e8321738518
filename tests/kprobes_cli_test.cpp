// `ksim run --probe`: the issue's command on both ISAs, the hit lines, the
// summary and list, built-in actions, determinism, and every kind of bad
// input ending with exit status 2 and a message that points at the problem.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <algorithm>
#include <regex>

#include "support/ksim_cli.hpp"

using namespace ksim::test;

namespace {

size_t count_lines(const std::string& out, const std::regex& re) {
  size_t n = 0;
  for (std::sregex_iterator it(out.begin(), out.end(), re), end; it != end; ++it) ++n;
  return n;
}

std::string tail(const std::string& s) { return s.size() > 2500 ? s.substr(s.size() - 2500) : s; }

}  // namespace

TEST_CASE("ksim run --probe 'p:myfork do_fork flags=$arg1' --probe 'r:myopen sys_open ret=$retval' on 4 CPUs",
          "[kprobes][cli]") {
  const std::string isa = GENERATE("rv64", "x86");
  ProcessResult r = run_ksim({"run", "--isa", isa, "--cpus", "4", "-q", "--probe", "p:myfork do_fork flags=$arg1",
                          "--probe", "r:myopen sys_open ret=$retval", "--probes-list"});
  INFO(tail(r.out) << r.err);
  REQUIRE(r.status == 0);
  // ftrace lines: "<comm>-<pid> [cpu] <cycle>: <event>: (<where>) <args>"
  const std::regex fork_line(R"(worker/\d+:\d+-\d+ +\[00\d\] +\d+: myfork: \(do_fork\+0x0/0x[0-9a-f]+\) flags=0x[0-9a-f]+\n)");
  const std::regex open_line(
      R"(worker/\d+:\d+-\d+ +\[00\d\] +\d+: myopen: \(worker_main\+0x[0-9a-f]+/0x[0-9a-f]+ <- sys_open\) ret=0x[0-9a-f]+\n)");
  CHECK(count_lines(r.out, fork_line) == 1536);
  CHECK(count_lines(r.out, open_line) == 1536);
  CHECK(count_lines(r.out, std::regex("ret=0xfffffffffffffffe")) == 384);  // -ENOENT
  CHECK(r.out.find("  p:kprobes/myfork do_fork flags=$arg1: hits 1536, nmissed 0\n") != std::string::npos);
  CHECK(r.out.find("  r:kprobes/myopen sys_open ret=$retval: hits 1536, nmissed 0\n") != std::string::npos);
  // The total is the sum of the per-probe lines (entries of the kprobe,
  // returns of the kretprobe: 1536 each, the kernel's own call counts).
  CHECK(r.out.find("probes: 3072 hits, 0 missed, 0 stray traps\n") != std::string::npos);
  // -q: the probe lines follow each other with no blank line between them.
  CHECK(r.out.find("\n\n") == std::string::npos);
  // Jump optimization is on by default, as in Linux: do_fork (registered
  // before the run) is optimized at once; sys_open starts with a branch in
  // its region (x86: a jcc within 5 bytes; RV64: a beqz), which refuses it.
  CHECK(std::regex_search(r.out, std::regex(R"(kprobes/list:\n[0-9a-f]{16}  k  do_fork\+0x0  \[OPTIMIZED\]\n)"
                                            R"([0-9a-f]{16}  r  sys_open\+0x0\n)")));
  {  // the knob off: the same hits, through the breakpoint
    ProcessResult o = run_ksim({"run", "--isa", isa, "--cpus", "4", "-q", "--kprobes-optimization", "0", "--probe",
                                "p do_fork", "--probe", "r sys_open", "--probes-list"});
    REQUIRE(o.status == 0);
    CHECK(std::regex_search(o.out, std::regex(R"(kprobes/list:\n[0-9a-f]{16}  k  do_fork\+0x0\n[0-9a-f]{16}  r  sys_open\+0x0\n)")));
    CHECK(o.out.find("probes: 3072 hits, 0 missed, 0 stray traps\n") != std::string::npos);
  }
  CHECK(std::regex_search(r.out, std::regex(R"(\ncycles: \d+\ntrace-hash: [0-9a-f]{16}\n$)")));
  // The same command gives the same run.
  ProcessResult again = run_ksim({"run", "--isa", isa, "--cpus", "4", "-q", "--probe", "p:myfork do_fork flags=$arg1",
                              "--probe", "r:myopen sys_open ret=$retval", "--probes-list"});
  CHECK(again.out.substr(again.out.find("cycles:")) == r.out.substr(r.out.find("cycles:")));
}

TEST_CASE("an error the probe engine detects ends the run with exit status 6 and says why", "[kprobes][cli]") {
  // do_fork's return address is overwritten with the kretprobe trampoline
  // (a corrupted stack, as a buggy handler would leave it): its return
  // finds no kretprobe instance, which Linux reports as a kretprobe BUG.
  ProcessResult dis = run_ksim({"disasm", "kretprobe_trampoline"});
  REQUIRE(dis.status == 0);
  std::smatch m;
  REQUIRE(std::regex_search(dis.out, m, std::regex(R"(([0-9a-f]{16}) <kretprobe_trampoline>:)")));
  ProcessResult r = run_ksim({"run", "-q", "--probe", "r sys_open", "--probe", "p do_fork", "--probe-action",
                              "p_do_fork_0=set:%ra=0x" + m[1].str()});
  INFO(tail(r.out) << r.err);
  CHECK(r.status == 6);
  CHECK(r.out.find("exit: stopped by the probe engine: kretprobe BUG!") != std::string::npos);
  CHECK(std::regex_search(r.out, std::regex(R"(\ncycles: \d+\ntrace-hash: [0-9a-f]{16}\n$)")));
}

TEST_CASE("probe actions: count prints nothing, override injects a return value, set writes a register",
          "[kprobes][cli]") {
  const std::string isa = GENERATE("rv64", "x86");
  const std::string elf = std::string(KSIM_BINARY_DIR) + "/workloads/" + (isa == "rv64" ? "rv64" : "x86") +
                          "/probe_bench_" + (isa == "rv64" ? "rv64" : "x86") + ".elf";
  ProcessResult count = run_ksim({"run", "--isa", isa, "--elf", elf, "--probe", "p bench_target", "--probe-action",
                              "p_bench_target_0=count"});
  INFO(tail(count.out) << count.err);
  REQUIRE(count.status == 0);
  CHECK(count.out.find("p_bench_target_0:") == std::string::npos);
  CHECK(count.out.find("hits 100000, nmissed 0, action count") != std::string::npos);
  CHECK(count.out.find("result 04f7178148a34ec2") != std::string::npos);  // unchanged by probing

  // bench_target returns 1 without running: the sum is the call count.
  ProcessResult over = run_ksim({"run", "--isa", isa, "--elf", elf, "--probe", "p:bench_target", "--probe-action",
                             "p_bench_target_0=override:1"});
  INFO(tail(over.out) << over.err);
  REQUIRE(over.status == 0);
  CHECK(over.out.find("result 00000000000186a0") != std::string::npos);
  // A return probe's override replaces the value returned.
  ProcessResult rover = run_ksim({"run", "--isa", isa, "--elf", elf, "--probe", "r:bench_target", "--probe-action",
                              "r_bench_target_0=override:2"});
  REQUIRE(rover.status == 0);
  CHECK(rover.out.find("result 0000000000030d40") != std::string::npos);
  // set: the first argument forced to 0 at every entry changes the result.
  const std::string a1 = isa == "rv64" ? "%a0" : "%di";
  ProcessResult set = run_ksim({"run", "--isa", isa, "--elf", elf, "--probe", "p:bench_target", "--probe-action",
                            "p_bench_target_0=set:" + a1 + "=0"});
  REQUIRE(set.status == 0);
  CHECK(set.out.find("result 04f7178148a34ec2") == std::string::npos);
  CHECK(set.out.find("p_bench_target_0: (bench_target+0x0/") != std::string::npos);
}

TEST_CASE("with probes, every state change of a hit is a probe event in the --trace file", "[kprobes][cli]") {
  const std::string trace = std::string(KSIM_BINARY_DIR) + "/kprobes_cli_trace.jsonl";
  // (Jump optimization off: an optimized do_fork has no trap to trace.)
  ProcessResult r = run_ksim({"run", "--cpus", "2", "-q", "--kprobes-optimization", "0", "--probe", "p:do_fork",
                              "--probe-action", "p_do_fork_0=count", "--trace", trace});
  REQUIRE(r.status == 0);
  std::ifstream in(trace);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const char* state : {"trap", "KPROBE_HIT_ACTIVE", "KPROBE_HIT_SS", "step-done", "KPROBE_HIT_SSDONE", "arm",
                            "register"}) {
    INFO(state);
    CHECK(all.find(std::string("\"kind\":\"probe\",\"addr\":\"0x") + "") != std::string::npos);
    CHECK(std::regex_search(all, std::regex(std::string("\"kind\":\"probe\",\"addr\":\"0x[0-9a-f]+\",\"sym\":\"do_fork\"[^}]*\"text\":\"") +
                                            state + "\"")));
  }
  std::filesystem::remove(trace);
}

TEST_CASE("x86 classic and modern stepping give the same guest results", "[kprobes][cli]") {
  // The kernel's totals line holds only counts that do not depend on
  // timing (reads, opens, fib calls, sleeps, yields, pings); the probes'
  // hit lines (what each hit saw, in order, without comm, CPU and cycle,
  // which timing changes) must be the same too, and as many as the
  // kernel's own counts say.
  auto totals = [](const std::string& out) {
    std::smatch m;
    REQUIRE(std::regex_search(out, m, std::regex(R"(totals: (\d+ reads \(\d+ bytes, \d+ at eof\), \d+ opens, \d+ fib calls, \d+ sleeps, \d+ yields, \d+ pings))")));
    return m[1].str();
  };
  std::string results[2];
  std::vector<std::string> hit_lines[2];
  int i = 0;
  for (const char* mode : {"classic", "modern"}) {
    // (No booster: classic mode's first hit steps where modern boosts, and
    // the kretprobe's misses follow timing.)
    ProcessResult r = run_ksim({"run", "--isa", "x86", "--cpus", "2", "--kprobes-mode", mode, "--kprobes-boost", "0", "--kprobes-optimization", "0", "--probe",
                                "p:vfs_read count=$arg3:u64", "--probe", "r:fib_recursive v=$retval:u64"});
    INFO(mode << "\n" << tail(r.out) << r.err);
    REQUIRE(r.status == 0);
    CHECK(r.out.find("all work done") != std::string::npos);
    CHECK(std::regex_search(r.out, std::regex(R"(r:kprobes/r_fib_recursive_0 fib_recursive v=\$retval:u64: hits [1-9]\d*, nmissed)")));
    CHECK(std::regex_search(r.out, std::regex(R"(p_vfs_read_0: \(vfs_read\+0x0/0x[0-9a-f]+\) count=\d+)")));
    results[i] = totals(r.out);
    // "<comm> [cpu] <cycle>: <event>: (<where>) <args>" -> "<event>: (<where>) <args>", sorted: the
    // interleaving of CPUs may differ between modes, the multiset of what the probes saw may not.
    std::vector<std::string> lines;
    const std::regex hit(R"(\d+: ((p_vfs_read_0|r_fib_recursive_0): .*)\n)");
    for (std::sregex_iterator it(r.out.begin(), r.out.end(), hit), end; it != end; ++it) lines.push_back((*it)[1]);
    std::sort(lines.begin(), lines.end());
    hit_lines[i] = lines;
    ++i;
  }
  CHECK(results[0] == results[1]);
  REQUIRE(!hit_lines[0].empty());
  CHECK(hit_lines[0] == hit_lines[1]);
  // One p_vfs_read_0 line per read the kernel counted.
  std::smatch reads;
  REQUIRE(std::regex_search(results[0], reads, std::regex(R"(^(\d+) reads)")));
  CHECK(std::count_if(hit_lines[0].begin(), hit_lines[0].end(),
                      [](const std::string& l) { return l.rfind("p_vfs_read_0", 0) == 0; }) == std::stol(reads[1]));
  ProcessResult rv = run_ksim({"run", "--isa", "rv64", "--kprobes-mode", "classic", "--probe", "p do_fork"});
  CHECK(rv.status == 2);
  CHECK(rv.err.find("x86 only") != std::string::npos);
}

TEST_CASE("bad probe specs and refused probes exit with status 2 and point at the problem", "[kprobes][cli]") {
  struct Bad {
    std::vector<std::string> args;
    const char* message;
  };
  const std::vector<Bad> cases = {
      {{"--probe", "p:do_fork flags=%foo"}, "unknown register 'foo'"},
      {{"--probe", "q do_fork"}, "unknown probe type"},
      {{"--probe", "p:do_fork x=$retval"}, "$retval"},
      {{"--probe", "p no_such_function"}, "unknown symbol 'no_such_function'"},
      {{"--probe", "p die_trap"}, "blacklisted"},
      {{"--probe", "r do_fork+4"}, "function entry"},
      {{"--probe", "p do_fork", "--probe", "p do_fork"}, "already exists"},
      {{"--probe", "p do_fork", "--probe-action", "nosuch=count"}, "no probe event named 'nosuch'"},
      {{"--probe", "p do_fork", "--probe-action", "p_do_fork_0=explode"}, "bad probe action"},
      {{"--probes-list"}, "need at least one --probe"},
      {{"--probe", "r0:sys_open"}, "bad MAXACTIVE"},
      {{"--probe", "p do_fork", "--probe-action", "p_do_fork_0=set:%pc=0"}, "the PC cannot be set"},
      {{"--probe", "p do_fork", "--probe-action", "p_do_fork_0=set:%x0=5"}, "hard-wired"},
      {{"--probe", "p:g1/ev do_fork", "--probe", "p:g2/ev sys_open", "--probe-action", "ev=count"}, "GROUP/EVENT"},
      {{"--probe", "p do_fork", "--checkpoint-at", "100", "--checkpoint-file", "/tmp/x"}, "checkpoints"},
  };
  for (const Bad& b : cases) {
    std::vector<std::string> args = {"run", "--cpus", "2"};
    args.insert(args.end(), b.args.begin(), b.args.end());
    ProcessResult r = run_ksim(args);
    INFO(b.message << "\n" << r.err);
    CHECK(r.status == 2);
    CHECK(r.err.find(b.message) != std::string::npos);
  }
  // The caret sits under the bad register.
  ProcessResult r = run_ksim({"run", "--probe", "p:do_fork flags=%foo"});
  CHECK(r.err.find("  p:do_fork flags=%foo\n                   ^") != std::string::npos);
  // x86: an address inside an instruction is refused.
  ProcessResult mid = run_ksim({"run", "--isa", "x86", "--probe", "p do_fork+1"});
  CHECK(mid.status == 2);
  CHECK(mid.err.find("EILSEQ") != std::string::npos);
}

TEST_CASE("The run summary says how the probes ran: modes, and each probe optimized, boosted or stepped",
          "[kprobes][cli]") {
  // x86, booster on, optimization off: do_fork's first instruction is
  // boostable, so its hits run the slot with no trap after the copy.
  ProcessResult b = run_ksim({"run", "-q", "--isa", "x86", "--cpus", "2", "--probe", "p do_fork",
                              "--kprobes-optimization", "0"});
  REQUIRE(b.status == 0);
  CHECK_THAT(b.out, Catch::Contains("kprobes: modern stepping, rcu locking, patching text_poke, booster on, jump optimization "
                             "off, kretprobe return by rethook\n"));
  std::smatch m;
  REQUIRE(std::regex_search(b.out, m, std::regex(R"(  p_do_fork_0 at do_fork: stepped out of line in its slot, (\d+) hits boosted)")));
  std::smatch h;
  REQUIRE(std::regex_search(b.out, h, std::regex(R"(do_fork: hits (\d+), nmissed)")));
  CHECK(std::stoull(m[1].str()) > 0);
  CHECK(std::stoull(m[1].str()) <= std::stoull(h[1].str()));
  // The booster off: no hit is boosted.
  ProcessResult nb = run_ksim({"run", "-q", "--isa", "x86", "--cpus", "2", "--probe", "p do_fork",
                               "--kprobes-optimization", "0", "--kprobes-boost", "0"});
  CHECK_THAT(nb.out, Catch::Contains("booster off"));
  CHECK_THAT(nb.out, Catch::Contains("  p_do_fork_0 at do_fork: stepped out of line in its slot\n"));
  // Optimization on (the default): the jump, as debugfs kprobes/list says.
  for (const char* isa : {"x86", "rv64"}) {
    ProcessResult o = run_ksim({"run", "-q", "--isa", isa, "--cpus", "2", "--probe", "p do_fork", "--probes-list"});
    CHECK_THAT(o.out, Catch::Contains("[OPTIMIZED]"));
    CHECK_THAT(o.out, Catch::Contains("  p_do_fork_0 at do_fork: jump-optimized"));
  }
  // The 2.6.9 configuration: the spinlock, nothing boosted or optimized.
  ProcessResult s = run_ksim({"run", "-q", "--cpus", "2", "--probe", "p do_fork", "--kprobes-locking", "spinlock",
                              "--kprobes-optimization", "0"});
  CHECK_THAT(s.out, Catch::Contains("spinlock locking"));
  CHECK_THAT(s.out, Catch::Contains("jump optimization off"));
}
