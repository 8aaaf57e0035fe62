#!/usr/bin/env bash
# Runs the whole test suite: brings dependencies and the build up to date (scripts/setup.sh), then ctest.
# Usage: scripts/test.sh [--sanitize] [extra ctest arguments...]
set -euo pipefail
cd "$(dirname "$0")/.."
setup_args=()
build_dir="${BASALT_BUILD_DIR:-build}"
if [ "${1:-}" = --sanitize ]; then
    shift
    setup_args+=(--sanitize)
    build_dir="${BASALT_BUILD_DIR:-build-asan}"
fi
scripts/setup.sh "${setup_args[@]}"
exec ctest --test-dir "$build_dir" --output-on-failure -j2 --timeout 600 "$@"
