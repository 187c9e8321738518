// Tests of the `ksim` command line, run as a real subprocess: exit statuses
// (0 pass, 1 guest failed, 2 usage, 3 bad input, 4 crash, 5 cycle limit),
// the summary format scripts rely on, --trace output and `ksim disasm`.
//
// The binary is $KSIM_BIN (set by CTest) or the one in the build tree, so
// the test executable also works when run by hand. Every run has a deadline:
// a hanging ksim fails its test instead of stalling the suite.
//
// Test names never start with '-' (CTest passes the name to the test
// executable, which would take it for an option: "--help ..." would print
// Catch's help and pass) and never contain ": " (Catch2 v2's console
// reporter indents a wrapped name past the colon and, for a long name,
// loops forever printing its failure header).
#include <catch2/catch.hpp>
#include <elf.h>
#include <stdlib.h>  // mkdtemp

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cpu/hex.hpp"
#include "mem/memory_map.hpp"
#include "support/run_process.hpp"
#include "support/rv64_asm.hpp"

using namespace ksim::test;
using Catch::Matchers::Contains;

namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

constexpr std::chrono::seconds kTimeout{60};

std::string ksim_bin() {
  const char* env = std::getenv("KSIM_BIN");
  return env != nullptr && *env != '\0' ? env : KSIM_BINARY_DIR "/apps/ksim/ksim";
}

std::string guest_elf(const std::string& name) { return KSIM_BINARY_DIR "/workloads/rv64/" + name + ".elf"; }

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& a : v) s += (s.empty() ? "" : " ") + a;
  return s;
}

// Runs ksim with `args`; fails the test (rather than returning) when it
// timed out or died from a signal, since no status check is meaningful then.
ProcessResult run_ksim(const std::vector<std::string>& args) {
  std::vector<std::string> argv{ksim_bin()};
  argv.insert(argv.end(), args.begin(), args.end());
  INFO("command: " << join(argv));
  REQUIRE(fs::exists(argv[0]));
  ProcessResult r = run_process(argv, kTimeout);
  INFO("stderr: " << r.err);
  REQUIRE_FALSE(r.timed_out);
  REQUIRE(r.exited);  // not killed by a signal (a crash of ksim itself)
  return r;
}

// For INFO: what a run printed, shortened at the front (the summary is at
// the end and is what matters when a check fails).
std::string describe(const ProcessResult& r) {
  auto tail = [](const std::string& s) { return s.size() > 3000 ? "..." + s.substr(s.size() - 3000) : s; };
  return "exit status " + std::to_string(r.status) + "\n--- stdout ---\n" + tail(r.out) + "\n--- stderr ---\n" +
         tail(r.err);
}

// Lines without their '\n'; a final line without '\n' counts too.
std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

size_t count_nonempty_lines(const std::string& s) {
  auto ls = lines(s);
  return static_cast<size_t>(std::count_if(ls.begin(), ls.end(), [](const std::string& l) { return !l.empty(); }));
}

// The value of the summary line "NAME: value" (the last such line).
std::string summary_field(const std::string& out, const std::string& name) {
  std::string found;
  for (const auto& l : lines(out))
    if (l.rfind(name + ": ", 0) == 0) found = l.substr(name.size() + 2);
  return found;
}

uint64_t summary_number(const std::string& out, const std::string& name) {
  std::string v = summary_field(out, name);
  INFO(name << ": '" << v << "'");
  REQUIRE(std::regex_match(v, std::regex("[0-9]+")));
  return std::stoull(v);
}

// Scripts read the run's result from the last two lines of stdout, whatever
// the guest printed and however the run ended (cmd_run.cpp).
void check_summary_tail(const ProcessResult& r) {
  INFO(describe(r));
  REQUIRE(!r.out.empty());
  CHECK(r.out.back() == '\n');
  auto ls = lines(r.out);
  REQUIRE(ls.size() >= 2);
  CHECK(std::regex_match(ls[ls.size() - 2], std::regex("cycles: [0-9]+")));
  CHECK(std::regex_match(ls[ls.size() - 1], std::regex("trace-hash: [0-9a-f]{16}")));
}

