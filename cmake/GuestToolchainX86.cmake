# x86-64 guest programs: finds a gcc that targets x86-64 (the host gcc on an
# x86-64 host) and provides
#
#   ksim_add_x86_guest(NAME SOURCES ... [CFLAGS ...] [LDFLAGS ...]
#                      [LINKER_SCRIPT f] [NO_RUNTIME] [EXPECT_STATUS n])
#       one guest ELF, ${CMAKE_BINARY_DIR}/workloads/x86/NAME.elf
#   ksim_add_x86_program(NAME SOURCES ... [OPT_LEVELS O0 O2 ...] [CFLAGS ...])
#       guests x86_NAME_O<n> for every level (default O0 O2), plus the same
#       sources as a native host program, target x86_NAME_native
#
# Like the RV64 guests (GuestToolchain.cmake), guests are custom commands, not
# targets of the host toolchain, so they keep their own flags in this one
# build tree.
#
# Results:
#   KSIM_X86_GCC, KSIM_X86_OBJDUMP       cache vars, full paths
#   ksim_x86_guests                      umbrella target (ALL) over every guest
#   ksim_x86_guest_<NAME>                one target per guest
#   ${CMAKE_BINARY_DIR}/workloads/x86/guests.txt
#       absolute path of every guest ELF, one per line
#   ${CMAKE_BINARY_DIR}/workloads/x86/guests_expect.txt
#       "<name> <expected exit status> <path>" per line
#   ${CMAKE_BINARY_DIR}/workloads/x86/native.txt
#       "<name> <native executable> <guest ELF>..." per line: the guests'
#       console output must equal the native program's stdout, byte for byte
#
# RAM base and code model. The guests are linked (ET_EXEC, -no-pie) at the
# x86 machine's RAM base, read from mem/memory_map.hpp: kRamBaseX86 if that
# constant exists, else kRamBase (0x8000_0000, the RV64 board's); override
# with -DKSIM_X86_RAM_BASE=0x.... The code model follows from it:
#  - RAM ends at or below 2 GiB: -fno-pic (GCC's small model), every symbol
#    addressed through 32-bit absolute addresses;
#  - RAM above 2 GiB (0x8000_0000): -fno-pic cannot link there, since the
#    small model's sign-extended 32-bit addresses (R_X86_64_32S, e.g.
#    `mov arr(,%rax,4)`) stop at 0x7fff_ffff ("relocation truncated to
#    fit"). So the code is compiled with -fpie: every symbol is reached
#    RIP-relative; the static -no-pie link turns PLT/GOT references into
#    direct calls and lea. (-mcmodel=large would work too, but puts a movabs
#    in front of every address and an indirect call at every call.)
#
# libgcc is not linked: its __umodti3 uses SSE registers. The __int128
# division helpers come from common/int128.c; anything else GCC would call
# from libgcc is a link error, on purpose.
#
# Every guest ELF is checked after linking (workloads/x86/check_elf.cmake):
# ELF64, EM_X86_64, ET_EXEC, and no SSE/AVX/x87/MMX instruction anywhere in
# objdump -d. A failed check deletes the ELF and fails the build.
include_guard(GLOBAL)
include(${CMAKE_CURRENT_LIST_DIR}/GuestCommon.cmake)

option(KSIM_X86_GUESTS "Build the x86-64 guest programs (needs a gcc targeting x86-64)" ON)

