#!/usr/bin/env bash
# Configures and builds ksim into build/ (or $KSIM_BUILD_DIR). Extra arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${KSIM_BUILD_DIR:-build}
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=${KSIM_BUILD_TYPE:-Release} "$@" >/dev/null
cmake --build "$dir" -j "$(nproc)"
