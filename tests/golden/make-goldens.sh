#!/usr/bin/env bash
# tests/golden/make-goldens.sh GOLDEN_DUMP: regenerates the tiny granite/olmo2/mistral3/qwen35moe/gemma4e models (make_tiny_models.py)
# and llama.cpp's logits for them with GOLDEN_DUMP (golden-dump.cpp built against the pinned llama.cpp, README.md
# here). Per model and variant: the `ref` config (K/V F32, flash attention off) and, for F16/Q8_0/Q4_0, `-deq.ref`
# (the same weights dequantized to an all-F32 file, run with `ref`). Only the f32 `.ref` keeps its `.seq` file (its
# batch-vs-seq figures are in every JSON); the dequantized GGUFs are not kept.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 GOLDEN_DUMP" >&2; exit 2; }
dump=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
shared=$(cd "$here/../../../shared/testdata" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 "$here/make_tiny_models.py"
mkdir -p "$here/logits"
for m in tiny-granite tiny-olmo2 tiny-mistral3 tiny-qwen35moe tiny-gemma4e; do
    for v in f32 f16 q8_0 q4_0; do
        "$dump" "$here/models/$m-$v.gguf" ref "$here/logits/$m-$v.ref" 2>"$tmp/log" || { cat "$tmp/log" >&2; exit 1; }
        [ "$v" = f32 ] || rm "$here/logits/$m-$v.ref.seq.f32"
        [ "$v" = f32 ] && continue
        /usr/bin/python3 "$shared/make_models.py" --dequant "$here/models/$m-$v.gguf" "$tmp/$m-$v-deq.gguf"
        "$dump" "$tmp/$m-$v-deq.gguf" ref "$here/logits/$m-$v-deq.ref" 2>"$tmp/log" || { cat "$tmp/log" >&2; exit 1; }
        rm "$here/logits/$m-$v-deq.ref.seq.f32"
    done
done
# index.json: one entry per run, as ../shared/testdata/golden/index.json lists them (the engine test reads it).
/usr/bin/python3 - "$here" <<'PY'
import json, os, sys
here = sys.argv[1]
runs = []
for m in ["tiny-granite", "tiny-olmo2", "tiny-mistral3", "tiny-qwen35moe", "tiny-gemma4e"]:
    for v in ["f32", "f16", "q8_0", "q4_0"]:
        for cfg in ["ref"] + ([] if v == "f32" else ["deq.ref"]):
            stem = f"{m}-{v}.ref" if cfg == "ref" else f"{m}-{v}-deq.ref"
            j = json.load(open(os.path.join(here, "logits", stem + ".json")))
            runs.append({"model": m, "variant": v if cfg == "ref" else v + "-deq", "config": "ref",
                         "json": stem + ".json", "prompt_tokens": j["prompt_tokens"],
                         "greedy_tokens": j["greedy_tokens"],
                         "batch_vs_seq_max_abs": j["batch_vs_seq"]["max_abs_diff"],
                         "min_greedy_margin": min(j["greedy_top1_top2_margin"])})
with open(os.path.join(here, "index.json"), "w") as f:
    json.dump({"prompt_text": "Once upon a time, the stranger opened the wooden box.", "runs": runs}, f, indent=1)
    f.write("\n")
PY
