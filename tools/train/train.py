#!/usr/bin/python3
"""Trains Basalt's default model pair (a target and a ~10x smaller draft) and exports them as GGUF.

Usage: train.py --corpus DIR --tokenizer TOK.model --out DIR [--steps-target N] [--steps-draft N]
Writes, into --out: basalt-fortunes-target.gguf, basalt-fortunes-draft.gguf (F16 matrices, F32 norms),
metrics.json (shapes, parameter counts, steps, time, loss curves, validation loss/perplexity, unigram
baseline, the draft's top-1 agreement with the target, a greedy continuation), loss.png.

Validation perplexity is computed exactly as `basalt perplexity --ctx N_CTX` computes it: the whole
validation file is tokenized once with BOS in front, cut into non-overlapping chunks of N_CTX tokens,
and within each chunk every token after the first is predicted from those before it. It is computed
with the weights as exported (matrices rounded to F16), so the engine must reproduce it.
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import sentencepiece as spm
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_writer import GGML_F16, GGML_F32, T_FLOAT32, T_INT32, T_STRING, GGUFWriter  # noqa: E402
from model import Llama, Shape  # noqa: E402

N_CTX = 256
SHAPES = {
    "target": dict(n_embd=256, n_layer=4, n_head=4, n_head_kv=2, n_ff=768),
    "draft": dict(n_embd=96, n_layer=2, n_head=2, n_head_kv=1, n_ff=256),
}
GREEDY_PROMPT = "The best way to"
GREEDY_TOKENS = 48


def load_ids(sp, path):
    with open(path, encoding="utf-8") as f:
        return np.array([sp.bos_id()] + sp.encode(f.read()), dtype=np.int64)


def eval_chunks(ids):
    """(inputs, targets, lengths) of the non-overlapping chunks `basalt perplexity` scores."""
    chunks = []
    for begin in range(0, len(ids) - 1, N_CTX):
        c = ids[begin:begin + N_CTX]
        if len(c) >= 2:
            chunks.append(c)
    return chunks


@torch.no_grad()
def chunk_logits(model, chunks, batch=16):
    """Yields (logits [T, V] float64, chunk) for every chunk, batched by equal length."""
    model.eval()
    i = 0
    while i < len(chunks):
        group = [chunks[i]]
        while i + len(group) < len(chunks) and len(group) < batch and len(chunks[i + len(group)]) == len(group[0]):
            group.append(chunks[i + len(group)])
        x = torch.from_numpy(np.stack(group))
        out = model(x).double()
        for j, c in enumerate(group):
            yield out[j], c
        i += len(group)


@torch.no_grad()
def validation(model, chunks):
    nll, n = 0.0, 0
    for logits, c in chunk_logits(model, chunks):
        lp = torch.log_softmax(logits[:-1], dim=-1)
        tgt = torch.from_numpy(c[1:])
        nll -= lp.gather(1, tgt[:, None]).sum().item()
        n += len(c) - 1
    return nll / n, n


def round_to_export_precision(model):
    """Rounds every matrix to F16 (as exported); norms stay F32."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 2:
                p.copy_(p.half().float())


def lr_at(step, steps, peak, warmup):
    if step < warmup:
        return peak * (step + 1) / warmup
    t = (step - warmup) / max(1, steps - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))


