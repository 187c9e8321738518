// The generator and runner of tests/support/smp_programs.hpp.
#include "support/smp_programs.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>
#include <stdexcept>

#include "cpu/rv64/disasm.hpp"
#include "cpu/rv64/hart.hpp"
#include "cpu/rv64/insn.hpp"
#include "cpu/x86/insn.hpp"
#include "cpu/x86/x86_cpu.hpp"
#include "mem/memory_map.hpp"
#include "sim/events.hpp"
#include "support/rv64_asm.hpp"

namespace ksim::test::smp {

namespace {

// Layout, as offsets from the RAM base. Every CPU's code has a region of
// its own; the third CPU's crosses from the first code page into the
// second. The data areas are either on the second code page, after the
// code (beside code), or on pages of their own.
constexpr uint64_t kCodeRegion = 0x600;
constexpr int kMaxCpus = 4;
constexpr uint64_t kCodeEnd = kCodeRegion * kMaxCpus;  // 0x1800
constexpr uint64_t kCodeAnchor = 0xc00;                // the code base register points here
constexpr uint64_t kSharedSize = 0x200;                // two ownership blocks
constexpr uint64_t kPrivateSize = 0x100;               // one block per CPU
constexpr uint64_t kImageSize = 0x4000;

struct Areas {
  uint64_t shared, priv, sync;  // offsets; CPU i's private block is priv + i * kPrivateSize
};
Areas areas(bool beside_code) {
  return beside_code ? Areas{0x1800, 0x1a00, 0x1e00} : Areas{0x3000, 0x2000, 0x3400};
}

uint64_t mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

struct Rng {
  std::mt19937_64 g;
  explicit Rng(uint64_t s) : g(s) {}
  uint64_t below(uint64_t n) { return n ? g() % n : 0; }
  bool chance(unsigned one_in) { return below(one_in) == 0; }
  int64_t range(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(below(static_cast<uint64_t>(hi - lo + 1))); }
  template <typename T>
  T pick(const std::vector<T>& v) { return v[below(v.size())]; }
  // A register value: small numbers, edges and random words.
  uint64_t value() {
    switch (below(4)) {
      case 0: return below(16);
      case 1: return pick(std::vector<uint64_t>{0, 1, ~uint64_t{0}, 0x7fffffffffffffffull, 0x8000000000000000ull,
                                                0xffffffffull, 0x80000000ull});
      default: return g();
    }
  }
};

// Bytes at increasing addresses of the image.
struct Emitter {
  std::vector<uint8_t>& img;
  uint64_t base, pc;  // pc: absolute
  void b(uint8_t v) { img[pc++ - base] = v; }
  void w16(uint16_t v) { b(v & 0xff), b(v >> 8); }
  void w32(uint32_t v) { w16(v & 0xffff), w16(v >> 16); }
  void d32(int32_t v) { w32(static_cast<uint32_t>(v)); }
  void put32(uint64_t at, uint32_t v) { std::memcpy(&img[at - base], &v, 4); }
};

// Where `width` bytes of data go: the shared area or the CPU's private
// block (now and then another CPU's: `shift` bytes from its own), at
// offset `off`, aligned unless not `aligned`; a misaligned access to the
// shared area now and then crosses from its first block into the second.
struct Place {
  bool priv;
  int64_t shift;
  uint64_t off;
};
Place place(Rng& rng, int cpu, int cpus, unsigned width, bool aligned) {
  Place pl{rng.below(2) != 0, 0, 0};
  if (pl.priv && cpus > 1 && rng.chance(8)) pl.shift = (static_cast<int64_t>(rng.below(cpus)) - cpu) * kPrivateSize;
  pl.off = rng.below((pl.priv ? kPrivateSize : kSharedSize) - width + 1);
  if (aligned) pl.off &= ~uint64_t{width - 1};
  if (!aligned && !pl.priv && width > 1 && rng.chance(3)) pl.off = 0x100 - rng.range(1, width - 1);
  return pl;
}

// What pass 2 fills in once every CPU's code (and so every patch slot) is
// laid out: a store into a slot, or a load of code as data.
struct Fixup {
  enum Kind { patch_word, patch_half, patch_byte, load_code } kind;
  uint64_t at;     // the placeholder's first byte
  unsigned width;  // load_code: bytes loaded
};

// --- RV64 ---------------------------------------------------------------------

namespace r = rv;
constexpr uint32_t kShared = r::s0, kPrivate = r::s1, kCodeReg = r::s2, kSync = r::s3, kLoop = r::s4;
constexpr uint32_t kAddr = r::t6, kValue = r::t5, kRounds = r::s11;
const std::vector<uint32_t> kData = {r::ra, r::sp, r::gp, r::tp, r::t0, r::t1, r::t2, r::a0, r::a1, r::a2, r::a3,
                                     r::a4, r::a5, r::a6, r::a7, r::s5, r::s6, r::s7, r::s8, r::s9, r::s10,
                                     r::t3, r::t4, r::t5};
const std::vector<uint32_t> kDataC = {r::a0, r::a1, r::a2, r::a3, r::a4, r::a5};  // compressed rd'

uint32_t addi_enc(uint32_t rd, int32_t imm) { return r::addi(rd, rd, imm); }

struct Rv64Gen {
  Rng& rng;
  Emitter e;
  const Areas& a;
  int cpu, cpus;
  std::vector<uint64_t>& slots;
  std::vector<Fixup>& fixups;

