/* 64 KiB for the kprobes engine's guest-side code: out-of-line instruction
 * slots and trampolines. Executable and writable (its own RWX segment, see
 * kernel.ld, which also page-aligns it), in the kernel's text region,
 * filled with int3 (0xcc) so a stray jump into an unused slot traps at
 * once. Bounds: __kprobe_slots_start / __kprobe_slots_end. */
  .section .kprobe_slots, "awx", @progbits
  .fill 65536, 1, 0xcc

  .section .note.GNU-stack, "", @progbits
