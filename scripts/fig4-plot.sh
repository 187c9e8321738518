#!/usr/bin/env bash
# Draws docs/img/fig4.png from the data scripts/fig4.sh wrote
# ($KSIM_BUILD_DIR/fig4_rv64.dat and fig4_x86.dat), in the style of the
# 2006 OLS paper's Figure 4: time against CPUs, log scale, three series
# per ISA. Needs gnuplot (Debian: gnuplot-nox, which scripts/install-deps.sh installs:
# the docs test runs this script).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${KSIM_BUILD_DIR:-build}
out=${1:-docs/img/fig4.png}
command -v gnuplot >/dev/null || { echo "fig4-plot: needs gnuplot (apt-get install gnuplot-nox)" >&2; exit 1; }
for isa in rv64 x86; do
  [ -f "$dir/fig4_$isa.dat" ] || { echo "fig4-plot: no $dir/fig4_$isa.dat; run scripts/fig4.sh first" >&2; exit 1; }
done
gnuplot <<GP
set terminal pngcairo size 900,600 font "sans,11" noenhanced
set output "$out"
set title "Figure 4 on ksim: fig4_target called 65,535 times per CPU (total probes hit = 65,535 x CPUs)"
set xlabel "Number of CPUs"
set ylabel "Simulated cycles (log scale)"
set logscale y
set xrange [0.5:16.5]
set xtics (1, 2, 4, 8, 16)
set grid ytics mytics xtics
set key top left
plot "$dir/fig4_rv64.dat" using 1:2 with linespoints lw 2 pt 7 lc rgb "#1b9e77" title "RV64: no kprobe", \
     "$dir/fig4_rv64.dat" using 1:3 with linespoints lw 2 pt 7 lc rgb "#d95f02" title "RV64: kprobe, single spinlock", \
     "$dir/fig4_rv64.dat" using 1:4 with linespoints lw 2 pt 7 lc rgb "#7570b3" title "RV64: kprobe, RCU", \
     "$dir/fig4_x86.dat" using 1:2 with linespoints lw 2 dt 2 pt 6 lc rgb "#1b9e77" title "x86-64: no kprobe", \
     "$dir/fig4_x86.dat" using 1:3 with linespoints lw 2 dt 2 pt 6 lc rgb "#d95f02" title "x86-64: kprobe, single spinlock", \
     "$dir/fig4_x86.dat" using 1:4 with linespoints lw 2 dt 2 pt 6 lc rgb "#7570b3" title "x86-64: kprobe, RCU"
GP
echo "fig4-plot: wrote $out"
