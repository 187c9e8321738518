/* x86-64 boot entry: every CPU starts here in 64-bit long mode (flat
 * addressing, CPL 0) with RDI = its CPU number, RSP = 0, IF = 0 and every
 * other register 0. Gives each CPU its boot stack (portable
 * boot_stacks[cpu], see arch.h), its GS base (per-CPU pointer slot), its
 * APIC enabled and the shared IDT loaded; CPU 0 clears .bss and builds the
 * IDT; then kernel_main(cpu) with interrupts off.
 * The whole file is in the non-probeable text range. */
#include <asm/asm.h>
#include <asm/x86.h>

#include "kernel/config.h"

  .section .text.init, "ax", @progbits
  .code64
  .globl _start
  .type _start, @function
_start:
  cli
  cld
  mov %rdi, %r12                  /* CPU number */
  cmp $CONFIG_MAX_CPUS, %r12
  jae .Lpark

  /* rsp = &boot_stacks[cpu + 1][0]: the top of this CPU's boot stack
   * (16-byte aligned), rbp = 0 ends the frame-pointer chain. */
  lea 1(%r12), %rax
  imul $CONFIG_BOOT_STACK_SIZE, %rax, %rax
  lea boot_stacks(%rax), %rsp
  xor %ebp, %ebp

  /* GS base = &x86_cpu_local[cpu] (setup.c, in .data: not cleared, its
   * per-CPU pointer stays NULL until arch_cpu_init()). */
  imul $CPU_LOCAL_SIZE, %r12, %rax
  lea x86_cpu_local(%rax), %rax
  mov %rax, %rdx
  shr $32, %rdx
  mov $MSR_GS_BASE, %ecx
  wrmsr

  /* Count this CPU for arch_detect_cpus() (in .data: CPU 0's .bss clear
   * cannot wipe it). */
  lock incl x86_cpus_arrived(%rip)

  /* Software-enable this CPU's local APIC (spurious vector 0xff) so the
   * boot IPI can end arch_cpu_wait_early(); nothing is delivered while
   * IF = 0. */
  mov $LAPIC_BASE, %eax
  movl $(LAPIC_SVR_ENABLE | X86_SPURIOUS_VECTOR), LAPIC_SVR(%rax)

  /* One IDT for every CPU. CPU 0 fills it below; the other CPUs can take
   * no interrupt before CPU 0 releases them (it sends the first IPI long
   * after), and an exception before it is filled hits a not-present gate:
   * a guest crash in ksim (RV64 reports panic code 3 there instead). */
  lidt x86_idt_desc(%rip)

  test %r12, %r12
  jnz .Lenter

  /* CPU 0 clears .bss (64-byte aligned at both ends, see kernel.ld), a
   * 64-byte block a pass: the loop's overhead stays small next to the
   * stores, so the cache-aligned data (kernel/cache.h) costs boot little. */
  mov $__bss_start, %edi
  mov $__bss_end, %ecx
  xor %eax, %eax
1:
  cmp %rcx, %rdi
  jae 2f
  mov %rax, (%rdi)
  mov %rax, 8(%rdi)
  mov %rax, 16(%rdi)
  mov %rax, 24(%rdi)
  mov %rax, 32(%rdi)
  mov %rax, 40(%rdi)
  mov %rax, 48(%rdi)
  mov %rax, 56(%rdi)
  add $64, %rdi
  jmp 1b
2:
  call x86_idt_init

.Lenter:
  mov %r12, %rdi
  call kernel_main
  /* kernel_main does not return; park if it did. */
.Lpark:
  cli
3:
  hlt
  jmp 3b
  .size _start, . - _start

  .section .rodata, "a", @progbits
  /* The lidt operand: 16-bit limit, 64-bit base. */
  .globl x86_idt_desc
  .type x86_idt_desc, @object
x86_idt_desc:
  .word X86_NR_VECTORS * 16 - 1
  .quad x86_idt
  .size x86_idt_desc, . - x86_idt_desc

  .section .data, "aw", @progbits
  .balign 4
  .globl x86_cpus_arrived
  .type x86_cpus_arrived, @object
x86_cpus_arrived:
  .long 0
  .size x86_cpus_arrived, . - x86_cpus_arrived

  .section .note.GNU-stack, "", @progbits