  void w(uint32_t insn) { e.w32(insn); }
  uint32_t data() { return rng.pick(kData); }
  void alu() {
    static const std::vector<std::pair<uint32_t, uint32_t>> rr = {
        {0, 0}, {0x20, 0}, {0, 1}, {0, 2}, {0, 3}, {0, 4}, {0, 5}, {0x20, 5}, {0, 6}, {0, 7},
        {1, 0}, {1, 1}, {1, 3}, {1, 4}, {1, 5}, {1, 6}, {1, 7}};
    switch (rng.below(4)) {
      case 0: {
        const auto [f7, f3] = rng.pick(rr);
        return w(r::op(f7, f3, data(), data(), data()));
      }
      case 1: {
        static const std::vector<std::pair<uint32_t, uint32_t>> rw = {{0, 0}, {0x20, 0}, {0, 1}, {0, 5}, {1, 0}, {1, 4}};
        const auto [f7, f3] = rng.pick(rw);
        return w(r::op32(f7, f3, data(), data(), data()));
      }
      case 2: {
        const uint32_t f3 = rng.pick(std::vector<uint32_t>{0, 2, 3, 4, 6, 7});
        return w(r::I(static_cast<int32_t>(rng.range(-2048, 2047)), data(), f3, data(), 0x13));
      }
      default: {
        const uint32_t sh = static_cast<uint32_t>(rng.below(64));
        const uint32_t kind = rng.pick(std::vector<uint32_t>{0x1000, 0x5000, 0x40005000});
        return w(r::I(0, data(), 0, data(), 0x13) | kind | sh << 20);  // slli / srli / srai
      }
    }
  }
  // A base register and offset for `width` bytes of data (place()).
  std::pair<uint32_t, int32_t> target(unsigned width, bool aligned) {
    const Place pl = place(rng, cpu, cpus, width, aligned);
    const uint32_t reg = pl.priv ? kPrivate : kShared;
    if (pl.shift) {
      w(r::addi(kAddr, reg, static_cast<int32_t>(pl.shift)));
      return {kAddr, static_cast<int32_t>(pl.off)};
    }
    return {reg, static_cast<int32_t>(pl.off)};
  }
  void load() {
    static const std::vector<std::pair<uint32_t, unsigned>> forms = {{0, 1}, {1, 2}, {2, 4}, {3, 8}, {4, 1}, {5, 2}, {6, 4}};
    const auto [f3, width] = rng.pick(forms);
    const auto [reg, off] = target(width, !rng.chance(8));
    w(r::I(off, reg, f3, data(), 0x03));
  }
  void store() {
    const uint32_t f3 = static_cast<uint32_t>(rng.below(4));
    const auto [reg, off] = target(1u << f3, !rng.chance(8));
    w(r::S(off, data(), reg, f3));
  }
  void lrsc() {
    const bool d = rng.below(2);
    const unsigned width = d ? 8 : 4;
    const auto [reg, off] = target(width, true);
    w(r::addi(kAddr, reg, off));
    const uint32_t f3 = d ? 3 : 2;
    const uint32_t aqrl = static_cast<uint32_t>(rng.below(4)) << 25;
    if (!rng.chance(5)) w(r::amo(0x02, f3, data(), kAddr, 0) | aqrl);  // else: an SC with no LR
    for (uint64_t n = rng.below(4); n; --n) alu();
    if (rng.chance(8)) w(r::addi(kAddr, kAddr, static_cast<int32_t>(width)));  // SC elsewhere
    if (!rng.chance(8)) w(r::amo(0x03, f3, data(), kAddr, data()) | aqrl);     // else: an LR left alone
  }
  void amo() {
    const bool d = rng.below(2);
    const auto [reg, off] = target(d ? 8 : 4, true);
    w(r::addi(kAddr, reg, off));
    const uint32_t f5 = rng.pick(std::vector<uint32_t>{0x00, 0x01, 0x04, 0x08, 0x0c, 0x10, 0x14, 0x18, 0x1c});
    w(r::amo(f5, d ? 3 : 2, data(), kAddr, data()) | static_cast<uint32_t>(rng.below(4)) << 25);
  }
  void align4() {
    if (e.pc & 2) e.w16(0x0001);  // c.nop
  }
  void slot() {
    align4();
    slots.push_back(e.pc);
    const uint32_t rd = data();
    w(addi_enc(rd, static_cast<int32_t>(rng.range(-2048, 2047))));
  }
  void patch() {
    const unsigned kind = static_cast<unsigned>(rng.below(4));
    fixups.push_back({kind == 0 ? Fixup::patch_half : Fixup::patch_word, e.pc, 4});
    for (int i = 0; i < 4; ++i) w(r::nop);  // lui, addi (the value); addi, sw/sh (the address)
  }
  void load_code() {
    static const std::vector<unsigned> widths = {1, 2, 4, 4, 8};
    fixups.push_back({Fixup::load_code, e.pc, rng.pick(widths)});
    w(r::nop);
    w(r::nop);
  }
  void delay() {
    w(r::addi(kLoop, r::zero, static_cast<int32_t>(rng.range(1, 40))));
    w(r::addi(kLoop, kLoop, -1));
    w(r::B(-4, r::zero, kLoop, 1));  // bne
  }
  void skip() {
    w(r::B(8, data(), data(), rng.below(2) ? 0 : 1));  // beq / bne over the next instruction
    w(r::op(0, 0, data(), data(), data()));
  }
  void compressed() {
    const uint32_t rd = rng.pick(kDataC) - 8, rs1 = rng.below(2);  // rs1': s0 (shared) or s1 (private)
    switch (rng.below(5)) {
      case 0: {
        const uint32_t reg = data();
        int32_t imm = static_cast<int32_t>(rng.range(-32, 30));
        if (imm >= 0) ++imm;  // non-zero
        const auto u = static_cast<uint32_t>(imm);
        return e.w16(static_cast<uint16_t>((u >> 5 & 1) << 12 | reg << 7 | (u & 0x1f) << 2 | 1));
      }
      case 1:
      case 3: {  // c.lw / c.sw: offset 4-aligned, up to 124
        const uint32_t off = static_cast<uint32_t>(rng.below(32)) * 4;
        const uint32_t f3 = rng.below(2) ? 2 : 6;
        return e.w16(static_cast<uint16_t>(f3 << 13 | (off >> 3 & 7) << 10 | rs1 << 7 | (off >> 2 & 1) << 6 |
                                           (off >> 6 & 1) << 5 | rd << 2));
      }
      default: {  // c.ld / c.sd: offset 8-aligned, up to 248
        const uint32_t off = static_cast<uint32_t>(rng.below(32)) * 8;
        const uint32_t f3 = rng.below(2) ? 3 : 7;
        return e.w16(static_cast<uint16_t>(f3 << 13 | (off >> 3 & 7) << 10 | rs1 << 7 | (off >> 6 & 3) << 5 | rd << 2));
      }
    }
  }
  void op() {
    // Weights: plain work first, then what exercises the sync points.
    const uint64_t k = rng.below(100);
    if (k < 14) return alu();
    if (k < 30) return load();
    if (k < 43) return store();
    if (k < 50) return lrsc();
    if (k < 57) return amo();
    if (k < 60) return w(rng.below(2) ? 0x0330000f : 0x0ff0000f);  // fence rw,rw / fence iorw,iorw
    if (k < 64) return w(r::fence_i);
    if (k < 71) return slot();
    if (k < 78) return patch();
    if (k < 83) return load_code();
    if (k < 88) return delay();
    if (k < 92) return skip();
    return compressed();
  }
  // The body runs `rounds` times, so that code other CPUs rewrite runs again.
  uint64_t body = 0;
  void begin(int rounds) {
    w(r::li(kRounds, rounds));
    body = e.pc;
  }
  void end() {
    w(r::addi(kRounds, kRounds, -1));
    w(r::B(static_cast<int32_t>(body - e.pc), r::zero, kRounds, 1));  // bne s11, zero, body
    align4();
    w(r::li(r::t0, 1));
    w(r::amo(0x00, 2, r::zero, kSync, r::t0));  // amoadd.w zero, t0, (s3)
    if (cpu == 0) {
      w(r::li(r::t2, cpus));
      w(r::lw(r::t1, kSync, 0));
      w(r::B(-4, r::t2, r::t1, 1));  // bne t1, t2, back to the load
      w(r::lui(r::t1, static_cast<uint32_t>(memmap::kFinisherBase >> 12)));
      w(r::lui(r::t2, memmap::kFinisherPass >> 12));
      w(r::addi(r::t2, r::t2, memmap::kFinisherPass & 0xfff));
      w(r::sw(r::t2, r::t1, 0));
    }
    w(r::J(0, r::zero));  // j .
  }
};

// Splits `delta` (|delta| < 4096) into two 12-bit signed immediates.
std::pair<int32_t, int32_t> split(int64_t delta) {
  const int64_t first = delta / 2;
  return {static_cast<int32_t>(first), static_cast<int32_t>(delta - first)};
}

void fill_rv64(Program& p, Rng& rng, const std::vector<uint64_t>& slots, const std::vector<Fixup>& fixups) {
  Emitter e{p.image, p.base, 0};
  const uint64_t anchor = p.base + kCodeAnchor;
  for (const Fixup& f : fixups) {
    e.pc = f.at;
    if (f.kind == Fixup::load_code) {
      uint64_t addr = slots.empty() || rng.chance(3) ? p.base + rng.below(kCodeEnd - 8) : rng.pick(slots);
      addr &= ~uint64_t{f.width - 1};
      const auto [o1, o2] = split(static_cast<int64_t>(addr - anchor));
      static const uint32_t f3_of[9] = {0, 4, 5, 0, 6, 0, 0, 0, 3};  // lbu lhu lwu ld
      e.w32(r::addi(kAddr, kCodeReg, o1));
      e.w32(r::I(o2, kAddr, f3_of[f.width], rng.pick(kData), 0x03));
      continue;
    }
    if (slots.empty()) continue;  // stays four nops
    const uint64_t slot = rng.pick(slots);
    uint32_t old = 0;
    std::memcpy(&old, &p.image[slot - p.base], 4);
    // The slot's register, or now and then another one: `addi rd, rs1, imm`.
    const uint32_t rd = old >> 7 & 31;
    const uint32_t enc = r::addi(rd, rng.chance(4) ? rng.pick(kData) : rd, static_cast<int32_t>(rng.range(-2048, 2047)));
    const bool high = f.kind == Fixup::patch_half && rng.below(2);
    const uint32_t value = f.kind == Fixup::patch_half ? (high ? enc >> 16 : enc & 0xffff) : enc;
    const int32_t lo = static_cast<int32_t>(value << 20) >> 20;
    const uint32_t hi = (value - static_cast<uint32_t>(lo)) >> 12;
    e.w32(r::lui(kValue, hi & 0xfffff));
    e.w32(r::addi(kValue, kValue, lo));
    const auto [o1, o2] = split(static_cast<int64_t>(slot + (high ? 2 : 0) - anchor));
    e.w32(r::addi(kAddr, kCodeReg, o1));
    e.w32(f.kind == Fixup::patch_half ? r::sh(kValue, kAddr, o2) : r::sw(kValue, kAddr, o2));
  }
}

// --- x86-64 ---------------------------------------------------------------------

enum X : int { rax = 0, rcx, rdx, rbx, rsp, rbp, rsi, rdi, r8, r9, r10, r11, r12, r13, r14, r15 };
constexpr int kXShared = rsi, kXPrivate = rdi, kXCode = rbp, kXSync = r15, kXLoop = rbx, kXValue = r13;
constexpr int kXRounds = r14;
const std::vector<int> kXData = {rax, rcx, rdx, r8, r9, r10, r11, r12};

struct X86Gen {
  Rng& rng;
  Emitter e;
  const Areas& a;
  int cpu, cpus;
  std::vector<uint64_t>& slots;
  std::vector<Fixup>& fixups;

