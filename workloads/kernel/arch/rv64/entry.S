/* RV64 trap entry/exit and context switch, all in .kprobes.text (never
 * probeable; the engine also finds them in the blacklist).
 *
 * Trap entry saves every register in a struct trap_frame on the current
 * stack (kernel threads run in M-mode on their own stacks, so a trap frame
 * belongs to the interrupted thread: a thread preempted from an interrupt
 * keeps its frame until it is switched back in and returns through
 * rv64_trap_return). Above the frame sits a frame record {s0, mepc}, and s0
 * points past it, so a frame-pointer walk from the handler continues into
 * the interrupted code at mepc.
 *
 * Stack layout at the call of rv64_handle_trap (sp = frame):
 *   sp + 0 .. TF_SIZE           struct trap_frame
 *   sp + TF_SIZE                interrupted s0   (record: previous fp)
 *   sp + TF_SIZE + 8            mepc             (record: return address)
 *   sp + TF_SIZE + 16           = interrupted sp = s0 during the handler */
#include <asm/asm.h>
#include <asm/csr.h>
#include <asm/trap_frame.h>

#define TRAP_STACK (TF_SIZE + 16)

  .section .kprobes.text, "ax", @progbits

  .balign 4
  .globl rv64_trap_entry
  .type rv64_trap_entry, @function
rv64_trap_entry:
  addi sp, sp, -TRAP_STACK
  sd x1, TF_REG(1)(sp)
  sd x3, TF_REG(3)(sp)
  sd x4, TF_REG(4)(sp)
  sd x5, TF_REG(5)(sp)
  sd x6, TF_REG(6)(sp)
  sd x7, TF_REG(7)(sp)
  sd x8, TF_REG(8)(sp)
  sd x9, TF_REG(9)(sp)
  sd x10, TF_REG(10)(sp)
  sd x11, TF_REG(11)(sp)
  sd x12, TF_REG(12)(sp)
  sd x13, TF_REG(13)(sp)
  sd x14, TF_REG(14)(sp)
  sd x15, TF_REG(15)(sp)
  sd x16, TF_REG(16)(sp)
  sd x17, TF_REG(17)(sp)
  sd x18, TF_REG(18)(sp)
  sd x19, TF_REG(19)(sp)
  sd x20, TF_REG(20)(sp)
  sd x21, TF_REG(21)(sp)
  sd x22, TF_REG(22)(sp)
  sd x23, TF_REG(23)(sp)
  sd x24, TF_REG(24)(sp)
  sd x25, TF_REG(25)(sp)
  sd x26, TF_REG(26)(sp)
  sd x27, TF_REG(27)(sp)
  sd x28, TF_REG(28)(sp)
  sd x29, TF_REG(29)(sp)
  sd x30, TF_REG(30)(sp)
  sd x31, TF_REG(31)(sp)
  addi t0, sp, TRAP_STACK
  sd t0, TF_REG(2)(sp)
  sd zero, TF_REG(0)(sp)
  csrr t1, mepc
  sd t1, TF_MEPC(sp)
  csrr t2, mstatus
  sd t2, TF_MSTATUS(sp)
  csrr t2, mcause
  sd t2, TF_MCAUSE(sp)
  csrr t2, mtval
  sd t2, TF_MTVAL(sp)
  /* Frame record for stack walkers, then fp past it. */
  sd s0, TF_SIZE(sp)
  sd t1, TF_SIZE + 8(sp)
  mv s0, t0
  /* The per-CPU pointer, whatever the interrupted code did to tp. */
  csrr tp, mscratch
  mv a0, sp
  call rv64_handle_trap

  .globl rv64_trap_return
rv64_trap_return:
  /* mstatus as saved: MIE 0, MPIE = the interrupted context's MIE, MPP = M. */
  ld t0, TF_MEPC(sp)
  csrw mepc, t0
  ld t0, TF_MSTATUS(sp)
  csrw mstatus, t0
  ld x1, TF_REG(1)(sp)
  ld x3, TF_REG(3)(sp)
  ld x4, TF_REG(4)(sp)
  ld x5, TF_REG(5)(sp)
  ld x6, TF_REG(6)(sp)
  ld x7, TF_REG(7)(sp)
  ld x8, TF_REG(8)(sp)
  ld x9, TF_REG(9)(sp)
  ld x10, TF_REG(10)(sp)
  ld x11, TF_REG(11)(sp)
  ld x12, TF_REG(12)(sp)
  ld x13, TF_REG(13)(sp)
  ld x14, TF_REG(14)(sp)
  ld x15, TF_REG(15)(sp)
  ld x16, TF_REG(16)(sp)
  ld x17, TF_REG(17)(sp)
  ld x18, TF_REG(18)(sp)
  ld x19, TF_REG(19)(sp)
  ld x20, TF_REG(20)(sp)
  ld x21, TF_REG(21)(sp)
  ld x22, TF_REG(22)(sp)
  ld x23, TF_REG(23)(sp)
  ld x24, TF_REG(24)(sp)
  ld x25, TF_REG(25)(sp)
  ld x26, TF_REG(26)(sp)
  ld x27, TF_REG(27)(sp)
  ld x28, TF_REG(28)(sp)
  ld x29, TF_REG(29)(sp)
  ld x30, TF_REG(30)(sp)
  ld x31, TF_REG(31)(sp)
  ld x2, TF_REG(2)(sp)
  mret
  .size rv64_trap_entry, . - rv64_trap_entry
  NOKPROBE rv64_trap_entry

/* void arch_context_switch(struct arch_context *prev, struct arch_context *next) */
  .balign 4
  .globl arch_context_switch
  .type arch_context_switch, @function
arch_context_switch:
  sd ra, CTX_RA(a0)
  sd sp, CTX_SP(a0)
  sd s0, CTX_S(0)(a0)
  sd s1, CTX_S(1)(a0)
  sd s2, CTX_S(2)(a0)
  sd s3, CTX_S(3)(a0)
  sd s4, CTX_S(4)(a0)
  sd s5, CTX_S(5)(a0)
  sd s6, CTX_S(6)(a0)
  sd s7, CTX_S(7)(a0)
  sd s8, CTX_S(8)(a0)
  sd s9, CTX_S(9)(a0)
  sd s10, CTX_S(10)(a0)
  sd s11, CTX_S(11)(a0)
  ld ra, CTX_RA(a1)
  ld sp, CTX_SP(a1)
  ld s0, CTX_S(0)(a1)
  ld s1, CTX_S(1)(a1)
  ld s2, CTX_S(2)(a1)
  ld s3, CTX_S(3)(a1)
  ld s4, CTX_S(4)(a1)
  ld s5, CTX_S(5)(a1)
  ld s6, CTX_S(6)(a1)
  ld s7, CTX_S(7)(a1)
  ld s8, CTX_S(8)(a1)
  ld s9, CTX_S(9)(a1)
  ld s10, CTX_S(10)(a1)
  ld s11, CTX_S(11)(a1)
  ret
  .size arch_context_switch, . - arch_context_switch
  NOKPROBE arch_context_switch

/* First code of every new thread (arch_thread_setup): s1 = entry, s2 = arg,
 * s0 = 0 so the frame-pointer chain ends here. */
  .balign 4
  .globl rv64_thread_trampoline
  .type rv64_thread_trampoline, @function
rv64_thread_trampoline:
  mv a0, s2
  jalr s1
  call rv64_thread_returned
  .size rv64_thread_trampoline, . - rv64_thread_trampoline
  NOKPROBE rv64_thread_trampoline
