// Every command README.md and docs/*.md tell a person to run, run, and what
// the text says it shows, checked (issue 22: "Every command in README.md
// and docs/ is run by a test that checks what the text says it shows").
//
// A command is a line of a ```sh block, or an inline `code` span, that
// starts with build/apps/, build/bench/ or scripts/ (a .sh script). Mentions
// such as `ksim run --probe-script` in prose are references to a command's
// option, not commands. The table below holds one check per command, keyed
// by the command exactly as written (a trailing `# comment` removed); a
// documented command with no check, or a check whose command the docs no
// longer have, fails the first test, so the two stay in step.
//
// How a command runs: through bash, in a fresh folder, with build/ standing
// for this build's folder (KSIM_BUILD_DIR for the scripts) and docs/ and
// scripts/ for the source's. `prog.elf` (the README's "your own ELF") is a
// guest this build made; `demo.txt` is DEBUGGER.md's sample script. ksim-ui
// runs in a virtual X server (xvfb-run), with a script of `print` lines and
// `quit` after the documented options when the command has no --script (a
// person would look at the window; the script reads the same state). The
// plotting scripts get an output path in the folder as their one argument,
// so that the test does not rewrite docs/img. scripts/test.sh, build.sh and
// install-deps.sh are what CI runs (.ci/run): the check reads that they
// are called. PERFORMANCE.md's benchmark invocations are records of how
// its figures were measured; their check lists what each filter selects
// (`--benchmark_list_tests`), so that a renamed benchmark breaks it, and
// does not time anything (speed is measured by benchmarks, not by tests).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "support/run_process.hpp"

using ksim::test::ProcessResult;
using ksim::test::run_process;
namespace fs = std::filesystem;

namespace {

const std::string kSrc = KSIM_SOURCE_DIR, kBin = KSIM_BINARY_DIR;

struct DocCommand {
  std::string file;  // relative to the source folder
  int line = 0;
  std::string text;
};

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool is_command(const std::string& t) {
  if (t.rfind("build/apps/", 0) == 0 || t.rfind("build/bench/", 0) == 0) return true;
  return t.rfind("scripts/", 0) == 0 && (t.find(".sh ") != std::string::npos || t.size() > 3 && t.substr(t.size() - 3) == ".sh");
}

// The commands of one Markdown file: ```sh lines (a trailing `\` joins the
// next line) and inline code spans.
std::vector<DocCommand> commands_of(const std::string& rel) {
  std::vector<DocCommand> out;
  std::istringstream in(read(kSrc + "/" + rel));
  std::string line, pending;
  int n = 0, pending_line = 0;
  bool in_block = false, sh = false;
  while (std::getline(in, line)) {
    ++n;
    if (line.rfind("```", 0) == 0) {
      in_block = !in_block;
      sh = in_block && line.substr(3) == "sh";
      continue;
    }
    if (in_block) {
      if (!sh) continue;
      const std::string body = line.substr(std::min(line.find_first_not_of(' '), line.size()));
      if (pending.empty()) pending_line = n;
      std::string t = pending.empty() ? body : pending + " " + body;
      pending.clear();
      // A comment: whitespace, then `#` (never inside the commands' quotes).
      static const std::regex comment(R"(\s+#( .*)?$)");
      t = std::regex_replace(t, comment, "");
      if (!t.empty() && t.back() == '\\') {
        pending = t.substr(0, t.size() - 1);
        while (!pending.empty() && pending.back() == ' ') pending.pop_back();
        continue;
      }
      if (is_command(t)) out.push_back({rel, pending_line, t});
      continue;
    }
    static const std::regex span("`([^`]+)`");
    for (auto it = std::sregex_iterator(line.begin(), line.end(), span); it != std::sregex_iterator(); ++it)
      if (is_command((*it)[1])) out.push_back({rel, n, (*it)[1]});
  }
  return out;
}

std::vector<DocCommand> documented() {
  std::vector<std::string> files = {"README.md"};
  for (const auto& e : fs::directory_iterator(kSrc + "/docs"))
    if (e.path().extension() == ".md") files.push_back("docs/" + e.path().filename().string());
  std::sort(files.begin() + 1, files.end());
  std::vector<DocCommand> all;
  for (const std::string& f : files)
    for (DocCommand& c : commands_of(f)) all.push_back(std::move(c));
  return all;
}

// What a check gets: the run, and the folder it ran in.
struct Ran {
  ProcessResult r;
  fs::path dir;
  const std::string& out() const { return r.out; }
};

std::string grab(const std::string& text, const std::string& re) {
  std::smatch m;
  return std::regex_search(text, m, std::regex(re)) ? m[1].str() : "";
}

// The summary's cycles and trace hash, for comparing runs.
std::string result_of(const std::string& out) {
  return grab(out, "\ncycles: (\\d+)\n") + " " + grab(out, "\ntrace-hash: ([0-9a-f]+)\n");
}

enum class How { shell, ui, ci, bench_list };

struct Check {
  How how = How::shell;
  int status = 0;
  std::string elf;        // what prog.elf stands for (relative to the build folder)
  std::string ui_script;  // ksim-ui: the script run after the documented options (when they have no --script)
  std::function<void(const Ran&)> verify;
  int timeout_s = 300;
};

// Outputs other checks compare with (same-run claims).
std::map<std::string, std::string> g_results;

// DEBUGGER.md's sample script: the code block after "## Scripts".
std::string debugger_sample_script() {
  const std::string text = read(kSrc + "/docs/DEBUGGER.md");
  const size_t at = text.find("\n```\nrun-to-cycle");
  REQUIRE(at != std::string::npos);
  const size_t end = text.find("```", at + 5);
  return text.substr(at + 5, end - at - 5);
}

// The Markdown tables of FIG4.md, as `ksim fig4` prints them.
std::string fig4_tables() {
  const std::string text = read(kSrc + "/docs/FIG4.md");
  std::string out;
  std::istringstream in(text);
  bool on = false;
  for (std::string line; std::getline(in, line);) {
    if (line == "### rv64" || line == "### x86") on = true;
    if (on && line.rfind("!", 0) == 0) break;
    if (on && line.rfind("## ", 0) == 0 && line.rfind("### ", 0) != 0) break;
    if (on) out += line + "\n";
  }
  return out;
}

// The same for FIG4.md's tables under timing v2 (its "Under timing v2").
std::string fig4_v2_tables() {
  const std::string text = read(kSrc + "/docs/FIG4.md");
  std::string out;
  std::istringstream in(text);
  bool on = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("### rv64 (timing v2", 0) == 0) on = true;
    if (on && !line.empty() && line[0] != '|' && line[0] != '#') break;
    if (on) out += line + "\n";
  }
  return out;
}

