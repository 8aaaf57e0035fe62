#!/usr/bin/env bash
# Formats every tracked C, C++ and GLSL source with the repo's .clang-format.
# Usage: scripts/format.sh [--check]   (--check: change nothing, exit 1 if anything is unformatted)
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t listed < <(git ls-files '*.c' '*.h' '*.cpp' '*.hpp' '*.comp' '*.glsl')
files=()
for f in "${listed[@]}"; do [ -e "$f" ] && files+=("$f"); done  # a file deleted but not yet committed is gone
[ "${#files[@]}" -gt 0 ] || exit 0
if [ "${1:-}" = --check ]; then
    exec clang-format --dry-run -Werror "${files[@]}"
fi
exec clang-format -i "${files[@]}"
