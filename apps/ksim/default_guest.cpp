// The built-in guests: built from workloads/ at build time and embedded in
// the binary, so `ksim run` works with no file argument.
#include <span>

#include "apps/ksim/commands.hpp"

extern "C" const unsigned char ksim_default_guest_rv64[];
extern "C" const unsigned long ksim_default_guest_rv64_size;
extern "C" const unsigned char ksim_kernel_rv64_preempt[];
extern "C" const unsigned long ksim_kernel_rv64_preempt_size;
extern "C" const unsigned char ksim_kernel_rv64_nopreempt[];
extern "C" const unsigned long ksim_kernel_rv64_nopreempt_size;
extern "C" const unsigned char ksim_kernel_x86_preempt[];
extern "C" const unsigned long ksim_kernel_x86_preempt_size;
extern "C" const unsigned char ksim_kernel_x86_nopreempt[];
extern "C" const unsigned long ksim_kernel_x86_nopreempt_size;
extern "C" const unsigned char ksim_kernel_rv64_fig4[];
extern "C" const unsigned long ksim_kernel_rv64_fig4_size;
extern "C" const unsigned char ksim_kernel_x86_fig4[];
extern "C" const unsigned long ksim_kernel_x86_fig4_size;

namespace ksim::cli {

Isa parse_isa(const std::string& s) {
  if (s == "rv64" || s == "riscv64" || s == "riscv") return Isa::rv64;
  if (s == "x86" || s == "x86-64" || s == "x86_64") return Isa::x86_64;
  throw UsageError{"unknown ISA '" + s + "' (expected rv64 or x86)"};
}

CodeModel parse_code_model_option(const std::string& s) {
  CodeModel m;
  if (!parse_code_model(s, m)) throw UsageError{"--code-model must be relaxed or strict"};
  return m;
}

ElfImage load_image(const std::string& elf_path, const std::string& image, Isa isa) {
  if (!elf_path.empty()) return load_elf_file(elf_path, isa);
  struct Builtin {
    Isa isa;
    const char* name;
    const unsigned char* bytes;
    unsigned long size;
  };
  const Builtin builtins[] = {
      {Isa::rv64, "preempt", ksim_kernel_rv64_preempt, ksim_kernel_rv64_preempt_size},
      {Isa::rv64, "nopreempt", ksim_kernel_rv64_nopreempt, ksim_kernel_rv64_nopreempt_size},
      {Isa::rv64, "fig4", ksim_kernel_rv64_fig4, ksim_kernel_rv64_fig4_size},
      {Isa::rv64, "hello", ksim_default_guest_rv64, ksim_default_guest_rv64_size},
      {Isa::x86_64, "preempt", ksim_kernel_x86_preempt, ksim_kernel_x86_preempt_size},
      {Isa::x86_64, "nopreempt", ksim_kernel_x86_nopreempt, ksim_kernel_x86_nopreempt_size},
      {Isa::x86_64, "fig4", ksim_kernel_x86_fig4, ksim_kernel_x86_fig4_size},
  };
  for (const Builtin& b : builtins)
    if (b.isa == isa && image == b.name)
      return parse_elf(std::span<const uint8_t>(b.bytes, b.size), isa, "<built-in image " + image + ">");
  throw UsageError{"unknown --image '" + image + "' for " + isa_name(isa) +
                   " (expected preempt, nopreempt, fig4" + (isa == Isa::rv64 ? ", or hello)" : ")")};
}

}  // namespace ksim::cli
