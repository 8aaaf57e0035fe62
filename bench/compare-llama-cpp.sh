#!/usr/bin/env bash
# bench/compare-llama-cpp.sh: `basalt bench` against llama.cpp's `llama-bench` on the same GGUF files, the same
# thread count and the same pp/tg sizes, in interleaved rounds (the engine that goes first alternates from round to
# round, so a drift of the shared machine's load hits both alike). Prints each round's figures and the basalt /
# llama.cpp ratios, then the medians. Quote only such ratios: figures measured at other times do not compare.
#
#   bench/compare-llama-cpp.sh [options] MODEL.gguf [MODEL.gguf ...]
#   bench/compare-llama-cpp.sh --serve [options] MODEL.gguf [MODEL.gguf ...]
#
# --serve: `basalt serve` against llama.cpp's `llama-server` instead, each started on a free loopback port with the
# same threads and the same K/V memory (S slots of C tokens: `basalt serve --parallel S --ctx C`, `llama-server -np S
# -c S*C`, continuous batching, both F16 K/V), driven by the same load generator (bench/serve-load.py: streaming
# greedy completions of -p-token prompts, -n tokens each, at each --concurrency, with each --arrivals pattern). Each
# round starts and stops both servers (the order alternates); the table gives the medians over the rounds and the
# basalt / llama-server ratios of throughput, TTFT and ITL p50/p99 (bench/serve-compare-table.py). The servers the
# script started are stopped on every exit, Ctrl-C and errors included.
#
# llama.cpp is a reference only and nothing of it enters this tree: on first use the script fetches the npm package
# node-llama-cpp at a pinned version (it carries llama.cpp's source as a git bundle, llama/gitRelease.bundle),
# checks the bundle's commit, and builds the CPU-only llama-bench (or llama-server) target into a cache folder outside the
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
llama_server=""
cache="${BASALT_LLAMA_CPP_CACHE:-$HOME/.cache/basalt-llama-cpp}"
jobs=2
threads=2
n_prompt=""
n_gen=""
reps=3
rounds=3
build_only=0
serve=0
concurrency="1 8 32"
arrivals="none continuous long"
long_prompt=1000
requests=0
slot_ctx=0
models=()

usage() {
    cat <<EOF
usage: $0 [options] MODEL.gguf [MODEL.gguf ...]
       $0 --serve [options] MODEL.gguf [MODEL.gguf ...]
  -t, --threads N      threads for both engines (default $threads)
  -p N                 prompt tokens, pp (default 128); --serve: tokens of each prompt (default 100)
  -n N                 generated tokens, tg (default 64); --serve: tokens each request generates (default 32)
  -r N                 repetitions inside each engine's run (default $reps; basalt: median, llama-bench: median of
                       its samples; not used by --serve)
  --rounds N           interleaved rounds (default $rounds)
  --basalt PATH        the basalt CLI (default build/bin/basalt)
  --llama-bench PATH   use this llama-bench instead of building the pinned one
  --cache DIR          where llama.cpp is fetched and built (default \$BASALT_LLAMA_CPP_CACHE or
                       ~/.cache/basalt-llama-cpp)
  -j N                 build jobs for llama.cpp (default $jobs)
  --build-only         fetch and build llama-bench (--serve: llama-server), then stop
 serving mode:
  --serve              basalt serve against llama-server (see the top of this script)
  --concurrency LIST   concurrent streams, e.g. "1 8 32" (default "$concurrency")
  --arrivals LIST      of none, continuous, long (default "$arrivals"; bench/serve-load.py says what each is)
  --long N             tokens of the long arriving prompt (default $long_prompt)
  --requests N         requests per level (default 2 x concurrency, at least 4)
  --ctx N              context of each server slot (default: the longest prompt + -n, rounded up to 256)
  --llama-server PATH  use this llama-server instead of building the pinned one
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
        --llama-server) llama_server=$2; shift 2 ;;
        --serve) serve=1; shift ;;
        --concurrency) concurrency=$2; shift 2 ;;
        --arrivals) arrivals=$2; shift 2 ;;
        --long) long_prompt=$2; shift 2 ;;
        --requests) requests=$2; shift 2 ;;
        --ctx) slot_ctx=$2; shift 2 ;;
        --cache) cache=$2; shift 2 ;;
        -j) jobs=$2; shift 2 ;;
        --build-only) build_only=1; shift ;;
        -h | --help) usage; exit 0 ;;
        -*) echo "compare-llama-cpp: unknown option '$1'" >&2; usage >&2; exit 2 ;;
        *) models+=("$1"); shift ;;
    esac
