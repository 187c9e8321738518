#!/usr/bin/env bash
# Takes docs/DEBUGGER.md's screenshots: a probe hit, a stop_machine, a race
# and a comparison, each at 1280x800 with the font at scale 1 and at
# 1920x1080 with --font-scale 1.5 (the `-1080p` files). ksim-ui runs under
# Xvfb (xvfb-run -a, which scripts/install-deps.sh installs), each view
# opened in its lesson's layout at the moment the page describes.
#
#   scripts/screenshots.sh [DIR]     (default docs/img; KSIM_BUILD_DIR: build)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${KSIM_BUILD_DIR:-build}
out=${1:-docs/img}
ui="$dir/apps/ksim-ui/ksim-ui"
[ -x "$ui" ] || { echo "screenshots: no $ui; build first (scripts/build.sh)" >&2; exit 1; }
command -v xvfb-run >/dev/null || { echo "screenshots: needs xvfb-run (apt-get install xvfb)" >&2; exit 1; }
mkdir -p "$out"
script=$(mktemp)
trap 'rm -f "$script"' EXIT

# shot NAME ACTIONS OPTIONS...: both sizes of one view, after the script
# ACTIONS (lines of ksim-ui's script language, "" for none).
shot() {
  local name=$1 actions=$2
  shift 2
  for size in "1280 800 1 " "1920 1080 1.5 -1080p"; do
    read -r w h scale suffix <<<"$size"
    printf '%swait 3\nscreenshot %s\nquit\n' "$actions" "$out/$name$suffix.png" >"$script"
    xvfb-run -a -s "-screen 0 1920x1080x24" "$ui" --ini '' --width "$w" --height "$h" --font-scale "$scale" \
      "$@" --script "$script" >/dev/null
    echo "screenshots: $out/$name$suffix.png"
  done
}

# (The lessons at pinned cycles run model v1, as docs/DEBUGGER.md says.)
# CPU 0 stepping the copy of do_fork's first instruction in its slot.
shot probe-hit "" --timing v1 --cpus 4 --probe 'p do_fork' --kprobes-optimization 0 --layout hit --at 76960
# patch_text's stop_machine: CPU 0 still on PREPARE, the others already on DISABLE_IRQ.
shot stop-machine "" --timing v1 --cpus 4 --probe-script docs/examples/churn.probes --layout stop-machine --at 102642
# The torn write, at its violation.
shot race-torn-write "" --race torn-write --variant broken --seed 1
# The same race's two variants at B's violation: A's int3 against B's torn jmp.
shot compare "" --race torn-write --variant correct --seed 1 --compare variant=broken --at 208587
# An RV64 jump-optimized probe's detour buffer, typed into Code's location.
shot detour-buffer $'run-to-cycle 200000\nwait 2\ntype Code/location 0x80010000\n' --timing v1 --cpus 2 --probe 'p:f do_fork' --layout hit
