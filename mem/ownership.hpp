// Which CPU may touch which RAM page without waiting for the others: the
// bookkeeping that lets exact SMP run a CPU ahead of the rest
// (docs/SCHEDULING.md, "Running ahead").
//
// RAM is divided in 256-byte blocks (small enough that CPUs' private data
// rarely shares one: per-CPU areas, stacks, task structures). Every block
// has an owner byte: unowned, one CPU, "read-shared" (read by several
// CPUs, written by none since) or "shared". A CPU running ahead of the
// exact schedule may load from blocks it owns or that are read-shared and
// store to blocks it owns; anything else is a sync point, where it stops
// before the instruction until it is the CPU furthest behind. The CPU that
// runs in exact order may touch anything; when it touches a block another
// CPU owns, the block changes state, and if that CPU runs ahead and may
// have touched the block meanwhile, it is first put back to the exact
// point (Resolver).
//
// The cores check per-CPU grant tables on their fast paths (one load and
// compare per access):
//  - read[block] >= gen allows a load. kReadAlways marks a block the CPU
//    owns or that is read-shared (good until the block changes state); a
//    grant of exactly `gen` is one made in exact order on a shared block,
//    good until the CPU next runs ahead.
//  - write[block] >= gen allows a store. Two tables: one for running ahead
//    (and replaying), whose grants are exactly `gen`: the generation moves
//    on each time the CPU starts running ahead, so the first store to each
//    block ahead takes the slow path (access()), which copies the block so
//    the run can be undone; and one for exact order, where a block the CPU
//    owns is granted for good (kWriteAlways, until the block changes
//    state) and a shared one until the CPU next runs ahead (`gen`). Without
//    the second, every run-ahead would cost the CPU a slow path per block
//    it stores into in exact order afterwards.
// Generation 0 means "off": every access is granted (tables of zeros).
#pragma once
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "mem/bus.hpp"

namespace ksim {

// How a core's memory accesses are checked.
enum class AccessMode : uint8_t {
  exact,   // the CPU runs in exact order: everything allowed
  ahead,   // running ahead: stop at sync points, copy blocks before storing
  replay,  // re-running part of an undone run-ahead: like ahead, no copies
};

// Puts a CPU that ran ahead back to the exact point where another CPU is
// about to observe it: (cycle, cpu) is the observer's position.
class Resolver {
 public:
  virtual ~Resolver() = default;
  virtual void resolve(int ahead_cpu, uint64_t cycle, int cpu) = 0;
};

class PageOwners {
 public:
  static constexpr uint8_t kUnowned = 0xff, kShared = 0xfe, kReadShared = 0xfd;
  static constexpr unsigned kBlockShift = 8;  // 256-byte blocks
  static constexpr uint64_t kBlockSize = uint64_t{1} << kBlockShift;
  static constexpr unsigned kBlocksPerPage = 1u << (kPageShift - kBlockShift);
  static constexpr uint16_t kReadAlways = 0xffff;
  static constexpr uint16_t kWriteAlways = 0xffff;  // exact order only
  // A shared block stops being a sync point when its use changes
  // (take_back): after this many slow-path accesses in a row by one CPU in
  // exact order it is that CPU's again (memory one CPU initialised and
  // another uses: the kernel's .bss, zeroed by CPU 0), and after this many
  // loads with no store in between it is read-shared again (data written
  // at boot and read ever after). A block that changes hands may cost a
  // put-back, so one that keeps changing hands (a lock, a counter) stays
  // shared after kMaxFlips. They choose only how often CPUs stop and are
  // put back; no result depends on them (the reference-schedule tests).
  static constexpr uint8_t kTakeBackStreak = 16;
  static constexpr uint8_t kQuietLoads = 16;
  static constexpr uint8_t kMaxFlips = 16;

  PageOwners(Bus& bus, int cpus);

  // Off (one CPU, inexact schedules): every access is granted for ever.
  void enable(Resolver* r);
  bool enabled() const { return resolver_ != nullptr; }

  struct Grants {
    const uint16_t* read;  // per block
    const uint16_t* write;
    uint16_t gen;
  };
  // The tables a CPU's accesses in `mode` are checked against.
  Grants grants(int cpu, AccessMode mode) const {
    const PerCpu& c = cpus_[static_cast<size_t>(cpu)];
    return {c.read.get(), mode == AccessMode::exact ? c.xwrite.get() : c.write.get(), c.gen};
  }

  // The slow path of a RAM access of `cpu` at `cycle` to [addr, addr+size)
  // (inside RAM) whose grant did not allow it. Returns false when the CPU
  // runs ahead and must stop before the instruction (a sync point).
  bool access(int cpu, uint64_t cycle, uint64_t addr, unsigned size, bool write, AccessMode mode);
  // A store into a page with listeners (decoded code, tohost, an LR
  // reservation): a sync point ahead; in exact order, every CPU that runs
  // ahead is put back first when the store changes code (it may have
  // fetched it) or may end the run.
  bool flagged_store(int cpu, uint64_t cycle, AccessMode mode, uint8_t flags);
  // Before `cpu` decodes an instruction at `addr`: another CPU that runs
  // ahead and stored into that page is put back (in exact order), or the
  // decode is a sync point (false: `cpu` runs ahead too).
  bool before_decode(int cpu, uint64_t cycle, uint64_t addr, AccessMode mode);
  // Before the page holding `addr` gains a flag that makes stores into it
  // sync points ahead (kPageHasCode: a CPU fetches from it for the first
  // time; kPageReserved: an LR reserves a granule in it). A CPU ahead that
  // stored into the page decided those stores were no sync point; a replay
  // after the flag would decide otherwise and stop short. So in exact order
  // those CPUs are put back first (true). Ahead the flag always waits for
  // exact order (false: a sync point): a CPU in exact order at an earlier
  // cycle may still store into the page, which must not find it flagged yet.
  bool before_flag(int cpu, uint64_t cycle, uint64_t addr, AccessMode mode);
  // Before the host reads or writes [addr, addr+len) on behalf of the CPU
  // at (cycle, cpu): CPUs ahead that stored into (write: or touched) those
  // pages, and for a write into decoded code all CPUs ahead, are put back.
  void before_host_access(int cpu, uint64_t cycle, uint64_t addr, uint64_t len, bool write);

