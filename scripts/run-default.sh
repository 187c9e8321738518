#!/usr/bin/env bash
# Installs what is missing, builds, and runs the default scenario.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
exec "${KSIM_BUILD_DIR:-build}"/apps/ksim/ksim run "$@"