// Bad-input and usage errors must stop before anything runs.
void check_no_summary(const ProcessResult& r) { CHECK_THAT(r.out, !Contains("--- ksim summary ---")); }

Bytes read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  INFO("reading " << path);
  REQUIRE(in.good());
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const Bytes& b) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  INFO("writing " << path);
  REQUIRE(out.good());
}

// A private directory for one test's files, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "ksim-cli-test-XXXXXX").string();
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) == nullptr) throw std::runtime_error("mkdtemp failed: " + std::string(strerror(errno)));
    path_ = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// The smallest image ksim accepts: ELF header, one PT_LOAD (R+X) holding
// `code` at the start of RAM, entry there, no sections or symbols.
Bytes tiny_elf(const std::vector<uint32_t>& code, uint16_t machine = EM_RISCV) {
  constexpr uint64_t kCodeOff = 0x80;  // past the header (64) and one program header (56)
  static_assert(sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr) <= kCodeOff);
  const uint64_t code_size = code.size() * 4;

  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_ident[EI_OSABI] = ELFOSABI_SYSV;
  eh.e_type = ET_EXEC;
  eh.e_machine = machine;
  eh.e_version = EV_CURRENT;
  eh.e_entry = ksim::memmap::kRamBase;
  eh.e_phoff = sizeof(Elf64_Ehdr);
  eh.e_ehsize = sizeof(Elf64_Ehdr);
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = 1;

  Elf64_Phdr ph{};
  ph.p_type = PT_LOAD;
  ph.p_flags = PF_R | PF_X;
  ph.p_offset = kCodeOff;
  ph.p_vaddr = ph.p_paddr = ksim::memmap::kRamBase;
  ph.p_filesz = ph.p_memsz = code_size;
  ph.p_align = 4;

  // The host is little-endian like the ELF (ELFDATA2LSB), so the structs
  // and code words are copied as they are.
  Bytes b(kCodeOff + code_size, 0);
  std::memcpy(b.data(), &eh, sizeof eh);
  std::memcpy(b.data() + eh.e_phoff, &ph, sizeof ph);
  std::memcpy(b.data() + kCodeOff, code.data(), code_size);
  return b;
}

// The encodings the scenarios are written in, cross-checked against the
// test assembler.
constexpr uint32_t kCsrwMtvecZero = 0x30501073;  // csrw mtvec, zero
constexpr uint32_t kEcall = 0x00000073;
constexpr uint32_t kWfi = 0x10500073;
static_assert(kCsrwMtvecZero == rv::csrrw(rv::zero, 0x305, rv::zero));
static_assert(kEcall == rv::ecall && kWfi == rv::wfi);

struct TraceStats {
  size_t lines = 0, console = 0, exit = 0, insn = 0, exceptions = 0;
  std::string last;
};

// Reads a JSON Lines trace, checking that each line looks like one flat
// JSON object with the two fields every event has.
TraceStats read_trace(const std::string& path) {
  std::ifstream in(path);
  INFO("trace file " << path);
  REQUIRE(in.good());
  TraceStats s;
  size_t bad = 0;
  std::string first_bad;
  for (std::string l; std::getline(in, l);) {
    ++s.lines;
    bool ok = l.size() >= 2 && l.front() == '{' && l.back() == '}' && l.find("\"cycle\":") != std::string::npos &&
              l.find("\"kind\":") != std::string::npos;
    if (!ok && bad++ == 0) first_bad = l;
    if (l.find("\"kind\":\"console\"") != std::string::npos) ++s.console;
    if (l.find("\"kind\":\"exit\"") != std::string::npos) ++s.exit;
    if (l.find("\"kind\":\"insn\"") != std::string::npos) ++s.insn;
    if (l.find("\"kind\":\"trap\"") != std::string::npos) ++s.exceptions;
    s.last = l;
  }
  INFO("first malformed line: " << first_bad);
  CHECK(bad == 0);
  return s;
}

}  // namespace

// ---------------------------------------------------------------------------
// Exit status 0: the default guest

