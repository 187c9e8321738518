#include "kprobes/slots.hpp"

namespace ksim::kprobes {

void SlotAllocator::init(uint64_t begin, uint64_t end, unsigned slot_size) {
  begin_ = begin;
  slot_size_ = slot_size;
  count_ = end > begin ? static_cast<unsigned>((end - begin) / slot_size) : 0;
  used_.assign(count_, false);
  garbage_.clear();
  in_use_ = 0;
  next_ = 0;
}

uint64_t SlotAllocator::alloc(const std::vector<CtlBlk>& cpus) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    for (unsigned i = next_; i < count_; ++i) {
      if (!used_[i]) {
        used_[i] = true;
        ++in_use_;
        next_ = i + 1;
        return begin_ + uint64_t{i} * slot_size_;
      }
    }
    collect(cpus);
  }
  return 0;
}

bool SlotAllocator::collectable(size_t gi, const std::vector<CtlBlk>& cpus) const {
  for (auto [cpu, seq] : garbage_[gi].waiting) {
    const CtlBlk& cb = cpus[cpu];
    if (cb.busy && cb.busy_seq == seq) return false;  // still in that spell
  }
  return true;
}

std::vector<uint64_t> SlotAllocator::collect(const std::vector<CtlBlk>& cpus) {
  std::vector<uint64_t> freed;
  std::vector<Garbage> keep;
  for (size_t i = 0; i < garbage_.size(); ++i) {
    if (collectable(i, cpus)) {
      unsigned idx = static_cast<unsigned>((garbage_[i].slot - begin_) / slot_size_);
      used_[idx] = false;
      --in_use_;
      if (idx < next_) next_ = idx;
      freed.push_back(garbage_[i].slot);
    } else {
      keep.push_back(std::move(garbage_[i]));
    }
  }
  garbage_ = std::move(keep);
  return freed;
}

void SlotAllocator::release(uint64_t slot) {
  const unsigned idx = static_cast<unsigned>((slot - begin_) / slot_size_);
  if (idx >= count_ || !used_[idx]) return;
  used_[idx] = false;
  --in_use_;
  if (idx < next_) next_ = idx;
}

void SlotAllocator::free(uint64_t slot, const std::vector<CtlBlk>& cpus) {
  Garbage g{slot, {}};
  for (size_t c = 0; c < cpus.size(); ++c)
    if (cpus[c].busy) g.waiting.push_back({static_cast<int>(c), cpus[c].busy_seq});
  garbage_.push_back(std::move(g));
}

}  // namespace ksim::kprobes
