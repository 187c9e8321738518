// Which CPU may touch which RAM page without waiting for the others: the
// bookkeeping that lets exact SMP run a CPU ahead of the rest
// (docs/SCHEDULING.md, "Running ahead").
//
// Every RAM page has an owner byte: unowned, one CPU, "read-shared" (read
// by several CPUs, written by none since) or "shared". A CPU running ahead
// of the exact schedule may load from pages it owns or that are
// read-shared and store to pages it owns; anything else is a sync point,
// where it stops before the instruction until it is the CPU furthest
// behind. The CPU that runs in exact order may touch anything; when it
// touches a page another CPU owns, the page changes state, and if that CPU
// ran ahead and touched the page meanwhile, it is first put back to the
// exact point (Resolver).
//
// The cores check a per-CPU grant table on their fast paths (one load and
// compare per access): grant[page] >= read_min allows a load, == write_tag
// a store. Grants are stamped with a per-CPU generation that moves on each
// time the CPU starts running ahead, so the first access to each page in a
// run-ahead takes the slow path (access()), which also copies a page
// before the first store so the run can be undone, and so "granted in this
// generation" means "touched since the run-ahead began".
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "mem/bus.hpp"

namespace ksim {

// How a core's memory accesses are checked.
enum class AccessMode : uint8_t {
  exact,   // the CPU runs in exact order: everything allowed
  ahead,   // running ahead: stop at sync points, copy pages before storing
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

  PageOwners(Bus& bus, int cpus);

  // Off (one CPU, inexact schedules): every access is granted for ever.
  void enable(Resolver* r);
  bool enabled() const { return resolver_ != nullptr; }

  struct Grants {
    const uint32_t* tag;
    uint32_t read_min, write_tag;
  };
  Grants grants(int cpu) const {
    const PerCpu& c = cpus_[static_cast<size_t>(cpu)];
    return {c.tag.get(), c.read_min(), c.write_tag()};
  }

  // The slow path of a RAM access of `cpu` at `cycle` to [addr, addr+size)
  // (inside RAM) whose grant did not allow it. Returns false when the CPU
  // runs ahead and must stop before the instruction (a sync point).
  bool access(int cpu, uint64_t cycle, uint64_t addr, unsigned size, bool write, AccessMode mode);
  // A store into a page with listeners (decoded code, tohost, an LR
  // reservation): a sync point ahead; in exact order, every CPU that ran
  // ahead is put back first (it may have fetched the code).
  bool flagged_store(int cpu, uint64_t cycle, AccessMode mode, uint8_t flags);
  // Before `cpu` decodes an instruction at `addr`: another CPU that runs
  // ahead and stored into that page is put back (in exact order), or the
  // decode is a sync point (false: `cpu` runs ahead too).
  bool before_decode(int cpu, uint64_t cycle, uint64_t addr, AccessMode mode);
  // Before the host reads or writes [addr, addr+len) on behalf of the CPU
  // at (cycle, cpu): CPUs ahead that stored into (write: or touched) those
  // pages, and for a write into decoded code all CPUs ahead, are put back.
  void before_host_access(int cpu, uint64_t cycle, uint64_t addr, uint64_t len, bool write);

  // Run-ahead bookkeeping of one CPU.
  void begin_ahead(int cpu);      // a new generation; undo log emptied
  void commit(int cpu);           // its run-ahead is final
  void undo(int cpu);             // pages it stored into are restored
  bool ahead(int cpu) const { return cpus_[static_cast<size_t>(cpu)].ahead; }
  uint8_t owner(uint64_t addr) const { return owner_[page_of(addr)]; }
  // Pages copied since the CPU's run-ahead began (for tests and stats).
  size_t undo_pages(int cpu) const { return cpus_[static_cast<size_t>(cpu)].undo_pages.size(); }

  // Puts back every CPU that runs ahead and touched `page`
  // (written_only: stored into it) to (cycle, cpu).
  void resolve_touching(int cpu, uint64_t cycle, uint64_t page, bool written_only);
  void resolve_all(int cpu, uint64_t cycle);

 private:
  struct PerCpu {
    std::unique_ptr<uint32_t[]> tag;
    uint32_t gen = 1;  // grants of this generation: 2*gen (read), 2*gen+1 (write)
    bool ahead = false;
    std::vector<uint32_t> undo_pages;
    std::vector<uint8_t> undo_bytes;
    uint32_t read_min() const { return 2 * gen; }
    uint32_t write_tag() const { return 2 * gen + 1; }
    bool touched(uint64_t page) const { return tag[page] >= read_min(); }
    bool wrote(uint64_t page) const { return tag[page] == write_tag(); }
  };
  uint64_t page_of(uint64_t addr) const { return (addr - ram_.base()) >> kPageShift; }
  bool page_access(int cpu, uint64_t cycle, uint64_t page, bool write, AccessMode mode);
  void save_page(PerCpu& c, uint64_t page);

  Bus& bus_;
  Ram& ram_;
  uint64_t pages_;
  std::vector<uint8_t> owner_;
  std::vector<PerCpu> cpus_;
  Resolver* resolver_ = nullptr;
};

}  // namespace ksim
