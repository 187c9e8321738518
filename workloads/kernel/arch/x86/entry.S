/* x86-64 trap entry/exit and context switch, all in .kprobes.text (never
 * probeable; the engine also finds them in the blacklist).
 *
 * Interrupt delivery in ksim's x86 model: through a 64-bit interrupt gate
 * the CPU aligns RSP to 16, pushes SS, RSP, RFLAGS, CS, RIP, clears IF and
 * jumps to the gate; for the exceptions that have one (vectors 8, 10-14,
 * 17, 21, 29, 30) it then pushes an error code, as hardware does. Every
 * other vector's stub pushes a 0 placeholder instead, then every stub
 * pushes its vector number, so all traps share one struct trap_frame
 * (asm/x86.h).
 *
 * Traps are taken on the current stack (no IST, no stack switch: CPL 0
 * only), so a trap frame belongs to the interrupted thread: a thread
 * preempted in irq_exit() keeps its frame until it is switched back in and
 * returns through x86_trap_return.
 *
 * Stack at the call of x86_handle_trap (rsp = record, 16-byte aligned):
 *   rsp + 0         interrupted rbp  (frame record: previous fp)
 *   rsp + 8         interrupted rip  (frame record: return address)
 *   rsp + 16        struct trap_frame (rdi points here)
 * and rbp = rsp, so a frame-pointer walk from the handler continues into
 * the interrupted code at its rip. */
#include <asm/asm.h>
#include <asm/x86.h>

  .section .kprobes.text, "ax", @progbits
  .code64

/* 256 stubs of exactly X86_STUB_SIZE bytes: x86_vector_stubs + 16 * v is
 * the gate target of vector v (kernel.ld checks the total size). */
  .balign X86_STUB_SIZE
  .globl x86_vector_stubs
  .type x86_vector_stubs, @function
x86_vector_stubs:
  .set vec, 0
  .rept X86_NR_VECTORS
  .balign X86_STUB_SIZE, 0xcc
  .if !((vec == 8) || ((vec >= 10) && (vec <= 14)) || (vec == 17) || (vec == 21) || (vec == 29) || (vec == 30))
  pushq $0                        /* error code placeholder */
  .endif
  pushq $vec
  jmp x86_trap_common
  .set vec, vec + 1
  .endr
  .balign X86_STUB_SIZE, 0xcc
  .globl x86_vector_stubs_end
x86_vector_stubs_end:
  .size x86_vector_stubs, . - x86_vector_stubs
  NOKPROBE x86_vector_stubs

  .globl x86_trap_common
  .type x86_trap_common, @function
x86_trap_common:
  push %rax
  push %rbx
  push %rcx
  push %rdx
  push %rsi
  push %rdi
  push %rbp
  push %r8
  push %r9
  push %r10
  push %r11
  push %r12
  push %r13
  push %r14
  push %r15
  cld                             /* the ABI's DF = 0 (restored by iretq) */
  /* Frame record for stack walkers, then rbp at it. */
  mov TF_RIP(%rsp), %rax
  push %rax
  push %rbp
  mov %rsp, %rbp
  lea 16(%rsp), %rdi
  call x86_handle_trap

  .globl x86_trap_return
x86_trap_return:
  add $16, %rsp                   /* the frame record */
  pop %r15
  pop %r14
  pop %r13
  pop %r12
  pop %r11
  pop %r10
  pop %r9
  pop %r8
  pop %rbp
  pop %rdi
  pop %rsi
  pop %rdx
  pop %rcx
  pop %rbx
  pop %rax
  add $16, %rsp                   /* vector, error code */
  iretq
  .size x86_trap_common, . - x86_trap_common
  NOKPROBE x86_trap_common

/* void arch_context_switch(struct arch_context *prev, struct arch_context *next)
 * Saves where prev resumes (our return address, and rsp after returning)
 * and its callee-saved registers; loads next's and jumps to its rip. IF is
 * 0 across every switch (the scheduler holds its run-queue lock with
 * interrupts off), so RFLAGS needs no saving; DF is 0 by the ABI. */
  .balign 16
  .globl arch_context_switch
  .type arch_context_switch, @function
arch_context_switch:
  mov (%rsp), %rax
  mov %rax, CTX_RIP(%rdi)
  lea 8(%rsp), %rax
  mov %rax, CTX_RSP(%rdi)
  mov %rbx, CTX_RBX(%rdi)
  mov %rbp, CTX_RBP(%rdi)
  mov %r12, CTX_R12(%rdi)
  mov %r13, CTX_R13(%rdi)
  mov %r14, CTX_R14(%rdi)
  mov %r15, CTX_R15(%rdi)
  mov CTX_RBX(%rsi), %rbx
  mov CTX_RBP(%rsi), %rbp
  mov CTX_R12(%rsi), %r12
  mov CTX_R13(%rsi), %r13
  mov CTX_R14(%rsi), %r14
  mov CTX_R15(%rsi), %r15
  mov CTX_RSP(%rsi), %rsp
  mov CTX_RIP(%rsi), %rax
  jmp *%rax
  .size arch_context_switch, . - arch_context_switch
  NOKPROBE arch_context_switch

/* First code of every new thread (arch_thread_setup): rbx = entry,
 * r12 = arg, rbp = 0 so the frame-pointer chain ends here; rsp is 16-byte
 * aligned, so entry starts with the ABI's rsp = 8 mod 16. */
  .balign 16
  .globl x86_thread_trampoline
  .type x86_thread_trampoline, @function
x86_thread_trampoline:
  mov %r12, %rdi
  call *%rbx
  call x86_thread_returned
  ud2
  .size x86_thread_trampoline, . - x86_thread_trampoline
  NOKPROBE x86_thread_trampoline

  .section .note.GNU-stack, "", @progbits
