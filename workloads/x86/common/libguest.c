/* The x86-64 guest runtime is the RV64 one (see libguest.h): this file
 * compiles workloads/rv64/common/libguest.c unchanged.
 *
 * The one ISA-specific line there is the idle loop after the finisher store
 * in poweroff(), `__asm__ volatile("wfi")`. x86 has no wfi, so an assembler
 * macro of that name stands in for it with hlt (interrupts are off, so the
 * CPU stays halted). GCC emits top-level asm ahead of every function, so
 * the macro is defined before its use. */
__asm__(".macro wfi\n\thlt\n\t.endm");

#include "../../rv64/common/libguest.c"
