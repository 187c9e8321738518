#include "mem/uart.hpp"

namespace ksim {

namespace {
constexpr uint64_t kThr = 0;
constexpr uint64_t kLsr = 5;
constexpr uint64_t kLsrThrEmpty = 0x20, kLsrTxIdle = 0x40;
constexpr uint64_t kRegisterCount = 8;
}  // namespace

bool Uart::read(const Accessor&, uint64_t offset, unsigned size, uint64_t& value) {
  if (size != 1 || offset >= kRegisterCount) return false;
  value = offset == kLsr ? (kLsrThrEmpty | kLsrTxIdle) : 0;
  return true;
}

bool Uart::write(const Accessor& who, uint64_t offset, unsigned size, uint64_t value) {
  if (size != 1 || offset >= kRegisterCount) return false;
  if (offset == kThr && sink_) sink_(who, static_cast<char>(value & 0xff));
  return true;
}

}  // namespace ksim
