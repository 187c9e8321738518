# Every instruction of cpu/rv64/insn_table.def and every RV64C form, with
# edge-case operands. tests/rv64_disasm_test.cpp assembles this file at test
# time and checks that ksim's disassembler prints each line exactly as
# riscv64-unknown-elf-objdump -d does. Nothing here is ever executed.
#
# Assemble with -march=rv64imac_zicsr_zifencei -mabi=lp64.

  .text
  .globl _start
_start:

# ---------------------------------------------------------------------------
# 32-bit encodings (no automatic compression)
  .option push
  .option norvc

rv64i_upper:
  lui   a0, 0
  lui   a0, 0x12345
  lui   t6, 0x7ffff
  lui   s11, 0x80000
  lui   zero, 0xfffff
  auipc a0, 0
  auipc ra, 0x1
  auipc t6, 0xfffff
  auipc zero, 0x80000

rv64i_jumps:
  jal   zero, rv64i_upper          # j
  jal   ra, rv64i_upper            # jal <target>
  jal   t0, rv64i_jumps_end
  jal   s11, .
  jalr  zero, 0(ra)                # ret
  jalr  zero, 0(a0)                # jr a0
  jalr  zero, -2048(a0)
  jalr  ra, 0(a0)                  # jalr a0
  jalr  ra, 2047(t6)
  jalr  t0, 0(a1)
  jalr  t0, -1(a1)
  jalr  zero, 0(zero)
  jalr  s1, 8(zero)
rv64i_jumps_end:

rv64i_branches:
  beq   a0, a1, rv64i_branches
  beq   a0, zero, rv64i_branches   # beqz
  beq   zero, a0, rv64i_branches
  beq   zero, zero, rv64i_branches_end
  bne   a0, a1, .
  bne   t6, zero, rv64i_branches   # bnez
  bne   zero, t6, rv64i_branches
  blt   a0, a1, rv64i_branches
  blt   a0, zero, rv64i_branches   # bltz
  blt   zero, a0, rv64i_branches   # bgtz
  blt   zero, zero, rv64i_branches
  bge   a0, a1, rv64i_branches_end
  bge   a0, zero, rv64i_branches   # bgez
  bge   zero, a0, rv64i_branches   # blez
  bge   zero, zero, rv64i_branches
  bltu  a0, a1, rv64i_branches
  bltu  zero, a1, rv64i_branches
  bltu  a1, zero, rv64i_branches
  bgeu  a0, a1, rv64i_branches
  bgeu  zero, a1, rv64i_branches
  bgeu  a1, zero, rv64i_branches_end
  bgt   a0, a1, rv64i_branches     # assembles to blt a1,a0
  ble   a0, a1, rv64i_branches     # bge a1,a0
rv64i_branches_end:

rv64i_loads_stores:
  lb    a0, 0(a1)
  lb    t6, -2048(sp)
  lh    a0, 2047(a1)
  lh    zero, -1(zero)
  lw    a0, 0(sp)
  lw    s11, -2048(t6)
  ld    a0, 2047(a1)
  ld    ra, -8(sp)
  lbu   a0, 1(a1)
  lhu   a0, -2(a1)
  lwu   a0, 4(a1)
  lwu   t6, -2048(t6)
  sb    a0, 0(a1)
  sb    zero, -2048(sp)
  sh    t6, 2047(a1)
  sw    a0, -4(s0)
  sw    zero, 0(zero)
  sd    ra, 8(sp)
  sd    s11, -2048(t6)

rv64i_imm:
  .irp op, addi, slti, sltiu, xori, ori, andi, addiw
  \op   a0, a1, 0
  \op   a0, a1, 1
  \op   a0, a1, -1
  \op   t6, s11, 2047
  \op   t6, s11, -2048
  \op   a0, zero, 5
  \op   zero, a0, 5
  \op   zero, zero, 0
  .endr
  addi  sp, sp, -16
  addi  a0, zero, 0                # li a0,0
  addi  a0, a1, 0                  # mv
  xori  a0, a1, -1                 # not
  sltiu a0, a1, 1                  # seqz
  addiw a0, a1, 0                  # sext.w
  nop

rv64i_shifts:
  .irp op, slli, srli, srai
  \op   a0, a1, 0
  \op   a0, a1, 1
  \op   t6, s11, 31
  \op   t6, s11, 32
  \op   t6, s11, 63
  \op   zero, zero, 7
  .endr
  .irp op, slliw, srliw, sraiw
  \op   a0, a1, 0
  \op   a0, a1, 1
  \op   t6, s11, 31
  \op   zero, zero, 7
  .endr

rv64i_reg:
  .irp op, add, sub, sll, slt, sltu, xor, srl, sra, or, and, addw, subw, sllw, srlw, sraw
  \op   a0, a1, a2
  \op   t6, s11, ra
  \op   a0, zero, a1
  \op   a0, a1, zero
  \op   zero, zero, zero
  .endr
  neg   a0, a1
  negw  a0, a1
  snez  a0, a1
  sltz  a0, a1
  sgtz  a0, a1

