#include "kprobes/rethook.hpp"

#include "kprobes/engine.hpp"

namespace ksim::kprobes {

bool RethookPort::read(const Accessor& who, uint64_t offset, unsigned size, uint64_t& value) {
  if (size != 8) return false;
  if (offset == 0) return e_.rethook_return(who.cpu, value);
  if (offset == 8) return e_.optprobe_hit(who.cpu, value);  // memmap::kOptprobePort
  return false;
}

}  // namespace ksim::kprobes
