#!/usr/bin/python3
"""Issue 19 item 6: a steering direction built on the shipped target from two sets of fortunes that differ in a
property scored without a model (an attribution line "-- Name" vs none), swept over layer and scale.

For each (layer, scale): the property's score (the share of sampled continuations of neutral prompts that contain
an attribution line) and the perplexity of neutral text (validation fortunes without attribution, not used to build
the direction) with the vector added; then the direction of one layer added at the others. Writes a markdown table
(stdout) and a PNG plot (no matplotlib on Debian's python3: a tiny rasterizer and zlib).

    PYTHONPATH=build/lib/python3/dist-packages BASALT_PLUGIN_PATH= /usr/bin/python3 bench/steering/sweep.py \
        --cli build/bin/basalt --out docs/steering-sweep.png
"""
import argparse
import os
import re
import struct
import subprocess
import sys
import tempfile
import zlib

import numpy as np

import basalt

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ATTRIBUTION = re.compile(r"(^|\n)\s*--\s*\S")


def fortunes(path):
    with open(path, encoding="utf-8") as f:
        return [e.strip("\n") for e in f.read().split("\n%\n") if e.strip()]


def read_directions(path):
    """direction.N tensors of a control-vector GGUF (v3, F32), by layer."""
    data = open(path, "rb").read()
    pos = 4 + 4
    n_t, n_kv = struct.unpack_from("<QQ", data, pos)
    pos += 16
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    align = 32

    def string(p):
        n = struct.unpack_from("<Q", data, p)[0]
        return data[p + 8:p + 8 + n].decode(), p + 8 + n

    for _ in range(n_kv):
        key, pos = string(pos)
        t = struct.unpack_from("<I", data, pos)[0]
        pos += 4
        if t == 8:
            _, pos = string(pos)
        elif t == 9:
            raise ValueError("arrays are not expected in a control vector")
        else:
            if key == "general.alignment":
                align = struct.unpack_from("<I", data, pos)[0]
            pos += sizes[t]
    infos = []
    for _ in range(n_t):
        name, pos = string(pos)
        nd = struct.unpack_from("<I", data, pos)[0]
        ne = struct.unpack_from(f"<{nd}Q", data, pos + 4)
        t, off = struct.unpack_from("<IQ", data, pos + 4 + 8 * nd)
        pos += 4 + 8 * nd + 12
        infos.append((name, int(np.prod(ne)), off))
    base = (pos + align - 1) // align * align
    return {int(n.split(".")[1]): np.frombuffer(data, "<f4", c, base + o).astype(np.float64) for n, c, o in infos}


def perplexity(rt, model, texts, steer):
    nll, count = 0.0, 0
    with basalt.Session(rt, model, n_ctx=256) as s:
        s.set_steering(0, steer)
        for t in texts:
            ids = model.tokenize(t)[:256]
            if len(ids) < 2:
                continue
            s.seq_drop(0)
            s.decode(ids, seq_id=0, logits="all")
            for i in range(len(ids) - 1):
                row = np.array(s.logits_view(i), dtype=np.float64)
                m = row.max()
                nll += np.log(np.exp(row - m).sum()) + m - row[ids[i + 1]]
                count += 1
    return float(np.exp(nll / count))


def score(rt, model, prompts, spec, n_tokens):
    hits = 0
    with basalt.Engine(rt, model, parallel=8, seq_max=8) as e:
        reqs = [e.submit(p, max_tokens=n_tokens, samplers="top_k:40;temp:0.8;dist", seed=1000 + i, steer=spec)
                for i, p in enumerate(prompts)]
        for r in reqs:
            hits += 1 if ATTRIBUTION.search(r.text()) else 0
    return hits / len(prompts)


