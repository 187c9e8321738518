#!/usr/bin/env bash
# Installs the Debian packages ksim needs, if any are missing. Idempotent and
# quiet when everything is already present.
set -euo pipefail
pkgs=(
  cmake ninja-build g++ pkg-config
  libboost-program-options-dev   # ksim CLI
  libzydis-dev                   # x86 decode/format/encode
  catch2                         # tests (v2, single header)
  libbenchmark-dev               # bench/
  libelf-dev                     # ELF loading (sim/elf)
  libdw-dev                      # DWARF line tables: source lines (sim/elf/line_table)
  gcc-riscv64-unknown-elf binutils-riscv64-unknown-elf  # RV64 guest code, objdump for disasm tests
  libimgui-dev libglfw3-dev libgl-dev libstb-dev  # ksim-ui (Dear ImGui 1.86 with its GLFW/OpenGL3 backends, PNG screenshots)
  xvfb xauth libgl1-mesa-dri                      # the debugger's tests in a virtual X server (xvfb-run -a, Mesa)
  fonts-dejavu-core              # ksim-ui --font-scale: DejaVu Sans Mono, sharp at any size on a projector
  gnuplot-nox                    # the plots of scripts/fig4-plot.sh and probe-overhead.sh (run by the docs test)
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
