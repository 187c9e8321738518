/* Physical memory map of the simulated RV64 machine, for guest code.
 * This MUST match mem/memory_map.hpp (the host's copy); change both together.
 * Usable from C and from assembly (.S files), hence no integer suffixes there. */
#ifndef KSIM_PLATFORM_H
#define KSIM_PLATFORM_H

#ifdef __ASSEMBLER__
#define KSIM_U64(x) x
#else
#define KSIM_U64(x) x##UL
#endif

/* SiFive-style test finisher: a 32-bit store ends the run. */
#define KSIM_FINISHER_BASE KSIM_U64(0x100000)
#define KSIM_FINISHER_PASS 0x5555 /* exit status 0 */
#define KSIM_FINISHER_FAIL 0x3333 /* (code << 16) | FAIL: exit status code */
#define KSIM_FINISHER_PANIC 0x6666 /* (code << 16) | PANIC: guest crash (ksim exit 4) */

/* CLINT (SiFive layout). */
#define KSIM_CLINT_BASE KSIM_U64(0x2000000)
#define KSIM_CLINT_MSIP 0x0          /* + 4 * hart */
#define KSIM_CLINT_MTIMECMP 0x4000   /* + 8 * hart */
#define KSIM_CLINT_MTIME 0xbff8

/* 16550-compatible UART subset. */
#define KSIM_UART_BASE KSIM_U64(0x10000000)
#define KSIM_UART_THR 0        /* byte store: console output */
#define KSIM_UART_LSR 5        /* reads 0x60: transmitter always empty */
#define KSIM_UART_LSR_THRE 0x20

/* DRAM. */
#define KSIM_RAM_BASE KSIM_U64(0x80000000)
#define KSIM_RAM_SIZE (KSIM_U64(128) << 20)

/* An address with no device behind it, so accesses fault (used by the
 * selftests). Overridable with -D for running them on other boards. */
#ifndef KSIM_UNMAPPED_ADDR
#define KSIM_UNMAPPED_ADDR KSIM_U64(0x40000000)
#endif

#endif
