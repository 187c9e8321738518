// Control and status registers of the M/U-mode hart (Privileged spec 1.12).
//
// Modelled: the machine CSRs listed in csr_numbers.hpp. Read-only zero (WARL
// with no writable bits): mvendorid, marchid, mimpid, mconfigptr, medeleg
// and mideleg (no S-mode to delegate to), menvcfg, mcountinhibit (counters
// always count), mhpmcounter3-31 and mhpmevent3-31, tselect/tdata1-3 (no
// trigger implemented). Not implemented, so an access raises illegal
// instruction: everything of S-mode (satp, sstatus, ...), the PMP CSRs (no
// PMP entries), floating-point CSRs, and any unknown number.
#include "cpu/rv64/hart.hpp"

namespace ksim::rv64 {

namespace {

// misa: MXL = 2 (64-bit), extensions A, C, I, M and U-mode.
constexpr uint64_t kMisa = (2ull << 62) | (1u << 0) | (1u << 2) | (1u << 8) | (1u << 12) | (1u << 20);

// mstatus bits software may write: MIE, MPIE, MPP, MPRV, TW. UXL reads 2.
constexpr uint64_t kMstatusWritable = kMstatusWritableMask;
constexpr uint64_t kMieWritable = kMSIP | kMTIP | kMEIP;
constexpr uint64_t kMcounterenWritable = 0x7;  // CY, TM, IR

bool in(uint32_t n, uint32_t lo, uint32_t hi) { return n >= lo && n <= hi; }

// Unprivileged counter shadows (cycle, time, instret, hpmcounterN) are
// readable from U-mode only when the matching mcounteren bit is set.
bool counter_allowed(const State& s, uint32_t num) {
  if (s.priv == Priv::M) return true;
  return (s.mcounteren >> (num - csr::cycle)) & 1;
}

}  // namespace

bool Hart::csr_read(uint32_t num, uint64_t& v, const Insn& i) {
  // Bits 9:8 of the number give the lowest privilege that may access it.
  if (((num >> 8) & 3) > static_cast<uint32_t>(s.priv)) {
    raise(kIllegalInsn, i.raw);
    return false;
  }
  switch (num) {
    case csr::mstatus: v = s.mstatus; return true;
    case csr::misa: v = kMisa; return true;
    case csr::mie: v = s.mie; return true;
    case csr::mip: v = mip(); return true;
    case csr::mtvec: v = s.mtvec; return true;
    case csr::mscratch: v = s.mscratch; return true;
    case csr::mepc: v = s.mepc; return true;
    case csr::mcause: v = s.mcause; return true;
    case csr::mtval: v = s.mtval; return true;
    case csr::mcounteren: v = s.mcounteren; return true;
    case csr::mhartid: v = static_cast<uint64_t>(id_); return true;
    case csr::mcycle: v = s.cycle - s.mcycle_base; return true;
    case csr::minstret: v = s.instret - s.minstret_base; return true;
    case csr::mvendorid: case csr::marchid: case csr::mimpid: case csr::mconfigptr:
    case csr::medeleg: case csr::mideleg: case csr::menvcfg: case csr::mcountinhibit:
    case csr::tselect: case csr::tdata1: case csr::tdata2: case csr::tdata3:
      v = 0;
      return true;
    default: break;
  }
  if (in(num, csr::mhpmcounter3, csr::mhpmcounter31) || in(num, csr::mhpmevent3, csr::mhpmevent31)) {
    v = 0;
    return true;
  }
  if (in(num, csr::cycle, csr::hpmcounter31)) {
    if (!counter_allowed(s, num)) {
      raise(kIllegalInsn, i.raw);
      return false;
    }
    switch (num) {
      case csr::cycle: v = s.cycle - s.mcycle_base; break;
      case csr::time: v = clint_.mtime_at(s.cycle); break;
      case csr::instret: v = s.instret - s.minstret_base; break;
      default: v = 0; break;
    }
    return true;
  }
  raise(kIllegalInsn, i.raw);
  return false;
}

bool Hart::csr_write(uint32_t num, uint64_t v, const Insn& i) {
  // Bits 11:10 == 3 mark read-only CSRs; privilege as for reads.
  if (((num >> 10) & 3) == 3 || ((num >> 8) & 3) > static_cast<uint32_t>(s.priv)) {
    raise(kIllegalInsn, i.raw);
    return false;
  }
  switch (num) {
    case csr::mstatus: {
      uint64_t nv = (s.mstatus & ~kMstatusWritable) | (v & kMstatusWritable);
      // MPP is WARL over the implemented modes {U, M}: other values keep U.
      uint64_t mpp = (nv & kMstatusMPP) >> 11;
      if (mpp != 0 && mpp != 3) nv &= ~kMstatusMPP;
      s.mstatus = nv | kMstatusUXL64;
      end_slice();  // MIE may have changed: re-check interrupts
      return true;
    }
    case csr::mie: s.mie = v & kMieWritable; end_slice(); return true;
    case csr::mtvec:
      // Modes 0 (direct) and 1 (vectored); reserved modes fall back to direct.
      s.mtvec = (v & 3) >= 2 ? (v & ~uint64_t{3}) : (v & ~uint64_t{2});
      return true;
    case csr::mscratch: s.mscratch = v; return true;
    case csr::mepc: s.mepc = v & ~uint64_t{1}; return true;  // IALIGN = 16
    case csr::mcause: s.mcause = v; return true;
    case csr::mtval: s.mtval = v; return true;
    case csr::mcounteren: s.mcounteren = v & kMcounterenWritable; return true;
    // Writes take effect after the writing instruction: its own increment
    // is not added on top of the value written.
    case csr::mcycle: s.mcycle_base = s.cycle + i.cycles - v; return true;
    case csr::minstret: s.minstret_base = s.instret + 1 - v; return true;
    case csr::misa:  // not writable: extensions cannot be switched off
    case csr::mip:   // MSIP/MTIP/MEIP come from the CLINT and the timer
    case csr::medeleg: case csr::mideleg: case csr::menvcfg: case csr::mcountinhibit:
    case csr::tselect: case csr::tdata1: case csr::tdata2: case csr::tdata3:
      return true;
    default: break;
  }
  if (in(num, csr::mhpmcounter3, csr::mhpmcounter31) || in(num, csr::mhpmevent3, csr::mhpmevent31))
    return true;
  raise(kIllegalInsn, i.raw);
  return false;
}

}  // namespace ksim::rv64
