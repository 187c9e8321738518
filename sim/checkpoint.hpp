// Checkpoints: the whole machine (RAM, every CPU, devices, the scheduler's
// slot, generator state, console, symbols) as bytes, in memory or in a file.
//
// Layout: "KSIMCKPT", u32 version, u64 payload size, payload, u64 FNV-1a of
// the payload. The payload starts with the machine configuration, then the
// caller's trace-hash state, then Machine::save_state(). A truncated,
// corrupted or foreign file is refused with a one-line InputError.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sim/machine.hpp"

namespace ksim {

inline constexpr uint32_t kCheckpointVersion = 7;  // 6: timing model v2 (profile, caches); 7: I-caches

// `trace_hash` is stored so a restored run can continue the same hash.
std::vector<uint8_t> save_checkpoint(const Machine& m, uint64_t trace_hash = 0);

struct CheckpointHeader {
  MachineConfig config;  // max_cycles is not part of a checkpoint: left default
  uint64_t trace_hash = 0;
};
// Validates the envelope (magic, version, size, hash) and reads the header.
CheckpointHeader read_checkpoint_header(std::span<const uint8_t> bytes);
// Restores into `m`, which must have been built with the header's config.
// Unless `trusted` (bytes this process saved itself), the checkpoint is
// first restored into a scratch machine, so a bad one is refused before `m`
// is touched.
void restore_checkpoint(Machine& m, std::span<const uint8_t> bytes, bool trusted = false);

void write_checkpoint_file(const std::string& path, const std::vector<uint8_t>& bytes);
std::vector<uint8_t> read_checkpoint_file(const std::string& path);

}  // namespace ksim
