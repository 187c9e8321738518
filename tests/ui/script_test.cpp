// docs/DEBUGGER.md, "Scripts": the script language's parser.
#include <catch2/catch.hpp>

#include "ui/model/script.hpp"

using namespace ksim::ui;

TEST_CASE("Scripts parse into actions, and widget labels keep their spaces and '#'", "[ui][script]") {
  auto a = parse_script(
      "# a comment\n"
      "step\nstep 5\nrun-to-cycle 1000\n\n"
      "click Control/Step CPU 0\n"
      "type Probes/##spec p:myfork do_fork flags=$arg1\n"
      "drag Timeline/canvas -200 0\n"
      "wheel Timeline/canvas 3\n"
      "next-event hit\nscreenshot out.png\nquit\n",
      "s");
  REQUIRE(a.size() == 10);
  CHECK(a[0].verb == "step");
  CHECK(a[0].number(0, 1) == 1);
  CHECK(a[1].number(0, 1) == 5);
  CHECK(a[1].line == 3);
  CHECK(a[3].args == std::vector<std::string>{"Control/Step CPU 0"});
  CHECK(a[4].args == std::vector<std::string>{"Probes/##spec", "p:myfork do_fork flags=$arg1"});
  CHECK(a[5].args == std::vector<std::string>{"Timeline/canvas", "-200", "0"});
  CHECK(a[6].args == std::vector<std::string>{"Timeline/canvas", "3"});
  CHECK(a[9].verb == "quit");
}

namespace {

// The error a script's text is refused with, or "(no error)".
std::string error_of(const std::string& text) {
  try {
    parse_script(text, "t.txt");
  } catch (const ScriptError& e) {
    return std::string(e.what());
  }
  return std::string("(no error)");
}

}  // namespace

TEST_CASE("A bad script line is an error naming the file and line", "[ui][script]") {
  CHECK(error_of("step\nfly 3\n") == "t.txt:2: unknown action 'fly'");
  CHECK(error_of("step -1\n") == "t.txt:1: '-1' is not an integer from 0 to 18446744073709551615");
  // Issue 22: this ended ksim-ui with "internal error: stoull" (exit 4).
  CHECK(error_of("step 99999999999999999999\n") ==
        "t.txt:1: '99999999999999999999' is not an integer from 0 to 18446744073709551615");
  CHECK(error_of("step 18446744073709551615\n") == "(no error)");
  CHECK(error_of("wait 99999999\n") == "t.txt:1: wait takes at most 36000 frames");
  CHECK(error_of("fps 36001\n") == "t.txt:1: fps takes at most 36000 frames");
  CHECK(error_of("select-cpu 64\n") == "t.txt:1: select-cpu takes a CPU number below 64");
  CHECK(error_of("run-to-cycle\n") == "t.txt:1: run-to-cycle takes 1 argument(s)");
  CHECK(error_of("next-event nothing\n") == "t.txt:1: unknown event kind 'nothing'");
  CHECK(error_of("click Step\n") == "t.txt:1: widgets are named WINDOW/LABEL");
  CHECK(error_of("type Probes/x\n") == "t.txt:1: type needs WINDOW/LABEL and the text to type");
  CHECK(error_of("print everything\n") == "t.txt:1: print takes position, probes, timeline, error, fsm, cpu, speed, memory, race, code, source, clipped, font or compare");
}

TEST_CASE("Event kinds by name: 'hit' is a probe event entering KPROBE_HIT_ACTIVE", "[ui][script]") {
  EventFilter f;
  REQUIRE(event_filter_named("hit", f));
  CHECK(f.kind == ksim::EventKind::probe);
  CHECK(f.texts == std::vector<std::string>{"KPROBE_HIT_ACTIVE", "optimized-hit"});
  REQUIRE(event_filter_named("ipi", f));
  CHECK(f.kind == ksim::EventKind::ipi_send);
  CHECK_FALSE(event_filter_named("race", f));
  for (const std::string& n : event_filter_names()) CHECK(event_filter_named(n, f));
}

TEST_CASE("Script keys and layouts: only the chords and lessons there are", "[ui][script]") {
  CHECK(parse_script("key ctrl+=\nkey ctrl++\nkey ctrl+-\nkey ctrl+0\nlayout hit\nlayout stop-machine\n", "t.txt").size() ==
        6);
  CHECK(error_of("key ctrl+x\n") == "t.txt:1: key takes ctrl+= (or ctrl++), ctrl+- or ctrl+0");
  CHECK(error_of("layout lecture\n") == "t.txt:1: layout takes hit, race, stop-machine, compare or overview");
  CHECK(error_of("layout\n") == "t.txt:1: layout takes 1 argument(s)");
}
