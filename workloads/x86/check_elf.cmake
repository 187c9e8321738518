# Post-link check of an x86-64 guest ELF (run by ksim_add_x86_guest):
#   cmake -DELF=file.elf -DOBJDUMP=objdump -P check_elf.cmake
# Fails, after deleting the ELF so the next build retries, unless the file is
# an ELF64 x86-64 executable (ET_EXEC) whose code has no instruction the
# machine lacks: nothing that names an xmm/ymm/zmm/mmx/x87/mask register, no
# x87 (f...) mnemonic, no SSE/AVX state instruction.
if(NOT ELF OR NOT OBJDUMP)
  message(FATAL_ERROR "usage: cmake -DELF=file.elf -DOBJDUMP=objdump -P check_elf.cmake")
endif()

function(_fail why)
  file(REMOVE "${ELF}")
  message(FATAL_ERROR "x86 guest ${ELF}: ${why} (ELF deleted)")
endfunction()

execute_process(COMMAND "${OBJDUMP}" -f "${ELF}"
  OUTPUT_VARIABLE header RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  _fail("objdump -f failed: ${err}")
endif()
if(NOT header MATCHES "file format elf64-x86-64")
  _fail("not an ELF64 x86-64 file")
endif()
if(NOT header MATCHES "architecture: i386:x86-64,")
  _fail("not EM_X86_64")
endif()
if(NOT header MATCHES "EXEC_P")
  _fail("not an executable (ET_EXEC)")
endif()

execute_process(COMMAND "${OBJDUMP}" -d --no-show-raw-insn "${ELF}"
  OUTPUT_VARIABLE dis RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  _fail("objdump -d failed: ${err}")
endif()
# One instruction per line: "  addr:\t<mnemonic> <operands>".
string(REGEX MATCHALL "\n *[0-9a-f]+:\t[^\n]*" insns "${dis}")
set(bad "")
foreach(line IN LISTS insns)
  string(REGEX REPLACE "^\n *[0-9a-f]+:\t" "" insn "${line}")
  if(insn MATCHES "%([xyz]mm[0-9]+|mm[0-7]|st|k[0-7])([^a-z0-9]|$)"
     OR insn MATCHES "^((rep[a-z]* |lock |data16 |cs |ds |notrack )*)(f[a-z0-9]*|v[a-z0-9]+|ldmxcsr|stmxcsr|emms|xsave[a-z0-9]*|xrstor[a-z0-9]*)( |$)")
    list(APPEND bad "${insn}")
  endif()
endforeach()
if(bad)
  list(LENGTH bad n)
  list(SUBLIST bad 0 10 first)
  list(JOIN first "\n  " first)
  _fail("${n} SSE/AVX/x87/MMX instruction(s), e.g.\n  ${first}\n")
endif()
