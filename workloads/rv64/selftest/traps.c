/* Synchronous exceptions in M-mode and U-mode: mcause, mepc and mtval for
 * ecall, ebreak, illegal instructions (including an unimplemented CSR and
 * an M-mode CSR touched from U-mode) and access faults on an address with
 * no device. Replaces crt0's fatal trap vector with one that records the
 * trap and resumes.
 *
 * Resuming: each deliberate fault is written as
 *     la t0, 1f ; sd t0, trap_resume ; <faulting insn> ; 1:
 * and the handler continues at trap_resume. That works whatever the
 * faulting instruction's length (`.word 0` is two illegal 16-bit parcels,
 * and `ebreak` may be assembled as c.ebreak). With trap_resume unset the
 * handler skips the instruction at mepc by its length. */
#include "libguest.h"

#define MCAUSE_ILLEGAL 2
#define MCAUSE_BREAKPOINT 3
#define MCAUSE_LOAD_FAULT 5
#define MCAUSE_STORE_FAULT 7
#define MCAUSE_ECALL_U 8
#define MCAUSE_ECALL_M 11
#define MSTATUS_MPP (3ull << 11)
#define ECALL_LEAVE_USER 0x55 /* a7 value: "return to M-mode" */

/* Every trap is appended here; the checks walk the log in order. */
struct trap_record {
  uint64_t mcause, mepc, mtval, mpp;
};
enum { LOG_SIZE = 32 };
static volatile struct trap_record trap_log[LOG_SIZE];
static volatile unsigned trap_count;
volatile uint64_t trap_resume;

/* Register frame built by trap_vector: x1..x31 at index 1..31. */
enum { REG_A7 = 17 };

extern char user_return[];  /* in run_user below */

/* Called from trap_vector with the saved registers. */
void traps_handle(uint64_t *regs) {
  uint64_t mcause, mepc, mtval, mstatus;
  __asm__ volatile("csrr %0, mcause" : "=r"(mcause));
  __asm__ volatile("csrr %0, mepc" : "=r"(mepc));
  __asm__ volatile("csrr %0, mtval" : "=r"(mtval));
  __asm__ volatile("csrr %0, mstatus" : "=r"(mstatus));
  if ((int64_t)mcause < 0)  /* nothing here enables interrupts */
    guest_unexpected_trap(mcause, mepc, mtval);
  if (trap_count < LOG_SIZE) {
    volatile struct trap_record *t = &trap_log[trap_count];
    t->mcause = mcause;
    t->mepc = mepc;
    t->mtval = mtval;
    t->mpp = (mstatus & MSTATUS_MPP) >> 11;
  }
  trap_count++;

  uint64_t next;
  if (mcause == MCAUSE_ECALL_U && regs[REG_A7] == ECALL_LEAVE_USER) {
    /* Back to M-mode, into run_user's epilogue. */
    next = (uint64_t)user_return;
    __asm__ volatile("csrs mstatus, %0" : : "r"(MSTATUS_MPP));
  } else if (trap_resume) {
    next = trap_resume;
    trap_resume = 0;
  } else {
    uint16_t parcel = *(volatile uint16_t *)mepc;
    next = mepc + ((parcel & 3) == 3 ? 4 : 2);
  }
  __asm__ volatile("csrw mepc, %0" : : "r"(next));
}

/* The vector saves all registers on the current stack (M- and U-mode code
 * share one stack here), calls traps_handle and returns with mret. */
