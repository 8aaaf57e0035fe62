#!/usr/bin/env bash
# Runs clang-tidy (checks in .clang-tidy) over the core, plugins and tools using build/compile_commands.json.
# Usage: scripts/tidy.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${1:-build}"
mapfile -t files < <(git ls-files 'core/*.cpp' 'plugins/*.cpp' 'tools/*.cpp')
exec clang-tidy -p "$build_dir" --quiet "${files[@]}"
