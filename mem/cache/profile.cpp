#include "mem/cache/profile.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace ksim {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

enum class Kind { number, cycles, word, isa, replacement, yes_no };

struct Key {
  const char* name;
  Kind kind;
};

// Every key a profile must give, in the order the parser accepts
// references (a key may name one given before it in the file).
constexpr Key kKeys[] = {
    {"name", Kind::word},          {"isa", Kind::isa},
    {"clock_mhz", Kind::number},
    {"l1i.size", Kind::number},    {"l1i.ways", Kind::number},
    {"l1i.line", Kind::number},    {"l1i.replacement", Kind::replacement},
    {"l1i.latency", Kind::cycles}, {"l1i.coherent", Kind::yes_no},
    {"fetch.block", Kind::number}, {"l1d.size", Kind::number},
    {"l1d.ways", Kind::number},    {"l1d.line", Kind::number},
    {"l1d.replacement", Kind::replacement}, {"l1d.latency", Kind::cycles},
    {"l1d.latency_narrow", Kind::cycles},   {"l2.size", Kind::number},
    {"l2.ways", Kind::number},     {"l2.line", Kind::number},
    {"l2.replacement", Kind::replacement},  {"l2.shared_by", Kind::number},
    {"l2.inclusive", Kind::yes_no}, {"l2.latency", Kind::cycles},
    {"memory.latency", Kind::cycles},       {"transfer.same_l2", Kind::cycles},
    {"transfer.other_l2", Kind::cycles},    {"upgrade.same_l2", Kind::cycles},
    {"upgrade.other_l2", Kind::cycles},     {"store_buffer.entries", Kind::number},
};

const Key* find_key(std::string_view k) {
  for (const Key& key : kKeys)
    if (k == key.name) return &key;
  return nullptr;
}

