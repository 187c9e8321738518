/* Runtime for ksim x86-64 guests: the RV64 guests' runtime, shared.
 *
 * workloads/rv64/common/libguest.{h,c} are plain C over the memory map in
 * ksim_platform.h, which the x86 machine shares (same UART, finisher and
 * RAM addresses), so the x86 guests compile those very files. What they
 * provide: uart_putc/uart_puts, printf (%d %i %u %x %X %p %s %c %% with
 * l/ll/z and a width with 0 or -), poweroff(code), memcpy/memmove/memset/
 * memcmp/strlen, CHECK/CHECK_EQ.
 *
 * Not for x86: read_mcycle()/read_minstret() (RISC-V CSRs; calling them
 * does not assemble) and guest_unexpected_trap() (x86 guests install no
 * trap handler). */
#ifndef LIBGUEST_X86_H
#define LIBGUEST_X86_H

#include "../../rv64/common/libguest.h"

/* 128-bit division helpers GCC calls for unsigned/signed __int128 `/` and
 * `%` (libgcc's names and ABI). The guests do not link libgcc, whose
 * __umodti3 uses SSE registers; these are in common/int128.c. */
unsigned __int128 __udivti3(unsigned __int128 n, unsigned __int128 d);
unsigned __int128 __umodti3(unsigned __int128 n, unsigned __int128 d);
__int128 __divti3(__int128 n, __int128 d);
__int128 __modti3(__int128 n, __int128 d);
unsigned __int128 __udivmodti4(unsigned __int128 n, unsigned __int128 d,
                               unsigned __int128 *rem);
__int128 __divmodti4(__int128 n, __int128 d, __int128 *rem);

#endif