rv64m:
  .irp op, mul, mulh, mulhsu, mulhu, div, divu, rem, remu, mulw, divw, divuw, remw, remuw
  \op   a0, a1, a2
  \op   t6, zero, s11
  \op   zero, ra, zero
  .endr

rv64a:
  .irp op, lr.w, lr.d
  .irp ord, , .aq, .rl, .aqrl
  \op\ord   a0, (a1)
  \op\ord   t6, (zero)
  .endr
  .endr
  .irp op, sc.w, sc.d, amoswap.w, amoswap.d, amoadd.w, amoadd.d, amoxor.w, amoxor.d, amoand.w, amoand.d, amoor.w, amoor.d, amomin.w, amomin.d, amomax.w, amomax.d, amominu.w, amominu.d, amomaxu.w, amomaxu.d
  .irp ord, , .aq, .rl, .aqrl
  \op\ord   a0, a1, (a2)
  \op\ord   zero, t6, (sp)
  .endr
  .endr

system:
  ecall
  ebreak
  mret
  wfi
  fence
  fence rw, rw
  fence iorw, iorw
  fence r, w
  fence i, o
  fence io, rw
  fence.tso
  fence.i
  .insn 4, 0x0100000f              # pause (fence w,0)
  .insn 4, 0x0000000f              # fence 0,0
  .insn 4, 0x8ff0000f              # fm = 8 without tso sets: not a fence to objdump
  .insn 4, 0x0ff5000f              # fence with rs1 != 0
  .insn 4, 0x0ff0008f              # fence with rd != 0
  .insn 4, 0x0010100f              # fence.i with a nonzero immediate

zicsr:
  csrrw  a0, mstatus, a1
  csrrw  zero, mtvec, a1           # csrw
  csrrw  a0, 0x7c0, zero
  csrrw  zero, 0xfff, zero
  csrrs  a0, mepc, zero            # csrr
  csrrs  a0, mcause, a1
  csrrs  zero, mie, a1             # csrs
  csrrs  zero, mip, zero
  csrrc  a0, mscratch, a1
  csrrc  zero, mstatus, t6         # csrc
  csrrwi a0, mstatus, 0
  csrrwi zero, mstatus, 31         # csrwi
  csrrsi a0, mie, 8
  csrrsi zero, mie, 1              # csrsi
  csrrci a0, 0x7c1, 31
  csrrci zero, 0x000, 1            # csrci
  csrr   a0, cycle                 # rdcycle
  csrr   a0, time                  # rdtime
  csrr   a0, instret               # rdinstret
  csrr   a0, 0xc00
  rdcycle t6
  rdtime s0
  rdinstret a0
  csrr   a0, mhartid
  csrr   a0, misa
  csrr   a0, mvendorid
  csrr   a0, 0xf14
  csrr   a0, hpmcounter3
  csrr   a0, hpmcounter31
  csrr   a0, mhpmcounter3
  csrr   a0, 0xb1f
  csrr   a0, mhpmevent17
  csrr   a0, pmpcfg0
  csrr   a0, pmpaddr63
  csrr   a0, tselect
  csrr   a0, 0x7a2
  csrr   a0, mcycle
  csrr   a0, minstret
  csrr   a0, mcountinhibit
  csrr   a0, menvcfg
  csrr   a0, mconfigptr
  csrr   a0, satp
  csrr   a0, 0x800
  csrr   a0, 0xfff
  csrw   mtvec, t0
  csrs   mstatus, a0
  csrc   mstatus, a0
  csrwi  mscratch, 0
  csrsi  mstatus, 8
  csrci  mstatus, 8

undecodable32:
  .insn 4, 0xc0001073              # csrrw zero,cycle,zero: unimp
  .insn 4, 0x0000505b              # custom-2 opcode
  .insn 4, 0x0000000b              # custom-0
  .insn 4, 0xffffffe3              # bgeu t6,t6 with the most negative offset
  .insn 4, 0x00002063              # branch funct3 = 2
  .insn 4, 0x00004073              # SYSTEM funct3 = 4
  .insn 4, 0x00200073              # SYSTEM, unknown funct12
  .insn 4, 0x1015a52f              # lr.w with rs2 != 0
  .insn 4, 0x0000403b              # OP-32 funct3 = 4
  .insn 4, 0x7ff00033              # OP funct7 = 0x3f
  .insn 4, 0x0200502f              # AMO funct3 = 5

  .option pop

# ---------------------------------------------------------------------------
# Compressed encodings (RV64C), written with their c. mnemonics
  .option push
  .option rvc
