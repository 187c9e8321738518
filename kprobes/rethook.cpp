#include "kprobes/rethook.hpp"

#include "kprobes/engine.hpp"

namespace ksim::kprobes {

bool RethookPort::read(const Accessor& who, uint64_t offset, unsigned size, uint64_t& value) {
  if (offset != 0 || size != 8) return false;
  return e_.rethook_return(who.cpu, value);
}

}  // namespace ksim::kprobes
