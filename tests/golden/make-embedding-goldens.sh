#!/usr/bin/env bash
# tests/golden/make-embedding-goldens.sh GOLDEN_DUMP_EMBED: regenerates the tiny embedding models (make_tiny_models.py:
# nomic-bert, the bert reranker, the qwen3 embedder, gemma-embedding; f32 and q8_0) and llama.cpp's embeddings for
# them with golden-dump.cpp's `embed` mode (README.md "Embedding goldens": built to golden-dump-embed), q8_0 also as
# `-q8_0-deq` (its weights dequantized to F32, the file not kept), then checks
# them against the float64 reference (reference_forward_embeddings.py).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 GOLDEN_DUMP_EMBED" >&2; exit 2; }
dump=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
models="tiny-nomic-bert tiny-bert-rerank tiny-qwen3-embed tiny-gemma-embedding"
/usr/bin/python3 "$here/make_tiny_models.py" --only "$(echo $models | tr ' ' ,)" --variants f32,q8_0
mkdir -p "$here/logits"
shared=$(cd "$here/../../../shared/testdata" && pwd)
for m in $models; do
    for v in f32 q8_0; do
        "$dump" "$here/models/$m-$v.gguf" embed "$here/logits/$m-$v" 2>"$tmp/log" || { cat "$tmp/log" >&2; exit 1; }
    done
    # The q8_0 weights dequantized to an all-F32 file: the golden of a backend that keeps activations in F32 (Vulkan).
    /usr/bin/python3 "$shared/make_models.py" --dequant "$here/models/$m-q8_0.gguf" "$tmp/$m-q8_0-deq.gguf"
    "$dump" "$tmp/$m-q8_0-deq.gguf" embed "$here/logits/$m-q8_0-deq" 2>"$tmp/log" || { cat "$tmp/log" >&2; exit 1; }
done
/usr/bin/python3 "$here/reference_forward_embeddings.py"