get_filename_component(KSIM_X86_SOURCE_ROOT "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
set(KSIM_X86_COMMON_DIR "${KSIM_X86_SOURCE_ROOT}/workloads/x86/common")
set(KSIM_X86_RV64_COMMON_DIR "${KSIM_X86_SOURCE_ROOT}/workloads/rv64/common")
set(KSIM_X86_GUEST_DIR "${CMAKE_BINARY_DIR}/workloads/x86")

if(KSIM_X86_GUESTS)
  find_program(KSIM_X86_GCC
    NAMES x86_64-linux-gnu-gcc-12 x86_64-linux-gnu-gcc gcc
    DOC "C compiler for the x86-64 guest programs")
  if(KSIM_X86_GCC)
    execute_process(COMMAND "${KSIM_X86_GCC}" -dumpmachine
      OUTPUT_VARIABLE _ksim_x86_machine OUTPUT_STRIP_TRAILING_WHITESPACE
      RESULT_VARIABLE _ksim_x86_rc)
    if(NOT _ksim_x86_rc EQUAL 0 OR NOT _ksim_x86_machine MATCHES "^x86_64-")
      message(FATAL_ERROR
        "${KSIM_X86_GCC} does not target x86-64 (-dumpmachine: '${_ksim_x86_machine}'). "
        "Install gcc-x86-64-linux-gnu, set KSIM_X86_GCC, or configure with -DKSIM_X86_GUESTS=OFF.")
    endif()
  else()
    message(FATAL_ERROR
      "No gcc for the x86-64 guests found. On Debian: apt-get install gcc "
      "(gcc-x86-64-linux-gnu on other hosts), or configure with -DKSIM_X86_GUESTS=OFF.")
  endif()

  get_filename_component(_ksim_x86_dir "${KSIM_X86_GCC}" DIRECTORY)
  get_filename_component(_ksim_x86_name "${KSIM_X86_GCC}" NAME)
  string(REGEX REPLACE "gcc(-[0-9.]+)?$" "" _ksim_x86_prefix "${_ksim_x86_name}")
  find_program(KSIM_X86_OBJDUMP
    NAMES ${_ksim_x86_prefix}objdump x86_64-linux-gnu-objdump objdump
    HINTS "${_ksim_x86_dir}"
    DOC "objdump for x86-64 guest ELFs")
  if(NOT KSIM_X86_OBJDUMP)
    message(FATAL_ERROR "No objdump for x86-64 found next to ${KSIM_X86_GCC} (apt-get install binutils).")
  endif()
  message(STATUS "ksim x86 guests: ${KSIM_X86_GCC}")
endif()

set(_ksim_x86_memmap "${KSIM_X86_SOURCE_ROOT}/mem/memory_map.hpp")
set_property(DIRECTORY "${CMAKE_SOURCE_DIR}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_ksim_x86_memmap}")
if(NOT KSIM_X86_RAM_BASE)
  file(READ "${_ksim_x86_memmap}" _ksim_x86_memmap_text)
  if(_ksim_x86_memmap_text MATCHES "kRamBaseX86 = (0x[0-9a-fA-F']+)")
    set(KSIM_X86_RAM_BASE "${CMAKE_MATCH_1}")
  elseif(_ksim_x86_memmap_text MATCHES "kRamBase = (0x[0-9a-fA-F']+)")
    set(KSIM_X86_RAM_BASE "${CMAKE_MATCH_1}")
  else()
    message(FATAL_ERROR "No kRamBaseX86/kRamBase in ${_ksim_x86_memmap}; set KSIM_X86_RAM_BASE")
  endif()
  string(REPLACE "'" "" KSIM_X86_RAM_BASE "${KSIM_X86_RAM_BASE}")
endif()
math(EXPR _ksim_x86_ram_end "${KSIM_X86_RAM_BASE} + (128 << 20)")
if(_ksim_x86_ram_end LESS_EQUAL 2147483648)
  set(KSIM_X86_CODE_MODEL -fno-pic -fno-pie)
else()
  set(KSIM_X86_CODE_MODEL -fpie)
endif()
if(KSIM_X86_GUESTS)
  list(JOIN KSIM_X86_CODE_MODEL " " _ksim_x86_cm)
  message(STATUS "ksim x86 guests: RAM at ${KSIM_X86_RAM_BASE}, ${_ksim_x86_cm}")
endif()

# Compile flags. The machine has no SSE and no x87: -mgeneral-regs-only.
# -march/-mtune are pinned so a distribution's defaults cannot change the
# instruction mix. No red zone: a future kernel takes interrupts on the
# current stack. The optimisation level comes first so CFLAGS can override
# it (-O0 ... -O3: the last -O wins).
set(KSIM_X86_CFLAGS
  -m64 -march=x86-64 -mtune=generic
  -ffreestanding -nostdlib ${KSIM_X86_CODE_MODEL} -mgeneral-regs-only -mno-red-zone
  -fno-stack-protector -fno-asynchronous-unwind-tables -fno-unwind-tables
  -fcf-protection=none -g -Wall -Wextra)
set(KSIM_X86_LDFLAGS
  -m64 -nostdlib -nostartfiles -static -no-pie
  -Wl,--build-id=none -Wl,-z,noexecstack
  -Wl,--defsym=__ksim_ram_base=${KSIM_X86_RAM_BASE})

if(KSIM_X86_GUESTS AND NOT TARGET ksim_x86_guests)
  add_custom_target(ksim_x86_guests ALL COMMENT "x86-64 guest programs")
endif()

# ksim_add_x86_guest(NAME
#     SOURCES a.c b.S ...        relative to the calling CMakeLists.txt
#     [LINKER_SCRIPT file]       default: workloads/x86/common/link.ld
#     [CFLAGS ...]               extra compile flags (-O0 .. -O3; default -O2)
#     [LDFLAGS ...]              extra link flags
#     [NO_RUNTIME]               no crt0.S/libguest.c/int128.c
#     [EXPECT_STATUS n])         exit status the guest should end with (default 0)
function(ksim_add_x86_guest NAME)
  if(NOT KSIM_X86_GUESTS)
    return()
  endif()
  ksim_guest_parse_args(ksim_add_x86_guest "${KSIM_X86_COMMON_DIR}/link.ld")
  if(NOT G_NO_RUNTIME)
    list(APPEND srcs
      "${KSIM_X86_COMMON_DIR}/crt0.S"
      "${KSIM_X86_COMMON_DIR}/libguest.c"
      "${KSIM_X86_COMMON_DIR}/int128.c")
  endif()

  # Headers (and the shared RV64 runtime, which libguest.c includes) are
  # explicit dependencies as well as the depfile, so an edit rebuilds even
  # before the first depfile exists.
  file(GLOB common_deps CONFIGURE_DEPENDS
    "${KSIM_X86_COMMON_DIR}/*.h"
    "${KSIM_X86_RV64_COMMON_DIR}/*.h"
    "${KSIM_X86_RV64_COMMON_DIR}/libguest.c")
  # The RAM base (and so the code model) comes from the memory map.
  list(APPEND common_deps "${_ksim_x86_memmap}")
  set(objdir "${KSIM_X86_GUEST_DIR}/obj/${NAME}")
  set(elf "${KSIM_X86_GUEST_DIR}/${NAME}.elf")
  ksim_guest_objects(objs ${NAME} "x86 guest" "${objdir}"
    COMPILER "${KSIM_X86_GCC}"
    SOURCES ${srcs}
    DEPENDS ${common_deps}
    FLAGS ${KSIM_X86_CFLAGS} -O2
          -I "${KSIM_X86_COMMON_DIR}" -I "${KSIM_X86_RV64_COMMON_DIR}" -I "${CMAKE_CURRENT_SOURCE_DIR}"
          "-fmacro-prefix-map=${KSIM_X86_SOURCE_ROOT}/=" ${G_CFLAGS})

  add_custom_command(
    OUTPUT "${elf}"
    COMMAND "${KSIM_X86_GCC}" ${KSIM_X86_LDFLAGS} ${G_LDFLAGS} -T "${G_LINKER_SCRIPT}"
            -Wl,-Map,${objdir}/${NAME}.map
            ${objs} -o "${elf}"
    COMMAND ${CMAKE_COMMAND} -DELF=${elf} -DOBJDUMP=${KSIM_X86_OBJDUMP}
            -P "${KSIM_X86_SOURCE_ROOT}/workloads/x86/check_elf.cmake"
    DEPENDS ${objs} "${G_LINKER_SCRIPT}" "${KSIM_X86_SOURCE_ROOT}/workloads/x86/check_elf.cmake"
    COMMENT "x86 guest ${NAME}.elf (and its no-SSE/x87 check)"
    VERBATIM COMMAND_EXPAND_LISTS)
  add_custom_target(ksim_x86_guest_${NAME} DEPENDS "${elf}")
  add_dependencies(ksim_x86_guests ksim_x86_guest_${NAME})

  set_property(GLOBAL APPEND PROPERTY KSIM_X86_GUESTS "${elf}")
  set_property(GLOBAL APPEND PROPERTY KSIM_X86_GUEST_EXPECT "${NAME} ${G_EXPECT_STATUS} ${elf}")
  set_property(GLOBAL PROPERTY KSIM_GUEST_TARGET_FOR_${elf} ksim_x86_guest_${NAME})
  set(KSIM_X86_GUEST_${NAME}_ELF "${elf}" PARENT_SCOPE)
endfunction()

# ksim_add_x86_program(NAME SOURCES ... [OPT_LEVELS O0 O2 ...] [CFLAGS ...])
# Guests x86_NAME_<level> (one per level, default O0 and O2) and the native
# host executable x86_NAME_native (built -O2 -DKSIM_HOST with the project's
# C compiler, in ${CMAKE_BINARY_DIR}/workloads/x86/), listed in native.txt.
function(ksim_add_x86_program NAME)
  if(NOT KSIM_X86_GUESTS)
    return()
  endif()
  cmake_parse_arguments(PARSE_ARGV 1 P "" "" "SOURCES;OPT_LEVELS;CFLAGS")
  if(P_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "ksim_add_x86_program(${NAME}): unknown arguments ${P_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT P_OPT_LEVELS)
    set(P_OPT_LEVELS O0 O2)
  endif()
  set(elfs "")
  foreach(level IN LISTS P_OPT_LEVELS)
    if(NOT level MATCHES "^O[0-3sg]$")
      message(FATAL_ERROR "ksim_add_x86_program(${NAME}): bad OPT_LEVELS entry ${level}")
    endif()
    ksim_add_x86_guest(x86_${NAME}_${level} SOURCES ${P_SOURCES} CFLAGS -${level} ${P_CFLAGS})
    list(APPEND elfs "${KSIM_X86_GUEST_x86_${NAME}_${level}_ELF}")
  endforeach()

  add_executable(x86_${NAME}_native ${P_SOURCES})
  target_compile_definitions(x86_${NAME}_native PRIVATE KSIM_HOST)
  target_include_directories(x86_${NAME}_native PRIVATE "${KSIM_X86_COMMON_DIR}")
  # After the build type's flags, so -O2 wins over Release's -O3.
  target_compile_options(x86_${NAME}_native PRIVATE -O2 ${P_CFLAGS})
  set_target_properties(x86_${NAME}_native PROPERTIES
    C_STANDARD 11 C_EXTENSIONS ON
    RUNTIME_OUTPUT_DIRECTORY "${KSIM_X86_GUEST_DIR}")

  list(JOIN elfs " " elf_text)
  set_property(GLOBAL APPEND PROPERTY KSIM_X86_NATIVE
    "x86_${NAME} $<TARGET_FILE:x86_${NAME}_native> ${elf_text}")
endfunction()

function(_ksim_write_x86_guest_lists)
  foreach(kind IN ITEMS GUESTS GUEST_EXPECT NATIVE)
    get_property(lines GLOBAL PROPERTY KSIM_X86_${kind})
    list(JOIN lines "\n" text_${kind})
    if(lines)
      string(APPEND text_${kind} "\n")
    endif()
  endforeach()
  file(GENERATE OUTPUT "${KSIM_X86_GUEST_DIR}/guests.txt" CONTENT "${text_GUESTS}")
  file(GENERATE OUTPUT "${KSIM_X86_GUEST_DIR}/guests_expect.txt" CONTENT "${text_GUEST_EXPECT}")
  file(GENERATE OUTPUT "${KSIM_X86_GUEST_DIR}/native.txt" CONTENT "${text_NATIVE}")
endfunction()
if(KSIM_X86_GUESTS)
  cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _ksim_write_x86_guest_lists)
endif()
