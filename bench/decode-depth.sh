#!/usr/bin/env bash
# bench/decode-depth.sh: decode cost per generated token as the context grows, for several models side by side
# (e.g. a hybrid DeltaNet model against the same width with attention in every layer, docs/performance.md):
# `basalt bench -p 0 -n N -d D -r 1` for every depth D and model, in interleaved rounds (the model order rotates from
# round to round, so a drift of the shared machine's load hits all alike). Prints each run, then a Markdown table of
# the medians over the rounds: milliseconds per token at each depth, and what each depth adds to the first depth's.
#
#   bench/decode-depth.sh [-t THREADS] [-n TOKENS] [--depths "128 512 2048 8192"] [--rounds N] [--basalt PATH]
#                         MODEL.gguf [MODEL.gguf ...]
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
basalt="$here/build/bin/basalt"
threads=2
n_gen=32
depths="128 512 2048 8192"
rounds=3
models=()
while [ $# -gt 0 ]; do
    case "$1" in
        -t | --threads) threads=$2; shift 2 ;;
        -n) n_gen=$2; shift 2 ;;
        --depths) depths=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --basalt) basalt=$2; shift 2 ;;
        -h | --help) sed -n '2,9p' "$0"; exit 0 ;;
        -*) echo "decode-depth: unknown option '$1'" >&2; exit 2 ;;
        *) models+=("$1"); shift ;;
    esac
done
for v in "$threads" "$n_gen" "$rounds" $depths; do
    case "$v" in
        '' | *[!0-9]*) echo "decode-depth: '$v' is not a non-negative integer" >&2; exit 2 ;;
    esac
done
if [ ${#models[@]} -eq 0 ] || [ "$rounds" -lt 1 ] || [ "$n_gen" -lt 1 ] || [ -z "${depths// /}" ]; then
    sed -n '2,9p' "$0" >&2
    exit 2
fi
[ -x "$basalt" ] || { echo "decode-depth: no basalt CLI at '$basalt' (build first, or --basalt PATH)" >&2; exit 1; }
py=/usr/bin/python3
[ -x "$py" ] || py=python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

max_depth=0
for d in $depths; do ((d > max_depth)) && max_depth=$d; done
n=${#models[@]}
for ((round = 1; round <= rounds; ++round)); do
    for ((k = 0; k < n; ++k)); do
        model=${models[$(((k + round - 1) % n))]}
        for d in $depths; do
            # One context size for every depth, so the memory plan (and the K/V layout) is the same at each.
            out=$("$basalt" --no-progress bench -m "$model" -p 0 -n "$n_gen" -d "$d" -r 1 --threads "$threads" \
                --ctx $((max_depth + n_gen + 1)) --json) ||
                { echo "decode-depth: basalt bench failed on $model at depth $d" >&2; exit 1; }
            tg=$("$py" -c 'import json, sys; print(json.loads(sys.argv[1])["tg_tokens_per_s"])' "$out")
            load=$(cut -d' ' -f1 /proc/loadavg)
            echo "round $round $model depth $d: tg$n_gen $tg t/s (load $load)"
            echo "$round $k $d $tg $load $model" >>"$work/runs"
        done
    done
done
"$py" - "$work/runs" <<'EOF'
import statistics, sys
runs = [line.rstrip("\n").split(maxsplit=5) for line in open(sys.argv[1]) if line.strip()]
models, depths, tps = [], [], {}
for _, _, d, tg, _, m in runs:
    if m not in models:
        models.append(m)
    if int(d) not in depths:
        depths.append(int(d))
    tps.setdefault((m, int(d)), []).append(1000.0 / float(tg))
ms = {key: statistics.median(v) for key, v in tps.items()}
print()
print("| depth | " + " | ".join("%s ms/token (+ over depth %d)" % (m, depths[0]) for m in models) + " |")
print("|---|" + "---|" * len(models))
for d in depths:
    print("| %d | " % d + " | ".join("%.2f (%+.2f)" % (ms[(m, d)], ms[(m, d)] - ms[(m, depths[0])]) for m in models)
          + " |")
loads = [float(r[4]) for r in runs]
print("medians of %d round(s); 1-minute load %.1f-%.1f" % (len(tps[(models[0], depths[0])]), min(loads), max(loads)))
EOF
