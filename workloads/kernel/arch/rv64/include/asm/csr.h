/* RV64 machine-mode CSR numbers and bits used by the kernel. C and asm. */
#ifndef ASM_CSR_H
#define ASM_CSR_H

#define MSTATUS_MIE 0x8
#define MSTATUS_MPIE 0x80
#define MSTATUS_MPP_M 0x1800

#define MIP_MSIP 0x8   /* machine software interrupt (IPI) */
#define MIP_MTIP 0x80  /* machine timer interrupt */

#define MCAUSE_INTR_BIT 63
#define IRQ_M_SOFT 3
#define IRQ_M_TIMER 7

#define EXC_INSN_MISALIGNED 0
#define EXC_INSN_ACCESS 1
#define EXC_ILLEGAL_INSN 2
#define EXC_BREAKPOINT 3
#define EXC_LOAD_MISALIGNED 4
#define EXC_LOAD_ACCESS 5
#define EXC_STORE_MISALIGNED 6
#define EXC_STORE_ACCESS 7
#define EXC_ECALL_U 8
#define EXC_ECALL_S 9
#define EXC_ECALL_M 11

#ifndef __ASSEMBLER__
#define csr_read(csr)                                  \
  ({                                                   \
    unsigned long v_;                                  \
    __asm__ __volatile__("csrr %0, " #csr : "=r"(v_)); \
    v_;                                                \
  })
#define csr_write(csr, val) __asm__ __volatile__("csrw " #csr ", %0" ::"rK"(val) : "memory")
#define csr_set(csr, val) __asm__ __volatile__("csrs " #csr ", %0" ::"rK"(val) : "memory")
#define csr_clear(csr, val) __asm__ __volatile__("csrc " #csr ", %0" ::"rK"(val) : "memory")
#define csr_read_clear(csr, val)                                                     \
  ({                                                                                 \
    unsigned long v_;                                                                \
    __asm__ __volatile__("csrrc %0, " #csr ", %1" : "=r"(v_) : "rK"(val) : "memory"); \
    v_;                                                                              \
  })
#endif

#endif
