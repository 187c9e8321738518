/* x86-64 machine constants used by the kernel's x86 port, and the layouts
 * shared between C and the assembly (offsets in bytes). C and asm.
 *
 * The machine (ksim's x86 platform): long mode, flat addressing (no
 * paging), CPL 0 always, a local APIC per CPU at 0xFEE0_0000 (each CPU sees
 * its own through the same window), the UART and the finisher at the same
 * addresses as on the RV64 board (ksim_platform.h). */
#ifndef ASM_X86_H
#define ASM_X86_H

/* Core clock of ksim's CPUs: rdtsc and the APIC timer (divide by 1) count
 * core cycles, 100 MHz as on the RV64 board (docs/TIMING.md). */
#define X86_CORE_HZ 100000000

/* RFLAGS. */
#define X86_RFLAGS_IF 0x200

/* MSRs. */
#define MSR_GS_BASE 0xc0000101

/* Local APIC (xAPIC MMIO window; 32-bit accesses only). */
#define LAPIC_BASE 0xfee00000
#define LAPIC_ID 0x20
#define LAPIC_EOI 0xb0
#define LAPIC_SVR 0xf0
#define LAPIC_SVR_ENABLE 0x100
#define LAPIC_ICR_LOW 0x300
#define LAPIC_ICR_HIGH 0x310
#define LAPIC_LVT_TIMER 0x320
#define LAPIC_LVT_MASKED 0x10000
#define LAPIC_LVT_PERIODIC 0x20000
#define LAPIC_TIMER_INITIAL 0x380
#define LAPIC_TIMER_CURRENT 0x390
#define LAPIC_TIMER_DIVIDE 0x3e0
#define LAPIC_TIMER_DIVIDE_BY_1 0xb

/* Interrupt vectors (0..31 are exceptions). Timer below the IPI, both in
 * their own priority class; the spurious vector is the APIC's 0xff. */
#define X86_TIMER_VECTOR 0xec
#define X86_IPI_VECTOR 0xfd
#define X86_SPURIOUS_VECTOR 0xff
#define X86_NR_VECTORS 256
/* Each vector's entry stub (entry.S) is 16 bytes long. */
#define X86_STUB_SIZE 16

/* struct trap_frame, lowest address first: the general registers pushed by
 * the common entry, the vector and an error-code slot pushed by the
 * vector's stub, then what the CPU pushed (RIP, CS, RFLAGS, RSP, SS). */
#define TF_R15 0
#define TF_R14 8
#define TF_R13 16
#define TF_R12 24
#define TF_R11 32
#define TF_R10 40
#define TF_R9 48
#define TF_R8 56
#define TF_RBP 64
#define TF_RDI 72
#define TF_RSI 80
#define TF_RDX 88
#define TF_RCX 96
#define TF_RBX 104
#define TF_RAX 112
#define TF_VECTOR 120
#define TF_ERROR 128
#define TF_RIP 136
#define TF_CS 144
#define TF_RFLAGS 152
#define TF_RSP 160
#define TF_SS 168
#define TF_SIZE 176

/* struct arch_context. */
#define CTX_RIP 0
#define CTX_RSP 8
#define CTX_RBX 16
#define CTX_RBP 24
#define CTX_R12 32
#define CTX_R13 40
#define CTX_R14 48
#define CTX_R15 56
#define CTX_SIZE 64

/* struct x86_cpu_local (setup.c): what GS points at on each CPU. */
#define CPU_LOCAL_PERCPU 0
#define CPU_LOCAL_SIZE 32

#endif
