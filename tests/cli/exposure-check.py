#!/usr/bin/python3
"""`basalt exposure --json` on a small case: exit 0, the settings echoed, `per_step` has --steps entries numbered
1..L, every figure finite, the teacher-forced and free-running losses positive, step 1 identical for the
teacher-forced, free-running and control contexts (all are the same reference prefix), and the accumulated ratio
consistent with the per-step losses.

    exposure-check.py BASALT_CLI MODEL TEXT [--oracle ORACLE]
"""
import json
import math
import subprocess
import sys


def main() -> int:
    exe, model, text = sys.argv[1:4]
    extra = sys.argv[4:]
    steps, prefix, segments = 6, 12, 5
    cmd = [exe, "exposure", "-m", model, "-f", text, "--prefix", str(prefix), "--steps", str(steps),
           "--segments", str(segments), "--json"] + extra
    run = subprocess.run(cmd, capture_output=True, text=True, check=False)
    print(" ".join(cmd))
    print(run.stdout)
    print(run.stderr, file=sys.stderr)
    if run.returncode != 0:
        print(f"exit status {run.returncode}", file=sys.stderr)
        return 1
    out = json.loads(run.stdout)
    assert (out["prefix"], out["steps"], out["segments"]) == (prefix, steps, segments), out
    table = out["per_step"]
    assert len(table) == steps, len(table)
    keys = ["tf_nll", "fr_nll", "gap_nll", "ctl_nll", "acc_err_nll", "excess_nll_pct", "same_prefix", "match"]
    if "--oracle" in extra:
        keys += ["tf_kl", "fr_kl", "acc_err_kl", "excess_kl_pct"]
    cum_tf = cum_fr = 0.0
    for i, row in enumerate(table):
        assert row["l"] == i + 1, row
        for k in keys:
            assert isinstance(row[k], (int, float)) and math.isfinite(row[k]), (i, k, row.get(k))
        assert row["tf_nll"] > 0 and row["fr_nll"] > 0, row
        cum_tf += row["tf_nll"]
        cum_fr += row["fr_nll"]
        assert abs(row["acc_err_nll"] - (i + 1) * cum_fr / cum_tf) < 1e-6 * (i + 1), row
    first = table[0]
    assert abs(first["tf_nll"] - first["fr_nll"]) < 1e-6 and first["same_prefix"] == 1.0, first
    assert abs(first["tf_nll"] - first["ctl_nll"]) < 1e-6, first
    if "--oracle" in extra:
        assert abs(first["tf_kl"] - first["fr_kl"]) < 1e-6, first
    print("exposure JSON ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
