#!/usr/bin/env bash
# bench/compare-llama-cpp.sh: `basalt bench` against llama.cpp's `llama-bench` on the same GGUF files, the same
# thread count and the same pp/tg sizes, in interleaved rounds (the engine that goes first alternates from round to
# round, so a drift of the shared machine's load hits both alike). Prints each round's figures and the basalt /
# llama.cpp ratios, then the medians. Quote only such ratios: figures measured at other times do not compare.
#
#   bench/compare-llama-cpp.sh [options] MODEL.gguf [MODEL.gguf ...]
#
# llama.cpp is a reference only and nothing of it enters this tree: on first use the script fetches the npm package
# node-llama-cpp at a pinned version (it carries llama.cpp's source as a git bundle, llama/gitRelease.bundle),
# checks the bundle's commit, and builds the CPU-only llama-bench target into a cache folder outside the
# repository ($BASALT_LLAMA_CPP_CACHE, default ~/.cache/basalt-llama-cpp). Needs npm, git, cmake, ninja, a C++
# compiler and /usr/bin/python3 (for the JSON and the medians). The model files need a tokenizer
# (tokenizer.ggml.model): llama.cpp refuses files without one; make-model's files carry one.
set -euo pipefail

# The pinned reference: node-llama-cpp 3.22.1 bundles llama.cpp release v0.5.0 at this commit.
NODE_LLAMA_CPP_VERSION=3.22.1
LLAMA_CPP_TAG=v0.5.0
LLAMA_CPP_COMMIT=de3ff815ea7d559ee917f063901b8986f038abc6

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
basalt="$here/build/bin/basalt"
llama_bench=""
cache="${BASALT_LLAMA_CPP_CACHE:-$HOME/.cache/basalt-llama-cpp}"
jobs=2
threads=2
n_prompt=128
n_gen=64
reps=3
rounds=3
build_only=0
models=()

usage() {
    cat <<EOF
usage: $0 [options] MODEL.gguf [MODEL.gguf ...]
  -t, --threads N      threads for both engines (default $threads)
  -p N                 prompt tokens, pp (default $n_prompt)
  -n N                 generated tokens, tg (default $n_gen)
  -r N                 repetitions inside each engine's run (default $reps; basalt: median, llama-bench: median of
                       its samples)
  --rounds N           interleaved rounds (default $rounds)
  --basalt PATH        the basalt CLI (default build/bin/basalt)
  --llama-bench PATH   use this llama-bench instead of building the pinned one
  --cache DIR          where llama.cpp is fetched and built (default \$BASALT_LLAMA_CPP_CACHE or
                       ~/.cache/basalt-llama-cpp)
  -j N                 build jobs for llama.cpp (default $jobs)
  --build-only         fetch and build llama-bench, then stop
EOF
}

while [ $# -gt 0 ]; do
    case "$1" in
        -t | --threads) threads=$2; shift 2 ;;
        -p) n_prompt=$2; shift 2 ;;
        -n) n_gen=$2; shift 2 ;;
        -r) reps=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --basalt) basalt=$2; shift 2 ;;
        --llama-bench) llama_bench=$2; shift 2 ;;
        --cache) cache=$2; shift 2 ;;
        -j) jobs=$2; shift 2 ;;
        --build-only) build_only=1; shift ;;
        -h | --help) usage; exit 0 ;;
        -*) echo "compare-llama-cpp: unknown option '$1'" >&2; usage >&2; exit 2 ;;
        *) models+=("$1"); shift ;;
    esac
done
for v in "$threads" "$n_prompt" "$n_gen" "$reps" "$rounds" "$jobs"; do
    case "$v" in
        '' | *[!0-9]*) echo "compare-llama-cpp: '$v' is not a non-negative integer" >&2; exit 2 ;;
    esac
done
if [ "$rounds" -lt 1 ] || [ "$reps" -lt 1 ]; then
    echo "compare-llama-cpp: --rounds and -r must be at least 1" >&2
    exit 2