  // Run-ahead bookkeeping of one CPU.
  void begin_ahead(int cpu);  // a new generation; undo log emptied
  void commit(int cpu);       // its run-ahead is final
  void undo(int cpu);         // blocks it stored into are restored
  bool ahead(int cpu) const { return cpus_[static_cast<size_t>(cpu)].ahead; }
  // Whether `cpu` runs ahead and may have loaded from or stored into the
  // block holding `addr` since it began: ahead it may touch only blocks it
  // owns or that are read-shared, and blocks it has stored into.
  bool touched_ahead(int cpu, uint64_t addr) const {
    const PerCpu& c = cpus_[static_cast<size_t>(cpu)];
    return c.ahead && c.touched(block_of(addr));
  }
  uint8_t owner(uint64_t addr) const { return owner_[block_of(addr)]; }
  // Blocks copied since the CPU's run-ahead began (for tests and stats).
  size_t undo_blocks(int cpu) const { return cpus_[static_cast<size_t>(cpu)].undo_blocks.size(); }

  // A store buffered by `storer` becomes visible at `cycle` (the machine
  // writes it before any CPU's step there): the other CPUs ahead that
  // touched its blocks (any, for a code page) are put back first, to
  // their steps before `cycle`, which did not see it.
  void before_visible(int storer, uint64_t cycle, uint64_t addr, uint64_t len);
  void resolve_all(int cpu, uint64_t cycle) { resolve_mask(cpu, cycle, ~uint64_t{0}); }
  // Puts back the CPUs of `mask` (bit i: CPU i) that run ahead.
  void resolve_mask(int cpu, uint64_t cycle, uint64_t mask);

 private:
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  struct PerCpu {
    std::unique_ptr<uint16_t[], Free> read, write;  // per block
    std::unique_ptr<uint16_t[], Free> xwrite;       // store grants in exact order
    uint16_t gen = 0;
    bool ahead = false;
    std::vector<uint32_t> undo_blocks;
    std::unique_ptr<uint8_t[]> undo_bytes;  // undo_blocks.size() blocks, then spare room
    size_t undo_room = 0;                   // blocks undo_bytes can hold
    bool wrote(uint64_t b) const { return write[b] == gen; }
    bool touched(uint64_t b) const { return read[b] == kReadAlways || wrote(b); }
  };
  uint64_t block_of(uint64_t addr) const { return (addr - ram_.base()) >> kBlockShift; }
  bool block_access(int cpu, uint64_t cycle, uint64_t block, bool write, AccessMode mode);
  void grant_write(PerCpu& c, uint64_t block, bool copy);
  // A shared block becomes `me`'s or read-shared again when its use shows
  // it is no longer shared; true if it did (and the access is granted).
  bool take_back(PerCpu& c, uint8_t me, uint64_t block, bool write);
  // Every CPU's store grants on `block` (both tables) go, and with
  // `loads_too` its load grants: the block changed state.
  void revoke(uint64_t block, bool loads_too);
  // Puts back the CPUs ahead that touched (or stored into) blocks [lo, hi].
  void resolve_touching(int cpu, uint64_t cycle, uint64_t lo, uint64_t hi, bool written_only);

  Bus& bus_;
  Ram& ram_;
  uint64_t blocks_;
  bool dirty_ = false;  // tables hold grants (they are all zero otherwise)
  std::vector<uint8_t> owner_;
  // Per block, for giving a shared block back (take_back): the CPU that
  // last met it on a slow path in exact order and how many times in a row,
  // the loads since its last store, and how often it changed hands.
  std::vector<uint8_t> last_, streak_, quiet_, flips_;
  std::vector<PerCpu> cpus_;
  Resolver* resolver_ = nullptr;
};

// A CPU's copy of its grants (PageOwners::grants) and how its accesses are
// checked: what both cores consult on every load and store.
struct CpuGrants {
  const uint16_t* read = nullptr;  // per block
  const uint16_t* write = nullptr;
  uint16_t gen = 0;
  AccessMode mode = AccessMode::exact;

  void load(const PageOwners& o, int cpu) {
    const PageOwners::Grants g = o.grants(cpu, mode);
    read = g.read;
    write = g.write;
    gen = g.gen;
  }
  // Generation 0: run-ahead is off and everything is granted, which a
  // well-predicted branch says faster than the tables (one CPU). One table
  // load otherwise; an access that straddles two blocks takes the slow path.
  bool may_read(uint64_t off, unsigned size) const {
    return gen == 0 || (read[off >> PageOwners::kBlockShift] >= gen && within_block(off, size));
  }
  bool may_write(uint64_t off, unsigned size) const {
    // (The run-ahead table holds nothing above `gen`: `>=` is `==` there.)
    return gen == 0 || (write[off >> PageOwners::kBlockShift] >= gen && within_block(off, size));
  }
  static bool within_block(uint64_t off, unsigned size) {
    return (off & (PageOwners::kBlockSize - 1)) <= PageOwners::kBlockSize - size;
  }
};

}  // namespace ksim
