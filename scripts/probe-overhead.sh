#!/usr/bin/env bash
# The probe-overhead table of docs/PERFORMANCE.md, measured and drawn:
# runs bench/kprobes_bench.cpp's variants (simulated cycles per hit, exact
# under cpu/timing.hpp), writes $KSIM_BUILD_DIR/probe_overhead.dat with
# each variant's cost as a ratio to k beside the Linux documentation's
# table (x86-64 Xeon E5410) and the 2006 paper's Table 1 (Pentium M), and
# draws docs/img/probe-overhead.png. Needs gnuplot (Debian: gnuplot-nox,
# which scripts/install-deps.sh installs: the docs test runs this script).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${KSIM_BUILD_DIR:-build}
out=${1:-docs/img/probe-overhead.png}
command -v gnuplot >/dev/null || { echo "probe-overhead: needs gnuplot (apt-get install gnuplot-nox)" >&2; exit 1; }
bench="$dir/bench/ksim_bench"
[ -x "$bench" ] || { echo "probe-overhead: no $bench; run scripts/build.sh first" >&2; exit 1; }
raw=$("$bench" --benchmark_filter='BM_Kprobe_(X86|Rv64)_(k|b|o|r|rb|ro)/' --benchmark_min_time=0.2 2>/dev/null)
cycles() {  # BENCH -> sim_cycles_per_hit ("" if absent)
  sed -n "s/^BM_Kprobe_$1\/.*sim_cycles_per_hit=\([0-9.]*\).*/\1/p" <<<"$raw" | head -1
}
ratio() { [ -n "$1" ] && [ -n "$2" ] && awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }' || echo "-"; }
xk=$(cycles X86_k) rk=$(cycles Rv64_k)
dat="$dir/probe_overhead.dat"
{
  echo "# variant ksim_x86 ksim_rv64 linux_doc_x86_64 paper (ratios to k; '-' = none)"
  # Linux doc (x86-64): k 0.99 us, b 0.43, o 0.06, r 1.24, rb 0.68, ro 0.30.
  # Paper Table 1: kp 0.57 us -> boosted 0.26; rp 0.92 -> 0.45 (boosted as ratios to the unboosted kp).
  echo "k  $(ratio "$xk" "$xk") $(ratio "$rk" "$rk") 1.00 1.00"
  echo "b  $(ratio "$(cycles X86_b)" "$xk") - 0.43 0.46"
  echo "o  $(ratio "$(cycles X86_o)" "$xk") $(ratio "$(cycles Rv64_o)" "$rk") 0.06 -"
  echo "r  $(ratio "$(cycles X86_r)" "$xk") $(ratio "$(cycles Rv64_r)" "$rk") 1.25 1.61"
  echo "rb $(ratio "$(cycles X86_rb)" "$xk") $(ratio "$(cycles Rv64_rb)" "$rk") 0.69 0.79"
  echo "ro $(ratio "$(cycles X86_ro)" "$xk") $(ratio "$(cycles Rv64_ro)" "$rk") 0.30 -"
} >"$dat"
cat "$dat"
gnuplot <<GP
set terminal pngcairo size 900,520 font "sans,11" noenhanced
set output "$out"
set title "Cost of a probe hit as a ratio to an unoptimized kprobe (k)"
set ylabel "ratio to k"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set datafile missing "-"
set yrange [0:*]
set grid ytics
set key top left
plot "$dat" using 2:xtic(1) title "ksim x86-64 (simulated cycles)" lc rgb "#1b9e77", \
     "" using 3 title "ksim RV64 (simulated cycles)" lc rgb "#66a61e", \
     "" using 4 title "Linux documentation, x86-64 Xeon E5410 (us)" lc rgb "#d95f02", \
     "" using 5 title "OLS 2006 paper, Pentium M (us)" lc rgb "#7570b3"
GP
echo "probe-overhead: wrote $out"
