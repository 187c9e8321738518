# What the RV64 and x86 guest toolchains (GuestToolchain.cmake,
# GuestToolchainX86.cmake) share: the arguments of ksim_add_<isa>_guest()
# and compiling a guest's sources to objects with custom commands.
include_guard(GLOBAL)

# Parses the arguments of ksim_add_<isa>_guest(NAME ...) in the caller's
# scope (a macro, so G_* land there):
#   SOURCES ... [LINKER_SCRIPT f] [CFLAGS ...] [LDFLAGS ...] [NO_RUNTIME]
#   [EXPECT_STATUS n]
# and sets `srcs` to the absolute source paths, G_LINKER_SCRIPT to an
# absolute path (default `default_script`) and G_EXPECT_STATUS (default 0).
macro(ksim_guest_parse_args fn default_script)
  cmake_parse_arguments(PARSE_ARGV 1 G "NO_RUNTIME" "LINKER_SCRIPT;EXPECT_STATUS" "SOURCES;CFLAGS;LDFLAGS")
  if(G_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${fn}(${NAME}): unknown arguments ${G_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT G_SOURCES)
    message(FATAL_ERROR "${fn}(${NAME}): no SOURCES")
  endif()
  if(NOT G_LINKER_SCRIPT)
    set(G_LINKER_SCRIPT "${default_script}")
  endif()
  get_filename_component(G_LINKER_SCRIPT "${G_LINKER_SCRIPT}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  if(NOT DEFINED G_EXPECT_STATUS)
    set(G_EXPECT_STATUS 0)
  endif()
  set(srcs "")
  foreach(_ksim_s IN LISTS G_SOURCES)
    get_filename_component(_ksim_s "${_ksim_s}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND srcs "${_ksim_s}")
  endforeach()
endmacro()

# ksim_guest_objects(OUT_VAR NAME LABEL OBJDIR
#     COMPILER gcc  SOURCES ...  DEPENDS ...  FLAGS ...)
# One custom command per source: `COMPILER FLAGS -MD -MF x.o.d -c src -o x.o`
# in OBJDIR, depending on the source, DEPENDS and its depfile. Sets OUT_VAR
# to the object paths.
function(ksim_guest_objects out name label objdir)
  cmake_parse_arguments(PARSE_ARGV 4 O "" "COMPILER" "SOURCES;DEPENDS;FLAGS")
  set(objs "")
  foreach(src IN LISTS O_SOURCES)
    get_filename_component(base "${src}" NAME)
    set(obj "${objdir}/${base}.o")
    list(APPEND objs "${obj}")
    add_custom_command(
      OUTPUT "${obj}"
      COMMAND ${CMAKE_COMMAND} -E make_directory "${objdir}"
      COMMAND "${O_COMPILER}" ${O_FLAGS} -MD -MF "${obj}.d" -c "${src}" -o "${obj}"
      DEPENDS "${src}" ${O_DEPENDS}
      DEPFILE "${obj}.d"
      COMMENT "${label} ${name}: ${base}"
      VERBATIM COMMAND_EXPAND_LISTS)
  endforeach()
  set(${out} "${objs}" PARENT_SCOPE)
endfunction()