__asm__(
    "  .text\n"
    "  .balign 4\n"
    "  .globl trap_vector\n"
    "trap_vector:\n"
    "  addi sp, sp, -256\n"
    "  sd x1, 8(sp)\n  sd x3, 24(sp)\n  sd x4, 32(sp)\n"
    "  sd x5, 40(sp)\n  sd x6, 48(sp)\n  sd x7, 56(sp)\n  sd x8, 64(sp)\n"
    "  sd x9, 72(sp)\n  sd x10, 80(sp)\n  sd x11, 88(sp)\n  sd x12, 96(sp)\n"
    "  sd x13, 104(sp)\n  sd x14, 112(sp)\n  sd x15, 120(sp)\n  sd x16, 128(sp)\n"
    "  sd x17, 136(sp)\n  sd x18, 144(sp)\n  sd x19, 152(sp)\n  sd x20, 160(sp)\n"
    "  sd x21, 168(sp)\n  sd x22, 176(sp)\n  sd x23, 184(sp)\n  sd x24, 192(sp)\n"
    "  sd x25, 200(sp)\n  sd x26, 208(sp)\n  sd x27, 216(sp)\n  sd x28, 224(sp)\n"
    "  sd x29, 232(sp)\n  sd x30, 240(sp)\n  sd x31, 248(sp)\n"
    "  mv a0, sp\n"
    "  call traps_handle\n"
    "  ld x1, 8(sp)\n  ld x3, 24(sp)\n  ld x4, 32(sp)\n"
    "  ld x5, 40(sp)\n  ld x6, 48(sp)\n  ld x7, 56(sp)\n  ld x8, 64(sp)\n"
    "  ld x9, 72(sp)\n  ld x10, 80(sp)\n  ld x11, 88(sp)\n  ld x12, 96(sp)\n"
    "  ld x13, 104(sp)\n  ld x14, 112(sp)\n  ld x15, 120(sp)\n  ld x16, 128(sp)\n"
    "  ld x17, 136(sp)\n  ld x18, 144(sp)\n  ld x19, 152(sp)\n  ld x20, 160(sp)\n"
    "  ld x21, 168(sp)\n  ld x22, 176(sp)\n  ld x23, 184(sp)\n  ld x24, 192(sp)\n"
    "  ld x25, 200(sp)\n  ld x26, 208(sp)\n  ld x27, 216(sp)\n  ld x28, 224(sp)\n"
    "  ld x29, 232(sp)\n  ld x30, 240(sp)\n  ld x31, 248(sp)\n"
    "  addi sp, sp, 256\n"
    "  mret\n");

/* void run_user(void (*fn)(void)): runs fn in U-mode on the current stack.
 * fn returns into user_exit, whose ecall the handler turns into a return
 * to user_return in M-mode. The handler restores U-mode's registers as for
 * any trap; user_return then reloads M-mode's sp and callee-saved
 * registers from the frame saved here. */
__asm__(
    "  .text\n"
    "  .globl run_user\n"
    "run_user:\n"
    "  addi sp, sp, -112\n"
    "  sd ra, 0(sp)\n  sd s0, 8(sp)\n  sd s1, 16(sp)\n  sd s2, 24(sp)\n"
    "  sd s3, 32(sp)\n  sd s4, 40(sp)\n  sd s5, 48(sp)\n  sd s6, 56(sp)\n"
    "  sd s7, 64(sp)\n  sd s8, 72(sp)\n  sd s9, 80(sp)\n  sd s10, 88(sp)\n"
    "  sd s11, 96(sp)\n"
    "  la t0, saved_m_sp\n"
    "  sd sp, 0(t0)\n"
    "  csrw mepc, a0\n"
    "  li t0, 3 << 11\n"
    "  csrc mstatus, t0\n" /* MPP = U */
    "  la ra, user_exit\n"
    "  mret\n"
    "user_exit:\n"
    "  li a7, 0x55\n" /* ECALL_LEAVE_USER */
    "  ecall\n"
    "  .globl user_return\n"
    "user_return:\n"
    "  la t0, saved_m_sp\n"
    "  ld sp, 0(t0)\n"
    "  ld ra, 0(sp)\n  ld s0, 8(sp)\n  ld s1, 16(sp)\n  ld s2, 24(sp)\n"
    "  ld s3, 32(sp)\n  ld s4, 40(sp)\n  ld s5, 48(sp)\n  ld s6, 56(sp)\n"
    "  ld s7, 64(sp)\n  ld s8, 72(sp)\n  ld s9, 80(sp)\n  ld s10, 88(sp)\n"
    "  ld s11, 96(sp)\n"
    "  addi sp, sp, 112\n"
    "  ret\n");

uint64_t saved_m_sp;
void run_user(void (*fn)(void));
extern char trap_vector[];

/* Runs `insn`, which should trap, and resumes after it; evaluates to the
 * instruction's address. trap_resume is cleared afterwards in case it did
 * not trap, so a stale value cannot redirect a later trap. */
#define TRAP_AT(insn, ...)                                      \
  ({                                                            \
    uint64_t at_;                                               \
    __asm__ volatile("la t0, 1f\n"                              \
                     "sd t0, %1\n"                              \
                     "la %0, 2f\n"                              \
                     "2: " insn "\n"                            \
                     "1: sd zero, %1\n"                         \
                     : "=&r"(at_), "+m"(trap_resume)            \
                     : __VA_ARGS__                              \
                     : "t0", "memory");                         \
    at_;                                                        \
  })

