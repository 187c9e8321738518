#include "sim/checkpoint.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sys/stat.h>

namespace ksim {

namespace {

constexpr char kMagic[8] = {'K', 'S', 'I', 'M', 'C', 'K', 'P', 'T'};
constexpr size_t kEnvelope = 8 + 4 + 8 + 8;  // magic, version, size, hash
// Far above any real machine (128 MiB RAM by default): bounds what a
// corrupt size field can make us read.
constexpr uint64_t kMaxCheckpointBytes = 16ull << 30;

uint64_t fnv1a(std::span<const uint8_t> b) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint8_t c : b) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

void write_config(Writer& w, const MachineConfig& c) {
  w.u32(static_cast<uint32_t>(c.isa));
  w.u32(static_cast<uint32_t>(c.cpus));
  w.u64(c.ram_size);
  w.u64(c.quantum);
  w.u64(c.seed);
  w.u8(static_cast<uint8_t>(c.code_model));
  // Timing model v2: the profile itself, so a checkpoint of a machine made
  // from a profile file restores without the file.
  w.boolean(c.profile != nullptr);
  if (c.profile) w.str(c.profile->text);
  w.u8(static_cast<uint8_t>(c.memory_model));
}

MachineConfig read_config(Reader& r) {
  MachineConfig c;
  uint32_t isa = r.u32();
  if (isa > static_cast<uint32_t>(Isa::x86_64)) r.fail("unknown ISA");
  c.isa = static_cast<Isa>(isa);
  uint32_t cpus = r.u32();
  if (cpus < 1 || cpus > 64) r.fail("CPU count out of range");
  c.cpus = static_cast<int>(cpus);
  c.ram_size = r.u64();
  if (c.ram_size == 0 || c.ram_size % 4096 || c.ram_size > (8ull << 30)) r.fail("bad RAM size");
  c.quantum = r.u64();
  if (c.quantum == 0 || c.quantum > kMaxQuantum) r.fail("bad quantum");
  c.seed = r.u64();
  const uint8_t model = r.u8();
  if (model > static_cast<uint8_t>(CodeModel::strict)) r.fail("unknown code model");
  c.code_model = static_cast<CodeModel>(model);
  if (r.boolean()) {
    const std::string text = r.str();
    try {
      c.profile = std::make_shared<const MachineProfile>(parse_machine_profile(text, "checkpoint's machine profile"));
    } catch (const std::invalid_argument& e) {
      r.fail(e.what());
    }
  }
  const uint8_t mm = r.u8();
  if (mm > static_cast<uint8_t>(MemoryModel::rvwmo) || (mm != 0 && !c.profile)) r.fail("bad memory model");
  c.memory_model = static_cast<MemoryModel>(mm);
  return c;
}

// Checks the envelope and returns the payload.
std::span<const uint8_t> payload_of(std::span<const uint8_t> bytes) {
  if (bytes.size() < kEnvelope) throw InputError("checkpoint: truncated (" + std::to_string(bytes.size()) + " bytes)");
  if (std::memcmp(bytes.data(), kMagic, 8) != 0) throw InputError("checkpoint: not a ksim checkpoint (bad magic)");
  uint32_t version;
  uint64_t size, hash;
  std::memcpy(&version, bytes.data() + 8, 4);
  std::memcpy(&size, bytes.data() + 12, 8);
  if (version != kCheckpointVersion)
    throw InputError("checkpoint: version " + std::to_string(version) + " not supported (expected " +
                     std::to_string(kCheckpointVersion) + ")");
  if (size != bytes.size() - kEnvelope)
    throw InputError("checkpoint: truncated or padded (payload says " + std::to_string(size) + " bytes, file has " +
                     std::to_string(bytes.size() - kEnvelope) + ")");
  std::span<const uint8_t> payload = bytes.subspan(20, size);
  std::memcpy(&hash, bytes.data() + 20 + size, 8);
  if (fnv1a(payload) != hash) throw InputError("checkpoint: corrupted (checksum mismatch)");
  return payload;
}

}  // namespace

std::vector<uint8_t> save_checkpoint(const Machine& m, uint64_t trace_hash) {
  Writer p;
  write_config(p, m.config());
  p.u64(trace_hash);
  m.save_state(p);
  Writer out;
  out.raw(kMagic, 8);
  out.u32(kCheckpointVersion);
  out.u64(p.bytes().size());
  out.raw(p.bytes().data(), p.bytes().size());
  out.u64(fnv1a(p.bytes()));
  return std::move(out.bytes());
}

CheckpointHeader read_checkpoint_header(std::span<const uint8_t> bytes) {
  Reader r(payload_of(bytes));
  CheckpointHeader h;
  h.config = read_config(r);
  h.trace_hash = r.u64();
  return h;
}

void restore_checkpoint(Machine& m, std::span<const uint8_t> bytes, bool trusted) {
  if (!trusted) {
    Machine scratch(m.config());
    restore_checkpoint(scratch, bytes, true);
  }
  Reader r(payload_of(bytes));
  MachineConfig c = read_config(r);
  const MachineConfig& mc = m.config();
  if (c.isa != mc.isa || c.cpus != mc.cpus || c.ram_size != mc.ram_size || c.quantum != mc.quantum ||
      c.seed != mc.seed || c.code_model != mc.code_model || (c.profile != nullptr) != (mc.profile != nullptr) ||
      (c.profile && c.profile->text != mc.profile->text) || c.memory_model != mc.memory_model)
    throw InputError(
        "checkpoint: made for a different machine (ISA, CPUs, RAM, quantum, seed, code model or timing model differ)");
  r.u64();  // trace hash: read by the caller through read_checkpoint_header
  m.restore_state(r);
}

void write_checkpoint_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw InputError(path + ": cannot create checkpoint file: " + std::strerror(errno));
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw InputError(path + ": cannot write checkpoint file");
}

std::vector<uint8_t> read_checkpoint_file(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) throw InputError(path + ": cannot open: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw InputError(path + ": not a regular file");
  if (static_cast<uint64_t>(st.st_size) > kMaxCheckpointBytes) throw InputError(path + ": too large for a checkpoint");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InputError(path + ": cannot open: " + std::strerror(errno));
  std::vector<uint8_t> bytes(static_cast<size_t>(st.st_size));
  f.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (static_cast<size_t>(f.gcount()) != bytes.size()) throw InputError(path + ": cannot read");
  return bytes;
}

}  // namespace ksim