fi
if [ "$build_only" -eq 0 ] && [ ${#models[@]} -eq 0 ]; then
    usage >&2
    exit 2
fi

# Fetches the pinned llama.cpp source and builds llama-bench (CPU only) unless the cache already has it.
build_llama_bench() {
    local src="$cache/llama.cpp-$LLAMA_CPP_TAG" build="$cache/build-$LLAMA_CPP_TAG"
    llama_bench="$build/bin/llama-bench"
    [ -x "$llama_bench" ] && return 0
    mkdir -p "$cache"
    if [ ! -d "$src/.git" ]; then
        local tmp
        tmp=$(mktemp -d)
        echo "compare-llama-cpp: fetching node-llama-cpp@$NODE_LLAMA_CPP_VERSION (llama.cpp $LLAMA_CPP_TAG) with npm" >&2
        (cd "$tmp" && npm pack --silent "node-llama-cpp@$NODE_LLAMA_CPP_VERSION" >/dev/null)
        tar -xzf "$tmp/node-llama-cpp-$NODE_LLAMA_CPP_VERSION.tgz" -C "$tmp" package/llama/gitRelease.bundle
        rm -rf "$src"
        git -c advice.detachedHead=false clone --quiet "$tmp/package/llama/gitRelease.bundle" "$src"
        rm -rf "$tmp"
    fi
    local head
    head=$(git -C "$src" rev-parse HEAD)
    if [ "$head" != "$LLAMA_CPP_COMMIT" ]; then
        echo "compare-llama-cpp: $src is at $head, expected the pinned $LLAMA_CPP_COMMIT; remove it to refetch" >&2
        exit 1
    fi
    echo "compare-llama-cpp: building llama-bench (CPU only, -j$jobs) in $build" >&2
    cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=ON \
        -DGGML_VULKAN=OFF -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_BLAS=OFF -DLLAMA_BUILD_TESTS=OFF \
        -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF \
        -DLLAMA_CURL=OFF >"$cache/configure.log" 2>&1 ||
        { echo "compare-llama-cpp: configure failed, see $cache/configure.log" >&2; exit 1; }
    cmake --build "$build" --target llama-bench -j "$jobs" >"$cache/build.log" 2>&1 ||
        { echo "compare-llama-cpp: build failed, see $cache/build.log" >&2; exit 1; }
}

if [ -z "$llama_bench" ]; then
    build_llama_bench
fi
[ -x "$llama_bench" ] || { echo "compare-llama-cpp: no llama-bench at '$llama_bench'" >&2; exit 1; }
[ "$build_only" -eq 1 ] && { echo "$llama_bench"; exit 0; }
[ -x "$basalt" ] || { echo "compare-llama-cpp: no basalt CLI at '$basalt' (build first, or --basalt PATH)" >&2; exit 1; }

py=/usr/bin/python3
[ -x "$py" ] || py=python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One run of each engine; each prints "PP TG" (tokens per second, medians of its repetitions).
run_basalt() {
    "$basalt" --no-progress bench -m "$1" -p "$n_prompt" -n "$n_gen" -r "$reps" --threads "$threads" --json \
        >"$work/basalt.json" 2>"$work/basalt.err" ||
        { cat "$work/basalt.err" >&2; echo "compare-llama-cpp: basalt bench failed on $1" >&2; exit 1; }
    "$py" -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["pp_tokens_per_s"], j["tg_tokens_per_s"])' \
        "$work/basalt.json"
}
run_llama() {
    "$llama_bench" -m "$1" -p "$n_prompt" -n "$n_gen" -r "$reps" -t "$threads" -o json \
        >"$work/llama.json" 2>"$work/llama.err" ||
        { cat "$work/llama.err" >&2; echo "compare-llama-cpp: llama-bench failed on $1" >&2; exit 1; }
    "$py" - "$work/llama.json" "$n_prompt" "$n_gen" <<'EOF'
import json, statistics, sys
rows = json.load(open(sys.argv[1]))
n_prompt, n_gen = int(sys.argv[2]), int(sys.argv[3])
def pick(p, g):
    for r in rows:
        if r["n_prompt"] == p and r["n_gen"] == g:
            return statistics.median(r["samples_ts"])
    return 0.0
print(pick(n_prompt, 0) if n_prompt else 0.0, pick(0, n_gen) if n_gen else 0.0)
EOF
}

echo "$("$basalt" version | head -1) vs llama.cpp $LLAMA_CPP_TAG (${LLAMA_CPP_COMMIT:0:12}, node-llama-cpp" \
    "$NODE_LLAMA_CPP_VERSION): pp$n_prompt / tg$n_gen, $threads threads, -r $reps, $rounds interleaved rounds"
for model in "${models[@]}"; do
    echo "== $model"
    : >"$work/rounds"
    for ((round = 1; round <= rounds; ++round)); do
        if ((round % 2 == 1)); then
            b=$(run_basalt "$model")
            l=$(run_llama "$model")
        else
            l=$(run_llama "$model")
            b=$(run_basalt "$model")
        fi
        # The 1-minute load average after the round: on a shared machine it says how far to trust the round.
        echo "$round $b $l $(cut -d' ' -f1 /proc/loadavg)" >>"$work/rounds"
    done
    "$py" - "$work/rounds" "$n_prompt" "$n_gen" "$(nproc)" <<'EOF'
import statistics, sys
n_prompt, n_gen, cores = sys.argv[2], sys.argv[3], int(sys.argv[4])
rows = [list(map(float, line.split())) for line in open(sys.argv[1]) if line.strip()]
def ratio(a, b):
    return a / b if b > 0 else float("nan")
for r, bp, bt, lp, lt, load in rows:
    print(f"round {int(r)}: basalt pp{n_prompt} {bp:8.1f} tg{n_gen} {bt:7.1f} t/s | llama.cpp pp{n_prompt} {lp:8.1f}"
          f" tg{n_gen} {lt:7.1f} t/s | ratio pp {ratio(bp, lp):.2f}x tg {ratio(bt, lt):.2f}x | load {load:.2f}")
med = lambda xs: statistics.median(xs)
bp, bt, lp, lt = (med([row[i] for row in rows]) for i in range(1, 5))
rp = med([ratio(row[1], row[3]) for row in rows])
rt = med([ratio(row[2], row[4]) for row in rows])
print(f"median: basalt pp{n_prompt} {bp:.1f} tg{n_gen} {bt:.1f} t/s, llama.cpp pp{n_prompt} {lp:.1f} tg{n_gen} {lt:.1f}"
      f" t/s; ratio (median of the rounds' ratios) pp {rp:.2f}x, tg {rt:.2f}x")
busiest = max(row[5] for row in rows)
if busiest > cores:
    print(f"note: the machine was busy (1-minute load up to {busiest:.1f} on {cores} cores): under contention the"
          " ratios measure how each engine's threads cope with it as much as the engines; rerun when it is calm")
EOF
done
