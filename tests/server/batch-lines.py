#!/usr/bin/env python3
"""basalt batch against hostile request lines (issue 28, items 1, 11 and 12).

batch-lines.py BASALT
    Each bad line (a number that overflows a double, tokens/max_tokens/id nested 100,000 deep, a seed or max_tokens
    of 2^64-1, an object of 100,000 keys, a prompt of more bytes than 64 per context token) gets its own error result
    naming its line, with a short message, and the valid lines around them still run; a 50 MB line is refused by
    its length before it is parsed (peak RSS bounded); a directory as --requests is refused with a message.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

from serve_harness import check, failures


def main():
    basalt = sys.argv[1]
    d = tempfile.mkdtemp(prefix="basalt-batch-lines-")
    deep = "[" * 100000 + "]" * 100000
    keys = "{" + ",".join('"k%d":1' % i for i in range(100000)) + "}"
    valid = '{"id":"ok%d","prompt":"The best way to","max_tokens":3,"samplers":"greedy"}'
    lines = [
        valid % 1,                                                   # 1
        '{"id":"big","prompt":"a","max_tokens":1e400}',              # 2
        '{"id":"deep-tokens","tokens":%s}' % deep,                   # 3
        '{"id":"deep-max","prompt":"a","max_tokens":%s}' % deep,     # 4
        '{"id":%s,"prompt":"a"}' % deep,                             # 5
        '{"id":"seed","prompt":"a","seed":18446744073709551615}',    # 6
        '{"id":"max","prompt":"a","max_tokens":18446744073709551615}',  # 7
        '{"id":"keys","prompt":"a","stop":%s}' % keys,               # 8
        '{"id":"wide","prompt":"a","max_tokens":[%s]}' % ",".join(["1"] * 100000),  # 9
        valid % 2,                                                   # 10
        '{"id":"long","prompt":"%s","max_tokens":1}' % ("a" * (64 * 4096 * 4)),  # 11
    ]
    bad = {2: "1e400", 3: "nested deeper than 64 levels", 4: "nested deeper than 64 levels",
           5: "nested deeper than 64 levels", 6: "seed", 7: "max_tokens", 8: "more than 1024 keys", 9: "max_tokens",
           11: "bytes"}
    path = os.path.join(d, "requests.jsonl")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    t0 = time.time()
    p = subprocess.run([basalt, "batch", "--requests", path], capture_output=True, text=True, timeout=300)
    took = time.time() - t0
    check("batch ends with exit 1 (failed lines), not a crash", p.returncode == 1,
          "exit %d: %s" % (p.returncode, p.stderr[-2000:]))
    results = {}
    for line in p.stdout.splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            check("stdout is JSON lines", False, line[:200])
            continue
        if "line" in r:
            results[r["line"]] = r
        else:
            results[r["id"]] = r
    for name in ("ok1", "ok2"):
        check("the valid line %s still runs" % name, name in results and "error" not in results[name] and
              results[name].get("finish_reason") == "length", str(results.get(name))[:300])
    for n, what in bad.items():
        r = results.get(n)
        check("line %d gets its own error (%s)" % (n, what), r is not None and what in r.get("error", ""),
              str(r)[:300])
        check("line %d's error is short" % n, r is not None and len(json.dumps(r)) < 1000, str(r)[:300])
        check("stderr names line %d" % n, ("line %d: " % n) in p.stderr, p.stderr[-1000:])
    check("the whole run takes seconds, not minutes", took < 60, "%.1f s" % took)

    # A 50 MB prompt line, read from stdin: refused by its length before it is parsed or tokenized, never held
    # whole: the run's peak RSS is within 25 MB of the same run without that line (the line parsed added 250 MB,
    # 321 MB in all; tokenized, 2.2 GB).
    def peak_run(lines):
        path = os.path.join(d, "stdin.jsonl")
        with open(path, "w") as f:
            f.write("".join(line + "\n" for line in lines))
        probe = ("import resource, subprocess, sys\n"
                 "p = subprocess.run(sys.argv[1:], stdin=open(%r), capture_output=True, text=True)\n"
                 "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, p.returncode)\n"
                 "sys.stdout.write(p.stdout)\n" % path)
        p = subprocess.run([sys.executable, "-c", probe, basalt, "batch", "--requests", "-"], capture_output=True,
                           text=True, timeout=300)
        head, _, out = p.stdout.partition("\n")
        rss_kb, rc = (int(x) for x in head.split())
        return rss_kb, rc, {r.get("id"): r for r in (json.loads(x) for x in out.splitlines())}, out

    huge_line = '{"id":"huge","prompt":"%s","max_tokens":1}' % ("a" * (50 << 20))
    base_kb, _, _, _ = peak_run([valid % 1, valid % 2])
    rss_kb, rc, results, out = peak_run([valid % 1, huge_line, valid % 2])
    huge = results.get(2, {})
    check("a 50 MB line is refused by its length before parsing", rc == 1 and "a line of 52428840 bytes" in
          huge.get("error", "") and "refused before parsing" in huge.get("error", ""), str(huge)[:300])
    check("... and the lines around it run", "error" not in results.get("ok1", {"error": 1}) and
          "error" not in results.get("ok2", {"error": 1}), out[:300])
    check("... and the line adds less than 25 MB to the run's peak RSS", rss_kb - base_kb < 25 * 1024,
          "%d kB with the line, %d kB without" % (rss_kb, base_kb))

    p = subprocess.run([basalt, "batch", "--requests", d], capture_output=True, text=True, timeout=120)
    check("--requests DIR is refused", p.returncode != 0 and "directory" in p.stderr,
          "exit %d: %s" % (p.returncode, p.stderr[-500:]))
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("every bad line refused on its own")
    return 0


if __name__ == "__main__":
    sys.exit(main())
