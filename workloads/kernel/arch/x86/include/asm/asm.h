/* Assembly helpers for x86-64 .S files. */
#ifndef ASM_ASM_H
#define ASM_ASM_H

#ifdef __ASSEMBLER__
/* NOKPROBE sym: the assembly twin of NOKPROBE_SYMBOL(sym). */
.macro NOKPROBE sym
  .pushsection _kprobe_blacklist, "a"
  .balign 8
  .quad \sym
  .popsection
.endm
#endif

#endif
