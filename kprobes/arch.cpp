#include "kprobes/arch.hpp"

namespace ksim::kprobes {

const char* errno_name(int err) {
  switch (err < 0 ? -err : err) {
    case kENOENT: return "ENOENT";
    case kENOMEM: return "ENOMEM";
    case kEBUSY: return "EBUSY";
    case kEEXIST: return "EEXIST";
    case kEINVAL: return "EINVAL";
    case kE2BIG: return "E2BIG";
    case kERANGE: return "ERANGE";
    case kEILSEQ: return "EILSEQ";
    case kEOPNOTSUPP: return "EOPNOTSUPP";
    default: return "E?";
  }
}

std::unique_ptr<Arch> make_arch(Isa isa) { return isa == Isa::rv64 ? make_rv64_arch() : make_x86_arch(); }

}  // namespace ksim::kprobes
