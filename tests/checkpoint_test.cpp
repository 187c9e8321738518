// Checkpoints, pausing and stepping back: the machine can be saved, restored
// and replayed without changing a single event of the run.
#include <catch2/catch.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <unistd.h>

#include "sim/checkpoint.hpp"
#include "sim/timeline.hpp"

using namespace ksim;

namespace {

std::string guest(const char* name) { return std::string(KSIM_BINARY_DIR) + "/workloads/rv64/" + name; }

// Records every event as text, for exact comparison.
struct Recorder : EventObserver {
  std::vector<std::string> lines;
  void on_event(const Event& e) override {
    lines.push_back(std::to_string(e.cycle) + " " + std::to_string(e.cpu) + " " + event_kind_name(e.kind) + " " +
                    std::to_string(e.a) + " " + std::to_string(e.b) + " " + std::to_string(e.c) + " " + e.text);
  }
};

std::unique_ptr<Machine> boot(const char* elf, int cpus = 1, uint64_t seed = 0, uint64_t quantum = 1) {
  MachineConfig cfg;
  cfg.cpus = cpus;
  cfg.seed = seed;
  cfg.quantum = quantum;
  auto m = std::make_unique<Machine>(cfg);
  m->load(load_elf_file(guest(elf), Isa::rv64));
  return m;
}

}  // namespace

TEST_CASE("Checkpoint at T, run to T2, restore, run to T2 again: identical state and events", "[checkpoint]") {
  auto m = boot("hello.elf", 2, 7);
  RunLimits to_t;
  to_t.cycle = 8'000;
  REQUIRE(m->run(to_t).end == RunResult::End::paused);
  const std::vector<uint8_t> at_t = save_checkpoint(*m);

  RunLimits to_t2;
  to_t2.cycle = 200'000;
  Recorder first;
  m->events().add(&first);
  REQUIRE(m->run(to_t2).end == RunResult::End::paused);
  REQUIRE(m->run(to_t2).end == RunResult::End::paused);  // already there: no-op
  m->events().remove(&first);
  const std::vector<uint8_t> at_t2 = save_checkpoint(*m);
  REQUIRE(first.lines.size() >= 2);  // console lines between T and T2

  // Restore into the same machine and into a fresh one.
  for (int fresh = 0; fresh < 2; ++fresh) {
    std::unique_ptr<Machine> fresh_machine;
    Machine* target = m.get();
    if (fresh) {
      MachineConfig cfg = read_checkpoint_header(at_t).config;
      fresh_machine = std::make_unique<Machine>(cfg);
      target = fresh_machine.get();
    }
    restore_checkpoint(*target, at_t);
    Recorder again;
    target->events().add(&again);
    REQUIRE(target->run(to_t2).end == RunResult::End::paused);
    target->events().remove(&again);
    CHECK(again.lines == first.lines);
    CHECK(save_checkpoint(*target) == at_t2);
  }
}

TEST_CASE("A restored run ends exactly like the uninterrupted run", "[checkpoint]") {
  auto ref = boot("hello.elf");
  TraceHasher ref_hash;
  ref->events().add(&ref_hash);
  RunResult full = ref->run();
  REQUIRE(full.end == RunResult::End::poweroff);

  auto m = boot("hello.elf");
  TraceHasher h;
  m->events().add(&h);
  RunLimits lim;
  lim.cycle = full.cycles / 2;
  REQUIRE(m->run(lim).end == RunResult::End::paused);
  auto bytes = save_checkpoint(*m, h.value());

  MachineConfig cfg = read_checkpoint_header(bytes).config;
  Machine restored(cfg);
  restore_checkpoint(restored, bytes);
  TraceHasher h2;
  h2.set_value(read_checkpoint_header(bytes).trace_hash);
  restored.events().add(&h2);
  RunResult end = restored.run();
  CHECK(end.end == RunResult::End::poweroff);
  CHECK(end.cycles == full.cycles);
  CHECK(end.instret == full.instret);
  CHECK(h2.value() == ref_hash.value());
  CHECK(restored.console() == ref->console());
}