rvc:
  c.addi4spn a0, sp, 4
  c.addi4spn s0, sp, 1020
  c.addi4spn a5, sp, 512
  c.lw      a0, 0(a1)
  c.lw      s0, 124(a5)
  c.ld      a0, 0(a1)
  c.ld      s1, 248(a5)
  c.sw      a0, 0(a1)
  c.sw      s0, 124(a5)
  c.sd      a0, 0(a1)
  c.sd      s1, 248(a5)
  c.nop
  c.addi    a0, 1
  c.addi    t6, -1
  c.addi    sp, 31
  c.addi    ra, -32
  c.addiw   a0, 0                  # sext.w
  c.addiw   a0, 1
  c.addiw   t6, -32
  c.addiw   sp, 31
  c.li      a0, 0
  c.li      a0, -32
  c.li      t6, 31
  c.addi16sp sp, -512
  c.addi16sp sp, 496
  c.addi16sp sp, 16
  c.addi16sp sp, -16
  c.lui     a0, 1
  c.lui     a0, 0x1f
  c.lui     t6, 0xfffe0
  c.lui     ra, 0xfffff
  c.srli    a0, 1
  c.srli    s0, 63
  c.srli    a5, 32
  c.srai    a0, 1
  c.srai    s0, 63
  c.andi    a0, 0
  c.andi    s0, -32
  c.andi    a5, 31
  c.andi    a5, -1
  c.sub     a0, a1
  c.sub     s0, a5
  c.xor     a0, a1
  c.or      s0, a5
  c.and     a0, s1
  c.subw    a0, a1
  c.subw    s0, a5
  c.addw    a0, a1
  c.addw    a5, s0
rvc_jumps:
  c.j       rvc_jumps
  c.j       rvc
  c.j       rvc_jumps_end
  c.beqz    a0, rvc_jumps
  c.beqz    s0, rvc_jumps_end
  c.bnez    a5, rvc_jumps
  c.bnez    a0, .
  c.slli    a0, 1
  c.slli    t6, 63
  c.slli    sp, 32
  c.lwsp    a0, 0(sp)
  c.lwsp    t6, 252(sp)
  c.ldsp    ra, 0(sp)
  c.ldsp    s11, 504(sp)
  c.jr      ra                     # ret
  c.jr      a0
  c.jr      t6
  c.mv      a0, a1
  c.mv      t6, ra
  c.ebreak
  c.jalr    a0
  c.jalr    ra
  c.add     a0, a1
  c.add     sp, t6
  c.swsp    a0, 0(sp)
  c.swsp    t6, 252(sp)
  c.sdsp    ra, 0(sp)
  c.sdsp    s11, 504(sp)
rvc_jumps_end:
  c.j       . - 2048               # the most negative c.j offset
  c.j       . + 2046
  c.beqz    a0, . - 256
  c.bnez    a0, . + 254

# HINT and reserved compressed encodings, by value
rvc_hints:
  .insn 2, 0x0015                  # c.nop 5
  .insn 2, 0x1001                  # c.nop -32
  .insn 2, 0x0501                  # c.addi a0,0
  .insn 2, 0x4015                  # c.li zero,5
  .insn 2, 0x5001                  # c.li zero,-32
  .insn 2, 0x6005                  # c.lui zero,1
  .insn 2, 0x7001                  # c.lui zero,0xfffe0
  .insn 2, 0x0006                  # c.slli zero,1
  .insn 2, 0x0502                  # c.slli64 a0
  .insn 2, 0x0002                  # c.slli64 zero
  .insn 2, 0x8001                  # c.srli64 s0
  .insn 2, 0x8401                  # c.srai64 s0
  .insn 2, 0x802a                  # c.mv zero,a0
  .insn 2, 0x902a                  # c.add zero,a0
  .insn 2, 0x0000                  # c.unimp
  .insn 2, 0x0001                  # c.nop
  .insn 2, 0x6001                  # c.lui zero,0: reserved
  .insn 2, 0x6101                  # c.addi16sp 0: reserved
  .insn 2, 0x6501                  # c.lui a0,0: reserved
  .insn 2, 0x2001                  # c.addiw zero: reserved
  .insn 2, 0x8000                  # quadrant 0, funct3 4: reserved
  .insn 2, 0x2000                  # c.fld (no D extension)
  .insn 2, 0xa002                  # c.fsdsp
  .insn 2, 0x4002                  # c.lwsp zero: reserved
  .insn 2, 0x8002                  # c.jr zero: reserved
  .insn 2, 0x9c41                  # funct6 100111, funct2 10: reserved
  .option pop

  .option push
  .option norvc
# Far branches: the most negative and positive B-type offsets, with the
# targets kept inside the section by padding
far_back:
  .rept 1024
  nop
  .endr
far_branches:
  beq   a0, a1, far_branches - 4096
  bne   a0, a1, . + 4094
  jal   zero, far_back
  .rept 1024
  nop
  .endr
far_end:
  ret
  .option pop
