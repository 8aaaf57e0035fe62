#!/usr/bin/env bash
# bench/small-batch-cost.sh: what a forward over k rows costs in one-row steps, cost(k) / cost(1), for k = 1 2 5 8
# 16 by default: `basalt bench -p k -n 0` (one batch of k prompt tokens, logits of the last row) against `-p 1`,
# and the same with llama.cpp's `llama-bench -p k -n 0` when --llama-bench is given. Engines and k run in
# interleaved rounds (the order of the engines alternates from round to round); each round's ratios are taken
# against that round's one-row time, then the medians are printed. Extra basalt builds (--basalt, repeatable)
# are measured the same way, so a change can be compared with the build before it.
#
#   bench/small-batch-cost.sh [--rounds 5] [-r 10] [-t 2] [--ks "1 2 5 8 16"] [--basalt PATH ...]
#                             [--llama-bench PATH] MODEL.gguf
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
basalts=()
llama_bench=""
rounds=5
reps=10
threads=2
ks="1 2 5 8 16"
model=""

while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds=$2; shift 2 ;;
        -r) reps=$2; shift 2 ;;
        -t | --threads) threads=$2; shift 2 ;;
        --ks) ks=$2; shift 2 ;;
        --basalt) basalts+=("$2"); shift 2 ;;
        --llama-bench) llama_bench=$2; shift 2 ;;
        -h | --help) sed -n '2,10p' "$0"; exit 0 ;;
        *) model=$1; shift ;;
    esac
done
[ -n "$model" ] || { echo "usage: $0 [options] MODEL.gguf" >&2; exit 2; }
[ ${#basalts[@]} -gt 0 ] || basalts=("$here/build/bin/basalt")
case " $ks " in *" 1 "*) ;; *) ks="1 $ks" ;; esac

out=$(mktemp)
trap 'rm -f "$out"' EXIT
for r in $(seq 1 "$rounds"); do
    engines=("${basalts[@]}")
    [ -n "$llama_bench" ] && engines+=("llama:$llama_bench")
    if [ $((r % 2)) -eq 0 ]; then  # alternate the order
        rev=()
        for ((i = ${#engines[@]} - 1; i >= 0; i--)); do rev+=("${engines[$i]}"); done
        engines=("${rev[@]}")
    fi
    for e in "${engines[@]}"; do
        if [ "${e#llama:}" != "$e" ]; then
            # llama-bench: every k in one run, avg_ts per test.
            "${e#llama:}" -m "$model" -p "$(echo $ks | tr ' ' ',')" -n 0 -t "$threads" -r "$reps" -o json 2>/dev/null |
                /usr/bin/python3 -c "
import json, sys
for t in json.load(sys.stdin):
    print('llama.cpp', $r, t['n_prompt'], 1000.0 * t['n_prompt'] / t['avg_ts'])" >>"$out"
        else
            for k in $ks; do
                LD_LIBRARY_PATH="$(cd "$(dirname "$e")/.." && pwd)/lib" "$e" bench -m "$model" -p "$k" -n 0 \
                    -r "$reps" --threads "$threads" --json 2>/dev/null |
                    /usr/bin/python3 -c "
import json, sys
j = json.load(sys.stdin)
print('$e', $r, $k, 1000.0 * $k / float(j['pp_tokens_per_s']))" >>"$out"
            done
        fi
    done
done
/usr/bin/python3 - "$out" "$ks" <<'EOF'
import collections, statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
ks = [int(k) for k in sys.argv[2].split()]
ms = collections.defaultdict(dict)
for e, r, k, t in rows:
    ms[(e, int(r))][int(k)] = float(t)
engines = sorted({e for e, _ in ms}, key=lambda e: (e == 'llama.cpp', e))
print('%-40s %12s  %s' % ('engine', 'one row (ms)', '  '.join('k=%-4d' % k for k in ks)))
for e in engines:
    rounds = [m for (x, _), m in ms.items() if x == e and all(k in m for k in ks)]
    one = statistics.median(m[1] for m in rounds)
    ratios = ['%-6.2f' % statistics.median(m[k] / m[1] for m in rounds) for k in ks]
    print('%-40s %12.3f  %s' % (e[-40:], one, '  '.join(ratios)))
EOF