TEST_CASE("ksim run without --elf boots the guest kernel, exits 0 and ends stdout with cycles and trace-hash",
          "[cli]") {
  ProcessResult r = run_ksim({"run"});
  INFO(describe(r));
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Contains("ksim mini kernel"));
  CHECK_THAT(r.out, Contains("all work done"));
  CHECK(r.err.empty());  // a passing run has nothing to complain about
  check_summary_tail(r);
}

TEST_CASE("the README's sample summary is what `ksim run -q` prints", "[cli]") {
  std::ifstream in(KSIM_SOURCE_DIR "/README.md");
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  const std::string readme = text.str();
  const size_t at = readme.find("```\n--- ksim summary ---\n");
  REQUIRE(at != std::string::npos);
  const std::string block = readme.substr(at + 4, readme.find("```", at + 4) - (at + 4));
  ProcessResult r = run_ksim({"run", "-q"});
  INFO(describe(r) << "README block:\n" << block);
  REQUIRE(r.status == 0);
  // Every line but the host time must be exactly what the run printed.
  std::istringstream lines(block);
  std::string line;
  int checked = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("host time:", 0) == 0) continue;
    CHECK_THAT(r.out, Contains(line + "\n"));
    ++checked;
  }
  CHECK(checked == 7);
}

TEST_CASE("ksim run --image selects a built-in image: hello, preempt, nopreempt", "[cli]") {
  ProcessResult hello = run_ksim({"run", "--image", "hello"});
  INFO(describe(hello));
  CHECK(hello.status == 0);
  CHECK_THAT(hello.out, Contains("ksim default guest"));
  CHECK_THAT(hello.out, Contains("all checks passed"));
  check_summary_tail(hello);
  ProcessResult pre = run_ksim({"run", "--image", "preempt", "--cpus", "2"});
  ProcessResult nopre = run_ksim({"run", "--image", "nopreempt", "--cpus", "2"});
  INFO(describe(pre) << describe(nopre));
  CHECK(pre.status == 0);
  CHECK(nopre.status == 0);
  CHECK_THAT(pre.out, Contains("preemptive"));
  CHECK_THAT(nopre.out, Contains("all work done"));
  CHECK(run_ksim({"run", "--image", "nosuch"}).status == 2);
  CHECK(run_ksim({"run", "--image", "hello", "--elf", "/dev/null"}).status == 2);
}

TEST_CASE("Two identical ksim runs print the same console, cycles and trace-hash", "[cli]") {
  ProcessResult a = run_ksim({"run"});
  ProcessResult b = run_ksim({"run"});
  INFO("first run:\n" << describe(a) << "\nsecond run:\n" << describe(b));
  REQUIRE(a.status == 0);
  REQUIRE(b.status == 0);
  CHECK(summary_field(a.out, "cycles") == summary_field(b.out, "cycles"));
  CHECK(summary_field(a.out, "trace-hash") == summary_field(b.out, "trace-hash"));
  // Everything else must match too, except the one line that measures the
  // host.
  auto without_host_time = [](const std::string& out) {
    std::vector<std::string> kept;
    for (auto& l : lines(out))
      if (l.rfind("host time:", 0) != 0) kept.push_back(l);
    return kept;
  };
  CHECK(without_host_time(a.out) == without_host_time(b.out));
}

TEST_CASE("ksim run --no-run-ahead and --reference-schedule print what the default prints on 4 CPUs", "[cli]") {
  for (const char* isa : {"rv64", "x86"}) {
    ProcessResult a = run_ksim({"run", "-q", "--isa", isa, "--cpus", "4", "--seed", "2"});
    ProcessResult b = run_ksim({"run", "-q", "--isa", isa, "--cpus", "4", "--seed", "2", "--no-run-ahead"});
    ProcessResult c = run_ksim({"run", "-q", "--isa", isa, "--cpus", "4", "--seed", "2", "--reference-schedule"});
    INFO(describe(a) << describe(b) << describe(c));
    REQUIRE(a.status == 0);
    REQUIRE(b.status == 0);
    REQUIRE(c.status == 0);
    for (const char* f : {"cycles", "instructions", "trace-hash"}) {
      CHECK(summary_field(a.out, f) == summary_field(b.out, f));
      CHECK(summary_field(a.out, f) == summary_field(c.out, f));
    }
  }
}

// ---------------------------------------------------------------------------
// Exit status 1: the guest reported failure

