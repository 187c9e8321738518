// Runs x86-64 instruction bytes natively on the host CPU, with the same
// interface as x86_exec (support/x86_exec.hpp): 16 GPRs and RFLAGS in,
// the data buffer at kX86DataAddr, 16 GPRs, RFLAGS and the buffer out, or
// the exception vector the host took. The differential test
// (x86_diff_test.cpp) runs every case through both and compares.
//
// How a snippet runs (X86Native::run):
//   * One private mapping holds a code page (the trampoline, rebuilt per
//     call), a context block (registers in and out, saved host RSP) and a
//     64 KiB private stack. The trampoline addresses the context block
//     RIP-relative, so no register is needed to reach it.
//   * The trampoline saves the host's callee-saved registers, switches to
//     the private stack, loads RFLAGS with push/popfq and the 15 GPRs other
//     than RSP, runs the snippet, stores the 15 GPRs, RSP and RFLAGS
//     (pushfq), switches back and returns. RSP is never loaded with the
//     guest value: snippets must not use RSP as an operand, and the RSP
//     reported is in.rsp plus however far the snippet moved the real one.
//   * Only CF PF AF ZF SF OF are taken from the input RFLAGS (plus the fixed
//     bit 1); TF, IF, DF, AC and the rest are never set natively (DF=0 is
//     the SysV ABI state and the harness clears it again on exit).
//   * Faults (#DE, #UD, #GP, #PF, ...) arrive as SIGFPE/SIGILL/SIGSEGV/
//     SIGBUS/SIGTRAP on an alternate signal stack; the handler reads the
//     hardware vector (REG_TRAPNO) and the registers at the fault from the
//     ucontext and siglongjmps back. x86 faults are precise, so the state
//     reported with a fault is the state before the faulting instruction.
//   * The data buffer is mapped at exactly kX86DataAddr with
//     MAP_FIXED_NOREPLACE, so addresses held in registers mean the same on
//     both sides. Where that range is taken (AddressSanitizer's shadow
//     memory covers 0x7fff8000-0x10007fff7fff on x86-64),
//     Placement::anywhere_if_taken maps the buffer elsewhere, and run()
//     translates the registers named in `pointer_regs` (which hold
//     data-buffer addresses) in and out.
//
// Several X86Native may exist (only one holds kX86DataAddr; destroy them in
// reverse order). Each installs the fault handlers for its lifetime and
// gives them back on a fault that is not a snippet's. Single-threaded use
// only; Linux x86-64 only.
#pragma once
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "support/x86_exec.hpp"

#if !defined(__x86_64__) || !defined(__linux__)
#error "x86_native.hpp needs an x86-64 Linux host"
#endif

namespace ksim::test {

class X86Native {
 public:
  static constexpr uint64_t kArithFlags = 0x8d5;  // CF PF AF ZF SF OF

  // Where the data buffer goes: exactly at kX86DataAddr (else ok() is
  // false); there if free, else anywhere; anywhere (to exercise the
  // translation of pointer registers).
  enum class Placement { fixed, anywhere_if_taken, anywhere };

