// The instruction classes and what each step mode does with them: one row
// per class, read by analyse (emulate, step or refuse), emulate and the
// classic fixups.
#include <array>

#include "cpu/x86/x86_cpu.hpp"
#include "kprobes/x86/probe_class.hpp"

namespace ksim::kprobes::x86arch {

namespace {

struct FlowRow {
  Flow flow;
  const char* name;
  FlowTraits traits;
};

// Columns: emulated in modern, refused in modern | classic: fix the return
// address, rip already absolute, fix the pushed flags, IF modifier.
// Modern mode follows prepare_emulation (Linux 5.13+); classic mode follows
// resume_execution (the 2006 paper, Linux before 5.13).
constexpr std::array<FlowRow, 14> kFlows = {{
    {Flow::plain, "plain", {false, false, false, false, false, false}},
    {Flow::call_rel, "call rel", {true, false, true, false, false, false}},
    {Flow::jmp_rel, "jmp rel", {true, false, false, false, false, false}},
    {Flow::jcc, "jcc", {true, false, false, false, false, false}},
    {Flow::loop, "loop/jrcxz", {true, false, false, false, false, false}},
    {Flow::ret, "ret", {true, false, false, true, false, false}},
    {Flow::call_reg, "call reg", {true, false, true, true, false, false}},
    {Flow::jmp_reg, "jmp reg", {true, false, false, true, false, false}},
    {Flow::call_mem, "call mem", {false, true, true, true, false, false}},
    {Flow::jmp_mem, "jmp mem", {false, true, false, true, false, false}},
    {Flow::pushf, "pushf", {true, false, false, false, true, false}},
    {Flow::popf, "popf", {true, false, false, false, false, true}},
    {Flow::cli, "cli", {true, false, false, false, false, true}},
    {Flow::sti, "sti", {true, false, false, false, false, true}},
}};

const FlowRow& row(Flow f) {
  const auto i = static_cast<size_t>(f);
  return kFlows[i < kFlows.size() ? i : 0];
}

// ProbeInsn::op layout: flow | cond << 8 | reg << 16 | addr32 << 24 |
// classic << 25; aux[0] = rel, aux[1] = riprel_off.
constexpr uint32_t kAddr32Bit = 1u << 24, kClassicBit = 1u << 25;

}  // namespace

const char* flow_name(Flow f) { return row(f).name; }
const FlowTraits& flow_traits(Flow f) { return row(f).traits; }

void pack(const Facts& f, ProbeInsn& pi) {
  pi.op = static_cast<uint32_t>(f.flow) | (uint32_t{f.cond} << 8) | (uint32_t{f.reg} << 16) |
          (f.addr32 ? kAddr32Bit : 0) | (f.classic ? kClassicBit : 0);
  pi.aux[0] = static_cast<uint64_t>(f.rel);
  pi.aux[1] = f.riprel_off;
}

Facts unpack(const ProbeInsn& pi) {
  Facts f;
  f.flow = static_cast<Flow>(pi.op & 0xff);
  if (static_cast<size_t>(f.flow) >= kFlows.size()) f.flow = Flow::plain;
  f.cond = static_cast<uint8_t>((pi.op >> 8) & 0xff);
  f.reg = static_cast<uint8_t>((pi.op >> 16) & 0x0f);
  f.addr32 = pi.op & kAddr32Bit;
  f.classic = pi.op & kClassicBit;
  f.rel = static_cast<int64_t>(pi.aux[0]);
  f.riprel_off = static_cast<uint8_t>(pi.aux[1]);
  return f;
}

uint64_t saved_flag_bits() { return ksim::x86::kTF | ksim::x86::kIF; }

}  // namespace ksim::kprobes::x86arch