TEST_CASE("A guest that powers off with status 3 makes ksim exit 1 and report status 3", "[cli]") {
  ProcessResult r = run_ksim({"run", "--elf", guest_elf("isa_fail_demo")});
  INFO(describe(r));
  CHECK(r.status == 1);
  CHECK_THAT(r.out + r.err, Contains("status 3"));
  check_summary_tail(r);
}

// ---------------------------------------------------------------------------
// Exit status 2: command-line mistakes

namespace {
struct UsageCase {
  std::string what;
  std::vector<std::string> args;
};
}  // namespace

TEST_CASE("Command-line mistakes exit 2 with a message on stderr and run nothing", "[cli]") {
  auto c = GENERATE(values<UsageCase>({
      {"unknown option", {"run", "--no-such-option"}},
      {"unknown command", {"frobnicate"}},
      {"zero CPUs", {"run", "--cpus", "0"}},
      {"more than 64 CPUs", {"run", "--cpus", "65"}},
      {"non-numeric cycle limit", {"run", "--max-cycles", "abc"}},
      {"negative cycle limit", {"run", "--max-cycles", "-5"}},
      {"negative seed", {"run", "--seed", "-1"}},
      {"seed too large for 64 bits", {"run", "--seed", "18446744073709551616"}},
      {"negative quantum", {"run", "--quantum", "-1"}},
      {"reference schedule with a quantum", {"run", "--reference-schedule", "--quantum", "10"}},
      {"unknown ISA", {"run", "--isa", "sparc"}},
      {"no command at all", {}},
  }));
  ProcessResult r = run_ksim(c.args);
  INFO(c.what << ": ksim " << join(c.args) << "\n" << describe(r));
  CHECK(r.status == 2);
  CHECK(count_nonempty_lines(r.err) >= 1);
  check_no_summary(r);
}

// Issue 22: the hint went inside the quoted value ("('-1 (expected a
// non-negative integer)')"), and a spinlock run was jump-optimized, so no
// hit took the lock it was meant to measure.
TEST_CASE("A refused option value is quoted as given, with what was expected after it; spinlock refuses the "
          "booster and jump optimization",
          "[cli]") {
  ProcessResult r = run_ksim({"run", "--seed", "-1"});
  CHECK(r.status == 2);
  CHECK(r.err.find("the argument ('-1') for option '--seed' is invalid (expected a non-negative integer below 2^64)") !=
        std::string::npos);
  for (const char* o : {"--kprobes-optimization", "--kprobes-boost"}) {
    ProcessResult s = run_ksim({"run", "-q", "--image", "fig4", "--probe", "p fig4_target", "--kprobes-locking",
                                "spinlock", o, "1"});
    INFO(o << ": " << s.err);
    CHECK(s.status == 2);
    CHECK(s.err.find(std::string(o) + " 1 cannot go with --kprobes-locking spinlock") != std::string::npos);
  }
}

TEST_CASE("A probe script that is a folder, or missing, exits 3 and runs nothing", "[cli]") {
  TempDir tmp;
  for (const std::string& path : {tmp.path(), tmp.file("none.probes")}) {
    ProcessResult r = run_ksim({"run", "--probe-script", path});
    INFO(path << ": " << r.err);
    CHECK(r.status == 3);
    CHECK(r.err.find(path + ": cannot read the probe script") != std::string::npos);
    check_no_summary(r);
  }
}

// ---------------------------------------------------------------------------
// Exit status 3: input files ksim cannot use

