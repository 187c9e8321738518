// Trap-loop detection, the same for every core: an exception taken this
// many times in a row with no instruction retired in between means the
// guest's trap vector itself faults (or is missing), so the run stops as a
// guest crash instead of spinning forever. Interrupts do not count: a
// storm of them is the guest's business and always makes progress.
#pragma once
#include <cstdint>

namespace ksim {

inline constexpr int kMaxNestedTraps = 8;

// Notes an exception taken with `instret` instructions retired so far;
// true when it completes a trap loop. `last_instret` and `nested` are the
// core's (checkpointed) detector state.
inline bool note_exception(uint64_t instret, uint64_t& last_instret, int32_t& nested) {
  nested = instret == last_instret ? nested + 1 : 0;
  last_instret = instret;
  return nested >= kMaxNestedTraps;
}

}  // namespace ksim
