#include "sim/trace_writer.hpp"

#include <cerrno>
#include <cstring>

#include "sim/elf/elf_image.hpp"

namespace ksim {

std::string json_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 2);
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c >= 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

TraceWriter::TraceWriter(const std::string& path, bool with_insns, const SymbolTable* symbols)
    : f_(std::fopen(path.c_str(), "w")), with_insns_(with_insns), symbols_(symbols) {
  if (!f_) throw InputError(path + ": cannot create trace file: " + std::strerror(errno));
}

TraceWriter::~TraceWriter() {
  if (f_) std::fclose(f_);
}

void TraceWriter::on_event(const Event& e) {
  std::fprintf(f_, "{\"cycle\":%llu,\"cpu\":%d,\"kind\":\"%s\"", static_cast<unsigned long long>(e.cycle), e.cpu,
               event_kind_name(e.kind));
  auto hexfield = [&](const char* name, uint64_t v) {
    std::fprintf(f_, ",\"%s\":\"0x%llx\"", name, static_cast<unsigned long long>(v));
  };
  auto where = [&](uint64_t pc) {
    if (symbols_ && !symbols_->empty())
      std::fprintf(f_, ",\"sym\":\"%s\"", json_escape(symbols_->format(pc)).c_str());
  };
  switch (e.kind) {
    case EventKind::insn:
      hexfield("pc", e.a);
      hexfield("raw", e.b);
      where(e.a);
      break;
    case EventKind::trap:
    case EventKind::interrupt:
      std::fprintf(f_, ",\"cause\":%llu", static_cast<unsigned long long>(e.a));
      hexfield("tval", e.b);
      hexfield("pc", e.c);
      where(e.c);
      break;
    case EventKind::exit:
      std::fprintf(f_, ",\"status\":%lld", static_cast<long long>(e.a));
      break;
    case EventKind::ipi_send:
    case EventKind::ipi_recv:
      std::fprintf(f_, ",\"peer\":%llu", static_cast<unsigned long long>(e.a));
      break;
    case EventKind::probe:  // a = probe address; b, c: per state (docs/KPROBES.md)
      hexfield("addr", e.a);
      where(e.a);
      if (e.b) hexfield("b", e.b);
      if (e.c) hexfield("c", e.c);
      break;
    case EventKind::probe_op:  // a = script line, b = failed, c = the cycle asked for
      std::fprintf(f_, ",\"line\":%llu,\"at\":%llu", static_cast<unsigned long long>(e.a),
                   static_cast<unsigned long long>(e.c));
      if (e.b) std::fputs(",\"failed\":true", f_);
      break;
    case EventKind::stale_fetch:  // a = pc, b = the store's cycle, c = the storing CPU
      hexfield("pc", e.a);
      where(e.a);
      std::fprintf(f_, ",\"store_cycle\":%llu,\"storer\":%lld", static_cast<unsigned long long>(e.b),
                   static_cast<long long>(static_cast<int64_t>(e.c)));
      break;
    case EventKind::code_sync:  // a = the stale stores dropped
      std::fprintf(f_, ",\"stores\":%llu", static_cast<unsigned long long>(e.a));
      break;
    case EventKind::cache_miss: {  // a = line, b = access, c = source
      static const char* const kAccess[] = {"load", "store", "fetch", "upgrade"};
      hexfield("line", e.a);
      std::fprintf(f_, ",\"access\":\"%s\"", e.b < 4 ? kAccess[e.b] : "?");
      if (e.c >= kFromCpu)
        std::fprintf(f_, ",\"from\":\"cpu %llu\"", static_cast<unsigned long long>(e.c - kFromCpu));
      else
        std::fprintf(f_, ",\"from\":\"%s\"", e.c == kFromL2 ? "l2" : "memory");
      break;
    }
    default:
      break;
  }
  if (!e.text.empty()) std::fprintf(f_, ",\"text\":\"%s\"", json_escape(e.text).c_str());
  std::fputs("}\n", f_);
}

}  // namespace ksim
