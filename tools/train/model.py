"""A llama-architecture decoder in PyTorch, written to match GGUF `llama` semantics exactly.

RMSNorm (eps inside the square root), RoPE in llama.cpp's "normal" mode (rotating adjacent pairs
(2i, 2i+1), theta_i = pos * base^(-2i/d)), grouped-query attention where query head h reads key/value
head h // (n_head / n_head_kv), SwiGLU feed-forward (down(silu(gate(x)) * up(x))), output projection
tied to the token embedding. Weights are stored in the [out, in] layout GGUF writes as ne = [in, out],
so export needs no permutation.
"""
from dataclasses import dataclass, asdict

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Shape:
    n_vocab: int
    n_ctx: int
    n_embd: int
    n_layer: int
    n_head: int
    n_head_kv: int
    n_ff: int
    rope_base: float = 10000.0
    norm_eps: float = 1e-5

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head

    def as_dict(self):
        return asdict(self)


class RMSNorm(nn.Module):
    def __init__(self, n: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(shape: Shape, n_pos: int):
    d = shape.head_dim
    inv = shape.rope_base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    ang = torch.arange(n_pos, dtype=torch.float64)[:, None] * inv[None, :]
    return torch.cos(ang).float(), torch.sin(ang).float()  # [n_pos, d/2]


def apply_rope(x, cos, sin):
    # x: [B, H, T, d]; rotate the pairs (2i, 2i+1).
    pairs = x.unflatten(-1, (-1, 2))
    a, b = pairs[..., 0], pairs[..., 1]
    return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)


class Block(nn.Module):
    def __init__(self, s: Shape):
        super().__init__()
        self.s = s
        hd = s.head_dim
        self.attn_norm = RMSNorm(s.n_embd, s.norm_eps)
        self.attn_q = nn.Linear(s.n_embd, s.n_head * hd, bias=False)
        self.attn_k = nn.Linear(s.n_embd, s.n_head_kv * hd, bias=False)
        self.attn_v = nn.Linear(s.n_embd, s.n_head_kv * hd, bias=False)
        self.attn_output = nn.Linear(s.n_head * hd, s.n_embd, bias=False)
        self.ffn_norm = RMSNorm(s.n_embd, s.norm_eps)
        self.ffn_gate = nn.Linear(s.n_embd, s.n_ff, bias=False)
        self.ffn_up = nn.Linear(s.n_embd, s.n_ff, bias=False)
        self.ffn_down = nn.Linear(s.n_ff, s.n_embd, bias=False)

    def forward(self, x, cos, sin):
        s = self.s
        if not hasattr(self, "causal") or self.causal.shape[0] < x.shape[1]:
            n = max(x.shape[1], s.n_ctx)
            self.causal = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
        B, T, _ = x.shape
        hd = s.head_dim
        h = self.attn_norm(x)
        q = self.attn_q(h).view(B, T, s.n_head, hd).transpose(1, 2)
        k = self.attn_k(h).view(B, T, s.n_head_kv, hd).transpose(1, 2)
        v = self.attn_v(h).view(B, T, s.n_head_kv, hd).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        rep = s.n_head // s.n_head_kv
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        att = (q * (1.0 / hd**0.5)) @ k.transpose(-2, -1)
        att = att.masked_fill(self.causal[:T, :T], float("-inf"))
        a = torch.softmax(att, dim=-1) @ v
        x = x + self.attn_output(a.transpose(1, 2).reshape(B, T, s.n_head * hd))
        h = self.ffn_norm(x)
        return x + self.ffn_down(F.silu(self.ffn_gate(h)) * self.ffn_up(h))


class Llama(nn.Module):
    def __init__(self, s: Shape):
        super().__init__()
        self.s = s
        self.token_embd = nn.Embedding(s.n_vocab, s.n_embd)
        self.blocks = nn.ModuleList(Block(s) for _ in range(s.n_layer))
        self.output_norm = RMSNorm(s.n_embd, s.norm_eps)
        cos, sin = rope_tables(s, s.n_ctx)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        self.reset_parameters()

    def reset_parameters(self):
        std = 0.02
        for name, p in self.named_parameters():
            if name.endswith("norm.weight"):
                nn.init.ones_(p)
            elif name.endswith("attn_output.weight") or name.endswith("ffn_down.weight"):
                nn.init.normal_(p, std=std / (2 * self.s.n_layer) ** 0.5)
            else:
                nn.init.normal_(p, std=std)

    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def forward(self, ids):
        T = ids.shape[1]
        x = self.token_embd(ids)
        cos, sin = self.cos[:T], self.sin[:T]
        for b in self.blocks:
            x = b(x, cos, sin)
        return self.output_norm(x) @ self.token_embd.weight.t()

    def gguf_tensors(self):
        """(GGUF name, float32 tensor) pairs in llama.cpp's naming."""
        yield "token_embd.weight", self.token_embd.weight
        for i, b in enumerate(self.blocks):
            for n in ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up",
                      "ffn_down"):
                yield f"blk.{i}.{n}.weight", getattr(b, n).weight
        yield "output_norm.weight", self.output_norm.weight
