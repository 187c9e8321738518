/* Layout of the RV64 trap frame and thread context, shared by C and the
 * assembly in entry.S (offsets in bytes). */
#ifndef ASM_TRAP_FRAME_H
#define ASM_TRAP_FRAME_H

/* struct trap_frame: regs[0..31] (x0 slot unused, x2 = sp before the trap),
 * then mepc, mstatus, mcause, mtval. 288 bytes keeps sp 16-byte aligned. */
#define TF_REG(n) ((n) * 8)
#define TF_MEPC (32 * 8)
#define TF_MSTATUS (33 * 8)
#define TF_MCAUSE (34 * 8)
#define TF_MTVAL (35 * 8)
#define TF_SIZE (36 * 8)

/* struct arch_context: ra, sp, s0..s11. */
#define CTX_RA 0
#define CTX_SP 8
#define CTX_S(n) (16 + (n) * 8)
#define CTX_SIZE (14 * 8)

#endif
