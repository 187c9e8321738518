# RV64 guest programs: finds the bare-metal cross toolchain and provides
# ksim_add_rv64_guest(), which builds one guest ELF with custom commands.
#
# Guests are not CMake targets of the host compiler on purpose: the project
# is configured for the host (C++20, sanitizers, -Wall), and a second
# toolchain would need a separate CMake project. A handful of custom commands
# is simpler and keeps one build tree.
#
# Results:
#   KSIM_RISCV_GCC, KSIM_RISCV_OBJDUMP   cache vars, full paths
#   ksim_guests                          umbrella target (ALL) over every guest
#   ksim_guest_<NAME>                    one target per guest
#   ${CMAKE_BINARY_DIR}/workloads/rv64/guests.txt
#       absolute path of every guest ELF, one per line (read by the tests)
#   ${CMAKE_BINARY_DIR}/workloads/rv64/guests_expect.txt
#       "<name> <expected exit status> <path>" per line
include_guard(GLOBAL)
include(${CMAKE_CURRENT_LIST_DIR}/GuestCommon.cmake)

find_program(KSIM_RISCV_GCC
  NAMES riscv64-unknown-elf-gcc riscv64-linux-gnu-gcc
  DOC "C compiler for the RV64 guest programs")
if(NOT KSIM_RISCV_GCC)
  message(FATAL_ERROR
    "No RV64 cross compiler found (riscv64-unknown-elf-gcc or riscv64-linux-gnu-gcc). "
    "On Debian/Ubuntu install it with: "
    "apt-get install gcc-riscv64-unknown-elf binutils-riscv64-unknown-elf "
    "(or run scripts/install-deps.sh).")
endif()

# Take objdump from the same toolchain as gcc so the two agree on the ISA.
get_filename_component(_ksim_rv_dir "${KSIM_RISCV_GCC}" DIRECTORY)
get_filename_component(_ksim_rv_name "${KSIM_RISCV_GCC}" NAME)
string(REGEX REPLACE "gcc(-[0-9.]+)?$" "" _ksim_rv_prefix "${_ksim_rv_name}")
find_program(KSIM_RISCV_OBJDUMP
  NAMES ${_ksim_rv_prefix}objdump riscv64-unknown-elf-objdump riscv64-linux-gnu-objdump
  HINTS "${_ksim_rv_dir}"
  DOC "objdump for RV64 guest ELFs (used by the tests)")
if(NOT KSIM_RISCV_OBJDUMP)
  message(FATAL_ERROR
    "No RV64 objdump found next to ${KSIM_RISCV_GCC}. "
    "On Debian/Ubuntu install it with: apt-get install binutils-riscv64-unknown-elf")
endif()

# The Linux toolchain ships only an lp64d libgcc, which does not link with
# our soft-float lp64 objects; the guests do not need libgcc there.
if(_ksim_rv_prefix MATCHES "unknown-elf")
  set(KSIM_RV64_LIBGCC -lgcc)
else()
  set(KSIM_RV64_LIBGCC "")
  message(STATUS "ksim guests: ${KSIM_RISCV_GCC} has no lp64 libgcc; linking guests without it")
endif()
message(STATUS "ksim guests: ${KSIM_RISCV_GCC}")

