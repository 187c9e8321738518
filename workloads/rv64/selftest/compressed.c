/* The C extension on RV64: each 16-bit form written out as "c.*" so the
 * assembler cannot choose the 32-bit encoding instead. Covers the RV64
 * specifics (c.addiw, c.subw/c.addw sign extension, c.ldsp/c.sdsp, 6-bit
 * shift amounts) and the forms whose immediates are scaled or split
 * (c.addi16sp, c.addi4spn, c.lui). c.jal is RV32-only and absent here.
 *
 * Inputs and outputs go through a0..a5 (x10..x15): most compressed forms
 * can only name x8..x15. The asm clobbers them, so GCC keeps its own
 * operands elsewhere. */
#include "libguest.h"

#define RVC_BEGIN ".option push\n.option rvc\n"
#define RVC_END ".option pop\n"

/* a0 = a; a1 = b; <body> ; result = a0 */
#define C2(body, a, b)                                                   \
  ({                                                                     \
    uint64_t r_;                                                         \
    __asm__ volatile(RVC_BEGIN "mv a0, %1\nmv a1, %2\n" body "\nmv %0, a0\n" RVC_END \
                     : "=r"(r_)                                          \
                     : "r"((uint64_t)(a)), "r"((uint64_t)(b))            \
                     : "a0", "a1");                                      \
    r_;                                                                  \
  })
#define C1(body, a) C2(body, a, 0)

#define SEXT32(x) ((uint64_t)(int64_t)(int32_t)(uint32_t)(x))

static void arithmetic(void) {
  CHECK_EQ(C1("c.addi a0, -1", 0), ~0ull);
  CHECK_EQ(C1("c.addi a0, 31", 1), 32);
  CHECK_EQ(C1("c.li a0, -32", 0), (uint64_t)-32);
  CHECK_EQ(C1("c.li a0, 31", 0), 31);
  CHECK_EQ(C1("c.lui a0, 0xfffff", 0), 0xfffffffffffff000ull); /* sign-extended */
  CHECK_EQ(C1("c.lui a0, 0x1f", 0), 0x1f000);
  CHECK_EQ(C1("c.addiw a0, 1", 0x7fffffff), SEXT32(0x80000000u));
  CHECK_EQ(C1("c.addiw a0, 0", 0x180000000ull), SEXT32(0x80000000u)); /* sext.w */
  CHECK_EQ(C2("c.addw a0, a1", 0x7fffffff, 1), SEXT32(0x80000000u));
  CHECK_EQ(C2("c.subw a0, a1", 0x80000000ull, 1), 0x7fffffff);
  CHECK_EQ(C2("c.subw a0, a1", 0, 0x80000000ull), SEXT32(0x80000000u));
  CHECK_EQ(C2("c.add a0, a1", 0xffffffffffffffffull, 2), 1);
  CHECK_EQ(C2("c.sub a0, a1", 0, 1), ~0ull);
  CHECK_EQ(C2("c.mv a0, a1", 1, 0x123456789abcdef0ull), 0x123456789abcdef0ull);
  CHECK_EQ(C2("c.and a0, a1", 0xff00ff00ff00ff00ull, 0x0ff00ff00ff00ff0ull), 0x0f000f000f000f00ull);
  CHECK_EQ(C2("c.or a0, a1", 0xff00000000000000ull, 0xffull), 0xff000000000000ffull);
  CHECK_EQ(C2("c.xor a0, a1", 0xaaaaaaaaaaaaaaaaull, ~0ull), 0x5555555555555555ull);
  CHECK_EQ(C1("c.andi a0, -4", ~0ull), ~3ull);  /* immediate sign-extended */
  CHECK_EQ(C1("c.andi a0, 0x1f", ~0ull), 0x1f);
}

static void shifts(void) {
  CHECK_EQ(C1("c.slli a0, 63", 1), 0x8000000000000000ull);
  CHECK_EQ(C1("c.slli a0, 4", 0x0123456789abcdefull), 0x123456789abcdef0ull);
  CHECK_EQ(C1("c.srli a0, 60", 0xf000000000000000ull), 0xf);
  CHECK_EQ(C1("c.srli a0, 32", 0xffffffff00000000ull), 0xffffffff);
  CHECK_EQ(C1("c.srai a0, 3", (uint64_t)-64), (uint64_t)-8);
  CHECK_EQ(C1("c.srai a0, 63", 0x8000000000000000ull), ~0ull);
}