const std::map<std::string, Check>& checks() {
  static const std::map<std::string, Check> table = [] {
    std::map<std::string, Check> t;
    const auto ok = [](std::function<void(const Ran&)> f = {}) {
      Check c;
      c.verify = std::move(f);
      return c;
    };
    const auto summary = [](const std::string& out) {
      CHECK(out.find("--- ksim summary ---\n") != std::string::npos);
      CHECK(grab(out, "\ncycles: (\\d+)\n") != "");
      CHECK(grab(out, "\ntrace-hash: ([0-9a-f]{16})\n") != "");
    };
    const auto passed = [summary](const Ran& r) {
      summary(r.out());
      CHECK(r.out().find("exit: guest powered off with status 0\n") != std::string::npos);
    };
    // A script CI runs: `caller` calls it.
    const auto ci = [](const char* caller, const char* call) {
      Check c;
      c.how = How::ci;
      c.verify = [caller, call](const Ran&) { CHECK(read(kSrc + "/" + caller).find(call) != std::string::npos); };
      return c;
    };
    // --- README.md: the two commands --------------------------------------
    t["scripts/run-default.sh"] = ok([passed](const Ran& r) {
      passed(r);
      CHECK(r.out().find("isa: rv64, cpus: 1") != std::string::npos);
    });
    t["scripts/test.sh"] = ci(".ci/run", "exec scripts/test.sh");
    t["scripts/build.sh"] = ci("scripts/test.sh", "\nscripts/build.sh \"$@\"\n");
    t["scripts/install-deps.sh"] = ci("scripts/test.sh", "\nscripts/install-deps.sh\n");
    // --- README.md: the tour of the CLI -------------------------------------
    t["build/apps/ksim/ksim run"] = ok([passed](const Ran& r) {
      passed(r);
      CHECK(r.out().find("isa: rv64, cpus: 1, seed: 0, quantum: 1\n") != std::string::npos);
      CHECK(r.out().rfind("[cpu 0] ksim mini kernel: 1 cpus", 0) == 0);  // the console first
      g_results["run"] = result_of(r.out());
    });
    t["build/apps/ksim/ksim run --cpus 4"] = ok([passed](const Ran& r) {
      passed(r);
      CHECK(r.out().find("cpus: 4,") != std::string::npos);
      g_results["run4"] = result_of(r.out());
    });
    t["build/apps/ksim/ksim run --image nopreempt"] = ok(passed);
    t["build/apps/ksim/ksim run --elf prog.elf"] = ok(passed);
    t["build/apps/ksim/ksim run --elf prog.elf"].elf = "workloads/rv64/hello.elf";
    t["build/apps/ksim/ksim run --max-cycles 100000"] = ok([summary](const Ran& r) {
      summary(r.out());
      CHECK(r.out().find("exit: cycle limit (100000) reached\n") != std::string::npos);
    });
    t["build/apps/ksim/ksim run --max-cycles 100000"].status = 5;
    t["build/apps/ksim/ksim run --trace t.jsonl"] = ok([passed](const Ran& r) {
      passed(r);
      const std::string trace = read(r.dir / "t.jsonl");
      CHECK(trace.rfind("{\"cycle\":", 0) == 0);
      CHECK(trace.find("\"kind\":\"console\"") != std::string::npos);
      CHECK(trace.find("\"kind\":\"insn\"") == std::string::npos);
    });
    t["build/apps/ksim/ksim run --trace t.jsonl --trace-insns"] = ok([passed](const Ran& r) {
      passed(r);
      std::ifstream in(r.dir / "t.jsonl");
      std::string first;
      std::getline(in, first);
      CHECK(first.find("\"kind\":\"insn\"") != std::string::npos);
      in.close();
      fs::remove(r.dir / "t.jsonl");  // a quarter of a gigabyte
    });
    t["build/apps/ksim/ksim run --cpus 4 --seed 42"] = ok([passed](const Ran& r) {
      passed(r);
      CHECK(r.out().find("cpus: 4, seed: 42,") != std::string::npos);
    });
    t["build/apps/ksim/ksim run --quantum 1000"] = ok([passed](const Ran& r) {
      passed(r);
      CHECK(r.out().find("quantum: 1000\n") != std::string::npos);
    });
    // "the slow per-instruction schedule the default must match": the same
    // cycles and trace hash as `ksim run --cpus 4` (run before it).
    t["build/apps/ksim/ksim run --cpus 4 --reference-schedule"] = ok([passed](const Ran& r) {
      passed(r);
      CHECK(r.out().find("(reference schedule)") != std::string::npos);
      CHECK(result_of(r.out()) == g_results["run4"]);
    });
    t["build/apps/ksim/ksim run --cpus 4 --no-run-ahead"] = ok([passed](const Ran& r) {
      passed(r);
      CHECK(result_of(r.out()) == g_results["run4"]);
    });
    t["build/apps/ksim/ksim run --code-model strict"] = ok(passed);
    // --- TIMING.md: model v2 -------------------------------------------------
    t["build/apps/ksim/ksim run --timing v2 --stats"] = ok([passed](const Ran& r) {
      passed(r);
      CHECK(r.out().find("timing: v2, machine sifive-u54, memory model rvwmo (") != std::string::npos);
      CHECK(r.out().find("memory (sifive-u54): per CPU\n") != std::string::npos);
      CHECK(std::regex_search(r.out(), std::regex(R"(\n  0 +[1-9]\d* +[1-9]\d* )")));  // hits and misses
    });
    t["build/apps/ksim/ksim run --cpus 2 --timing v2 -q --trace-cache --trace t.jsonl"] = ok([passed](const Ran& r) {
      passed(r);
      const std::string trace = read(r.dir / "t.jsonl");
      CHECK(trace.find("{\"cycle\":0,\"cpu\":0,\"kind\":\"cache_miss\",\"line\":\"0x80000000\",\"access\":\"fetch\","
                       "\"from\":\"memory\"}\n") == 0);
      CHECK(trace.find("\"cpu\":1,\"kind\":\"cache_miss\",\"line\":\"0x80000000\",\"access\":\"fetch\",\"from\":\"l2\"}") !=
            std::string::npos);
      CHECK(std::regex_search(trace, std::regex(R"("access":"upgrade")")));
      CHECK(std::regex_search(trace, std::regex(R"("from":"cpu \d+")")));
    });
    t["build/apps/ksim/ksim run --isa x86 --cpus 4 --machine xeon-e5410 --stats"] = ok([passed](const Ran& r) {
      passed(r);
      CHECK(r.out().find("timing: v2, machine xeon-e5410, memory model tso (") != std::string::npos);
      for (const char* row : {"\n  0 ", "\n  1 ", "\n  2 ", "\n  3 "}) CHECK(r.out().find(row) != std::string::npos);
    });
    // "00=499 01=1": store buffering under RVWMO; none under sc.
    t["build/apps/ksim/ksim run --elf build/workloads/rv64/smp_litmus_rv64.elf --cpus 2 --timing v2"] = ok([passed](const Ran& r) {
      passed(r);
      CHECK(r.out().find("litmus: SB fence 0: 00=499 01=1 ") != std::string::npos);
    });
    t["build/apps/ksim/ksim run --elf build/workloads/rv64/smp_litmus_rv64.elf --cpus 2 --timing v2 --memory-model sc"] =
        ok([passed](const Ran& r) {
          passed(r);
          CHECK(r.out().find("litmus: SB fence 0: 00=0 ") != std::string::npos);
        });
    // The table's U54 column: cycles per load at 4 KiB, 1 MiB and 32 MiB.
    t["build/apps/ksim/ksim run --elf build/workloads/rv64/memlat_rv64.elf --timing v2"] = ok([passed](const Ran& r) {
      passed(r);
      CHECK(r.out().find("memlat: 4096 bytes 203 centicycles/load\n") != std::string::npos);
      CHECK(r.out().find("memlat: 1048576 bytes 1003 centicycles/load\n") != std::string::npos);
      CHECK(r.out().find("memlat: 33554432 bytes 10004 centicycles/load\n") != std::string::npos);
    });
    t["build/apps/ksim/ksim run --checkpoint-at 100000 --checkpoint-file c.ckpt"] = ok([passed](const Ran& r) {
      passed(r);
      // At the first instruction boundary at or after the cycle.
      CHECK(std::regex_search(r.r.err, std::regex(R"(ksim: checkpoint at cycle 1000\d\d \(\d+ steps\) written to c\.ckpt)")));
      CHECK(fs::file_size(r.dir / "c.ckpt") > 1000);
    });
    // "... and continue from there later": the run ends as it would have.
    t["build/apps/ksim/ksim run --restore c.ckpt"] = ok([passed](const Ran& r) {
      passed(r);
      CHECK(result_of(r.out()) == g_results["run"]);
    });
    t["build/apps/ksim/ksim disasm do_fork vfs_read"] = ok([](const Ran& r) {
      CHECK(r.out().find(" <do_fork>:\n") != std::string::npos);
      CHECK(r.out().find(" <vfs_read>:\n") != std::string::npos);
    });
    t["build/apps/ksim/ksim disasm --elf prog.elf"] = ok([](const Ran& r) {
      CHECK(r.out().find(" <_start>:\n") != std::string::npos);
      CHECK(r.out().find(" <main>:\n") != std::string::npos);
    });
    t["build/apps/ksim/ksim disasm --elf prog.elf"].elf = "workloads/rv64/hello.elf";
    // "with the C lines before their instructions": do_fork's first test,
    // then the lui of its mask (tests/line_table_test.cpp pins the order).
    t["build/apps/ksim/ksim disasm -S do_fork"] = ok([](const Ran& r) {
      CHECK(r.out().find(" <do_fork>:\n") != std::string::npos);
      CHECK(std::regex_search(r.out(), std::regex("\n  if \\(clone_flags & ~CLONE_VALID\\) return -EINVAL;\n[0-9a-f]+:\t")));
    });
    t["build/apps/ksim/ksim run --isa x86 --cpus 4"] = ok([passed](const Ran& r) {
      passed(r);
      CHECK(r.out().find("isa: x86, cpus: 4,") != std::string::npos);
    });
    t["build/apps/ksim/ksim run --isa x86 --elf prog.elf"] = ok(passed);
    t["build/apps/ksim/ksim run --isa x86 --elf prog.elf"].elf = "workloads/x86/x86_sort_O2.elf";
    t["build/apps/ksim/ksim disasm --isa x86 do_fork"] = ok([](const Ran& r) {
      CHECK(r.out().find(" <do_fork>:\n") != std::string::npos);
      CHECK(std::regex_search(r.out(), std::regex("\tmov r[a-z0-9]+, ")));  // Intel syntax
    });
    t["build/apps/ksim/ksim run --cpus 4 --probe 'p:myfork do_fork flags=$arg1' --probe 'r:myopen sys_open ret=$retval'"] =
        ok([passed](const Ran& r) {
          passed(r);
          // ftrace lines: "<task>-<pid> [cpu] ... myfork: (do_fork+0x0/...) flags=0x..."
          CHECK(std::regex_search(r.out(), std::regex(R"(\] [^\n]* myfork: \(do_fork\+0x0/0x[0-9a-f]+\) flags=0x)")));
          CHECK(std::regex_search(r.out(), std::regex(R"( myopen: \([^)]*<- sys_open\) ret=0x)")));
        });
    t["build/apps/ksim/ksim run --cpus 4 --probe 'p vfs_read' --probe-action p_vfs_read_0=count --probes-list"] =
        ok([passed](const Ran& r) {
          passed(r);
          CHECK(r.out().find("p_vfs_read_0:") == std::string::npos);  // counted, not printed
          CHECK(r.out().find("kprobes/list:\n") != std::string::npos);
          CHECK(std::regex_search(r.out(), std::regex(R"(\n[0-9a-f]+  k  vfs_read\+0x0)")));
        });
    t["build/apps/ksim/ksim run --isa x86 --kprobes-mode classic --probe 'r:fib_recursive v=$retval:u64'"] =
        ok([passed](const Ran& r) {
          passed(r);
          CHECK(std::regex_search(r.out(), std::regex(R"( r_fib_recursive_0: \([^)]*<- fib_recursive\) v=\d+\n)")));
        });
    // "do_fork [OPTIMIZED]: a jump to a detour buffer".
    t["build/apps/ksim/ksim run --isa x86 --cpus 4 --probe 'p do_fork' --probes-list"] = ok([passed](const Ran& r) {
      passed(r);
      CHECK(std::regex_search(r.out(), std::regex(R"(\n[0-9a-f]+  k  do_fork\+0x0  \[OPTIMIZED\]\n)")));
    });
    t["build/apps/ksim/ksim run --cpus 4 --probe-script docs/examples/churn.probes --probe-cpu 2 --trace t.jsonl"] =
        ok([passed](const Ran& r) {
          passed(r);
          const std::string n = grab(r.out(), "probe-script: (\\d+) of \\1 operations performed, 0 failed");
          CHECK(n != "");
          const std::string trace = read(r.dir / "t.jsonl");
          CHECK(trace.find("\"cpu\":2,\"kind\":\"probe_op\"") != std::string::npos);
        });
    t["build/apps/ksim/ksim run --isa x86 --cpus 4 --probe-script docs/examples/churn.probes --kprobes-patching "
      "text_poke_smp"] = ok([passed](const Ran& r) {
      passed(r);
      CHECK(std::regex_search(r.out(), std::regex(R"(patching: text_poke_smp, \d+ texts patched, \d+ IPIs, [1-9]\d* stop_machine)")));
    });
    // ksim fig4: FIG4.md's tables, exactly (timing v2, the default, and v1).
    auto v2_tables = [](const Ran& r) {
      CHECK(fig4_v2_tables().find("### x86 (timing v2: xeon-e5410, memory model tso)") != std::string::npos);
      CHECK(r.out() == fig4_v2_tables());
    };
    t["build/apps/ksim/ksim fig4"] = ok(v2_tables);
    t["build/apps/ksim/ksim fig4 --timing v2"] = ok(v2_tables);
    t["build/apps/ksim/ksim fig4 --timing v1"] = ok([](const Ran& r) { CHECK(r.out() == fig4_tables()); });
    // One point: FIG4.md's rv64 spinlock figure at 16 CPUs, of the v2 table
    // (the default) and of the v1 one.
    auto point = [passed, ok](std::string (*tables)()) {
      return ok([passed, tables](const Ran& r) {
        passed(r);
        const std::string row = grab(tables(), R"(\| 16 \| 1048560 \| \d+ \| (\d+) \|)");
        REQUIRE(row != "");
        CHECK(grab(r.out(), "\ncycles: (\\d+)\n") == row);
        const std::string out = r.out();
        CHECK(std::count(out.begin(), out.end(), '\n') < 20);  // counted, not a line per hit
      });
    };
    t["build/apps/ksim/ksim run -q --image fig4 --cpus 16 --probe 'p fig4_target' --probe-action "
      "p_fig4_target_0=count --kprobes-locking spinlock"] = point(&fig4_v2_tables);
    t["build/apps/ksim/ksim run -q --timing v1 --image fig4 --cpus 16 --probe 'p fig4_target' --probe-action "
      "p_fig4_target_0=count --kprobes-locking spinlock"] = point(&fig4_tables);
    t["build/apps/ksim/ksim race list"] = ok([](const Ran& r) {
      CHECK(r.out().find("\ntorn-write ") != std::string::npos);
      CHECK(r.out().find("[x86, rv64; preempt kernel]") != std::string::npos);
    });
    t["build/apps/ksim/ksim race run torn-write --variant broken --seed 1"] = ok([](const Ran& r) {
      CHECK(std::regex_search(r.out(), std::regex(R"(\nviolation: cycle \d+: cpu \d+ fetched )")));
      CHECK(r.out().find("\nreproduce: ksim race run torn-write --variant broken --seed 1 --isa x86 --cpus 4\n") !=
            std::string::npos);
    });
    t["build/apps/ksim/ksim race run torn-write --variant broken --seed 1"].status = 6;
    t["build/apps/ksim/ksim run --help"] = ok([](const Ran& r) {
      for (const char* o : {"--probe-script", "--kprobes-locking", "--reference-schedule", "--code-model", "--restore"})
        CHECK(r.out().find(o) != std::string::npos);
    });
    // --- ksim-ui --------------------------------------------------------------
    const auto ui = [](std::string script, std::function<void(const Ran&)> f) {
      Check c;
      c.how = How::ui;
      c.ui_script = std::move(script);
      c.verify = std::move(f);
      return c;
    };
    const auto at_cycle = [](uint64_t cycle) {
      return [cycle](const Ran& r) { CHECK(grab(r.out(), "position: cycle (\\d+) ") == std::to_string(cycle)); };
    };
    // "opens paused at cycle 0; every hit traps (optimized, do_fork's hits go through a jump)".
    t["build/apps/ksim-ui/ksim-ui --cpus 4 --probe 'p do_fork' --kprobes-optimization 0"] =
        ui("print position\nnext-event hit\nprint position\nquit\n", [](const Ran& r) {
          CHECK(grab(r.out(), "position: cycle (\\d+) ") == "0");
          const std::string hit = grab(r.out(), "\nposition: cycle (\\d+) ");
          CHECK(hit != "");
          CHECK(hit != "0");
        });
    // "optimized: type the jump's target into Code's location".
    t["build/apps/ksim-ui/ksim-ui --cpus 2 --probe 'p:f do_fork'"] =
        ui("run-to-cycle 200000\nwait 2\ntype Code/location do_fork\nwait 3\nprint code\nquit\n", [](const Ran& r) {
          CHECK(std::regex_search(r.out(), std::regex(R"(code: [0-9a-f]+ [^\n]* under auipc[^\n]*\(to 0x[0-9a-f]+\)\n)")));
        });
    t["build/apps/ksim-ui/ksim-ui --cpus 4 --at 1500000"] = ui("print position\nquit\n", at_cycle(1'500'000));
    // "driven by a script, prints ksim run's summary" (DEBUGGER.md's sample).
    t["build/apps/ksim-ui/ksim-ui --cpus 4 --probe 'p do_fork' --script demo.txt"] = ui("", [](const Ran& r) {
      CHECK(r.out().find("--- ksim summary ---\n") != std::string::npos);
      CHECK(r.out().find("exit: guest powered off with status 0\n") != std::string::npos);
      CHECK(grab(r.out(), "\ntrace-hash: ([0-9a-f]{16})\n") != "");
    });
    // "probes defined and removed during the run".
    t["build/apps/ksim-ui/ksim-ui --cpus 4 --probe-script docs/examples/churn.probes"] =
        ui("run-to-end\nprint probes\nquit\n", [](const Ran& r) {
          CHECK(std::regex_search(r.out(), std::regex(R"(probe: \S+ [kr] \S+ hits [1-9]\d* nmissed \d+ removed\n)")));
        });
    // "a race scenario, at its violation" (RACES.md's seed).
    const auto race_at_violation = [](const Ran& r) {
      const std::string at = grab(r.out(), "race: torn-write, broken, x86, 4 CPUs, seed 1; violation at cycle (\\d+)");
      REQUIRE(at != "");
      CHECK(grab(r.out(), "position: cycle (\\d+) ") == at);
    };
    t["build/apps/ksim-ui/ksim-ui --race torn-write --variant broken --seed 1"] =
        ui("print race\nprint position\nquit\n", race_at_violation);
    // --- DEBUGGER.md ------------------------------------------------------------
    t["build/apps/ksim-ui/ksim-ui --cpus 4 --probe 'p do_fork'"] = ui("print position\nprint probes\nquit\n", [](const Ran& r) {
      CHECK(grab(r.out(), "position: cycle (\\d+) ") == "0");
      CHECK(r.out().find("probe: kprobes/p_do_fork_0 k do_fork hits 0 ") != std::string::npos);
    });
    t["build/apps/ksim-ui/ksim-ui --cpus 4 --seed 7 --at 1500000"] = ui("print position\nquit\n", at_cycle(1'500'000));
    // Timing v2: the CPUs window's cache counters, the Memory window's holders.
    t["build/apps/ksim-ui/ksim-ui --cpus 2 --timing v2 --at 1000000"] =
        ui("print position\nprint cpu\nquit\n", [](const Ran& r) {
          CHECK(grab(r.out(), "position: cycle (\\d+) ") == "1000000");
          CHECK(std::regex_search(r.out(), std::regex(R"(\ncaches: L1I [1-9]\d* hits [1-9]\d* misses  L1 [1-9]\d* hits .* transfers .* store buffer \d+)")));
          CHECK(std::regex_search(r.out(), std::regex(R"(\nholders: line 0x[0-9a-f]+: )")));
        });
    t["build/apps/ksim-ui/ksim-ui --isa x86 --cpus 2 --probe 'r:myopen sys_open ret=$retval'"] =
        ui("run-to-cycle 3000000\nprint probes\nquit\n", [](const Ran& r) {
          CHECK(std::regex_search(r.out(), std::regex(R"(probe: kprobes/myopen r sys_open hits [1-9])")));
        });
    t["build/apps/ksim-ui/ksim-ui --elf prog.elf --width 1920 --height 1080"] =
        ui("run-to-end\nscreenshot shot.png\nquit\n", [](const Ran& r) {
          CHECK(r.out().find("exit: guest powered off with status 0\n") != std::string::npos);
          // A PNG's width and height: bytes 16-23 of its IHDR, big-endian.
          std::ifstream png(r.dir / "shot.png", std::ios::binary);
          unsigned char h[24] = {};
          png.read(reinterpret_cast<char*>(h), 24);
          CHECK((h[16] << 24 | h[17] << 16 | h[18] << 8 | h[19]) == 1920);
          CHECK((h[20] << 24 | h[21] << 16 | h[22] << 8 | h[23]) == 1080);
        });
    t["build/apps/ksim-ui/ksim-ui --elf prog.elf --width 1920 --height 1080"].elf = "workloads/rv64/hello.elf";
    t["build/apps/ksim-ui/ksim-ui --cpus 4 --probe 'p do_fork' --script demo.txt"].timeout_s = 300;
    t["build/apps/ksim-ui/ksim-ui --cpus 4 --probe-script docs/examples/churn.probes"].timeout_s = 300;
    t["build/apps/ksim-ui/ksim-ui --race torn-write --variant broken --seed 1"].timeout_s = 300;
    // "In a classroom": each lesson's layout, placed and zoomed on its event.
    t["build/apps/ksim-ui/ksim-ui --timing v1 --cpus 4 --probe 'p do_fork' --kprobes-optimization 0 --layout hit --at 76900"] =
        ui("wait 2\nprint font\nprint fsm\nprint timeline\nprint clipped\nquit\n", [](const Ran& r) {
          CHECK(r.out().find("layout hit\n") != std::string::npos);
          CHECK(r.out().find("clipped: none\n") != std::string::npos);
          // At 76900 CPU 0 is inside do_fork's first hit (trap at 76845):
          // the timeline shows that hit, a few hundred cycles around it.
          const double c0 = std::stod(grab(r.out(), "timeline: (\\d+) "));
          const double c1 = std::stod(grab(r.out(), "timeline: \\d+ (\\d+)"));
          CHECK(c0 <= 76845);
          CHECK(c1 >= 76900);
          CHECK(c1 - c0 < 5000);
        });
    t["build/apps/ksim-ui/ksim-ui --timing v1 --cpus 4 --probe-script docs/examples/churn.probes --layout stop-machine --at 102420"] =
        ui("wait 2\nprint font\nprint timeline\nprint clipped\nquit\n", [](const Ran& r) {
          CHECK(r.out().find("layout stop-machine\n") != std::string::npos);
          CHECK(r.out().find("clipped: none\n") != std::string::npos);
          const double c0 = std::stod(grab(r.out(), "timeline: (\\d+) "));
          const double c1 = std::stod(grab(r.out(), "timeline: \\d+ (\\d+)"));
          CHECK(c0 <= 102420);
          CHECK(c1 >= 102420);
          CHECK(c1 - c0 < 20000);
        });
    t["build/apps/ksim-ui/ksim-ui --race torn-write --variant broken --seed 1 --width 1920 --height 1080 --font-scale 1.5"] =
        ui("wait 2\nprint font\nprint race\nprint clipped\nquit\n", [](const Ran& r) {
          CHECK(r.out().find("font: 20.0 px, scale 1.50, layout race\n") != std::string::npos);
          CHECK(r.out().find("clipped: none\n") != std::string::npos);
          CHECK(r.out().find("race: torn-write, broken, x86, 4 CPUs, seed 1; violation at cycle") != std::string::npos);
        });
    t["build/apps/ksim-ui/ksim-ui --race torn-write --variant broken --seed 1 --width 1920 --height 1080 --font-scale 1.5"]
        .timeout_s = 300;
    // "Two runs side by side": where each opens, what differs there.
    t["build/apps/ksim-ui/ksim-ui --race torn-write --variant correct --seed 1 --compare variant=broken"] =
        ui("wait 2\nprint compare\nprint position\nquit\n", [](const Ran& r) {
          CHECK(r.out().find("compare: first difference at event 85, cycle 207919\n") != std::string::npos);
          CHECK(r.out().find("probe operation: text_poke_bp ksim_patch_site") != std::string::npos);
          CHECK(r.out().find("probe operation: write ksim_patch_site one byte at a time") != std::string::npos);
          CHECK(r.out().find("compare-b-run: violation at cycle 208587 by CPU 2") != std::string::npos);
          CHECK(grab(r.out(), "position: cycle (\\d+) ") == "207919");
        });
    t["build/apps/ksim-ui/ksim-ui --race torn-write --variant correct --seed 1 --compare variant=broken"].timeout_s = 300;
    t["build/apps/ksim-ui/ksim-ui --timing v1 --cpus 4 --probe 'p do_fork' --kprobes-optimization 0 --compare kprobes-locking=spinlock"] =
        ui("wait 2\nprint compare\nquit\n", [](const Ran& r) {
          CHECK(r.out().find("compare: first difference at event 20, cycle 76885\n") != std::string::npos);
          CHECK(r.out().find("compare-a: cycle 76885, CPU 0: probe KPROBE_HIT_ACTIVE at do_fork") != std::string::npos);
          CHECK(r.out().find("compare-b: cycle 76885, CPU 0: probe kprobe_lock-acquire at do_fork") != std::string::npos);
        });
    // "taken by": ten PNGs, at both sizes (the folder is the test's).
    t["scripts/screenshots.sh"] = ok([](const Ran& r) {
      for (const char* n : {"probe-hit", "stop-machine", "race-torn-write", "compare", "detour-buffer"})
        for (const char* suffix : {"", "-1080p"}) {
          std::ifstream png(r.dir / "shots" / (std::string(n) + suffix + ".png"), std::ios::binary);
          unsigned char h[24] = {};
          png.read(reinterpret_cast<char*>(h), 24);
          INFO(n << suffix);
          CHECK((h[16] << 24 | h[17] << 16 | h[18] << 8 | h[19]) == (*suffix ? 1920 : 1280));
          CHECK((h[20] << 24 | h[21] << 16 | h[22] << 8 | h[23]) == (*suffix ? 1080 : 800));
        }
    });
    t["scripts/screenshots.sh"].timeout_s = 300;
    t["build/apps/ksim-ui/ksim-ui --help"] = ok([](const Ran& r) {
      for (const char* o : {"--script", "--race", "--at", "--ini", "--width", "--font-scale", "--layout", "--compare"})
        CHECK(r.out().find(o) != std::string::npos);
    });
    // --- FIG4.md ------------------------------------------------------------------
    t["scripts/fig4.sh"] = ok([](const Ran& r) {
      CHECK(r.out() == fig4_tables());
      for (const char* isa : {"rv64", "x86"}) CHECK(fs::exists(kBin + "/fig4_" + isa + ".dat"));
    });
    t["scripts/fig4-plot.sh"] = ok([](const Ran& r) { CHECK(fs::file_size(r.dir / "plot.png") > 10'000); });
    // --- PERFORMANCE.md -----------------------------------------------------------
    t["scripts/probe-overhead.sh"] = ok([](const Ran& r) {
      CHECK(fs::file_size(r.dir / "plot.png") > 10'000);
      CHECK(fs::exists(kBin + "/probe_overhead.dat"));
    });
    return t;
  }();
  return table;
}

// A benchmark invocation of PERFORMANCE.md: what its filter selects.
bool is_bench(const std::string& cmd) {
  return cmd.find("/bench/ksim_bench") != std::string::npos;
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The documented command as bash runs it here.
std::string localise(std::string cmd, const Check& c, const fs::path& dir) {
  auto replace_all = [&](const std::string& from, const std::string& to) {
    for (size_t at = 0; (at = cmd.find(from, at)) != std::string::npos; at += to.size()) cmd.replace(at, from.size(), to);
  };
  if (cmd.rfind("scripts/", 0) == 0) cmd = kSrc + "/" + cmd;
  replace_all(" docs/examples/", " " + kSrc + "/docs/examples/");
  if (cmd.rfind("build/", 0) == 0) cmd = kBin + cmd.substr(5);
  replace_all(" build/", " " + kBin + "/");
  if (!c.elf.empty()) {
    fs::remove(dir / "prog.elf");
    fs::copy_file(kBin + "/" + c.elf, dir / "prog.elf");
  }
  if (cmd.find("-plot.sh") != std::string::npos || cmd.find("probe-overhead.sh") != std::string::npos)
    cmd += " " + (dir / "plot.png").string();
  if (cmd.find("screenshots.sh") != std::string::npos) cmd += " " + (dir / "shots").string();
  return cmd;
}

Ran run_one(const std::string& cmd, const Check& c, const fs::path& dir) {
  std::string line = localise(cmd, c, dir);
  if (c.how == How::ui) {
    if (line.find("--script") == std::string::npos && !c.ui_script.empty()) {
      std::ofstream(dir / "script.txt") << c.ui_script;
      line += " --script script.txt";
    }
    if (line.find("--script demo.txt") != std::string::npos) std::ofstream(dir / "demo.txt") << debugger_sample_script();
    line = std::string(KSIM_XVFB_RUN) + " -a -s '-screen 0 1920x1080x24' " + line + " --ini ''";
  }
  const std::string full = "cd " + shell_quote(dir.string()) + " && KSIM_BUILD_DIR=" + shell_quote(kBin) + " " + line;
  Ran r;
  r.dir = dir;
  r.r = run_process({"/bin/bash", "-c", full}, std::chrono::seconds(c.timeout_s));
  return r;
}

// Runs the documented commands of `file` (in document order: later ones may
// use what earlier ones made, as a person following the page would).
void run_file(const std::string& file, bool ui) {
  const fs::path dir = fs::path(kBin) / "tests" / ("docs-" + std::to_string(getpid()) + "-" + fs::path(file).stem().string() + (ui ? "-ui" : ""));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::set<std::string> seen;
  for (const DocCommand& d : documented()) {
    if (d.file != file || !seen.insert(d.text).second) continue;
    const bool is_ui = d.text.find("ksim-ui/ksim-ui") != std::string::npos && d.text.find("--help") == std::string::npos;
    if (is_ui != ui) continue;
    INFO(d.file << ":" << d.line << ": " << d.text);
    if (is_bench(d.text)) {
      const std::string filter = grab(d.text, "--benchmark_filter=('[^']*'|\\S+)");
      std::string f = filter.size() > 1 && filter.front() == '\'' ? filter.substr(1, filter.size() - 2) : filter;
      ProcessResult r = run_process({kBin + "/bench/ksim_bench", "--benchmark_list_tests=true",
                                     "--benchmark_filter=" + (f.empty() ? "." : f)});
      CHECK(r.status == 0);
      CHECK(std::count(r.out.begin(), r.out.end(), '\n') >= 1);
      continue;
    }
    const auto it = checks().find(d.text);
    REQUIRE(it != checks().end());
    const Check& c = it->second;
    if (c.how == How::ci) {
      c.verify(Ran{});
      continue;
    }
    const Ran r = run_one(d.text, c, dir);
    INFO("stdout (last 3000 bytes):\n" << r.r.out.substr(r.r.out.size() > 3000 ? r.r.out.size() - 3000 : 0)
                                       << "\nstderr:\n" << r.r.err.substr(0, 3000));
    REQUIRE_FALSE(r.r.timed_out);
    REQUIRE(r.r.exited);
    CHECK(r.r.status == c.status);
    if (c.verify) c.verify(r);
  }
  fs::remove_all(dir);
}

}  // namespace

TEST_CASE("every command in README.md and docs/ has a check, and every check a command", "[docs]") {
  std::set<std::string> doc;
  for (const DocCommand& d : documented())
    if (!is_bench(d.text)) doc.insert(d.text);
  for (const std::string& c : doc) {
    INFO("documented, no check: " << c);
    CHECK(checks().count(c) == 1);
  }
  for (const auto& [c, check] : checks()) {
    INFO("checked, not documented: " << c);
    CHECK(doc.count(c) == 1);
  }
  CHECK(doc.size() > 40);
}

TEST_CASE("README.md's commands do what it says", "[docs]") { run_file("README.md", false); }
TEST_CASE("README.md's ksim-ui commands open where it says", "[docs][xvfb]") { run_file("README.md", true); }
TEST_CASE("DEBUGGER.md's commands", "[docs][xvfb]") {
  run_file("docs/DEBUGGER.md", false);
  run_file("docs/DEBUGGER.md", true);
}
TEST_CASE("FIG4.md's commands print its tables and draw its plot", "[docs]") { run_file("docs/FIG4.md", false); }
TEST_CASE("TIMING.md's commands show model v2's machines and plateaus", "[docs]") { run_file("docs/TIMING.md", false); }
TEST_CASE("PERFORMANCE.md's and DEPENDENCIES.md's commands", "[docs]") {
  run_file("docs/PERFORMANCE.md", false);
  run_file("docs/DEPENDENCIES.md", false);
}
