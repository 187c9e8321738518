// Semantics of the A extension (Unprivileged ISA, chapter 8). Atomics must
// be naturally aligned and target RAM; every access is sequentially
// consistent here, so the aq/rl bits need no extra work.
#include <algorithm>

#include "cpu/rv64/hart.hpp"
#include "cpu/rv64/semantics.hpp"

namespace ksim::rv64 {

namespace {

template <typename T>
inline uint64_t widen(T v) {  // W results are sign-extended to 64 bits
  return static_cast<uint64_t>(static_cast<int64_t>(static_cast<std::make_signed_t<T>>(v)));
}

template <typename T>
inline void lr(Hart& h, const Insn& i) {
  uint64_t addr = h.s.x[i.rs1];
  if (!h.amo_check(addr, sizeof(T), true)) return;
  T v;
  std::memcpy(&v, h.ram_ptr(addr), sizeof(T));
  h.reservations().set(h.id(), addr);
  h.s.x[i.rdw] = widen(v);
  h.retire(i);
}

template <typename T>
inline void sc(Hart& h, const Insn& i) {
  const uint8_t len = i.len, cycles = i.cycles, rdw = i.rdw;
  uint64_t addr = h.s.x[i.rs1];
  if (!h.amo_check(addr, sizeof(T), false)) return;
  uint64_t result = 1;  // failure code: the spec reserves other non-zero codes
  if (h.reservations().take(h.id(), addr)) {
    T v = static_cast<T>(h.s.x[i.rs2]);
    std::memcpy(h.ram_ptr(addr), &v, sizeof(T));
    h.note_atomic_store(addr, sizeof(T));
    result = 0;
  }
  h.s.x[rdw] = result;
  h.s.pc += len;
  h.s.cycle += cycles;
  ++h.s.instret;
}

template <typename T, typename F>
inline void amo(Hart& h, const Insn& i, F op) {
  const uint8_t len = i.len, cycles = i.cycles, rdw = i.rdw;
  uint64_t addr = h.s.x[i.rs1];
  if (!h.amo_check(addr, sizeof(T), false)) return;
  T old;
  std::memcpy(&old, h.ram_ptr(addr), sizeof(T));
  T v = op(old, static_cast<T>(h.s.x[i.rs2]));
  std::memcpy(h.ram_ptr(addr), &v, sizeof(T));
  h.note_atomic_store(addr, sizeof(T));
  h.s.x[rdw] = widen(old);
  h.s.pc += len;
  h.s.cycle += cycles;
  ++h.s.instret;
}

template <typename T>
using S = std::make_signed_t<T>;

template <typename T> T op_swap(T, T b) { return b; }
template <typename T> T op_add(T a, T b) { return static_cast<T>(a + b); }
template <typename T> T op_xor(T a, T b) { return a ^ b; }
template <typename T> T op_and(T a, T b) { return a & b; }
template <typename T> T op_or(T a, T b) { return a | b; }
template <typename T> T op_min(T a, T b) { return static_cast<S<T>>(a) < static_cast<S<T>>(b) ? a : b; }
template <typename T> T op_max(T a, T b) { return static_cast<S<T>>(a) > static_cast<S<T>>(b) ? a : b; }
template <typename T> T op_minu(T a, T b) { return std::min(a, b); }
template <typename T> T op_maxu(T a, T b) { return std::max(a, b); }

}  // namespace

void exec_lr_w(Hart& h, const Insn& i) { lr<uint32_t>(h, i); }
void exec_lr_d(Hart& h, const Insn& i) { lr<uint64_t>(h, i); }
void exec_sc_w(Hart& h, const Insn& i) { sc<uint32_t>(h, i); }
void exec_sc_d(Hart& h, const Insn& i) { sc<uint64_t>(h, i); }

#define AMO_PAIR(name)                                                                  \
  void exec_amo##name##_w(Hart& h, const Insn& i) { amo<uint32_t>(h, i, op_##name<uint32_t>); } \
  void exec_amo##name##_d(Hart& h, const Insn& i) { amo<uint64_t>(h, i, op_##name<uint64_t>); }
AMO_PAIR(swap)
AMO_PAIR(add)
AMO_PAIR(xor)
AMO_PAIR(and)
AMO_PAIR(or)
AMO_PAIR(min)
AMO_PAIR(max)
AMO_PAIR(minu)
AMO_PAIR(maxu)
#undef AMO_PAIR

}  // namespace ksim::rv64
