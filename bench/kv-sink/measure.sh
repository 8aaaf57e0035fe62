#!/usr/bin/env bash
# Attention sinks (StreamingLLM) on the shipped target (context 256), issue 18 item 2.
# 1. Perplexity of the first 20,000 scored tokens of the validation split (models/fortunes-valid.txt: the held-out
#    fortunes concatenated, 127 KB, 50,040 tokens) streamed as ONE sequence through bounded caches of C positions:
#    n_sink 4 + window C-4, n_sink 1, window only (n_sink 0); the baseline recomputes each token from the C tokens
#    before it (--recompute); the plain model in non-overlapping chunks of 256 for reference.
# 2. Peak RSS of `basalt run --kv-cache sink:n_sink=4,window=252` at several lengths, and VmRSS sampled every 2 s
#    over one 20,000-token run.
# Usage: bench/kv-sink/measure.sh [BUILD_DIR] [RECOMPUTE_WINDOWS]   (default "128"; "128 256" for both, ~2x longer)
# Prints Markdown tables (docs/kv-cache.md quotes them). Threads: 1 per run (the machine is shared).
set -euo pipefail
B=${1:-build}/bin/basalt
RECOMPUTE=${2:-128}
TEXT=models/fortunes-valid.txt
N=20001  # tokens read: 20,000 scored
echo "text: $TEXT, $(wc -c <"$TEXT") bytes, $($B tokenize -m target "$(cat "$TEXT")" | tr ',' '\n' | wc -l) tokens"

ppl() {  # label, then perplexity arguments
    local label=$1
    shift
    local t0 t1 out
    t0=$(date +%s.%N)
    out=$($B perplexity -m target -f "$TEXT" --threads 1 --max-tokens $N --no-progress --json "$@")
    t1=$(date +%s.%N)
    printf '| %s | %s | %s | %.0f s |\n' "$label" \
        "$(echo "$out" | sed 's/.*"perplexity":"\{0,1\}\([0-9.]*\).*/\1/')" \
        "$(echo "$out" | sed 's/.*"tokens_scored":\([0-9]*\).*/\1/')" "$(echo "$t1 - $t0" | bc)"
}

echo
echo "| cache | perplexity | tokens scored | time |"
echo "|---|---|---|---|"
ppl "plain, chunks of 256 (each chunk starts cold)" --ctx 256
for C in 256 128 64 32; do
    for S in 4 1 0; do
        ppl "$C positions: n_sink $S + window $((C - S))" --ctx 256 --stream --stream-chunk $((256 - C + 1)) \
            --kv-cache "sink:n_sink=$S,window=$((C - S))"
    done
    if [[ " $RECOMPUTE " == *" $C "* ]]; then
        ppl "$C positions: sliding window, recomputed" --recompute $C --parallel $((4096 / C))  # 128: ~1,000 s
    fi
done

echo
echo "| tokens generated | peak RSS | wall |"
echo "|---|---|---|"
for n in 250 1000 2500 5000; do
    /usr/bin/time -v -o /tmp/kv-sink-time.txt $B run -n $n --ignore-eos --threads 1 --temp 0.8 --seed 1 \
        --kv-cache sink:n_sink=4,window=252 >/dev/null 2>&1
    printf '| %s | %s kB | %s |\n' "$n" "$(grep 'Maximum resident' /tmp/kv-sink-time.txt | awk '{print $NF}')" \
        "$(grep 'Elapsed (wall' /tmp/kv-sink-time.txt | awk '{print $NF}')"
done
/usr/bin/time -v -o /tmp/kv-sink-time.txt $B run -n 5000 --ignore-eos --threads 1 --temp 0.8 --seed 1 \
    >/tmp/kv-sink-plain.txt 2>&1 || true
echo "plain cache, -n 5000: $(tail -1 /tmp/kv-sink-plain.txt | grep -o 'generated.*'); peak RSS" \
    "$(grep 'Maximum resident' /tmp/kv-sink-time.txt | awk '{print $NF}') kB"

echo
echo "VmRSS every 2 s over one 20,000-token run (seconds, kB):"
$B run -n 20000 --ignore-eos --threads 1 --temp 0.8 --seed 1 --kv-cache sink:n_sink=4,window=252 >/dev/null 2>&1 &
pid=$!
t0=$(date +%s.%N)
while kill -0 $pid 2>/dev/null; do
    echo "$(echo "$(date +%s.%N) - $t0" | bc | cut -c1-5) $(grep VmRSS /proc/$pid/status 2>/dev/null | awk '{print $2}')"
    sleep 2
done
