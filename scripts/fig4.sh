#!/usr/bin/env bash
# The 2006 OLS paper's Figure 4 on ksim (docs/FIG4.md): `ksim run --image
# fig4` on 1, 2, 4, 8 and 16 CPUs, in three series: no probe, a kprobe on
# fig4_target with --kprobes-locking spinlock, and the same with rcu.
# Every CPU calls fig4_target 65,535 times; `cycles:` is the run's time.
#
#   scripts/fig4.sh [ISA...]      ISAs: rv64 x86 (default: both)
#
# Prints one Markdown table per ISA (simulated cycles; deterministic, so
# any machine gives the same numbers) and writes the data files
# $KSIM_BUILD_DIR/fig4_<isa>.dat (columns: cpus, none, spinlock, rcu) that
# scripts/fig4-plot.sh draws. Needs a build (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${KSIM_BUILD_DIR:-build}
ksim="$dir/apps/ksim/ksim"
[ -x "$ksim" ] || { echo "fig4: no $ksim; run scripts/build.sh first" >&2; exit 1; }
isas=("$@")
[ ${#isas[@]} -eq 0 ] && isas=(rv64 x86)

cycles() {  # ksim run arguments -> the summary's cycle count (the run must pass)
  local out
  out=$("$ksim" run -q --image fig4 "$@") || { echo "fig4: ksim run $* failed" >&2; echo "$out" >&2; exit 1; }
  sed -n 's/^cycles: //p' <<<"$out"
}

for isa in "${isas[@]}"; do
  dat="$dir/fig4_$isa.dat"
  echo "# cpus none spinlock rcu  (ksim --image fig4 --isa $isa, simulated cycles)" >"$dat"
  echo "### $isa"
  echo
  echo "| CPUs | probe hits | no probe | spinlock | rcu | spinlock / rcu |"
  echo "| ---: | ---: | ---: | ---: | ---: | ---: |"
  for n in 1 2 4 8 16; do
    # No booster or jump optimization: the paper's Figure 4 hits take both
    # traps (and RV64 has neither).
    probe=(--probe 'p fig4_target' --probe-action p_fig4_target_0=count --kprobes-boost 0 --kprobes-optimization 0)
    none=$(cycles --isa "$isa" --cpus "$n")
    spin=$(cycles --isa "$isa" --cpus "$n" "${probe[@]}" --kprobes-locking spinlock)
    rcu=$(cycles --isa "$isa" --cpus "$n" "${probe[@]}" --kprobes-locking rcu)
    echo "$n $none $spin $rcu" >>"$dat"
    printf '| %d | %d | %d | %d | %d | %s |\n' "$n" $((n * 65535)) "$none" "$spin" "$rcu" \
      "$(awk -v s="$spin" -v r="$rcu" 'BEGIN { printf "%.2f", s / r }')"
  done
  echo
done