TEST_CASE("An unusable --elf file exits 3 with a one-line reason on stderr", "[cli]") {
  TempDir tmp;
  const Bytes hello = read_bytes(guest_elf("hello"));
  REQUIRE(hello.size() > 200);

  auto kind = GENERATE(as<std::string>{}, "nonexistent file", "directory", "empty file", "random bytes",
                       "first 100 bytes of hello.elf", "first half of hello.elf", "host executable",
                       "x86-64 ELF");
  std::string path;
  std::string reason_mentions;  // part of the reason, when it is certain
  if (kind == "nonexistent file") {
    path = tmp.file("does-not-exist.elf");
  } else if (kind == "directory") {
    path = tmp.path();
  } else if (kind == "empty file") {
    path = tmp.file("empty.elf");
    write_bytes(path, {});
  } else if (kind == "random bytes") {
    path = tmp.file("random.elf");
    std::mt19937 rng(12345);  // fixed seed: the same bytes on every run
    Bytes b(4096);
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    REQUIRE(std::memcmp(b.data(), ELFMAG, SELFMAG) != 0);
    write_bytes(path, b);
  } else if (kind == "first 100 bytes of hello.elf") {
    path = tmp.file("hello-100.elf");
    write_bytes(path, Bytes(hello.begin(), hello.begin() + 100));
    reason_mentions = "truncated";
  } else if (kind == "first half of hello.elf") {
    path = tmp.file("hello-half.elf");
    write_bytes(path, Bytes(hello.begin(), hello.begin() + static_cast<std::ptrdiff_t>(hello.size() / 2)));
    reason_mentions = "truncated";
  } else if (kind == "host executable") {
    // A real host program (ksim itself): an ELF64, but not a RISC-V
    // static executable.
    path = ksim_bin();
  } else if (kind == "x86-64 ELF") {
    // Well-formed in every other respect, so only the machine is wrong.
    path = tmp.file("x86.elf");
    write_bytes(path, tiny_elf({rv::nop}, EM_X86_64));
    reason_mentions = "EM_X86_64";
  }

  ProcessResult r = run_ksim({"run", "--isa", "rv64", "--elf", path});
  INFO(kind << ": " << path << "\n" << describe(r));
  CHECK(r.status == 3);
  // One line, naming the file: a user with several files knows which one.
  CHECK(count_nonempty_lines(r.err) == 1);
  CHECK_THAT(r.err, Contains(path));
  if (!reason_mentions.empty()) CHECK_THAT(r.err, Contains(reason_mentions));
  check_no_summary(r);
}

TEST_CASE("The minimal test ELF is accepted, so the crash tests below test the run, not the loader", "[cli]") {
  // Guards the builder: if tiny_elf() were malformed, the exit-4 tests
  // would fail with 3, not silently pass, but this says why directly.
  TempDir tmp;
  const std::string path = tmp.file("nop.elf");
  write_bytes(path, tiny_elf({rv::nop, rv::nop, rv::nop, kWfi}));
  ProcessResult r = run_ksim({"run", "--elf", path});
  INFO(describe(r));
  CHECK(r.status != 3);
  CHECK(r.err.find("ksim: " + path) == std::string::npos);
  // It ran: the summary is there and counts at least the three nops.
  check_summary_tail(r);
  CHECK(summary_number(r.out, "instructions") >= 3);
}

// ---------------------------------------------------------------------------
// Exit status 4: the guest crashed

TEST_CASE("A guest whose trap vector points outside RAM makes ksim stop with exit 4 and report a trap loop",
          "[cli]") {
  // mtvec = 0, then ecall: the trap handler's first fetch faults at 0,
  // which traps to 0 again, forever. ksim must notice instead of spinning.
  TempDir tmp;
  const std::string path = tmp.file("trap-loop.elf");
  write_bytes(path, tiny_elf({kCsrwMtvecZero, kEcall}));
  ProcessResult r = run_ksim({"run", "--elf", path});
  INFO(describe(r));
  CHECK(r.status == 4);
  CHECK_THAT(r.out, Contains("trap loop"));
  // The report names the trap that started the loop (the ecall at the
  // image's second word, mcause 11: environment call from M-mode), not the
  // last one at pc 0 (issue 22).
  CHECK_THAT(r.out, Contains("unhandled trap loop: mcause=11 mtval=0x0 at pc=0x80000004"));
  CHECK_THAT(r.out, Contains(", then 8 more with no instruction retired, the last mcause=1 at pc=0x0; mtvec=0x0"));
  check_summary_tail(r);
}

