// A machine profile (issue 23): the named machine whose caches and
// latencies timing model v2 charges. A profile is data, one file per
// machine under machines/, each value with its source beside it:
//
//   key = value   # source
//
// A value is a number, a number of nanoseconds (`70ns`, converted to core
// cycles at the profile's clock), a word (random, lru, yes, no, rv64,
// x86), or the name of a key given earlier (a derived figure says what it
// is derived from). The parser refuses an unknown or repeated key, a
// missing one, and a value without a source comment: a profile cannot
// hold an uncited number.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "mem/cache/cache.hpp"

namespace ksim {

struct MachineProfile {
  std::string name;
  std::string isa;  // "rv64" or "x86": the core the profile describes
  uint32_t clock_mhz = 0;
  CacheGeometry l1i;
  uint32_t l1i_latency = 0;   // a fetch that hits (a miss costs the supplier's latency beyond it)
  // Whether the I-cache snoops stores (x86) or keeps old code until the
  // CPU synchronises or evicts the line (RV64 without Ziccid).
  bool l1i_coherent = false;
  // With a coherent I-cache: the aligned block of code the fetch unit
  // delivers at once. The rest of the block holding its PC is what a CPU
  // has fetched already, which a store no longer reaches (0 without one).
  uint32_t fetch_block = 0;
  CacheGeometry l1d;
  uint32_t l1d_latency = 0;         // load-to-use of an L1 hit, word and wider
  uint32_t l1d_latency_narrow = 0;  // the same for byte and halfword loads
  CacheGeometry l2;
  uint32_t l2_shared_by = 0;  // CPUs per L2 (0: one L2 for all)
  bool l2_inclusive = false;  // evicting an L2 line evicts it from the L1s
  uint32_t l2_latency = 0;    // load-to-use when the L2 supplies the line
  uint32_t memory_latency = 0;
  // A line another L1 holds modified: under the same L2, under another.
  uint32_t transfer_same_l2 = 0, transfer_other_l2 = 0;
  // A write to a shared copy: invalidating copies under the same L2 only,
  // or under another L2 too.
  uint32_t upgrade_same_l2 = 0, upgrade_other_l2 = 0;
  // Stores a CPU may have executed but not yet made visible (tso, rvwmo).
  uint32_t store_buffer_entries = 0;

  // Per key: the value as written and its source comment.
  struct Entry {
    std::string value, source;
    int line = 0;
  };
  std::map<std::string, Entry> entries;
  std::string text;  // the file as read (checkpoints carry it)
};

// Parses a profile; `origin` names it in errors. Throws
// std::invalid_argument with one line: "origin:line: what is wrong".
MachineProfile parse_machine_profile(std::string_view text, std::string_view origin);

}  // namespace ksim
