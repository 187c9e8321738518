// The physical memory map of the simulated RV64 machine. One place for every
// address a guest and the host agree on; guest code includes the C version of
// these numbers from workloads/rv64/common/ksim_platform.h, which must match.
//
// The layout follows QEMU's `virt` board where it can (CLINT, UART, the SiFive
// test finisher, DRAM at 0x8000_0000), so guest code written for that board
// and the official riscv-tests run unchanged.
#pragma once
#include <cstdint>

namespace ksim::memmap {

// Power-off / finisher device (SiFive "test" device as on QEMU virt).
// A 32-bit store of 0x5555 ends the run with status 0; a store of
// (code << 16) | 0x3333 ends it with status `code`. ksim adds
// (code << 16) | 0x6666: the guest kernel panicked (a guest crash, ksim
// exit status 4, rather than a guest that ran and reported failure).
inline constexpr uint64_t kFinisherBase = 0x0010'0000;
inline constexpr uint64_t kFinisherSize = 0x1000;
inline constexpr uint32_t kFinisherPass = 0x5555;
inline constexpr uint32_t kFinisherFail = 0x3333;
inline constexpr uint32_t kFinisherPanic = 0x6666;

// The kprobes engine's rethook port (both ISAs; mapped by kprobes/rethook.*
// while an engine exists): the guest's trap-free kretprobe trampoline
// (`rethook_trampoline` in the kernel's arch/<isa>/kprobes_stubs.S) loads
// its 64-bit word at +0, and the load runs the return handlers and yields
// the real return address, which the trampoline jumps to. It stands for the
// call into trampoline_handler() of Linux's kretprobe-booster / rethook:
// the handlers are host code, so the guest reaches them through a load
// instead of a call, and no trap is taken.
// The word at +8 is the jump optimizer's: a detour buffer's load from it
// runs the optimized probe's handlers (kprobes/x86/optimize.cpp).
inline constexpr uint64_t kRethookBase = 0x0011'0000;
inline constexpr uint64_t kRethookSize = 0x1000;
inline constexpr uint64_t kOptprobePort = kRethookBase + 8;

// CLINT: msip per hart at +4*hart, mtimecmp per hart at +0x4000 + 8*hart,
// mtime at +0xbff8 (SiFive CLINT layout).
inline constexpr uint64_t kClintBase = 0x0200'0000;
inline constexpr uint64_t kClintSize = 0x1'0000;
inline constexpr uint64_t kClintMsip = 0x0;
inline constexpr uint64_t kClintMtimecmp = 0x4000;
inline constexpr uint64_t kClintMtime = 0xbff8;

// UART: a 16550-compatible subset. A byte store to +0 (THR) is console
// output; a load of +5 (LSR) always reports the transmitter empty (0x60).
inline constexpr uint64_t kUartBase = 0x1000'0000;
inline constexpr uint64_t kUartSize = 0x100;

// DRAM. On RV64 at 0x8000_0000 (QEMU virt). On x86-64 at 0x4000_0000: the
// whole of RAM then lies below 2 GiB, where GCC's default (small) code model
// with -fno-pic reaches every symbol through a sign-extended 32-bit address,
// so x86 guests are built the way the issue asks (-fno-pic) with no special
// code model.
inline constexpr uint64_t kRamBase = 0x8000'0000;
inline constexpr uint64_t kRamBaseX86 = 0x4000'0000;
inline constexpr uint64_t kRamDefaultSize = 128ull << 20;

}  // namespace ksim::memmap