TEST_CASE("A guest that waits for an interrupt nothing will send makes ksim exit 4", "[cli]") {
  // wfi with no timer armed and no other CPU: the machine can never make
  // progress again. The cycle limit bounds the run should ksim miss that.
  TempDir tmp;
  const std::string path = tmp.file("wfi.elf");
  write_bytes(path, tiny_elf({kWfi}));
  ProcessResult r = run_ksim({"run", "--elf", path, "--max-cycles", "10000000"});
  INFO(describe(r));
  CHECK(r.status == 4);
  CHECK_THAT(r.out, Contains("interrupt"));
  CHECK_THAT(r.out, !Contains("trap loop"));  // it must stop at the wfi, not run off the end of the code
  check_summary_tail(r);
}

// ---------------------------------------------------------------------------
// Exit status 5: the cycle limit

TEST_CASE("Reaching --max-cycles exits 5 and still ends stdout with the cycles and trace-hash lines", "[cli]") {
  ProcessResult r = run_ksim({"run", "--elf", guest_elf("compute_small"), "--max-cycles", "100000"});
  INFO(describe(r));
  CHECK(r.status == 5);
  check_summary_tail(r);
  // The limit is checked between instructions, so the clock may pass it by
  // at most one instruction's cycles.
  uint64_t cycles = summary_number(r.out, "cycles");
  CHECK(cycles >= 100000);
  CHECK(cycles < 100000 + 100);
}

// ---------------------------------------------------------------------------
// --trace

TEST_CASE("ksim run --trace writes one JSON object per event, with the console lines and exactly one exit", "[cli]") {
  TempDir tmp;
  const std::string trace = tmp.file("trace.jsonl");
  ProcessResult r = run_ksim({"run", "--trace", trace});
  INFO(describe(r));
  REQUIRE(r.status == 0);
  REQUIRE(fs::is_regular_file(trace));
  TraceStats s = read_trace(trace);
  CHECK(s.lines > 0);
  CHECK(s.console >= 1);
  CHECK(s.exit == 1);
  // The run's end is the last thing that happened.
  CHECK_THAT(s.last, Contains("\"kind\":\"exit\""));
  CHECK(s.insn == 0);  // instruction events only on request
}

TEST_CASE("ksim run --trace-insns adds one event per executed instruction without changing the trace hash", "[cli]") {
  // Under timing v2 a fence or an AMO waits for the store buffer and runs
  // again once it is visible: still one instruction executed, one event.
  const std::string timing = GENERATE("v1", "v2");
  const std::string isa = GENERATE("rv64", "x86");
  TempDir tmp;
  const std::string plain_trace = tmp.file("plain.jsonl"), insn_trace = tmp.file("insns.jsonl");
  ProcessResult plain = run_ksim({"run", "--isa", isa, "--timing", timing, "--trace", plain_trace});
  ProcessResult insns = run_ksim({"run", "--isa", isa, "--timing", timing, "--trace", insn_trace, "--trace-insns"});
  INFO("without --trace-insns:\n" << describe(plain) << "\nwith --trace-insns:\n" << describe(insns));
  REQUIRE(plain.status == 0);
  REQUIRE(insns.status == 0);

  TraceStats s = read_trace(insn_trace);
  // Every executed instruction: the retired ones plus those that raised an
  // exception (they execute but do not retire).
  CHECK(s.insn == summary_number(insns.out, "instructions") + s.exceptions);
  CHECK(s.exit == 1);
  // The hash leaves instruction events out, so asking for them changes
  // neither the hash nor the timing.
  CHECK(summary_field(insns.out, "trace-hash") == summary_field(plain.out, "trace-hash"));
  CHECK(summary_field(insns.out, "cycles") == summary_field(plain.out, "cycles"));
  CHECK(summary_field(insns.out, "instructions") == summary_field(plain.out, "instructions"));
}

TEST_CASE("ksim run --isa x86 --cpus 4 boots the x86 guest kernel and exits 0; disasm --isa x86 lists it",
          "[cli][x86]") {
  ProcessResult r = run_ksim({"run", "--isa", "x86", "--cpus", "4", "--quantum", "10"});
  INFO(describe(r));
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Contains("all work done"));
  CHECK_THAT(r.out, Contains("isa: x86"));
  check_summary_tail(r);
  ProcessResult d = run_ksim({"disasm", "--isa", "x86", "do_fork"});
  INFO(describe(d));
  CHECK(d.status == 0);
  CHECK_THAT(d.out, Contains("<do_fork>:"));
  CHECK(run_ksim({"run", "--isa", "x86", "--image", "hello"}).status == 2);
}

