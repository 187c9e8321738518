#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite; then
# builds the debugger with AddressSanitizer and UndefinedBehaviorSanitizer
# and runs its scripted tests (the ksim-ui windows under Xvfb) there too.
# Extra arguments go to cmake for the main build.
#
#   KSIM_BUILD_DIR       main build folder (default build)
#   KSIM_UI_SANITIZE=0   skip the sanitizer stage (it is skipped anyway when
#                        the main build is the sanitizer build)
#
# Why the second stage: a use after free in ksim-ui went unnoticed while
# its scripted runs were only run in the plain build, where it did not
# always crash (issue 22). The whole suite under the sanitizers is the
# README's command with -DKSIM_SANITIZE=ON.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh "$@"
ctest --test-dir "${KSIM_BUILD_DIR:-build}" --output-on-failure -j "$(nproc)"

sanitized=0
for a in "$@"; do [ "$a" = "-DKSIM_SANITIZE=ON" ] && sanitized=1; done
if [ "${KSIM_UI_SANITIZE:-1}" = 1 ] && [ "$sanitized" = 0 ]; then
  dir=${KSIM_UI_SANITIZE_DIR:-build-asan-ui}
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKSIM_SANITIZE=ON -DKSIM_BUILD_BENCH=OFF >/dev/null
  cmake --build "$dir" -j "$(nproc)" --target ksim ksim-ui ksim_ui_xvfb_tests ksim_guest_kernel_long
  ctest --test-dir "$dir" --output-on-failure -R '^ui-xvfb:'
fi
