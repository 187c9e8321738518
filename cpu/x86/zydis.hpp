// The one Zydis decoder of the project (64-bit long mode, 64-bit stack),
// shared by the core's decoder and disassembler and by the kprobes
// engine's instruction analysis, so they can never disagree on a mode.
#pragma once
#include <Zydis/Zydis.h>

namespace ksim::x86 {

const ZydisDecoder& zydis_decoder();

}  // namespace ksim::x86