static unsigned traps_checked;

/* Checks the next logged trap: one must have happened, with this cause,
 * at this address, taken from privilege mode `mpp` (0 = U, 3 = M).
 * Returns it for further checks. */
static volatile struct trap_record *expect_trap(uint64_t cause, uint64_t epc,
                                                uint64_t mpp) {
  CHECK(trap_count > traps_checked);
  CHECK(traps_checked < LOG_SIZE);
  volatile struct trap_record *t = &trap_log[traps_checked++];
  CHECK_EQ(t->mcause, cause);
  if (epc) CHECK_EQ(t->mepc, epc);
  CHECK_EQ(t->mpp, mpp);
  return t;
}

/* Writes to PMP CSRs, needed on implementations with PMP so that U-mode
 * may access memory at all; tolerated if they trap (no PMP). */
static void open_pmp(void) {
  TRAP_AT("csrw pmpaddr0, %2", "r"(~0ull));  /* all of memory ... */
  TRAP_AT("csrw pmpcfg0, %2", "r"(0x1full)); /* ... NAPOT, R+W+X */
  traps_checked = trap_count;
}

static void machine_mode(void) {
  uint64_t at = TRAP_AT("ecall", "i"(0));
  expect_trap(MCAUSE_ECALL_M, at, 3);

  at = TRAP_AT("ebreak", "i"(0));
  expect_trap(MCAUSE_BREAKPOINT, at, 3);

  at = TRAP_AT(".word 0", "i"(0));
  volatile struct trap_record *t = expect_trap(MCAUSE_ILLEGAL, at, 3);
  CHECK_EQ(t->mtval, 0); /* either 0 or the instruction bits: 0 both ways */

  at = TRAP_AT("ld t1, 0(%2)", "r"(KSIM_UNMAPPED_ADDR + 8));
  t = expect_trap(MCAUSE_LOAD_FAULT, at, 3);
  CHECK_EQ(t->mtval, KSIM_UNMAPPED_ADDR + 8);

  at = TRAP_AT("sw zero, 4(%2)", "r"(KSIM_UNMAPPED_ADDR));
  t = expect_trap(MCAUSE_STORE_FAULT, at, 3);
  CHECK_EQ(t->mtval, KSIM_UNMAPPED_ADDR + 4);

  /* 0x7c0 is in the custom M-mode read/write range; ksim implements none. */
  at = TRAP_AT("csrr t1, 0x7c0", "i"(0));
  t = expect_trap(MCAUSE_ILLEGAL, at, 3);
  uint32_t bits = *(volatile uint32_t *)at;
  CHECK(t->mtval == 0 || t->mtval == bits);

  /* Without a resume label the handler skips the instruction by length. */
  uint64_t after;
  __asm__ volatile("li %0, 0\n ecall\n li %0, 1\n" : "=&r"(after) : : "memory");
  CHECK_EQ(after, 1);
  expect_trap(MCAUSE_ECALL_M, 0, 3);
  CHECK_EQ(trap_count, traps_checked); /* nothing unexpected so far */
}

/* Runs in U-mode; main checks what it left behind. */
static volatile uint64_t user_ran, user_csr_at, user_ecall_at;
static void user_body(void) {
  user_ran = 1;
  user_csr_at = TRAP_AT("csrr t1, mstatus", "i"(0));
  user_ecall_at = TRAP_AT("ecall", "i"(0));
}

static void user_mode(void) {
  run_user(user_body);
  CHECK_EQ(user_ran, 1);
  expect_trap(MCAUSE_ILLEGAL, user_csr_at, 0); /* M-mode CSR from U */
  expect_trap(MCAUSE_ECALL_U, user_ecall_at, 0);
  expect_trap(MCAUSE_ECALL_U, 0, 0); /* run_user's way back to M */
  CHECK_EQ(trap_count, traps_checked);
  /* Back in M-mode: reading mstatus must not trap. The mret that got us
   * here leaves MPP at the least-privileged mode, U (0). */
  uint64_t mstatus;
  __asm__ volatile("csrr %0, mstatus" : "=r"(mstatus));
  CHECK_EQ(trap_count, traps_checked);
  CHECK_EQ((mstatus & MSTATUS_MPP) >> 11, 0);
}

int main(void) {
  __asm__ volatile("csrw mtvec, %0" : : "r"(trap_vector));
  open_pmp();
  machine_mode();
  user_mode();
  printf("traps: %u checks passed\n", guest_checks_run);
  return 0;
}
