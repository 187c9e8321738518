/* Two CPUs and one IPI, bare metal (x86-64): the scheduler's wake-up test,
 * the twin of workloads/rv64/smp/ipi.S.
 *
 * CPU 1 enables interrupts and waits in hlt. CPU 0 counts down a short
 * delay (so CPU 1 is surely asleep), sends vector 0xfd to CPU 1 through
 * the local APIC's ICR, and spins until CPU 1's handler has stored a flag;
 * then it powers off with status 0. CPUs 2 and up park with interrupts
 * off. One IDT, shared by all CPUs, has a single gate (0xfd): any other
 * exception finds a non-present gate and the run ends as a crash. */
#define LAPIC 0xfee00000
#define LAPIC_EOI 0xb0
#define LAPIC_SVR 0xf0
#define LAPIC_ICR_LOW 0x300
#define LAPIC_ICR_HIGH 0x310
#define IPI_VECTOR 0xfd
#define FINISHER 0x100000
#define DELAY 100

  .section .text.init, "ax", @progbits
  .globl _start
_start:
  /* The gate of IPI_VECTOR: a present 64-bit interrupt gate, selector 8. */
  lea ipi_handler(%rip), %rax
  lea idt + IPI_VECTOR * 16(%rip), %rdx
  mov %ax, (%rdx)
  movw $0x08, 2(%rdx)
  movb $0, 4(%rdx)
  movb $0x8e, 5(%rdx)
  shr $16, %rax
  mov %ax, 6(%rdx)
  shr $16, %rax
  mov %eax, 8(%rdx)
  movl $0, 12(%rdx)
  lidt idtr(%rip)
  mov $LAPIC, %ebx               /* zero-extended: 0xfee0_0000 */
  movl $0x1ff, LAPIC_SVR(%rbx)   /* APIC on, spurious vector 0xff */
  test %edi, %edi
  jz cpu0
  cmp $1, %edi
  jne park

cpu1:
  lea stack1_top(%rip), %rsp
  sti
1:
  hlt
  jmp 1b

cpu0:
  mov $DELAY, %ecx
2:
  dec %ecx
  jnz 2b
  movl $(1 << 24), LAPIC_ICR_HIGH(%rbx)   /* destination: APIC id 1 */
  movl $IPI_VECTOR, LAPIC_ICR_LOW(%rbx)   /* fixed delivery */
3:
  cmpl $0, flag(%rip)
  je 3b
  mov $FINISHER, %eax
  movl $0x5555, (%rax)                    /* power off, status 0 */
4:
  hlt
  jmp 4b

park:
  cli
5:
  hlt
  jmp 5b

ipi_handler:
  movl $1, flag(%rip)
  movl $0, LAPIC_EOI(%rbx)
  iretq

  .data
  .balign 8
idtr:
  .word 256 * 16 - 1
  .quad idt

  .bss
  .balign 16
idt:
  .space 256 * 16
  .balign 16
stack1:
  .space 4096
stack1_top:
flag:
  .long 0

  .section .note.GNU-stack, "", @progbits