// ---------------------------------------------------------------------------
// Checkpoints from the command line

TEST_CASE("ksim run with a checkpoint mid-run, and a later --restore, end with the same cycles and trace-hash",
          "[cli][checkpoint]") {
  TempDir tmp;
  const std::string ckpt = tmp.file("run.ckpt");
  ProcessResult plain = run_ksim({"run", "--cpus", "4", "--seed", "9", "-q"});
  ProcessResult saving =
      run_ksim({"run", "--cpus", "4", "--seed", "9", "-q", "--checkpoint-at", "1500000", "--checkpoint-file", ckpt});
  ProcessResult restored = run_ksim({"run", "--restore", ckpt, "-q"});
  INFO(describe(plain) << describe(saving) << describe(restored));
  REQUIRE(plain.status == 0);
  REQUIRE(saving.status == 0);
  REQUIRE(restored.status == 0);
  CHECK_THAT(saving.err, Contains("checkpoint at cycle"));
  for (const char* field : {"cycles", "trace-hash", "instructions"}) {
    CHECK(summary_field(saving.out, field) == summary_field(plain.out, field));
    CHECK(summary_field(restored.out, field) == summary_field(plain.out, field));
  }
  // The summary names the machine's ISA; an --isa that contradicts the
  // checkpoint is refused, one that agrees is accepted.
  CHECK_THAT(restored.out, Contains("isa: rv64, cpus: 4, seed: 9"));
  ProcessResult wrong_isa = run_ksim({"run", "--restore", ckpt, "--isa", "x86", "-q"});
  CHECK(wrong_isa.status == 2);
  CHECK_THAT(wrong_isa.err, Contains("does not match the checkpoint"));
  CHECK(run_ksim({"run", "--restore", ckpt, "--isa", "rv64", "-q"}).status == 0);
  // A corrupted checkpoint file is bad input, with a one-line reason.
  {
    std::fstream f(ckpt, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x5a');
  }
  ProcessResult bad = run_ksim({"run", "--restore", ckpt});
  CHECK(bad.status == 3);
  CHECK_THAT(bad.err, Contains("checkpoint"));
  CHECK(run_ksim({"run", "--restore", ckpt, "--cpus", "2"}).status == 2);
}

// ---------------------------------------------------------------------------
// --help

TEST_CASE("ksim --help, ksim run --help and ksim disasm --help exit 0 and print usage", "[cli]") {
  auto args = GENERATE(values<std::vector<std::string>>({{"--help"}, {"run", "--help"}, {"disasm", "--help"}}));
  ProcessResult r = run_ksim(args);
  INFO("ksim " << join(args) << "\n" << describe(r));
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Contains("usage"));
  CHECK(r.err.empty());
}

// ---------------------------------------------------------------------------
// ksim disasm

TEST_CASE("ksim disasm SYMBOL lists that function of the built-in guest under a <SYMBOL> header line", "[cli]") {
  ProcessResult r = run_ksim({"disasm", "--image", "hello", "main"});
  INFO(describe(r));
  CHECK(r.status == 0);
  auto ls = lines(r.out);
  const std::regex header("[0-9a-f]{16} <main>:");
  // objdump layout: address, tab, 4 or 8 hex digits of encoding, tab, text.
  const std::regex insn(" *[0-9a-f]+:\t[0-9a-f]{4}( {5}|[0-9a-f]{4} )\t.+");
  CHECK(std::count_if(ls.begin(), ls.end(), [&](const auto& l) { return std::regex_match(l, header); }) == 1);
  CHECK(std::count_if(ls.begin(), ls.end(), [&](const auto& l) { return std::regex_match(l, insn); }) >= 10);
}

TEST_CASE("ksim disasm of an unknown symbol exits 3 with a one-line reason", "[cli]") {
  ProcessResult r = run_ksim({"disasm", "no_such_symbol"});
  INFO(describe(r));
  CHECK(r.status == 3);
  CHECK(count_nonempty_lines(r.err) == 1);
  CHECK_THAT(r.err, Contains("no_such_symbol"));
}