  // Maps the data buffer and the harness.
  explicit X86Native(Placement placement = Placement::fixed) {
    void* d = MAP_FAILED;
    if (placement != Placement::anywhere) {
      d = mmap(reinterpret_cast<void*>(kX86DataAddr), kX86DataSize, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
      if (d != MAP_FAILED && reinterpret_cast<uint64_t>(d) != kX86DataAddr) {
        munmap(d, kX86DataSize);  // a kernel before 4.17 ignores the flag: treat it as a hint
        d = MAP_FAILED;
        errno = EEXIST;
      }
      if (d == MAP_FAILED) {
        map_error_ = "cannot map the data buffer at 0x" + to_hex(kX86DataAddr) +
                     " (MAP_FIXED_NOREPLACE): " + std::strerror(errno);
        if (placement == Placement::fixed) { fail(map_error_); return; }
      }
    }
    if (d == MAP_FAILED) {
      d = mmap(nullptr, kX86DataSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (d == MAP_FAILED) { fail("cannot map the data buffer: " + std::string(std::strerror(errno))); return; }
    }
    data_ = static_cast<uint8_t*>(d);

    void* h = mmap(nullptr, kHarnessSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (h == MAP_FAILED) { fail("cannot map the harness: " + std::string(std::strerror(errno))); return; }
    harness_ = static_cast<uint8_t*>(h);
    // W^X policies may refuse RWX: then the code page flips RW <-> RX per run.
    if (mprotect(harness_, kCodeSize, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) {
      if (mprotect(harness_, kCodeSize, PROT_READ | PROT_EXEC) != 0) {
        fail("cannot make the code page executable: " + std::string(std::strerror(errno)));
        return;
      }
      toggle_wx_ = true;
    }
    ctx_ = reinterpret_cast<Ctx*>(harness_ + kCodeSize);

    install_handlers();
    ok_ = true;
  }

  ~X86Native() {
    restore_handlers();
    if (harness_ != nullptr) munmap(harness_, kHarnessSize);
    if (data_ != nullptr) munmap(data_, kX86DataSize);
  }
  X86Native(const X86Native&) = delete;
  X86Native& operator=(const X86Native&) = delete;

  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  // Where the data buffer lives natively (kX86DataAddr unless relocated),
  // and why it could not be placed at kX86DataAddr.
  uint64_t data_base() const { return reinterpret_cast<uint64_t>(data_); }
  bool relocated() const { return data_base() != kX86DataAddr; }
  const std::string& map_error() const { return map_error_; }

  // Runs `code` natively. `data` (at most kX86DataSize bytes) is copied to
  // the buffer and back. `pointer_regs` (bit i: GPR i) only matters when
  // relocated(): those registers are moved to the native buffer and back.
  X86Result run(const std::vector<uint8_t>& code, const X86State& in, std::vector<uint8_t>& data,
                uint16_t pointer_regs = 0) {
    X86Result r;
    if (!ok_) { r.error = error_; return r; }
    if (code.size() > kMaxSnippet || data.size() > kX86DataSize) {
      r.error = "snippet or data too large";
      return r;
    }
    const uint64_t delta = data_base() - kX86DataAddr;
    auto reloc_in = [&](int i, uint64_t v) { return (pointer_regs >> i & 1) ? v + delta : v; };
    auto reloc_out = [&](int i, uint64_t v) { return (pointer_regs >> i & 1) ? v - delta : v; };

    if (toggle_wx_) mprotect(harness_, kCodeSize, PROT_READ | PROT_WRITE);
    const size_t entry = build(code);
    if (toggle_wx_) mprotect(harness_, kCodeSize, PROT_READ | PROT_EXEC);

    for (int i = 0; i < 16; ++i) ctx_->in[i] = reloc_in(i, in.gpr[i]);
    ctx_->in_flags = (in.rflags & kArithFlags) | 0x2;
    ctx_->stack_top = reinterpret_cast<uint64_t>(harness_ + kHarnessSize) - 64;
    std::memcpy(data_, data.data(), data.size());

    using Fn = void (*)();
    Fn fn = reinterpret_cast<Fn>(harness_ + entry);
    fault_vector_ = -1;
    X86Native* const outer = running_;
    running_ = this;
    volatile bool faulted = false;
    // No signal mask to save: the handler runs with SA_NODEFER, so nothing
    // is left blocked after its siglongjmp (and a run costs no system call).
    if (sigsetjmp(jump_, 0) == 0)
      fn();
    else
      faulted = true;
    running_ = outer;
    if (!faulted) {
      for (int i = 0; i < 16; ++i) r.state.gpr[i] = reloc_out(i, ctx_->out[i]);
      r.state.gpr[4] = in.gpr[4] + (ctx_->out_rsp - ctx_->stack_top);
      r.state.rflags = ctx_->out_flags;
      r.ok = true;
    } else {
      for (int i = 0; i < 16; ++i) r.state.gpr[i] = reloc_out(i, fault_gpr_[i]);
      r.state.gpr[4] = in.gpr[4] + (fault_gpr_[4] - ctx_->stack_top);
      r.state.rflags = fault_flags_;
      r.vector = static_cast<uint64_t>(fault_vector_);
      r.error = vector_name(fault_vector_) + " at +0x" + to_hex(fault_rip_ - code_start_);
    }
    std::memcpy(data.data(), data_, data.size());
    return r;
  }

  static std::string vector_name(int v) {
    static const char* const names[] = {"#DE", "#DB", "NMI", "#BP", "#OF", "#BR", "#UD", "#NM",
                                        "#DF", "?9",  "#TS", "#NP", "#SS", "#GP", "#PF", "?15",
                                        "#MF", "#AC", "#MC", "#XM"};
    if (v >= 0 && v < 20) return names[v];
    return "vector " + std::to_string(v);
  }

 private:
  // Context block, addressed RIP-relative by the trampoline (offsets below).
  struct Ctx {
    uint64_t in[16];      //   0
    uint64_t in_flags;    // 128
    uint64_t out[16];     // 136
    uint64_t out_flags;   // 264
    uint64_t host_rsp;    // 272
    uint64_t stack_top;   // 280
    uint64_t out_rsp;     // 288
  };
  static constexpr size_t kCodeSize = 0x1000;
  static constexpr size_t kHarnessSize = kCodeSize + 0x1000 + 0x10000;  // code, ctx, stack
  static constexpr size_t kAltStackSize = 0x10000;
  static constexpr size_t kMaxSnippet = 0x800;
  static constexpr int kSignalCount = 5;
  static constexpr int kSignals[kSignalCount] = {SIGFPE, SIGILL, SIGSEGV, SIGBUS, SIGTRAP};

  // The trampoline, hand-assembled. Each emitter notes its instruction;
  // `rip_rel` appends a disp32 relative to the end of the instruction whose
  // last `tail` bytes (an immediate) still follow.
  struct Emitter {
    uint8_t* base;
    size_t n = 0;
    void b(std::initializer_list<uint8_t> bytes) { for (uint8_t x : bytes) base[n++] = x; }
    void rip_rel(const void* target, size_t tail = 0) {
      const int64_t next = reinterpret_cast<int64_t>(base + n + 4 + tail);
      const int32_t d = static_cast<int32_t>(reinterpret_cast<int64_t>(target) - next);
      std::memcpy(base + n, &d, 4);
      n += 4;
    }
    // mov r64, [rip+target]: REX.W(+R) 8B /r, ModRM mod=00 rm=101 (RIP-relative).
    void load(int reg, const void* target) {
      b({static_cast<uint8_t>(reg >= 8 ? 0x4c : 0x48), 0x8b, static_cast<uint8_t>(0x05 | (reg & 7) << 3)});
      rip_rel(target);
    }
    // mov [rip+target], r64: REX.W(+R) 89 /r.
    void store(int reg, const void* target) {
      b({static_cast<uint8_t>(reg >= 8 ? 0x4c : 0x48), 0x89, static_cast<uint8_t>(0x05 | (reg & 7) << 3)});
      rip_rel(target);
    }
  };

  // Writes prologue + code + epilogue into the code page; returns the entry offset.
  size_t build(const std::vector<uint8_t>& code) {
    Emitter e{harness_};
    Ctx* c = ctx_;
    e.b({0x53});                          // push rbx
    e.b({0x55});                          // push rbp
    e.b({0x41, 0x54});                    // push r12
    e.b({0x41, 0x55});                    // push r13
    e.b({0x41, 0x56});                    // push r14
    e.b({0x41, 0x57});                    // push r15
    e.store(4, &c->host_rsp);             // mov [rip+host_rsp], rsp
    e.load(4, &c->stack_top);             // mov rsp, [rip+stack_top]
    e.b({0xff, 0x35});                    // push qword [rip+in_flags]  (FF /6, mod=00 rm=101)
    e.rip_rel(&c->in_flags);
    e.b({0x9d});                          // popfq
    for (int r = 0; r < 16; ++r)          // mov r, [rip+in[r]]  (all but rsp)
      if (r != 4) e.load(r, &c->in[r]);
    code_start_ = reinterpret_cast<uint64_t>(harness_ + e.n);
    std::memcpy(harness_ + e.n, code.data(), code.size());  // the snippet
    e.n += code.size();
    e.store(4, &c->out_rsp);              // mov [rip+out_rsp], rsp
    e.load(4, &c->stack_top);             // mov rsp, [rip+stack_top]
    e.b({0x9c});                          // pushfq
    e.b({0x8f, 0x05});                    // pop qword [rip+out_flags]  (8F /0, mod=00 rm=101)
    e.rip_rel(&c->out_flags);
    for (int r = 0; r < 16; ++r)          // mov [rip+out[r]], r  (all but rsp)
      if (r != 4) e.store(r, &c->out[r]);
    e.b({0xfc});                          // cld  (the ABI wants DF=0)
    e.load(4, &c->host_rsp);              // mov rsp, [rip+host_rsp]
    e.b({0x41, 0x5f});                    // pop r15
    e.b({0x41, 0x5e});                    // pop r14
    e.b({0x41, 0x5d});                    // pop r13
    e.b({0x41, 0x5c});                    // pop r12
    e.b({0x5d});                          // pop rbp
    e.b({0x5b});                          // pop rbx
    e.b({0xc3});                          // ret
    return 0;
  }

  // Each X86Native installs the fault handlers for its lifetime (setting
  // them per run would cost ~12 system calls a case) and puts back what it
  // found when destroyed; several live ones must be destroyed in reverse
  // order of construction.
  void install_handlers() {
    stack_t ss{};
    ss.ss_sp = altstack_;
    ss.ss_size = sizeof altstack_;
    sigaltstack(&ss, &old_altstack_);
    struct sigaction sa{};
    sa.sa_sigaction = &X86Native::on_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < kSignalCount; ++i) sigaction(kSignals[i], &sa, &old_actions_[i]);
    installed_ = true;
    previous_ = latest_;
    latest_ = this;
  }
  void restore_handlers() {
    if (installed_) {
      installed_ = false;
      for (int i = 0; i < kSignalCount; ++i) sigaction(kSignals[i], &old_actions_[i], nullptr);
      sigaltstack(&old_altstack_, nullptr);  // fails harmlessly when called on the alternate stack
    }
    // Unlink from the chain of installers.
    if (latest_ == this) {
      latest_ = previous_;
    } else {
      for (X86Native* x = latest_; x != nullptr; x = x->previous_)
        if (x->previous_ == this) x->previous_ = previous_;
    }
    previous_ = nullptr;
  }

  static void on_signal(int, siginfo_t*, void* uctx) {
    X86Native* self = running_;
    auto* uc = static_cast<ucontext_t*>(uctx);
    const greg_t* g = uc->uc_mcontext.gregs;
    const uint64_t rip = static_cast<uint64_t>(g[REG_RIP]);
    const uint64_t code = reinterpret_cast<uint64_t>(self != nullptr ? self->harness_ : nullptr);
    if (self == nullptr || rip - code >= kCodeSize) {
      // Not a snippet's fault (e.g. a crash in the simulator between two
      // native runs): hand the signals back to whoever had them before
      // (Catch2's fatal-condition handler, the default action), which sees
      // the fault when the faulting instruction runs again.
      while (latest_ != nullptr) latest_->restore_handlers();
      return;
    }
    static constexpr int order[16] = {REG_RAX, REG_RCX, REG_RDX, REG_RBX, REG_RSP, REG_RBP, REG_RSI, REG_RDI,
                                      REG_R8,  REG_R9,  REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15};
    for (int i = 0; i < 16; ++i) self->fault_gpr_[i] = static_cast<uint64_t>(g[order[i]]);
    self->fault_flags_ = static_cast<uint64_t>(g[REG_EFL]);
    self->fault_rip_ = static_cast<uint64_t>(g[REG_RIP]);
    self->fault_vector_ = static_cast<int>(g[REG_TRAPNO]);
    siglongjmp(self->jump_, 1);
  }

  static std::string to_hex(uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
    return buf;
  }
  void fail(std::string why) {
    ok_ = false;
    error_ = std::move(why);
  }

  inline static thread_local X86Native* running_ = nullptr;
  inline static X86Native* latest_ = nullptr;  // the last to install the handlers
  alignas(16) inline static uint8_t altstack_[kAltStackSize] = {};
  X86Native* previous_ = nullptr;
  bool installed_ = false;
  struct sigaction old_actions_[kSignalCount] {};
  stack_t old_altstack_{};
  bool ok_ = false;
  std::string error_, map_error_;
  uint8_t* data_ = nullptr;
  uint8_t* harness_ = nullptr;
  Ctx* ctx_ = nullptr;
  bool toggle_wx_ = false;
  sigjmp_buf jump_{};
  uint64_t code_start_ = 0;
  uint64_t fault_gpr_[16] = {};
  uint64_t fault_flags_ = 0, fault_rip_ = 0;
  int fault_vector_ = -1;
};

}  // namespace ksim::test