TEST_CASE("Pausing anywhere does not change the run", "[checkpoint]") {
  auto ref = boot("hello.elf", 2, 3);
  TraceHasher ref_hash;
  ref->events().add(&ref_hash);
  RunResult full = ref->run();
  REQUIRE(full.end == RunResult::End::poweroff);

  auto m = boot("hello.elf", 2, 3);
  TraceHasher h;
  m->events().add(&h);
  uint64_t chunk = 1;
  RunResult r;
  do {  // pauses at step counts 1, 3, 7, ... then by ever larger pieces
    RunLimits lim;
    lim.steps = m->steps() + chunk;
    r = m->run(lim);
    chunk = chunk * 2 + 1;
  } while (r.end == RunResult::End::paused);
  CHECK(r.end == RunResult::End::poweroff);
  CHECK(r.cycles == full.cycles);
  CHECK(h.value() == ref_hash.value());
}

TEST_CASE("Step back by one instruction lands on exactly the previous state", "[checkpoint][timeline]") {
  auto m = boot("hello.elf");
  Timeline tl(*m, 1000);
  REQUIRE(tl.forward(2500).end == RunResult::End::paused);
  REQUIRE(m->steps() == 2500);
  const auto before = save_checkpoint(*m);
  REQUIRE(tl.forward(1).end == RunResult::End::paused);
  REQUIRE(m->steps() == 2501);
  CHECK(save_checkpoint(*m) != before);
  REQUIRE(tl.back(1));
  CHECK(m->steps() == 2500);
  CHECK(save_checkpoint(*m) == before);
  // And far back, across several checkpoints, then forward again.
  REQUIRE(tl.seek(10));
  CHECK(m->steps() == 10);
  REQUIRE(tl.seek(2500));
  CHECK(save_checkpoint(*m) == before);
}

TEST_CASE("Corrupted, truncated or foreign checkpoints are refused with a clear error", "[checkpoint]") {
  auto m = boot("hello.elf");
  RunLimits lim;
  lim.cycle = 10'000;
  m->run(lim);
  const auto good = save_checkpoint(*m);
  REQUIRE_NOTHROW(read_checkpoint_header(good));

  auto refused = [&](std::vector<uint8_t> bytes, const char* reason) {
    INFO(reason);
    MachineConfig cfg;
    Machine target(cfg);
    try {
      restore_checkpoint(target, bytes);
      FAIL("accepted");
    } catch (const InputError& e) {
      CHECK_THAT(e.what(), Catch::Contains(reason));
    }
  };
  refused({}, "truncated");
  refused(std::vector<uint8_t>(good.begin(), good.begin() + good.size() / 2), "truncated");
  refused(std::vector<uint8_t>(good.begin(), good.end() - 1), "truncated");
  auto flipped = good;
  flipped[flipped.size() / 2] ^= 0x10;
  refused(flipped, "corrupted");
  auto magic = good;
  magic[0] = 'X';
  refused(magic, "bad magic");
  auto version = good;
  version[8] = 99;
  refused(version, "version");
  // A checkpoint of a 2-CPU machine does not restore into a 1-CPU one.
  auto two = boot("hello.elf", 2);
  refused(save_checkpoint(*two), "different machine");

  // Files: a missing file and a truncated file.
  char dir[] = "/tmp/ksim-ckpt-XXXXXX";
  REQUIRE(mkdtemp(dir));
  std::string path = std::string(dir) + "/c.ckpt";
  write_checkpoint_file(path, std::vector<uint8_t>(good.begin(), good.begin() + 100));
  auto bytes = read_checkpoint_file(path);
  CHECK_THROWS_AS(read_checkpoint_header(bytes), InputError);
  std::remove(path.c_str());
  rmdir(dir);
  CHECK_THROWS_AS(read_checkpoint_file(path), InputError);
}