# Where the guest runtime (crt0, libguest, linker script) lives. Paths in
# guest messages (__FILE__ in CHECK) are made relative to the source root.
get_filename_component(KSIM_RV64_SOURCE_ROOT "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
set(KSIM_RV64_COMMON_DIR "${KSIM_RV64_SOURCE_ROOT}/workloads/rv64/common")
set(KSIM_RV64_GUEST_DIR "${CMAKE_BINARY_DIR}/workloads/rv64")

# Compile flags: the machine is RV64IMAC + Zicsr + Zifencei without an FPU,
# hence lp64 (soft-float ABI). medany because the image lives at 0x8000_0000,
# outside the +-2 GiB window around 0 that medlow addresses.
set(KSIM_RV64_CFLAGS
  -march=rv64imac_zicsr_zifencei -mabi=lp64 -mcmodel=medany
  -ffreestanding -nostdlib -nostartfiles
  -fno-asynchronous-unwind-tables -fno-unwind-tables
  -O2 -g -Wall -Wextra)
# Linking: gcc 12 picks the libgcc multilib from -march and does not know
# that rv64imac_zicsr_zifencei is rv64imac, so link with the plain name.
set(KSIM_RV64_LDFLAGS
  -march=rv64imac -mabi=lp64 -mcmodel=medany
  -nostdlib -nostartfiles -static -Wl,--build-id=none)

if(NOT TARGET ksim_guests)
  add_custom_target(ksim_guests ALL COMMENT "RV64 guest programs")
endif()

# ksim_add_rv64_guest(NAME
#     SOURCES a.c b.S ...        relative to the calling CMakeLists.txt
#     [LINKER_SCRIPT file]       default: common/link.ld
#     [CFLAGS ...]               extra compile flags (e.g. -DITERS=100)
#     [LDFLAGS ...]              extra link flags (e.g. -Wl,--no-warn-rwx-segments)
#     [NO_RUNTIME]               do not add crt0.S and libguest.c
#     [EXPECT_STATUS n])         exit status the guest should end with (default 0)
function(ksim_add_rv64_guest NAME)
  ksim_guest_parse_args(ksim_add_rv64_guest "${KSIM_RV64_COMMON_DIR}/link.ld")
  if(NOT G_NO_RUNTIME)
    list(APPEND srcs "${KSIM_RV64_COMMON_DIR}/crt0.S" "${KSIM_RV64_COMMON_DIR}/libguest.c")
  endif()

  # Every header in common/ is an explicit dependency as well as the depfile,
  # so a header edit rebuilds even before the first depfile exists.
  file(GLOB common_headers CONFIGURE_DEPENDS "${KSIM_RV64_COMMON_DIR}/*.h")
  set(objdir "${KSIM_RV64_GUEST_DIR}/obj/${NAME}")
  set(elf "${KSIM_RV64_GUEST_DIR}/${NAME}.elf")
  ksim_guest_objects(objs ${NAME} "RV64 guest" "${objdir}"
    COMPILER "${KSIM_RISCV_GCC}"
    SOURCES ${srcs}
    DEPENDS ${common_headers}
    FLAGS ${KSIM_RV64_CFLAGS} -Wa,-march=rv64imac_zicsr_zifencei
          -I "${KSIM_RV64_COMMON_DIR}" -I "${CMAKE_CURRENT_SOURCE_DIR}"
          "-fmacro-prefix-map=${KSIM_RV64_SOURCE_ROOT}/=" ${G_CFLAGS})

  add_custom_command(
    OUTPUT "${elf}"
    COMMAND "${KSIM_RISCV_GCC}" ${KSIM_RV64_LDFLAGS} ${G_LDFLAGS} -T "${G_LINKER_SCRIPT}"
            -Wl,-Map,${objdir}/${NAME}.map
            ${objs} ${KSIM_RV64_LIBGCC} -o "${elf}"
    DEPENDS ${objs} "${G_LINKER_SCRIPT}"
    COMMENT "RV64 guest ${NAME}.elf"
    VERBATIM COMMAND_EXPAND_LISTS)
  add_custom_target(ksim_guest_${NAME} DEPENDS "${elf}")
  add_dependencies(ksim_guests ksim_guest_${NAME})

  set_property(GLOBAL APPEND PROPERTY KSIM_RV64_GUESTS "${elf}")
  set_property(GLOBAL APPEND PROPERTY KSIM_RV64_GUEST_EXPECT "${NAME} ${G_EXPECT_STATUS} ${elf}")
  # Lets ksim_embed_file() find the target that produces a given ELF.
  set_property(GLOBAL PROPERTY KSIM_GUEST_TARGET_FOR_${elf} ksim_guest_${NAME})
  set(KSIM_RV64_GUEST_${NAME}_ELF "${elf}" PARENT_SCOPE)
endfunction()

# Writes the guest lists once the whole tree has been configured, so guests
# added in any directory are included. file(GENERATE) only rewrites a file
# whose contents changed, which keeps test reruns cheap.
function(_ksim_write_guest_lists)
  get_property(elfs GLOBAL PROPERTY KSIM_RV64_GUESTS)
  get_property(expect GLOBAL PROPERTY KSIM_RV64_GUEST_EXPECT)
  list(JOIN elfs "\n" elf_text)
  list(JOIN expect "\n" expect_text)
  if(elfs)
    string(APPEND elf_text "\n")
    string(APPEND expect_text "\n")
  endif()
  file(GENERATE OUTPUT "${KSIM_RV64_GUEST_DIR}/guests.txt" CONTENT "${elf_text}")
  file(GENERATE OUTPUT "${KSIM_RV64_GUEST_DIR}/guests_expect.txt" CONTENT "${expect_text}")
endfunction()
cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _ksim_write_guest_lists)
