#!/usr/bin/python3
"""Writes models/README.md (the model card) from models/metrics.json, so its figures are the recorded ones."""
import json
import math
import os
import sys

CARD = """# Basalt's default models: `target` and `draft`

Two small llama-architecture models trained here, from scratch, on the fortune cookies of Debian's
`fortunes` package, so that `basalt run` generates real text on a machine with no network. They share one
tokenizer. The target is the default model (`basalt run` with no `-m`); `-m target` and `-m draft` name
them anywhere a model is expected (the C API's `basalt_model_load` resolves the same names). Later features
use the pair: the draft proposes tokens for speculative decoding and plays the amateur in contrastive
decoding; cache policies (sinks, quantized KV) are judged by the target's perplexity.

They are toys: a few million parameters trained for minutes on 2.4 MB of text. They write fortune-shaped
text (quotes, attributions, `%` separators), not sense.

| | target | draft |
|---|---|---|
| file | `{t[file]}` ({t_mb:.2f} MB) | `{d[file]}` ({d_mb:.2f} MB) |
| parameters | {t[n_params]:,} | {d[n_params]:,} |
| layers / n_embd / heads (kv) / head dim / ffn | {ts[n_layer]} / {ts[n_embd]} / {ts[n_head]} ({ts[n_head_kv]}) / {t_hd} / {ts[n_ff]} | {ds[n_layer]} / {ds[n_embd]} / {ds[n_head]} ({ds[n_head_kv]}) / {d_hd} / {ds[n_ff]} |
| context / vocabulary | {ts[n_ctx]} / {ts[n_vocab]} | {ds[n_ctx]} / {ds[n_vocab]} |
| training steps (batch {batch} x {n_ctx} tokens) | {t[steps]} ({t_tok:.2f} M tokens) | {d[steps]} ({d_tok:.2f} M tokens) |
| peak learning rate | {t[peak_lr]} | {d[peak_lr]} |
| training time ({threads} threads) | {t_min:.1f} min | {d_min:.1f} min |
| validation loss (nats/token) | {t[valid_loss]:.4f} | {d[valid_loss]:.4f} |
| validation perplexity | **{t[valid_perplexity]:.3f}** | **{d[valid_perplexity]:.3f}** |

Unigram baseline (token frequencies of the training split, add-one smoothed) on the same validation
tokens: perplexity {uni:.2f}. The draft's argmax equals the target's at {agree:.1%} of the validation
positions (top-1 agreement).

Architecture: GGUF `llama` with RMSNorm (eps {ts[norm_eps]}), RoPE (llama.cpp's normal mode, base
{ts[rope_base]:.0f}), grouped-query attention, SwiGLU, output tied to the token embedding; matrices F16,
norms F32. llama.cpp loads the files as they are.

Loss curves (train: mean of the batches since the last point; validation: a fixed sample of 24 chunks):

![loss](loss.png)

## Corpus and licence

The UTF-8 fortune files of Debian 12's `fortunes` package (`/usr/share/games/fortunes/*.u8`, all
categories except `ascii-art`; the offensive `off/` set is not used). `tools/train/corpus.py` undoes
overstrike sequences, drops control characters and trailing spaces, removes duplicate fortunes and puts
each fortune in the validation split when its SHA-256 falls in the first 5 % of the hash space
({valid_tok:,} validation tokens, {train_tok:,} training tokens). Both splits keep the fortune file format:
fortunes separated by a line holding `%`. The validation split is committed here as
`fortunes-valid.txt`.

Licence: Debian ships the package in `main`; `/usr/share/doc/fortunes/copyright` gives the BSD licence
of the Regents of the University of California for the fortune collection (clause 3 deleted). The
weights are derived from it and are distributed under the same terms.

## Tokenizer

SentencePiece BPE (`basalt-fortunes-tokenizer.model`, Debian's python3-sentencepiece), {ts[n_vocab]}
pieces: `<unk>`=0, `<s>`=1, `</s>`=2, the 256 byte-fallback pieces, then merges. Identity normalisation,
spaces kept, one dummy-prefix space, so SentencePiece and Basalt's GGUF `llama` tokenizer produce the
same ids (checked: `basalt perplexity` scores exactly the training script's token count). Newlines and
tabs are byte tokens.

## Checks (CTest: `models: shipped target/draft ...`, tests/models/check_models.py)

- both files load by name with the recorded shapes;
- `basalt perplexity -m target -f models/fortunes-valid.txt --ctx {n_ctx}` equals the training
  script's validation perplexity within 1 % (the script evaluates the exported F16 weights with the
  engine's chunking: the file tokenized once with BOS, non-overlapping chunks of {n_ctx} tokens, every token
  after a chunk's first scored), and likewise for the draft; both far below the unigram baseline;
- greedy generation from {prompt!r} for {n_greedy} tokens is reproducible and equals the continuation
  PyTorch computed at export time: {text!r}.

## Reproduce

```sh
tools/train/run.sh --deps      # installs fortunes, python3-torch, python3-sentencepiece, python3-matplotlib, OpenBLAS
```

It writes into `build-train/` and then copies the GGUF files, tokenizer, validation split, metrics.json,
train.log and loss.png here and regenerates this card (`tools/train/model_card.py`). Seeded (seed {seed});
{threads} torch threads. PyTorch on CPU is deterministic for a fixed thread count; other BLAS builds or
thread counts change the last digits.
"""


def main() -> int:
    d = os.path.dirname(os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "models/metrics.json"))
    with open(os.path.join(d, "metrics.json")) as f:
        m = json.load(f)
    t, dr = m["models"]["target"], m["models"]["draft"]
    n_ctx, batch = m["n_ctx"], m["batch"]
    text = CARD.format(
        t=t, d=dr, ts=t["shape"], ds=dr["shape"], t_mb=t["file_bytes"] / 1e6, d_mb=dr["file_bytes"] / 1e6,
        t_hd=t["shape"]["n_embd"] // t["shape"]["n_head"], d_hd=dr["shape"]["n_embd"] // dr["shape"]["n_head"],
        batch=batch, n_ctx=n_ctx, t_tok=t["tokens_seen"] / 1e6, d_tok=dr["tokens_seen"] / 1e6,
        threads=m["threads"], t_min=t["train_seconds"] / 60, d_min=dr["train_seconds"] / 60,
        uni=m["unigram_valid_perplexity"], agree=m["draft_top1_agreement"], valid_tok=m["valid_tokens"],
        train_tok=m["train_tokens"], prompt=m["greedy"]["prompt"], n_greedy=len(m["greedy"]["tokens"]),
        text=m["greedy"]["text"], seed=m["seed"])
    assert not math.isnan(t["valid_loss"])
    with open(os.path.join(d, "README.md"), "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