def png(path, series, x_max, y_max, w=480, h=320):
    """Lines of (x, y) points on white, axes in grey; each series a colour."""
    img = np.full((h, w, 3), 255, np.uint8)
    m = 30
    img[h - m, m:w - 10] = 120
    img[10:h - m, m] = 120
    for k in range(1, 5):  # light grid at quarters of y
        img[h - m - k * (h - m - 10) // 4, m + 1:w - 10] = 225
    colours = [(31, 119, 180), (214, 39, 40), (44, 160, 44), (148, 103, 189)]

    def px(x, y):
        return int(m + x / x_max * (w - m - 20)), int(h - m - y / y_max * (h - m - 20))

    for (pts, colour) in zip(series, colours):
        for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
            (a, b), (c, d) = px(x0, y0), px(x1, y1)
            for t in np.linspace(0, 1, 200):
                x, y = int(round(a + (c - a) * t)), int(round(b + (d - b) * t))
                img[max(0, y - 1):y + 2, max(0, x - 1):x + 2] = colour
        for x, y in pts:
            a, b = px(x, y)
            img[max(0, b - 3):b + 4, max(0, a - 3):a + 4] = colour
    raw = b"".join(b"\0" + img[r].tobytes() for r in range(h))

    def chunk(tag, body):
        return struct.pack(">I", len(body)) + tag + body + struct.pack(">I", zlib.crc32(tag + body) & 0xffffffff)

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--n-build", type=int, default=60)
    ap.add_argument("--n-prompts", type=int, default=48)
    ap.add_argument("--n-ppl", type=int, default=40)
    ap.add_argument("--tokens", type=int, default=48)
    a = ap.parse_args()
    all_f = fortunes(os.path.join(ROOT, "models", "fortunes-valid.txt"))
    attributed = [f for f in all_f if ATTRIBUTION.search(f)]
    plain = [f for f in all_f if not ATTRIBUTION.search(f)]
    pos, neg = attributed[:a.n_build], plain[:a.n_build]
    held = plain[a.n_build:]
    prompts = [" ".join(f.split()[:4]) for f in held[:a.n_prompts]]
    neutral = held[a.n_prompts:a.n_prompts + a.n_ppl]
    with tempfile.TemporaryDirectory() as d:
        for name, items in (("pos.txt", pos), ("neg.txt", neg)):
            with open(os.path.join(d, name), "w", encoding="utf-8") as f:
                f.write("\n%\n".join(items) + "\n%\n")
        vec = os.path.join(d, "attribution.gguf")
        subprocess.run([a.cli, "steer", "build", "-m", "target", "--positive", os.path.join(d, "pos.txt"),
                        "--negative", os.path.join(d, "neg.txt"), "--kv-type", "f32", "-o", vec], check=True,
                       stderr=subprocess.DEVNULL)
        dirs = read_directions(vec)
        rt = basalt.Runtime()
        model = basalt.Model("target", rt)
        scales = [0, 1, 2, 4, 8, 16]
        print(f"direction: mean-diff of {len(pos)} attributed vs {len(neg)} plain validation fortunes; norms " +
              ", ".join(f"layer {il} {np.linalg.norm(v):.2f}" for il, v in sorted(dirs.items())))
        print(f"score: share of {len(prompts)} sampled continuations ({a.tokens} tokens, top_k 40, temp 0.8) with an "
              f"attribution line; perplexity: {len(neutral)} held-out plain fortunes\n")
        print("| layer | " + " | ".join(f"scale {s}" for s in scales) + " |")
        print("|---|" + "---|" * len(scales))
        series_score, series_ppl = [], []
        for il in sorted(dirs):
            cells, pts_s, pts_p = [], [], []
            for s in scales:
                sc = score(rt, model, prompts, f"{vec}:{s}:{il}-{il}", a.tokens)
                pp = perplexity(rt, model, neutral, {il: (s * dirs[il]).tolist()} if s else None)
                cells.append(f"{sc:.2f} / {pp:.1f}")
                pts_s.append((s, sc))
                pts_p.append((s, pp))
            series_score.append(pts_s)
            series_ppl.append(pts_p)
            print(f"| {il} | " + " | ".join(cells) + " |")
        print("\ncells: attribution score / perplexity\n")
        print("direction of one layer added at another, scale 4 (score / perplexity):\n")
        layers = sorted(dirs)
        print("| direction from \\ added at | " + " | ".join(f"layer {il}" for il in layers) + " |")
        print("|---|" + "---|" * len(layers))
        for src in layers:
            cells = []
            for dst in layers:
                # The source's vector at the destination layer, through the session API (a file holds its own layers).
                steer = {dst: (4 * dirs[src]).tolist()}
                pp = perplexity(rt, model, neutral, steer)
                one = os.path.join(d, f"x{src}{dst}.gguf")
                w = write_one_direction(one, dst, dirs[src])
                sc = score(rt, model, prompts, f"{w}:4", a.tokens)
                cells.append(f"{sc:.2f} / {pp:.1f}")
            print(f"| layer {src} | " + " | ".join(cells) + " |")
        y_max = max(max(p[1] for p in s) for s in series_ppl)
        png(a.out, series_score, 16, 1.0)
        png(a.out.replace(".png", "-ppl.png"), series_ppl, 16, y_max * 1.05)
        model.close()
        rt.close()


def write_one_direction(path, layer, v):
    """A one-direction control vector (direction.<layer> = v), written by hand: GGUF v3, alignment 32."""
    def s(x):
        b = x.encode()
        return struct.pack("<Q", len(b)) + b
    kv = (s("general.architecture") + struct.pack("<I", 8) + s("controlvector") +
          s("controlvector.layer_count") + struct.pack("<Ii", 5, layer))
    ti = s(f"direction.{layer}") + struct.pack("<IQIQ", 1, len(v), 0, 0)
    head = b"GGUF" + struct.pack("<IQQ", 3, 1, 2) + kv + ti
    head += b"\0" * (-len(head) % 32)
    with open(path, "wb") as f:
        f.write(head + np.asarray(v, "<f4").tobytes())
    return path


if __name__ == "__main__":
    sys.exit(main())
