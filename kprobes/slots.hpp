// Instruction slots: fixed-size cells in the guest kernel's `.kprobe_slots`
// area that hold the copies of probed instructions (Linux's
// kprobe_insn_slots). A freed slot is not reused while any CPU may still be
// executing in it: like Linux's dirty slots that wait for a grace period
// (synchronize_rcu), a freed slot goes on a garbage list together with the
// CPUs that were inside the engine when it was freed, and becomes free again
// only once each of them has left the engine since.
#pragma once
#include <cstdint>
#include <vector>

#include "kprobes/ctlblk.hpp"

namespace ksim::kprobes {

class SlotAllocator {
 public:
  // Slots of `slot_size` bytes in [begin, end).
  void init(uint64_t begin, uint64_t end, unsigned slot_size);
  bool ready() const { return slot_size_ != 0; }
  // A free slot's address, collecting garbage first if none is free;
  // 0 when every slot is in use or waiting for a grace period.
  uint64_t alloc(const std::vector<CtlBlk>& cpus);
  void free(uint64_t slot, const std::vector<CtlBlk>& cpus);
  // Free at once (a grace period has already passed since it was unused).
  void release(uint64_t slot);
  // Frees every garbage slot whose grace period is over; returns them (the
  // engine refills them with breakpoints).
  std::vector<uint64_t> collect(const std::vector<CtlBlk>& cpus);
  unsigned in_use() const { return in_use_; }
  unsigned garbage() const { return static_cast<unsigned>(garbage_.size()); }
  unsigned capacity() const { return count_; }
  // Whether `slot` may be reused now (no CPU that was busy when it was
  // freed is still in that busy spell). For tests and the debugger.
  bool collectable(size_t garbage_index, const std::vector<CtlBlk>& cpus) const;

 private:
  struct Garbage {
    uint64_t slot;
    std::vector<std::pair<int, uint64_t>> waiting;  // (cpu, busy_seq) busy at free time
  };

  uint64_t begin_ = 0;
  unsigned slot_size_ = 0, count_ = 0, in_use_ = 0;
  std::vector<bool> used_;
  std::vector<Garbage> garbage_;
  unsigned next_ = 0;  // lowest index that may be free
};

}  // namespace ksim::kprobes
