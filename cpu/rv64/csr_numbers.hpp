// CSR numbers and mstatus/mip bit positions used by the RV64 core
// (RISC-V Privileged Architecture, version 1.12, tables 2.2-2.5 and 3.x).
#pragma once
#include <cstdint>

namespace ksim::rv64::csr {

enum : uint16_t {
  // Unprivileged counters (read-only shadows)
  cycle = 0xC00, time = 0xC01, instret = 0xC02, hpmcounter3 = 0xC03, hpmcounter31 = 0xC1F,
  // Machine information
  mvendorid = 0xF11, marchid = 0xF12, mimpid = 0xF13, mhartid = 0xF14, mconfigptr = 0xF15,
  // Machine trap setup
  mstatus = 0x300, misa = 0x301, medeleg = 0x302, mideleg = 0x303, mie = 0x304, mtvec = 0x305,
  mcounteren = 0x306, menvcfg = 0x30A, mcountinhibit = 0x320,
  mhpmevent3 = 0x323, mhpmevent31 = 0x33F,
  // Machine trap handling
  mscratch = 0x340, mepc = 0x341, mcause = 0x342, mtval = 0x343, mip = 0x344,
  // Machine counters
  mcycle = 0xB00, minstret = 0xB02, mhpmcounter3 = 0xB03, mhpmcounter31 = 0xB1F,
  // Debug/trace triggers (Sdtrig): present, with no trigger implemented
  tselect = 0x7A0, tdata1 = 0x7A1, tdata2 = 0x7A2, tdata3 = 0x7A3,
};

}  // namespace ksim::rv64::csr

namespace ksim::rv64 {

// mstatus fields modelled (M and U modes, no S-mode, no FPU).
inline constexpr uint64_t kMstatusMIE = 1ull << 3;
inline constexpr uint64_t kMstatusMPIE = 1ull << 7;
inline constexpr uint64_t kMstatusMPP = 3ull << 11;
inline constexpr uint64_t kMstatusMPRV = 1ull << 17;
inline constexpr uint64_t kMstatusTW = 1ull << 21;
inline constexpr uint64_t kMstatusUXL = 3ull << 32;
inline constexpr uint64_t kMstatusUXL64 = 2ull << 32;
// The mstatus bits software can change on this hart (see csr.cpp).
inline constexpr uint64_t kMstatusWritableMask = kMstatusMIE | kMstatusMPIE | kMstatusMPP | kMstatusMPRV | kMstatusTW;

// mip / mie bits.
inline constexpr uint64_t kMSIP = 1ull << 3;
inline constexpr uint64_t kMTIP = 1ull << 7;
inline constexpr uint64_t kMEIP = 1ull << 11;

// Exception causes (mcause without the interrupt bit).
enum Cause : uint64_t {
  kInsnMisaligned = 0, kInsnAccessFault = 1, kIllegalInsn = 2, kBreakpoint = 3,
  kLoadMisaligned = 4, kLoadAccessFault = 5, kStoreMisaligned = 6, kStoreAccessFault = 7,
  kEcallU = 8, kEcallM = 11,
};
// Interrupt causes.
enum IrqCause : uint64_t { kIrqMSoft = 3, kIrqMTimer = 7, kIrqMExt = 11 };

enum class Priv : uint8_t { U = 0, M = 3 };

}  // namespace ksim::rv64