done
if [ "$serve" -eq 1 ]; then
    n_prompt=${n_prompt:-100}
    n_gen=${n_gen:-32}
else
    n_prompt=${n_prompt:-128}
    n_gen=${n_gen:-64}
fi
for v in "$threads" "$n_prompt" "$n_gen" "$reps" "$rounds" "$jobs" "$long_prompt" "$requests" "$slot_ctx" \
    $concurrency; do
    case "$v" in
        '' | *[!0-9]*) echo "compare-llama-cpp: '$v' is not a non-negative integer" >&2; exit 2 ;;
    esac
done
if [ "$rounds" -lt 1 ] || [ "$reps" -lt 1 ]; then
    echo "compare-llama-cpp: --rounds and -r must be at least 1" >&2
    exit 2
fi
for a in $arrivals; do
    case "$a" in
        none | continuous | long) ;;
        *) echo "compare-llama-cpp: --arrivals takes none, continuous and long, not '$a'" >&2; exit 2 ;;
    esac
done
if [ "$serve" -eq 1 ] && { [ -z "${concurrency// /}" ] || [ -z "${arrivals// /}" ] || [ "$n_prompt" -lt 1 ] ||
    [ "$n_gen" -lt 1 ] || [ "$long_prompt" -lt 1 ]; }; then
    echo "compare-llama-cpp: --serve needs a --concurrency and an --arrivals list, -p, -n and --long >= 1" >&2
    exit 2
