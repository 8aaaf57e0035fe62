#!/usr/bin/env bash
# Peak resident memory of one short generation (a prompt, 16 tokens) in Basalt and in llama.cpp, interleaved rounds:
#   bench/memory-rss.sh BUILD_DIR MODEL CTX [ROUNDS]
# Basalt: `basalt run -m MODEL -p ... -n 16 --ctx CTX --threads 2`. llama.cpp: llama-server -c CTX -np 1 -t 2 (the
# pinned build of bench/compare-llama-cpp.sh), one /completion request of 16 tokens, then SIGTERM. Both under
# /usr/bin/time -v: "Maximum resident set size" (VmHWM of the process), printed in MiB per round.
set -euo pipefail
build=${1:?build dir}
model=${2:?model}
ctx=${3:?ctx}
rounds=${4:-3}
llama=${LLAMA_BIN:-$HOME/.cache/basalt-llama-cpp/build-v0.5.0/bin}
prompt="The quick brown fox jumps over the lazy dog and"
port=$((18000 + RANDOM % 1000))
peak() { awk -F': ' '/Maximum resident set size/ {printf "%.1f", $2 / 1024}' "$1"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for r in $(seq 1 "$rounds"); do
    /usr/bin/time -v -o "$tmp/basalt" "$build/bin/basalt" run -m "$model" -p "$prompt" -n 16 --ctx "$ctx" \
        --threads 2 >/dev/null 2>&1
    /usr/bin/time -v -o "$tmp/llama" "$llama/llama-server" -m "$model" -c "$ctx" -np 1 -t 2 --port "$port" \
        >"$tmp/server.log" 2>&1 &
    tpid=$!
    for _ in $(seq 1 600); do
        curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
        sleep 0.2
    done
    curl -sf "http://127.0.0.1:$port/completion" -H 'Content-Type: application/json' \
        -d "{\"prompt\": \"$prompt\", \"n_predict\": 16}" >/dev/null
    pkill -TERM -P "$tpid" || true
    wait "$tpid" || true
    echo "round $r ctx $ctx basalt $(peak "$tmp/basalt") MiB llama-server $(peak "$tmp/llama") MiB"
done