static void stack_forms(void) {
  uint64_t dist, d64, w32, spn;
  __asm__ volatile(RVC_BEGIN
                   "mv a2, sp\n"
                   "c.addi16sp sp, -64\n"
                   "sub %0, a2, sp\n"             /* 64 */
                   "c.addi4spn a3, sp, 24\n"
                   "sub %3, a3, sp\n"             /* 24 */
                   "li a4, 0x1122334455667788\n"
                   "c.sdsp a4, 8(sp)\n"
                   "c.ldsp a5, 8(sp)\n"
                   "mv %1, a5\n"
                   "li a4, 0x80000000\n"
                   "c.swsp a4, 16(sp)\n"
                   "c.lwsp a5, 16(sp)\n"          /* sign-extends */
                   "mv %2, a5\n"
                   "c.addi16sp sp, 64\n" RVC_END
                   : "=&r"(dist), "=&r"(d64), "=&r"(w32), "=&r"(spn)
                   :
                   : "a2", "a3", "a4", "a5", "memory");
  CHECK_EQ(dist, 64);
  CHECK_EQ(spn, 24);
  CHECK_EQ(d64, 0x1122334455667788ull);
  CHECK_EQ(w32, SEXT32(0x80000000u));
}

static void register_loads_stores(void) {
  static uint64_t mem[4];
  uint64_t d, w;
  __asm__ volatile(RVC_BEGIN
                   "mv a1, %2\n"
                   "li a2, 0xfedcba9876543210\n"
                   "c.sd a2, 8(a1)\n"
                   "c.ld a3, 8(a1)\n"
                   "mv %0, a3\n"
                   "li a2, 0xffffffff9abcdef0\n"
                   "c.sw a2, 16(a1)\n"
                   "c.lw a3, 16(a1)\n"
                   "mv %1, a3\n" RVC_END
                   : "=&r"(d), "=&r"(w)
                   : "r"(mem)
                   : "a1", "a2", "a3", "memory");
  CHECK_EQ(d, 0xfedcba9876543210ull);
  CHECK_EQ(w, SEXT32(0x9abcdef0u));
  CHECK_EQ(mem[1], 0xfedcba9876543210ull);
  CHECK_EQ(mem[2] & 0xffffffffu, 0x9abcdef0u); /* c.sw wrote 4 bytes */
}

/* Each returns 0 when control went where it should. */
static void control_flow(void) {
  uint64_t r;
  /* c.beqz taken */
  __asm__ volatile(RVC_BEGIN "li a0, 0\nli %0, 0\nc.beqz a0, 1f\nli %0, 1\n1:\n" RVC_END
                   : "=&r"(r) : : "a0");
  CHECK_EQ(r, 0);
  /* c.beqz not taken */
  __asm__ volatile(RVC_BEGIN "li a0, 5\nli %0, 1\nc.beqz a0, 1f\nli %0, 0\n1:\n" RVC_END
                   : "=&r"(r) : : "a0");
  CHECK_EQ(r, 0);
  /* c.bnez taken on a value with only bit 63 set */
  __asm__ volatile(RVC_BEGIN "li a0, 1\nc.slli a0, 63\nli %0, 0\nc.bnez a0, 1f\nli %0, 1\n1:\n" RVC_END
                   : "=&r"(r) : : "a0");
  CHECK_EQ(r, 0);
  /* c.j */
  __asm__ volatile(RVC_BEGIN "li %0, 0\nc.j 1f\nli %0, 1\n1:\n" RVC_END : "=&r"(r));
  CHECK_EQ(r, 0);
  /* c.jr */
  __asm__ volatile(RVC_BEGIN "la t0, 1f\nli %0, 1\nc.jr t0\nli %0, 2\n1:\naddi %0, %0, -1\n" RVC_END
                   : "=&r"(r) : : "t0");
  CHECK_EQ(r, 0);
  /* c.jalr links pc + 2 */
  __asm__ volatile(RVC_BEGIN
                   "li %0, 1\n"
                   "la t0, 2f\n"
                   "c.jalr t0\n"
                   "1: j 3f\n"
                   "2: la t1, 1b\n"
                   "sub %0, ra, t1\n"
                   "3:\n" RVC_END
                   : "=&r"(r) : : "t0", "t1", "ra");
  CHECK_EQ(r, 0);
}

int main(void) {
  arithmetic();
  shifts();
  stack_forms();
  register_loads_stores();
  control_flow();
  printf("compressed: %u checks passed\n", guest_checks_run);
  return 0;
}
