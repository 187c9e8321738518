/* A site for live multi-byte patching (x86): the kernel calls
 * ksim_patch_site() on every timer tick (traps.c). It starts as a 5-byte
 * nop and a ret; a test turns the nop into `jmp ksim_patch_alt` while the
 * CPUs run, through text_poke_bp (kprobes/patching.hpp) or, to show the
 * torn write it prevents, one byte at a time. ksim_patch_alt counts the
 * calls that took the new path and returns to the site's caller. */
#include <asm/asm.h>

  .text
  .code64

  .balign 16
  .globl ksim_patch_site
  .type ksim_patch_site, @function
ksim_patch_site:
  {disp8} nopl 0x0(%rax,%rax,1)  /* 0f 1f 44 00 00: the 5-byte nop (an instruction, so it has a line) */
  ret
  .size ksim_patch_site, . - ksim_patch_site

  .balign 16
  .globl ksim_patch_alt
  .type ksim_patch_alt, @function
ksim_patch_alt:
  lock incq ksim_patch_alt_calls(%rip)
  ret
  .size ksim_patch_alt, . - ksim_patch_alt

  .bss
  .balign 8
  .globl ksim_patch_alt_calls
ksim_patch_alt_calls:
  .quad 0

  .section .note.GNU-stack, "", @progbits
