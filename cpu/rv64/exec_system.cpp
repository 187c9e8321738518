// Semantics of Zicsr, Zifencei and the privileged instructions, plus the
// interpreter's own entries (decode-on-first-use, fetch faults, illegal).
#include "cpu/rv64/hart.hpp"
#include "cpu/rv64/semantics.hpp"

namespace ksim::rv64 {

// FENCE waits for the hart's buffered stores (timing v2 under tso or
// rvwmo): every fence is treated as ordering stores before what follows,
// which is at least as strong as each of its forms.
void exec_fence(Hart& h, const Insn& i) {
  if (!h.stores_visible()) return;  // runs again once they are
  h.retire(i);
}
// The shared decode cache is coherent with every store already (see
// decode_cache.hpp); what FENCE.I does is end this hart's stale view under
// the relaxed code model (docs/CODE_MODEL.md): the instructions after it
// see every store made before it.
void exec_fence_i(Hart& h, const Insn& i) {
  // Timing v2 flushes the hart's I-cache: its own state, which a hart
  // running ahead could not take back. A sync point there.
  if (h.memory_system() && h.ahead()) {
    h.sync_stop();
    return;
  }
  if (!h.stores_visible()) return;
  h.retire(i);
  h.serialize_code();
}

void exec_ecall(Hart& h, const Insn&) { h.raise(h.s.priv == Priv::U ? kEcallU : kEcallM, 0); }
void exec_ebreak(Hart& h, const Insn&) { h.raise(kBreakpoint, h.s.pc); }
void exec_mret(Hart& h, const Insn& i) { h.do_mret(i); }
void exec_wfi(Hart& h, const Insn& i) { h.do_wfi(i); }

// CSR instructions: a read happens unless CSRRW(I) targets x0; a write
// happens unless CSRRS/CSRRC(I) have a zero source register/immediate.
namespace {
enum class CsrOp { write, set, clear };
template <CsrOp kOp, bool kImm>
inline void csr_op(Hart& h, const Insn& i) {
  const uint32_t num = static_cast<uint32_t>(i.imm);
  const uint64_t src = kImm ? i.rs1 : h.s.x[i.rs1];
  const bool do_read = kOp != CsrOp::write || i.rd != 0;
  const bool do_write = kOp == CsrOp::write || i.rs1 != 0;
  uint64_t old = 0;
  if (do_read && !h.csr_read(num, old, i)) return;
  if (do_write) {
    uint64_t nv = kOp == CsrOp::write ? src : kOp == CsrOp::set ? (old | src) : (old & ~src);
    if (!h.csr_write(num, nv, i)) return;
  }
  h.s.x[i.rdw] = old;
  h.retire(i);
}
}  // namespace

void exec_csrrw(Hart& h, const Insn& i) { csr_op<CsrOp::write, false>(h, i); }
void exec_csrrs(Hart& h, const Insn& i) { csr_op<CsrOp::set, false>(h, i); }
void exec_csrrc(Hart& h, const Insn& i) { csr_op<CsrOp::clear, false>(h, i); }
void exec_csrrwi(Hart& h, const Insn& i) { csr_op<CsrOp::write, true>(h, i); }
void exec_csrrsi(Hart& h, const Insn& i) { csr_op<CsrOp::set, true>(h, i); }
void exec_csrrci(Hart& h, const Insn& i) { csr_op<CsrOp::clear, true>(h, i); }

// mtval holds the instruction bits (16 or 32) for illegal instructions.
void exec_illegal(Hart& h, const Insn& i) { h.raise(kIllegalInsn, i.raw); }

void exec_fetch_fault(Hart& h, const Insn& i) {
  // imm = 2 marks a 32-bit instruction whose second half is outside RAM.
  h.raise(kInsnAccessFault, h.s.pc + static_cast<uint64_t>(i.imm));
}

Next fast_go_precise(Hart& h, const Insn* i, ChainClock t) { return go_precise(h, i, t); }

// A fetch that is a sync point for a hart running ahead (Hart::fetch_slow)
// has stopped the hart already: nothing runs.
void exec_sync_point(Hart&, const Insn&) {}

// Decode-on-first-use. The cache owns the entry, so it is filled in place.
void exec_decode(Hart& h, const Insn& i) {
  Insn& slot = const_cast<Insn&>(i);
  h.decode_into(slot, h.s.pc);
  if (h.sync_stopped()) return;  // a sync point for a hart running ahead
  h.exec_copy(slot);
}
Next fast_decode(Hart& h, const Insn* i, ChainClock t) {
  // Under exact SMP, decoding may put back a hart that ran ahead, which
  // needs this hart's exact clock: the precise path has it.
  if (h.owners().enabled()) return go_precise(h, i, t);
  Insn& slot = const_cast<Insn&>(*i);
  h.decode_into(slot, h.pc_of(i));
  return slot.fast(h, i, t);
}

// The guard entries after a page's last halfword: execution ran off the
// end of the page. Nothing to execute; the loop refetches from s.pc, which
// it has set to the first address of the next page.
void exec_page_end(Hart&, const Insn&) {}

}  // namespace ksim::rv64
