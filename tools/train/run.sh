#!/usr/bin/env bash
# Reproduces Basalt's default model pair from scratch: corpus -> tokenizer -> training -> GGUF in models/.
# Usage: tools/train/run.sh [--deps] [WORK_DIR]   (default build-train/; under an hour on 2 cores)
# Needs Debian's fortunes, python3-torch, python3-sentencepiece, python3-matplotlib and an optimised BLAS
# (libopenblas0-pthread: without it torch falls back to the reference BLAS and trains ~3x slower);
# `--deps` installs them. Training uses /usr/bin/python3 (Debian's torch is not in other Pythons).
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "${1:-}" = --deps ]; then
    shift
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends fortunes python3-torch \
        python3-sentencepiece python3-matplotlib python3-numpy libopenblas0-pthread
fi
work="${1:-build-train}"
py=/usr/bin/python3
mkdir -p "$work"
"$py" tools/train/corpus.py --out "$work/corpus"
"$py" tools/train/tokenizer.py --train "$work/corpus/train.txt" --out "$work/tokenizer"
"$py" tools/train/train.py --corpus "$work/corpus" --tokenizer "$work/tokenizer.model" --out "$work/out"
cp "$work/out/basalt-fortunes-target.gguf" "$work/out/basalt-fortunes-draft.gguf" "$work/out/metrics.json" \
    "$work/out/loss.png" "$work/out/train.log" models/
cp "$work/tokenizer.model" models/basalt-fortunes-tokenizer.model
cp "$work/corpus/valid.txt" models/fortunes-valid.txt
"$py" tools/train/model_card.py models/metrics.json
echo "run.sh: models/ updated from $work"