def train_one(kind, shape, train_ids, valid_chunks, steps, batch, lr, seed, log):
    torch.manual_seed(seed)
    model = Llama(shape)
    decay = [p for n, p in model.named_parameters() if p.dim() == 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=lr, betas=(0.9, 0.95), eps=1e-8)
    gen = np.random.default_rng(seed)
    # Validation during training uses a fixed sample of chunks; the final figure uses all of them.
    probe = valid_chunks[:: max(1, len(valid_chunks) // 24)]
    curve = {"step": [], "train_loss": [], "valid_step": [], "valid_loss": []}
    t0 = time.time()
    running, seen = 0.0, 0
    for step in range(steps):
        model.train()
        starts = gen.integers(0, len(train_ids) - N_CTX - 1, size=batch)
        x = torch.from_numpy(np.stack([train_ids[s:s + N_CTX] for s in starts]))
        y = torch.from_numpy(np.stack([train_ids[s + 1:s + N_CTX + 1] for s in starts]))
        for g in opt.param_groups:
            g["lr"] = lr_at(step, steps, lr, warmup=max(1, min(200, steps // 10)))
        loss = F.cross_entropy(model(x).view(-1, shape.n_vocab), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        running += loss.item()
        seen += 1
        if (step + 1) % max(1, steps // 60) == 0 or step + 1 == steps:
            curve["step"].append(step + 1)
            curve["train_loss"].append(running / seen)
            running, seen = 0.0, 0
        if (step + 1) % max(1, steps // 12) == 0 or step + 1 == steps:
            vl, _ = validation(model, probe)
            curve["valid_step"].append(step + 1)
            curve["valid_loss"].append(vl)
            log(f"{kind} step {step + 1}/{steps}: train {curve['train_loss'][-1]:.4f} valid {vl:.4f} "
                f"({time.time() - t0:.0f} s)")
    return model, curve, time.time() - t0


def export_gguf(path, model, sp, name, steps):
    s = model.s
    w = GGUFWriter()
    w.add_string("general.architecture", "llama")
    w.add_string("general.name", name)
    w.add_string("general.license", "BSD-3-Clause (training corpus: Debian fortunes); weights: same terms")
    w.add_u32("general.file_type", 1)  # mostly F16
    w.add_u32("general.alignment", 32)
    w.add_u32("llama.context_length", s.n_ctx)
    w.add_u32("llama.embedding_length", s.n_embd)
    w.add_u32("llama.block_count", s.n_layer)
    w.add_u32("llama.feed_forward_length", s.n_ff)
    w.add_u32("llama.attention.head_count", s.n_head)
    w.add_u32("llama.attention.head_count_kv", s.n_head_kv)
    w.add_u32("llama.rope.dimension_count", s.head_dim)
    w.add_f32("llama.rope.freq_base", s.rope_base)
    w.add_f32("llama.attention.layer_norm_rms_epsilon", s.norm_eps)
    w.add_u32("llama.vocab_size", s.n_vocab)
    w.add_string("tokenizer.ggml.model", "llama")
    pieces, scores, types = [], [], []
    for i in range(sp.get_piece_size()):
        pieces.append(sp.id_to_piece(i))
        scores.append(sp.get_score(i))
        if sp.is_unknown(i):
            types.append(2)
        elif sp.is_control(i):
            types.append(3)
        elif sp.is_byte(i):
            types.append(6)
        elif sp.is_unused(i):
            types.append(5)
        else:
            types.append(1)
    w.add_array("tokenizer.ggml.tokens", T_STRING, pieces)
    w.add_array("tokenizer.ggml.scores", T_FLOAT32, scores)
    w.add_array("tokenizer.ggml.token_type", T_INT32, types)
    w.add_u32("tokenizer.ggml.bos_token_id", sp.bos_id())
    w.add_u32("tokenizer.ggml.eos_token_id", sp.eos_id())
    w.add_u32("tokenizer.ggml.unknown_token_id", sp.unk_id())
    w.add_bool("tokenizer.ggml.add_bos_token", True)
    w.add_bool("tokenizer.ggml.add_eos_token", False)
    w.add_u32("basalt.train.steps", steps)
    for tname, t in model.gguf_tensors():
        a = t.detach().float().numpy()
        w.add_tensor(tname, a, GGML_F16 if a.ndim == 2 else GGML_F32)
    w.write(path)


@torch.no_grad()
def greedy(model, sp, prompt, n):
    model.eval()
    ids = [sp.bos_id()] + sp.encode(prompt)
    out = []
    for _ in range(n):
        logits = model(torch.tensor([ids[-N_CTX:]]))[0, -1]
        t = int(torch.argmax(logits))
        ids.append(t)
        out.append(t)
    return out


@torch.no_grad()
def top1_agreement(target, draft, chunks):
    agree, n = 0, 0
    for (lt, c), (ld, _) in zip(chunk_logits(target, chunks), chunk_logits(draft, chunks)):
        agree += int((lt[:-1].argmax(-1) == ld[:-1].argmax(-1)).sum())
        n += len(c) - 1
    return agree / n


def unigram_nll(train_ids, chunks, n_vocab):
    counts = np.bincount(train_ids, minlength=n_vocab).astype(np.float64) + 1.0
    logp = np.log(counts / counts.sum())
    tot, n = 0.0, 0
    for c in chunks:
        tot -= logp[c[1:]].sum()
        n += len(c) - 1
    return tot / n


def plot(curves, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5), dpi=100)
    for kind, c in curves.items():
        ax.plot(c["step"], c["train_loss"], label=f"{kind} train", alpha=0.8)
        ax.plot(c["valid_step"], c["valid_loss"], "o-", label=f"{kind} validation")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (nats/token)")
    ax.set_title("Basalt default models on Debian fortunes")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps-target", type=int, default=700)
    ap.add_argument("--steps-draft", type=int, default=600)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    os.makedirs(args.out, exist_ok=True)
    log_file = open(os.path.join(args.out, "train.log"), "w")

    def log(msg):
        print(msg, flush=True)
        log_file.write(msg + "\n")
        log_file.flush()

    sp = spm.SentencePieceProcessor(model_file=args.tokenizer)
    train_ids = load_ids(sp, os.path.join(args.corpus, "train.txt"))
    valid_ids = load_ids(sp, os.path.join(args.corpus, "valid.txt"))
    chunks = eval_chunks(valid_ids)
    log(f"tokens: train {len(train_ids)}, validation {len(valid_ids)} ({len(chunks)} chunks of {N_CTX})")
    metrics = {"n_ctx": N_CTX, "seed": args.seed, "threads": args.threads, "batch": args.batch,
               "train_tokens": int(len(train_ids)), "valid_tokens": int(len(valid_ids)), "models": {}}
    uni = unigram_nll(train_ids, chunks, sp.get_piece_size())
    metrics["unigram_valid_perplexity"] = math.exp(uni)
    log(f"unigram baseline: validation perplexity {math.exp(uni):.2f}")
    models, curves = {}, {}
    for kind, steps, lr in (("target", args.steps_target, 3e-3), ("draft", args.steps_draft, 6e-3)):
        shape = Shape(n_vocab=sp.get_piece_size(), n_ctx=N_CTX, **SHAPES[kind])
        model, curve, secs = train_one(kind, shape, train_ids, chunks, steps, args.batch, lr,
                                       args.seed + (0 if kind == "target" else 1), log)
        round_to_export_precision(model)
        vl, scored = validation(model, chunks)
        file = f"basalt-fortunes-{kind}.gguf"
        export_gguf(os.path.join(args.out, file), model, sp, f"basalt-fortunes-{kind}", steps)
        models[kind], curves[kind] = model, curve
        metrics["models"][kind] = {
            "file": file, "shape": shape.as_dict(), "n_params": model.n_params(), "steps": steps,
            "tokens_seen": steps * args.batch * N_CTX, "peak_lr": lr, "train_seconds": round(secs, 1),
            "valid_loss": vl, "valid_perplexity": math.exp(vl), "valid_tokens_scored": scored,
            "file_bytes": os.path.getsize(os.path.join(args.out, file)), "curve": curve,
        }
        log(f"{kind}: {model.n_params()} parameters, {steps} steps in {secs:.0f} s, validation loss {vl:.4f} "
            f"perplexity {math.exp(vl):.3f}")
    metrics["draft_top1_agreement"] = top1_agreement(models["target"], models["draft"], chunks)
    log(f"draft top-1 agreement with target on validation: {metrics['draft_top1_agreement']:.4f}")
    toks = greedy(models["target"], sp, GREEDY_PROMPT, GREEDY_TOKENS)
    metrics["greedy"] = {"prompt": GREEDY_PROMPT, "tokens": toks, "pieces": [sp.id_to_piece(t) for t in toks],
                         "text": sp.decode(toks)}
    log(f"greedy: {GREEDY_PROMPT!r} -> {sp.decode(toks)!r}")
    plot(curves, os.path.join(args.out, "loss.png"))
    with open(os.path.join(args.out, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
