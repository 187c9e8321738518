# Post-link check of an x86-64 kernel image (cmake -DELF=... -DOBJDUMP=... -P):
# ksim's x86 model has no SSE/AVX/x87/MMX, so no instruction may name an
# xmm/ymm/zmm, x87 (%st) or MMX register. On failure the ELF is deleted and
# the build fails with the offending lines.
execute_process(COMMAND "${OBJDUMP}" -d --no-show-raw-insn "${ELF}"
  OUTPUT_VARIABLE dis RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(REMOVE "${ELF}")
  message(FATAL_ERROR "objdump failed on ${ELF}")
endif()
string(REGEX MATCHALL "[^\n]*(%[xyz]mm[0-9]|%st[^a-z]|%st$|%mm[0-7])[^\n]*" bad "${dis}")
if(bad)
  file(REMOVE "${ELF}")
  list(JOIN bad "\n" bad_text)
  message(FATAL_ERROR "${ELF}: SSE/AVX/x87/MMX instructions (not modelled by ksim):\n${bad_text}")
endif()
