#include "cpu/trap_hooks.hpp"

#include <algorithm>

namespace ksim {

int TrapHookChain::add(int priority, Hook hook) {
  int id = next_id_++;
  auto pos = std::upper_bound(hooks_.begin(), hooks_.end(), priority,
                              [](int p, const Entry& e) { return p < e.priority; });
  hooks_.insert(pos, Entry{priority, id, std::move(hook)});
  return id;
}

void TrapHookChain::remove(int id) {
  std::erase_if(hooks_, [id](const Entry& e) { return e.id == id; });
}

HookResult TrapHookChain::run(Cpu& cpu, const TrapInfo& trap) const {
  struct Depth {
    int& d;
    explicit Depth(int& x) : d(x) { ++d; }
    ~Depth() { --d; }
  } depth(depth_);
  for (const auto& e : hooks_) {
    HookResult r = e.hook(cpu, trap);
    if (r != HookResult::pass) return r;
  }
  return HookResult::pass;
}

}  // namespace ksim
