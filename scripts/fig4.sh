#!/usr/bin/env bash
# The 2006 OLS paper's Figure 4 on ksim (docs/FIG4.md): `ksim fig4` for each
# ISA, which runs the fig4 image on 1, 2, 4, 8 and 16 CPUs in three series
# (no probe; a kprobe on fig4_target under Linux 2.6.9's kprobe_lock; the
# same with RCU) and prints one Markdown table per ISA (simulated cycles;
# deterministic, so any machine gives the same numbers). Also writes the
# data files $KSIM_BUILD_DIR/fig4_<isa>.dat (columns: cpus, none,
# spinlock, rcu) that scripts/fig4-plot.sh draws.
#
#   scripts/fig4.sh [ISA...]      ISAs: rv64 x86 (default: both)
#
# Needs a build (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${KSIM_BUILD_DIR:-build}
ksim="$dir/apps/ksim/ksim"
[ -x "$ksim" ] || { echo "fig4: no $ksim; run scripts/build.sh first" >&2; exit 1; }
isas=("$@")
[ ${#isas[@]} -eq 0 ] && isas=(rv64 x86)
for isa in "${isas[@]}"; do
  # (The plot in docs/FIG4.md is of model v1's tables.)
  "$ksim" fig4 --timing v1 --isa "$isa" --dat "$dir/fig4_$isa.dat"
done
