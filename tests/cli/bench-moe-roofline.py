#!/usr/bin/env python3
"""`basalt bench`'s roofline bytes for a MoE model count the experts a token uses, not every expert: the weight bytes
per generated token in `--json` must equal an independent count from the GGUF file (make_models.read_gguf): every
tensor once, the embedding table only when it is also the output, and of each expert tensor (3-D, last dimension
n_expert) n_expert_used / n_expert. Usage: bench-moe-roofline.py BASALT TESTDATA_DIR MODEL.gguf [MODEL.gguf ...]
"""
import json
import os
import subprocess
import sys

exe, testdata = sys.argv[1], sys.argv[2]
sys.path.insert(0, testdata)
from make_models import read_gguf  # noqa: E402

failures = 0
for path in sys.argv[3:]:
    _, kv, tensors = read_gguf(path)
    arch = kv["general.architecture"]
    n_expert, used = kv[arch + ".expert_count"], kv[arch + ".expert_used_count"]
    expected, experts = 0, 0
    for name, (ne, _, raw) in tensors.items():
        if raw is None:
            sys.exit("%s: tensor %s has a type this check does not size" % (path, name))
        if name == "token_embd.weight" and "output.weight" in tensors:
            continue
        if len(ne) == 3 and ne[2] == n_expert:
            expected += len(raw) // n_expert * used
            experts += 1
        else:
            expected += len(raw)
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
