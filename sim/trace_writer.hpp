// Writes the event stream as JSON Lines (--trace FILE): one object per
// event, e.g. {"cycle":120,"cpu":0,"kind":"trap","cause":3,"tval":...}.
#pragma once
#include <cstdio>
#include <string>

#include "sim/elf/symbols.hpp"
#include "sim/events.hpp"

namespace ksim {

class TraceWriter final : public EventObserver {
 public:
  // Throws InputError when the file cannot be created.
  TraceWriter(const std::string& path, bool with_insns, const SymbolTable* symbols);
  ~TraceWriter() override;
  void on_event(const Event& e) override;
  bool wants_insns() const override { return with_insns_; }

 private:
  std::FILE* f_;
  bool with_insns_;
  const SymbolTable* symbols_;
};

std::string json_escape(const std::string& s);

}  // namespace ksim