bool parse_u64(std::string_view s, uint64_t& v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

MachineProfile parse_machine_profile(std::string_view text, std::string_view origin) {
  MachineProfile p;
  p.text = std::string(text);
  std::map<std::string, uint64_t> numbers;  // numeric keys, in cycles where they are latencies
  int line_no = 0;
  auto fail = [&](const std::string& what) -> std::invalid_argument {
    return std::invalid_argument(std::string(origin) + ":" + std::to_string(line_no) + ": " + what);
  };
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t nl = text.find('\n', pos);
    std::string_view raw = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    ++line_no;
    std::string_view body = raw, comment;
    if (const size_t hash = raw.find('#'); hash != std::string_view::npos) {
      body = raw.substr(0, hash);
      comment = trim(raw.substr(hash + 1));
    }
    body = trim(body);
    if (body.empty()) continue;
    const size_t eq = body.find('=');
    if (eq == std::string_view::npos) throw fail("expected `key = value  # source`");
    const std::string key(trim(body.substr(0, eq)));
    const std::string_view value = trim(body.substr(eq + 1));
    const Key* k = find_key(key);
    if (!k) throw fail("unknown key `" + key + "`");
    if (p.entries.count(key)) throw fail("`" + key + "` given twice");
    if (value.empty()) throw fail("`" + key + "` has no value");
    if (comment.empty() && key != "name" && key != "isa")
      throw fail("`" + key + "` has no source: every value needs a `# source` comment");
    p.entries[key] = {std::string(value), std::string(comment), line_no};
    switch (k->kind) {
      case Kind::word:
        break;
      case Kind::isa:
        if (value != "rv64" && value != "x86") throw fail("isa must be rv64 or x86");
        break;
      case Kind::replacement:
        if (value != "random" && value != "lru") throw fail("`" + key + "` must be random or lru");
        break;
      case Kind::yes_no:
        if (value != "yes" && value != "no") throw fail("`" + key + "` must be yes or no");
        break;
      case Kind::number:
      case Kind::cycles: {
        uint64_t v = 0;
        if (k->kind == Kind::cycles && value.size() > 2 && value.substr(value.size() - 2) == "ns") {
          uint64_t ns = 0;
          if (!parse_u64(trim(value.substr(0, value.size() - 2)), ns) || ns > 1'000'000)
            throw fail("`" + key + "`: bad number of ns (at most 1000000)");
          const auto clock = numbers.find("clock_mhz");
          if (clock == numbers.end()) throw fail("`" + key + "` in ns needs clock_mhz first");
          // Core cycles, rounded to the nearest.
          v = (ns * clock->second + 500) / 1000;
        } else if (!parse_u64(value, v)) {
          const auto ref = numbers.find(std::string(value));
          if (ref == numbers.end())
            throw fail("`" + key + "`: `" + std::string(value) + "` is neither a number nor a key given above");
          if (k->kind == Kind::cycles && find_key(value)->kind != Kind::cycles)
            throw fail("`" + key + "` is a latency; `" + std::string(value) + "` is not");
          v = ref->second;
        }
        if (v > 0xffffffffu) throw fail("`" + key + "` is out of range");
        numbers[key] = v;
        break;
      }
    }
  }
  // fetch.block bounds what a CPU holds beyond its I-cache; only a
  // coherent I-cache needs it (a non-coherent one itself holds old code).
  const bool coherent_i = p.entries.count("l1i.coherent") && p.entries.at("l1i.coherent").value == "yes";
  if (!coherent_i && p.entries.count("fetch.block"))
    throw std::invalid_argument(std::string(origin) + ":" + std::to_string(p.entries.at("fetch.block").line) +
                                ": fetch.block is only used with l1i.coherent = yes");
  for (const Key& k : kKeys)
    if (!p.entries.count(k.name) && !(!coherent_i && std::string_view(k.name) == "fetch.block")) throw std::invalid_argument(std::string(origin) + ": missing key `" + k.name + "`");
  auto num = [&](const char* k) { return static_cast<uint32_t>(numbers.at(k)); };
  auto rep = [&](const char* k) {
    return p.entries.at(k).value == "lru" ? Replacement::lru : Replacement::random;
  };
  p.name = p.entries.at("name").value;
  p.isa = p.entries.at("isa").value;
  p.clock_mhz = num("clock_mhz");
  p.l1i = {num("l1i.size"), num("l1i.ways"), num("l1i.line"), rep("l1i.replacement")};
  p.l1i_latency = num("l1i.latency");
  p.l1i_coherent = coherent_i;
  p.fetch_block = coherent_i ? num("fetch.block") : 0;
  p.l1d = {num("l1d.size"), num("l1d.ways"), num("l1d.line"), rep("l1d.replacement")};
  p.l1d_latency = num("l1d.latency");
  p.l1d_latency_narrow = num("l1d.latency_narrow");
  p.l2 = {num("l2.size"), num("l2.ways"), num("l2.line"), rep("l2.replacement")};
  p.l2_shared_by = num("l2.shared_by");
  p.l2_inclusive = p.entries.at("l2.inclusive").value == "yes";
  p.l2_latency = num("l2.latency");
  p.memory_latency = num("memory.latency");
  p.transfer_same_l2 = num("transfer.same_l2");
  p.transfer_other_l2 = num("transfer.other_l2");
  p.upgrade_same_l2 = num("upgrade.same_l2");
  p.upgrade_other_l2 = num("upgrade.other_l2");
  p.store_buffer_entries = num("store_buffer.entries");
  if (p.store_buffer_entries == 0)
    throw std::invalid_argument(std::string(origin) + ": store_buffer.entries must be at least 1");
  // Bounds that keep the model sound (and a hostile file harmless).
  auto bad = [&](const std::string& what) { return std::invalid_argument(std::string(origin) + ": " + what); };
  if (p.clock_mhz == 0 || p.clock_mhz > 100'000) throw bad("clock_mhz must be between 1 and 100000");
  if (p.l2_shared_by > 64) throw bad("l2.shared_by must be 0 (all) or at most 64 CPUs");
  // Coherence effects on other CPUs are seen by the run-ahead bookkeeping
  // in 256-byte blocks (mem/ownership.hpp): a line may not span two.
  if (p.l1d.line_bytes > 256) throw bad("lines longer than 256 bytes are not modelled");
  if (coherent_i && (p.fetch_block == 0 || p.fetch_block > 4096 || (p.fetch_block & (p.fetch_block - 1))))
    throw bad("fetch.block must be a power of two between 1 and 4096 bytes");
  if (p.l1i.size_bytes > (64u << 20) || p.l1d.size_bytes > (64u << 20) || p.l2.size_bytes > (1u << 30))
    throw bad("a cache larger than the model allows (L1 64 MiB, L2 1 GiB)");
  // Hits change no state, so a CPU may run ahead over them: replacement
  // draws only on fills (pseudo-random). LRU would need every hit.
  if (p.l1i.replacement != Replacement::random || p.l1d.replacement != Replacement::random || p.l2.replacement != Replacement::random)
    throw bad("replacement must be random: LRU is not modelled (a hit changes no cache state)");
  for (uint32_t lat : {p.l1i_latency, p.l1d_latency, p.l1d_latency_narrow, p.l2_latency, p.memory_latency, p.transfer_same_l2,
                       p.transfer_other_l2, p.upgrade_same_l2, p.upgrade_other_l2})
    if (lat > 10'000) throw bad("a latency above 10000 cycles");
  if (p.l1d_latency > 64 || p.l1d_latency_narrow > 64 || p.l1d_latency_narrow < p.l1d_latency)
    throw bad("L1 latencies must be at most 64 cycles, the narrow one no less than the other");
  if (std::min({p.transfer_same_l2, p.transfer_other_l2, p.upgrade_same_l2, p.upgrade_other_l2}) < p.l1d_latency)
    throw bad("transfers and upgrades cannot be faster than an L1 hit");
  if (p.store_buffer_entries > 1024) throw bad("store_buffer.entries must be at most 1024");
  if (p.l1i.line_bytes != p.l2.line_bytes || p.l1d.line_bytes != p.l2.line_bytes)
    throw fail("l1i.line, l1d.line and l2.line differ: one line size for the whole hierarchy");
  if (p.l1i_latency == 0 || p.l1i_latency > p.l2_latency) throw fail("an I-cache hit must take 1 cycle or more, and no more than the L2");
  if (p.l1d_latency == 0 || p.l1d_latency > p.l2_latency || p.l2_latency > p.memory_latency)
    throw fail("latencies must grow from L1 to L2 to memory");
  // The geometry is checked by building a cache of each.
  try {
    Cache i(p.l1i), a(p.l1d), b(p.l2);
  } catch (const std::invalid_argument& e) {
    throw fail(e.what());
  }
  return p;
}

}  // namespace ksim