fi
if [ "$build_only" -eq 0 ] && [ ${#models[@]} -eq 0 ]; then
    usage >&2
    exit 2
fi

# Fetches the pinned llama.cpp source and builds the target $1 (llama-bench or llama-server, CPU only) unless the
# cache already has it; prints the binary's path.
build_llama_cpp() {
    local target=$1 src="$cache/llama.cpp-$LLAMA_CPP_TAG" build="$cache/build-$LLAMA_CPP_TAG"
    [ -x "$build/bin/$target" ] && { echo "$build/bin/$target"; return 0; }
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
    echo "compare-llama-cpp: building $target (CPU only, -j$jobs) in $build" >&2
    cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=ON \
        -DGGML_VULKAN=OFF -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_BLAS=OFF -DLLAMA_BUILD_TESTS=OFF \
        -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF \
        -DLLAMA_CURL=OFF >"$cache/configure.log" 2>&1 ||
        { echo "compare-llama-cpp: configure failed, see $cache/configure.log" >&2; exit 1; }
    cmake --build "$build" --target "$target" -j "$jobs" >"$cache/build-$target.log" 2>&1 ||
        { echo "compare-llama-cpp: build failed, see $cache/build-$target.log" >&2; exit 1; }
    echo "$build/bin/$target"
}

if [ "$serve" -eq 1 ]; then
    [ -n "$llama_server" ] || llama_server=$(build_llama_cpp llama-server)
    [ -x "$llama_server" ] || { echo "compare-llama-cpp: no llama-server at '$llama_server'" >&2; exit 1; }
    [ "$build_only" -eq 1 ] && { echo "$llama_server"; exit 0; }
else
    [ -n "$llama_bench" ] || llama_bench=$(build_llama_cpp llama-bench)
    [ -x "$llama_bench" ] || { echo "compare-llama-cpp: no llama-bench at '$llama_bench'" >&2; exit 1; }
    [ "$build_only" -eq 1 ] && { echo "$llama_bench"; exit 0; }
fi
[ -x "$basalt" ] || { echo "compare-llama-cpp: no basalt CLI at '$basalt' (build first, or --basalt PATH)" >&2; exit 1; }

py=/usr/bin/python3
[ -x "$py" ] || py=python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ "$serve" -eq 1 ]; then
    # Serving mode: S slots (the most concurrent streams, +1 for the long prompt) of C tokens each, on both servers.
    slots=0
    for c in $concurrency; do ((c > slots)) && slots=$c; done
    longest=$n_prompt
    case " $arrivals " in *" long "*) slots=$((slots + 1)); ((long_prompt > longest)) && longest=$long_prompt ;; esac
    ((slot_ctx > 0)) || slot_ctx=$(((longest + n_gen + 255) / 256 * 256))
    server_pid=""
    load_pid=""
    url=""
    # Stops the load generator and the server this script started: SIGTERM, then SIGKILL after 30 s.
    stop_server() {
        if [ -n "$load_pid" ]; then
            kill -TERM "$load_pid" 2>/dev/null || true
            wait "$load_pid" 2>/dev/null || true
            load_pid=""
        fi
        [ -n "$server_pid" ] || return 0
        kill -TERM "$server_pid" 2>/dev/null || true
        for _ in $(seq 1 300); do
            kill -0 "$server_pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
        server_pid=""
    }
    trap 'stop_server; rm -rf "$work"' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    server_failed() {
        echo "compare-llama-cpp: $1 $2; the end of its log ($3):" >&2
        tail -n 20 "$3" >&2
        exit 1
    }
    # Starts ENGINE (basalt or llama) on MODEL on a free loopback port and waits until /health answers 200.
    start_server() {
        local engine=$1 model=$2 log="$work/$1.log" port t0=$SECONDS
        if [ "$engine" = basalt ]; then
            rm -f "$work/port"
            "$basalt" --no-progress serve -m "$model" --host 127.0.0.1 --port 0 --port-file "$work/port" \
                --threads "$threads" --parallel "$slots" --ctx "$slot_ctx" >"$log" 2>&1 &
            server_pid=$!
            until [ -s "$work/port" ]; do
                kill -0 "$server_pid" 2>/dev/null || server_failed "basalt serve" "exited before it listened" "$log"
                ((SECONDS - t0 < 600)) || server_failed "basalt serve" "did not listen within 600 s" "$log"
                sleep 0.1
            done
            port=$(cat "$work/port")
        else
            port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
            "$llama_server" -m "$model" --host 127.0.0.1 --port "$port" -t "$threads" -tb "$threads" -np "$slots" \
                -c $((slots * slot_ctx)) -cb --no-webui >"$log" 2>&1 &
            server_pid=$!
        fi
        url="http://127.0.0.1:$port"
        until "$py" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1] + "/health", timeout=5)' \
            "$url" 2>/dev/null; do
            kill -0 "$server_pid" 2>/dev/null || server_failed "$engine server" "exited before it was healthy" "$log"
            ((SECONDS - t0 < 600)) || server_failed "$engine server" "was not healthy within 600 s" "$log"
            sleep 0.2
        done
    }
    # One engine's share of a round: start it, run the load generator, stop it.
    serve_round() {
        local engine=$1 model=$2 round=$3
        start_server "$engine" "$model"
        # In the background, so that a signal to this script runs its trap at once (bash defers traps until a
        # foreground child ends, and `wait` returns on them).
        # shellcheck disable=SC2086 # the lists split into arguments
        "$py" "$here/bench/serve-load.py" --url "$url" --concurrency $concurrency --arrivals $arrivals \
            --max-tokens "$n_gen" --prompt-tokens "$n_prompt" --long-prompt-tokens "$long_prompt" \
            --requests "$requests" --json >"$work/$engine-$round.json" &
        load_pid=$!
        wait "$load_pid" ||
            server_failed "bench/serve-load.py against the $engine server" "failed" "$work/$engine.log"
        load_pid=""
        stop_server
    }
    echo "$("$basalt" version | head -1) serve vs llama.cpp $LLAMA_CPP_TAG (${LLAMA_CPP_COMMIT:0:12})" \
        "llama-server: $threads threads, $slots slots x $slot_ctx tokens of F16 K/V, prompts of $n_prompt tokens," \
        "$n_gen generated each, long prompt $long_prompt, concurrency $concurrency, arrivals $arrivals, $rounds" \
        "interleaved rounds"
    for model in "${models[@]}"; do
        echo "== $model"
        : >"$work/loads"
        for ((round = 1; round <= rounds; ++round)); do
            if ((round % 2 == 1)); then
                serve_round basalt "$model" "$round"
                serve_round llama "$model" "$round"
            else
                serve_round llama "$model" "$round"
                serve_round basalt "$model" "$round"
            fi
            echo "$round $(cut -d' ' -f1 /proc/loadavg)" >>"$work/loads"
        done
        "$py" "$here/bench/serve-compare-table.py" "$work" "$rounds" "$(nproc)"
    done
    exit 0
fi

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
