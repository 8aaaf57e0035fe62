#!/usr/bin/env bash
# Builds the libFuzzer targets with clang in build-fuzz/ and fuzzes the GGUF reader, starting from the committed
# seed corpus and crashers (tests/fuzz/{corpus,crashers}/gguf), which are only read unless --merge is given.
# New inputs go to build-fuzz/fuzz-work/gguf/corpus, crashes to build-fuzz/fuzz-work/gguf/artifacts/.
#
# Usage: scripts/fuzz.sh [--time SECONDS | --runs N] [--merge] [--minimize FILE] [-- extra libFuzzer flags]
#   --time S      fuzz for S seconds (default 60)
#   --runs N      stop after N executions instead
#   --merge       afterwards, add the work inputs that reach new coverage to tests/fuzz/corpus/gguf
#   --minimize F  minimise the crashing input F into build-fuzz/fuzz-work/gguf/minimized-<name> (then fix the
#                 bug and commit it to tests/fuzz/crashers/gguf/ so CTest replays it)
# One worker only (the machine is shared); set FUZZ_JOBS to run more.
set -euo pipefail
cd "$(dirname "$0")/.."

time_s=60
runs=""
merge=0
minimize=""
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
        --time) time_s="$2"; shift 2 ;;
        --runs) runs="$2"; shift 2 ;;
        --merge) merge=1; shift ;;
        --minimize) minimize="$2"; shift 2 ;;
        --) shift; extra=("$@"); break ;;
        -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
        *) echo "fuzz.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done

build=build-fuzz
if [ ! -f "$build/build.ninja" ] || ! grep -q '^BASALT_FUZZ:BOOL=ON' "$build/CMakeCache.txt"; then
    CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBASALT_FUZZ=ON \
        -DBASALT_VULKAN=OFF -DBUILD_TESTING=ON -DBASALT_WERROR=ON
fi
ninja -C "$build" -j2 fuzz-gguf

fuzzer="$build/bin/fuzz-gguf"
work="$build/fuzz-work/gguf"
mkdir -p "$work/corpus" "$work/artifacts"

# Tokens of the format for libFuzzer's mutator: magic, versions, type ids, common keys.
dict="$work/gguf.dict"
cat > "$dict" <<'DICT'
"GGUF"
"\x02\x00\x00\x00"
"\x03\x00\x00\x00"
"\x00\x00\x00\x00\x00\x00\x00\x00"
"\xff\xff\xff\xff\xff\xff\xff\xff"
"\x00\x00\x00\x00\x00\x00\x00\x80"
"\x08\x00\x00\x00"
"\x09\x00\x00\x00"
"\x20\x00\x00\x00"
"general.alignment"
"general.architecture"
"tokenizer.ggml.tokens"
".weight"
DICT

common=(-dict="$dict" -max_len=8192 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
        -artifact_prefix="$work/artifacts/")

if [ -n "$minimize" ]; then
    exec "$fuzzer" -minimize_crash=1 -runs=100000 -exact_artifact_path="$work/minimized-$(basename "$minimize")" \
        "${common[@]}" "$minimize"
fi

limit=(-max_total_time="$time_s")
[ -n "$runs" ] && limit=(-runs="$runs")
parallel=()
[ "${FUZZ_JOBS:-1}" -gt 1 ] && parallel=(-jobs="$FUZZ_JOBS" -workers="$FUZZ_JOBS")
status=0
"$fuzzer" "${limit[@]}" "${common[@]}" "${parallel[@]}" "${extra[@]}" \
    "$work/corpus" tests/fuzz/corpus/gguf tests/fuzz/crashers/gguf || status=$?
if [ "$status" -ne 0 ]; then
    echo "fuzz.sh: the fuzzer stopped with status $status; crashing inputs:" >&2
    ls -l "$work/artifacts" >&2
    exit "$status"
fi
if [ "$merge" = 1 ]; then
    "$fuzzer" -merge=1 "${common[@]}" tests/fuzz/corpus/gguf "$work/corpus"
fi
