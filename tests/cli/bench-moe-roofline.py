#!/usr/bin/env python3
"""`basalt bench`'s roofline bytes for a MoE model count the experts a token uses, not every expert: the weight bytes
per generated token in `--json` must equal an independent count from the GGUF file (read here with the standard
library only: every tensor once, the embedding table only when it is also the output, and of each expert tensor
(3-D, last dimension n_expert) n_expert_used / n_expert). Usage: bench-moe-roofline.py BASALT MODEL.gguf [...]
"""
import json
import os
import struct
import subprocess
import sys

# ggml type id -> (elements per block, bytes per block), from ggml's type traits; a type not listed is refused.
BLOCKS = {0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34), 30: (1, 2),
          39: (32, 17)}
SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


def read_header(path):
    """Returns (metadata dict, {tensor name: (dims, byte size)}) of a GGUF v2/v3 file."""
    with open(path, "rb") as f:
        data = f.read()
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from(fmt, data, pos)
        pos += struct.calcsize(fmt)
        return v[0]

    def string():
        nonlocal pos
        n = take("<Q")
        s = data[pos:pos + n].decode("utf-8", errors="replace")
        pos += n
        return s

    def value(t):
        if t == 8:
            return string()
        if t == 9:
            et, n = take("<I"), take("<Q")
            return [value(et) for _ in range(n)]
        return take(SCALARS[t])

    if data[:4] != b"GGUF":
        sys.exit("%s: not a GGUF file" % path)
    pos = 4
    take("<I")
    n_tensors, n_kv = take("<Q"), take("<Q")
    kv = {}
    for _ in range(n_kv):
        key = string()
        kv[key] = value(take("<I"))
    tensors = {}
    for _ in range(n_tensors):
        name = string()
        dims = [take("<Q") for _ in range(take("<I"))]
        ttype = take("<I")
        take("<Q")
        if ttype not in BLOCKS:
            sys.exit("%s: tensor %s has ggml type %d, which this check does not size" % (path, name, ttype))
        per_block, block_bytes = BLOCKS[ttype]
        count = 1
        for d in dims:
            count *= d
        tensors[name] = (dims, count // per_block * block_bytes)
    return kv, tensors


exe = sys.argv[1]
failures = 0
for path in sys.argv[2:]:
    kv, tensors = read_header(path)
    arch = kv["general.architecture"]
    if arch + ".expert_count" not in kv:
        sys.exit("%s: not a MoE model (no %s.expert_count)" % (path, arch))
    n_expert, used = kv[arch + ".expert_count"], kv[arch + ".expert_used_count"]
    expected, experts = 0, 0
    for name, (ne, size) in tensors.items():
        if name == "token_embd.weight" and "output.weight" in tensors:
            continue
        if len(ne) == 3 and ne[2] == n_expert:
            expected += size // n_expert * used
            experts += 1
        else:
            expected += size
    p = subprocess.run([exe, "bench", "-m", path, "-p", "0", "-n", "2", "-r", "1", "--threads", "1", "--json"],
                       capture_output=True)
    if p.returncode != 0:
        sys.exit("basalt bench failed on %s: %s" % (path, p.stderr.decode(errors="replace")))
    got = json.loads(p.stdout.decode())["weight_bytes_per_token"]
    ok = got == expected and experts > 0
    failures += not ok
    print("%s %s: %d expert tensors (%d of %d experts a token), weight bytes per token %d, expected %d" %
          ("ok" if ok else "MISMATCH", os.path.basename(path), experts, used, n_expert, got, expected))
if failures:
    sys.exit("%d mismatches" % failures)
