#!/usr/bin/env bash
# Attention sinks (StreamingLLM) on the shipped target (context 256), issue 18 item 2: perplexity of the whole
# validation split (models/fortunes-valid.txt, one long text) streamed through bounded caches, against recomputing
# each token from a sliding window; then the peak RSS of `basalt run` at several lengths with a sink cache.
# Usage: bench/kv-sink/measure.sh [BUILD_DIR] [THREADS]   (prints Markdown tables; docs/kv-cache.md quotes them)
set -euo pipefail
B=${1:-build}/bin/basalt
T=${2:-2}
TEXT=models/fortunes-valid.txt
echo "text: $TEXT, $(wc -c <"$TEXT") bytes, $($B tokenize -m target "$(cat "$TEXT")" | tr ',' '\n' | wc -l) tokens"

ppl() {  # label, then perplexity arguments
    local label=$1
    shift
    local t0 t1 out
    t0=$(date +%s.%N)
    out=$($B perplexity -m target -f "$TEXT" --threads "$T" --no-progress --json "$@")
    t1=$(date +%s.%N)
    printf '| %s | %s | %s | %.0f s | `%s` |\n' "$label" \
        "$(echo "$out" | sed 's/.*"perplexity":"\{0,1\}\([0-9.]*\).*/\1/')" \
        "$(echo "$out" | sed 's/.*"tokens_scored":\([0-9]*\).*/\1/')" "$(echo "$t1 - $t0" | bc)" "$*"
}

echo
echo "| cache | perplexity | tokens scored | time | arguments |"
echo "|---|---|---|---|---|"
ppl "full context, chunks of 256 (reference)" --ctx 256
for C in 128 256; do
    ppl "$C positions: 4 sinks + window $((C - 4))" --ctx 256 --stream --stream-chunk $((256 - C + 1)) \
        --kv-cache "sink:n_sink=4,window=$((C - 4))"
    ppl "$C positions: window only (n_sink 0)" --ctx 256 --stream --stream-chunk $((256 - C + 1)) \
        --kv-cache "sink:n_sink=0,window=$C"
    ppl "$C positions: sliding window, recomputed" --recompute $C --parallel $((4096 / C))
done

echo
echo "| tokens generated | peak RSS (sink:n_sink=4,window=252) | wall |"
echo "|---|---|---|"
for N in 250 1000 2500 5000; do
    /usr/bin/time -v -o /tmp/kv-sink-time.txt $B run -n $N --ignore-eos --threads "$T" --temp 0.8 --seed 1 \
        --kv-cache sink:n_sink=4,window=252 >/dev/null 2>&1
    printf '| %s | %s kB | %s |\n' "$N" "$(grep 'Maximum resident' /tmp/kv-sink-time.txt | awk '{print $NF}')" \
        "$(grep 'Elapsed (wall' /tmp/kv-sink-time.txt | awk '{print $NF}')"
done
echo
/usr/bin/time -v -o /tmp/kv-sink-time.txt $B run -n 5000 --ignore-eos --threads "$T" --temp 0.8 --seed 1 \
    >/tmp/kv-sink-plain.txt 2>&1 || true
echo "plain cache, -n 5000: $(grep -o 'context[^)]*' /tmp/kv-sink-plain.txt | head -1 || true); peak RSS" \
    "$(grep 'Maximum resident' /tmp/kv-sink-time.txt | awk '{print $NF}') kB"