// Issue 22: `ksim disasm do_fork+1` decoded garbage where a probe at the
// same place is refused.
TEST_CASE("ksim disasm SYMBOL+OFF lists from an instruction boundary only; elsewhere it exits 3 naming the "
          "instruction that covers it",
          "[cli]") {
  for (const char* isa : {"rv64", "x86"}) {
    INFO(isa);
    ProcessResult mid = run_ksim({"disasm", "--isa", isa, "do_fork+1"});
    CHECK(mid.status == 3);
    CHECK(count_nonempty_lines(mid.err) == 1);
    CHECK_THAT(mid.err, Contains("'do_fork+1' is not where an instruction starts: the "));
    CHECK_THAT(mid.err, Contains("-byte instruction at do_fork covers it"));
    // The second instruction's offset, from the listing of the function.
    ProcessResult whole = run_ksim({"disasm", "--isa", isa, "do_fork"});
    REQUIRE(whole.status == 0);
    std::smatch m;
    const std::string out = whole.out;
    REQUIRE(std::regex_search(out, m, std::regex(R"(<do_fork>:\n *([0-9a-f]+):[^\n]*\n *([0-9a-f]+):)")));
    const uint64_t second = std::stoull(m[2].str(), nullptr, 16) - std::stoull(m[1].str(), nullptr, 16);
    ProcessResult at = run_ksim({"disasm", "--isa", isa, "do_fork+" + std::to_string(second)});
    CHECK(at.status == 0);
    CHECK_THAT(at.out, Contains(m[2].str() + ":"));
  }
}

// Issue 22: a panic's backtrace printed bare addresses. The echo names each
// one as Linux's kallsyms does (`[<addr>] sym+off/size`); the console
// events, and so the trace hash, keep the guest's own bytes.
TEST_CASE("A guest kernel panic's backtrace names its addresses: function+offset/size", "[cli]") {
  // do_fork made to return 0 (a pid no caller accepts): the kernel panics.
  ProcessResult r = run_ksim({"run", "--probe", "p:x do_fork", "--probe-action", "x=override:0"});
  INFO(describe(r));
  CHECK(r.status == 4);
  CHECK_THAT(r.out, Contains("Kernel panic - not syncing: check failed"));
  CHECK(std::regex_search(r.out, std::regex(R"(\[cpu 0\]   \[<[0-9a-f]{16}>\] panic\+0x[0-9a-f]+/0x[0-9a-f]+ \(kernel/panic\.c:[0-9]+\)\n)")));
  // Each named frame is followed by the call's source line, the line
  // addr2line gives for the return address minus one.
  std::smatch wm;
  REQUIRE(std::regex_search(r.out, wm,
                            std::regex(R"(\[cpu 0\]   \[<([0-9a-f]{16})>\] worker_main\+0x[0-9a-f]+/0x[0-9a-f]+ \(([a-z0-9_/]+\.c):([0-9]+)\)\n)")));
  {
    const uint64_t ret = std::stoull(wm[1].str(), nullptr, 16);
    const std::string objdump = KSIM_RISCV_OBJDUMP;
    ProcessResult a2l = run_process(std::vector<std::string>{objdump.substr(0, objdump.size() - 7) + "addr2line", "-e",
                                     std::string(KSIM_BINARY_DIR) + "/workloads/rv64/kernel_preempt.elf", ksim::hex(ret - 1)});
    REQUIRE(a2l.exited);
    CHECK_THAT(a2l.out, Catch::StartsWith(std::string(KSIM_SOURCE_DIR) + "/workloads/kernel/" + wm[2].str() + ":" +
                                          wm[3].str()));
  }
  // The trace keeps the line as the guest printed it.
  TempDir tmp;
  ProcessResult t = run_ksim({"run", "-q", "--probe", "p:x do_fork", "--probe-action", "x=override:0", "--trace",
                              tmp.file("t.jsonl")});
  std::ifstream in(tmp.file("t.jsonl"));
  std::stringstream text;
  text << in.rdbuf();
  CHECK(std::regex_search(text.str(), std::regex(R"("text":"\[cpu 0\]   \[<[0-9a-f]{16}>\]")")));
}