  int data() { return rng.pick(kXData); }
  void rex(bool w, int reg, int rm, bool force = false) {
    const auto v = static_cast<uint8_t>(0x40 | w << 3 | (reg >> 3) << 2 | (rm >> 3));
    if (v != 0x40 || force) e.b(v);
  }
  void mem(int reg, int base, int32_t disp) {  // [base + disp32]; base is never rsp or r12
    e.b(static_cast<uint8_t>(0x80 | (reg & 7) << 3 | (base & 7)));
    e.d32(disp);
  }
  void rr(int reg, int rm) { e.b(static_cast<uint8_t>(0xc0 | (reg & 7) << 3 | (rm & 7))); }
  std::pair<int, int32_t> target(unsigned width, bool aligned) {
    const Place pl = place(rng, cpu, cpus, width, aligned);
    return {pl.priv ? kXPrivate : kXShared, static_cast<int32_t>(static_cast<int64_t>(pl.off) + pl.shift)};
  }
  void alu() {
    const int d = data(), s = data();
    switch (rng.below(4)) {
      case 0:
        rex(true, s, d);
        e.b(rng.pick(std::vector<uint8_t>{0x01, 0x29, 0x31, 0x21, 0x09, 0x11, 0x19, 0x39}));
        return rr(s, d);
      case 1:
        rex(true, d, s);
        e.b(0x0f), e.b(0xaf);  // imul d, s
        return rr(d, s);
      case 2:
        rex(true, 0, d);
        e.b(0x81);
        rr(rng.pick(std::vector<int>{0, 1, 4, 5, 6}), d);
        return e.d32(static_cast<int32_t>(rng.value()));
      default:
        rex(true, 0, d);
        e.b(0xc1);
        rr(rng.pick(std::vector<int>{4, 5, 7}), d);
        return e.b(static_cast<uint8_t>(rng.below(64)));
    }
  }
  void load() {
    const unsigned kind = static_cast<unsigned>(rng.below(5));
    static const unsigned width[5] = {8, 4, 1, 2, 4};
    const auto [base, disp] = target(width[kind], !rng.chance(8));
    const int d = data();
    rex(kind == 0 || kind == 4, d, base);
    if (kind <= 1) e.b(0x8b);
    else if (kind == 4) e.b(0x63);                  // movsxd
    else e.b(0x0f), e.b(kind == 2 ? 0xb6 : 0xb7);  // movzx
    mem(d, base, disp);
  }
  void store() {
    const unsigned width = 1u << rng.below(4);
    const auto [base, disp] = target(width, !rng.chance(8));
    const int s = data();
    if (width == 2) e.b(0x66);
    rex(width == 8, s, base, width == 1);
    e.b(width == 1 ? 0x88 : 0x89);
    mem(s, base, disp);
  }
  void rmw() {  // read-modify-writes, mostly locked
    const bool wide = rng.below(2);
    const auto [base, disp] = target(wide ? 8 : 4, !rng.chance(10));
    const int s = data();
    const unsigned kind = static_cast<unsigned>(rng.below(7));
    if (kind != 5 && (kind == 6 ? rng.chance(2) : !rng.chance(6))) e.b(0xf0);  // lock (xchg: implied)
    rex(wide, s, base);
    switch (kind) {
      case 0: e.b(0x01); break;             // add
      case 1: e.b(0x09); break;             // or
      case 2: e.b(0x31); break;             // xor
      case 3: e.b(0x0f), e.b(0xc1); break;  // xadd
      case 4: e.b(0x0f), e.b(0xb1); break;  // cmpxchg (compares rax)
      case 5: e.b(0x87); break;             // xchg
      default: e.b(0x21); break;            // and
    }
    mem(s, base, disp);
  }
  void fence() {
    if (rng.chance(3)) return e.b(0x0f), e.b(0xa2);  // cpuid: serialising (and writes rax..rdx)
    e.b(0x0f), e.b(0xae), e.b(rng.pick(std::vector<uint8_t>{0xf0, 0xe8, 0xf8}));
  }
  void slot() {
    slots.push_back(e.pc);
    const int d = data();
    rex(true, 0, d);  // add d, imm32: REX.W 81 /0 id, the immediate at +3
    e.b(0x81);
    rr(0, d);
    e.d32(static_cast<int32_t>(rng.value()));
  }
  void patch() {
    const unsigned kind = static_cast<unsigned>(rng.below(4));
    const Fixup::Kind k = kind == 0 ? Fixup::patch_half : kind == 1 ? Fixup::patch_byte : Fixup::patch_word;
    fixups.push_back({k, e.pc, 0});
    e.b(0x41), e.b(0xbd), e.w32(0);  // mov r13d, imm32
    if (k == Fixup::patch_half) e.b(0x66);
    e.b(0x44), e.b(k == Fixup::patch_byte ? 0x88 : 0x89);  // mov [rbp + disp32], r13d / r13w / r13b
    mem(kXValue, kXCode, 0);
  }
  void load_code() {
    const unsigned kind = static_cast<unsigned>(rng.below(3));
    static const unsigned width[3] = {8, 4, 1};
    fixups.push_back({Fixup::load_code, e.pc, width[kind]});
    const int d = data();
    rex(kind == 0, d, kXCode);
    if (kind == 2) e.b(0x0f), e.b(0xb6);
    else e.b(0x8b);
    mem(d, kXCode, 0);
  }
  void delay() {
    e.b(0xbb), e.w32(static_cast<uint32_t>(rng.range(1, 40)));  // mov ebx, n
    e.b(0x48), e.b(0xff), e.b(0xcb);                            // dec rbx
    e.b(0x75), e.b(0xfb);                                       // jnz back to the dec
  }
  void skip() {
    const int x = data(), y = data();
    rex(true, y, x);
    e.b(0x39);  // cmp x, y
    rr(y, x);
    e.b(rng.below(2) ? 0x74 : 0x75), e.b(3);  // je / jne over the next instruction (3 bytes)
    const int d = data(), s = data();
    rex(true, s, d);
    e.b(0x01);
    rr(s, d);
  }
  void op() {
    const uint64_t k = rng.below(100);
    if (k < 16) return alu();
    if (k < 32) return load();
    if (k < 46) return store();
    if (k < 58) return rmw();
    if (k < 64) return fence();
    if (k < 72) return slot();
    if (k < 80) return patch();
    if (k < 85) return load_code();
    if (k < 91) return delay();
    return skip();
  }
  uint64_t body = 0;
  void begin(int rounds) {
    e.b(0x41), e.b(0xbe), e.w32(static_cast<uint32_t>(rounds));  // mov r14d, rounds
    body = e.pc;
  }
  void end() {
    e.b(0x49), e.b(0xff), e.b(0xce);                                    // dec r14
    e.b(0x0f), e.b(0x85), e.d32(static_cast<int32_t>(body - (e.pc + 4)));  // jnz body
    for (uint8_t v : {0xf0, 0x41, 0x83, 0x87, 0, 0, 0, 0, 1}) e.b(v);  // lock add dword [r15+0], 1
    if (cpu == 0) {
      for (uint8_t v : {0x41, 0x8b, 0x87, 0, 0, 0, 0}) e.b(v);  // mov eax, [r15+0]
      e.b(0x3d), e.w32(static_cast<uint32_t>(cpus));            // cmp eax, cpus
      e.b(0x75), e.b(0xf2);                                     // jne back to the load
      e.b(0xb8), e.w32(memmap::kFinisherPass);                  // mov eax, 0x5555
      e.b(0xa3);                                                // mov [moffs64], eax
      for (int i = 0; i < 8; ++i) e.b(static_cast<uint8_t>(memmap::kFinisherBase >> (8 * i)));
    }
    e.b(0xeb), e.b(0xfe);  // jmp .
  }
};

void fill_x86(Program& p, Rng& rng, const std::vector<uint64_t>& slots, const std::vector<Fixup>& fixups) {
  const uint64_t anchor = p.base + kCodeAnchor;
  auto put_disp = [&](uint64_t insn_end, int64_t disp) {
    const auto d = static_cast<int32_t>(disp);
    std::memcpy(&p.image[insn_end - 4 - p.base], &d, 4);
  };
  for (const Fixup& f : fixups) {
    if (f.kind == Fixup::load_code) {
      const uint64_t addr = slots.empty() || rng.chance(3) ? p.base + rng.below(kCodeEnd - 8) : rng.pick(slots) + rng.below(7);
      // The load: [REX] 8B|0F B6 modrm disp32; find its end from the opcode.
      uint64_t at = f.at;
      if ((p.image[at - p.base] & 0xf0) == 0x40) ++at;
      at += p.image[at - p.base] == 0x0f ? 2 : 1;
      put_disp(at + 5, static_cast<int64_t>(addr - anchor));
      continue;
    }
    if (slots.empty()) {  // no slot anywhere: store into the value's own mov instead (harmless)
      continue;
    }
    const uint64_t slot = rng.pick(slots);
    uint64_t target = slot + 3;
    uint32_t value = static_cast<uint32_t>(rng.value());
    if (f.kind == Fixup::patch_half) {
      target += rng.below(3);  // any two bytes of the immediate
    } else if (f.kind == Fixup::patch_byte) {
      if (rng.below(2)) {
        target = slot + 2;  // the ModRM byte: add becomes or, and, sub, xor or cmp
        const uint8_t modrm = p.image[target - p.base];
        value = static_cast<uint32_t>((modrm & 0xc7) | rng.pick(std::vector<unsigned>{0, 1, 4, 5, 6, 7}) << 3);
      } else {
        target += rng.below(4);
      }
    }
    std::memcpy(&p.image[f.at + 2 - p.base], &value, 4);  // mov r13d, imm32
    const uint64_t store_end = f.at + 6 + (f.kind == Fixup::patch_half ? 1 : 0) + 7;
    put_disp(store_end, static_cast<int64_t>(target - anchor));
  }
}

}  // namespace

Program generate(Isa isa, uint64_t seed, uint64_t index) {
  Rng rng(mix(mix(seed) ^ (index * 2 + (isa == Isa::x86_64 ? 1 : 0))));
  Program p;
  p.isa = isa;
  p.cpus = static_cast<int>(rng.range(2, kMaxCpus));
  p.model = rng.chance(4) ? CodeModel::strict : CodeModel::relaxed;
  p.perturb_seed = rng.below(2) ? rng.range(1, 1000) : 0;
  p.beside_code = rng.below(2);
  p.base = isa == Isa::rv64 ? memmap::kRamBase : memmap::kRamBaseX86;
  p.image.assign(kImageSize, 0);
  const Areas a = areas(p.beside_code);
  for (uint64_t off : {a.shared, a.priv})  // random data; the sync counter starts at 0
    for (uint64_t i = 0; i < (off == a.shared ? kSharedSize : kPrivateSize * kMaxCpus); ++i)
      p.image[off + i] = static_cast<uint8_t>(rng.below(256));
  std::vector<uint64_t> slots;
  std::vector<Fixup> fixups;
  const uint64_t ops_max = rng.range(8, 48);
  for (int c = 0; c < p.cpus; ++c) {
    const uint64_t start = p.base + c * kCodeRegion, limit = start + kCodeRegion - 64;
    const Emitter e{p.image, p.base, start};
    const uint64_t ops = rng.range(4, static_cast<int64_t>(ops_max));
    uint64_t end = 0;
    const int rounds = static_cast<int>(rng.chance(3) ? 1 : rng.range(2, 8));
    if (isa == Isa::rv64) {
      Rv64Gen g{rng, e, a, c, p.cpus, slots, fixups};
      g.begin(rounds);
      for (uint64_t i = 0; i < ops && g.e.pc < limit; ++i) g.op();
      g.end();
      end = g.e.pc;
    } else {
      X86Gen g{rng, e, a, c, p.cpus, slots, fixups};
      g.begin(rounds);
      for (uint64_t i = 0; i < ops && g.e.pc < limit; ++i) g.op();
      g.end();
      end = g.e.pc;
    }
    p.entry.push_back(start);
    p.code.emplace_back(start, end);
    std::vector<std::pair<int, uint64_t>> regs;
    const uint64_t shared = p.base + a.shared, priv = p.base + a.priv + c * kPrivateSize;
    const uint64_t anchor = p.base + kCodeAnchor, sync = p.base + a.sync;
    if (isa == Isa::rv64) {
      for (uint32_t r : kData) regs.emplace_back(r, rng.value());
      regs.insert(regs.end(), {{kShared, shared}, {kPrivate, priv}, {kCodeReg, anchor}, {kSync, sync}});
    } else {
      for (int r : kXData) regs.emplace_back(r, rng.value());
      regs.insert(regs.end(), {{kXShared, shared}, {kXPrivate, priv}, {kXCode, anchor}, {kXSync, sync}});
    }
    p.regs.push_back(std::move(regs));
  }
  if (isa == Isa::rv64) fill_rv64(p, rng, slots, fixups);
  else fill_x86(p, rng, slots, fixups);
  return p;
}

std::string Program::describe() const {
  std::ostringstream o;
  o << (isa == Isa::rv64 ? "rv64" : "x86") << ", " << cpus << " CPUs, code model "
    << (model == CodeModel::strict ? "strict" : "relaxed") << ", perturbation seed " << perturb_seed
    << (beside_code ? ", data beside code" : ", data on its own pages");
  return o.str();
}

std::string Program::listing() const {
  std::ostringstream o;
  char addr[32];
  for (int c = 0; c < cpus; ++c) {
    o << "cpu " << c << ":\n";
    for (uint64_t pc = code[c].first; pc < code[c].second;) {
      const uint8_t* at = &image[pc - base];
      std::snprintf(addr, sizeof addr, "  %llx:  ", static_cast<unsigned long long>(pc));
      size_t len;
      std::string text;
      if (isa == Isa::rv64) {
        uint16_t lo = 0, hi = 0;
        std::memcpy(&lo, at, 2);
        std::memcpy(&hi, at + 2, 2);
        const rv64::Insn in = rv64::decode(lo, hi);
        text = rv64::disassemble(in, pc);
        len = in.len;
      } else {
        const x86::Insn in = x86::decode(at, code[c].second - pc, pc);
        text = x86::disassemble(at, code[c].second - pc, pc);
        len = std::max<size_t>(in.len, 1);
      }
      o << addr << text << "\n";
      pc += len;
    }
  }
  return o.str();
}

const char* name(Schedule s) {
  switch (s) {
    case Schedule::run_ahead: return "default (run-ahead)";
    case Schedule::no_run_ahead: return "--no-run-ahead";
    default: return "--reference-schedule";
  }
}

Outcome run(const Program& p, Schedule s) {
  MachineConfig cfg;
  cfg.isa = p.isa;
  cfg.cpus = p.cpus;
  cfg.ram_size = 1 << 20;
  cfg.max_cycles = 400'000;
  cfg.seed = p.perturb_seed;
  cfg.code_model = p.model;
  cfg.run_ahead = s != Schedule::no_run_ahead;
  cfg.reference_schedule = s == Schedule::reference;
  Machine m(cfg);
  TraceHasher hasher;
  struct Counter : EventObserver {
    uint64_t n = 0;
    void on_event(const Event&) override { ++n; }
  } counter;
  m.events().add(&hasher);
  m.events().add(&counter);
  m.bus().write_bytes(p.base, p.image.data(), p.image.size());
  for (int c = 0; c < p.cpus; ++c) {
    Cpu& cpu = m.cpu(c);
    cpu.set_pc(p.entry[c]);
    for (const auto& [r, v] : p.regs[c]) cpu.set_gpr(r, v);
  }
  Outcome o;
  try {
    o.result = m.run();
  } catch (const std::exception& e) {
    o.error = e.what();
    return o;
  }
  for (int c = 0; c < p.cpus; ++c) {
    const Cpu& cpu = m.cpu(c);
    CpuState st{cpu.pc(), cpu.cycle(), cpu.instret(), cpu.steps(), cpu.idle(), {}, {}};
    for (int r = 0; r < cpu.gpr_count(); ++r) st.gpr.push_back(cpu.gpr(r));
    if (p.isa == Isa::rv64) {
      auto& h = static_cast<rv64::Hart&>(m.cpu(c));
      st.extra = {{"priv", static_cast<uint64_t>(h.s.priv)}, {"mstatus", h.s.mstatus}, {"mepc", h.s.mepc},
                  {"mcause", h.s.mcause}, {"mtval", h.s.mtval}, {"reservation", h.reservations().held(c)},
                  {"reserved granule", h.reservations().held(c) ? h.reservations().address(c) : 0}};
    } else {
      const auto& x = static_cast<const x86::X86Cpu&>(cpu);
      st.extra = {{"rflags", x.s.rflags}};
    }
    o.cpus.push_back(std::move(st));
  }
  o.memory.resize(p.image.size());
  m.bus().read_bytes(p.base, o.memory.data(), o.memory.size());
  o.trace_hash = hasher.value();
  o.events = counter.n;
  o.ahead = m.ahead_stats();
  return o;
}

std::string difference(const Outcome& a, const Outcome& b) {
  std::ostringstream o;
  if (a.error != b.error) return "error: '" + a.error + "' against '" + b.error + "'";
  auto differ = [&](const std::string& what, uint64_t x, uint64_t y) {
    if (x != y && o.tellp() == 0) o << what << ": 0x" << std::hex << x << " against 0x" << y << std::dec;
  };
  differ("end of the run", static_cast<uint64_t>(a.result.end), static_cast<uint64_t>(b.result.end));
  differ("exit status", static_cast<uint64_t>(a.result.status), static_cast<uint64_t>(b.result.status));
  if (o.tellp() == 0 && a.result.reason != b.result.reason)
    o << "reason: '" << a.result.reason << "' against '" << b.result.reason << "'";
  differ("cycles", a.result.cycles, b.result.cycles);
  differ("instructions", a.result.instret, b.result.instret);
  for (size_t c = 0; c < a.cpus.size() && c < b.cpus.size(); ++c) {
    const CpuState &x = a.cpus[c], &y = b.cpus[c];
    const std::string cpu = "cpu " + std::to_string(c) + " ";
    differ(cpu + "pc", x.pc, y.pc);
    differ(cpu + "cycle", x.cycle, y.cycle);
    differ(cpu + "instret", x.instret, y.instret);
    differ(cpu + "steps", x.steps, y.steps);
    differ(cpu + "idle", x.idle, y.idle);
    for (size_t r = 0; r < x.gpr.size(); ++r) differ(cpu + "gpr " + std::to_string(r), x.gpr[r], y.gpr[r]);
    for (size_t i = 0; i < x.extra.size(); ++i) differ(cpu + x.extra[i].first, x.extra[i].second, y.extra[i].second);
  }
  for (size_t i = 0; i < a.memory.size(); ++i) differ("memory at image offset 0x" + [&] {
      std::ostringstream h;
      h << std::hex << i;
      return h.str();
    }(), a.memory[i], b.memory[i]);
  differ("trace hash", a.trace_hash, b.trace_hash);
  differ("events", a.events, b.events);
  return o.str();
}

}  // namespace ksim::test::smp
