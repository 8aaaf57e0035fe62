#!/usr/bin/env python3
"""basalt serve refuses unsafe option values at start (issue 28, items 7 and 10).

serve-options.py BASALT
    An empty --api-key or BASALT_API_KEY (which would turn authentication off) and a non-finite or too large timeout
    (which overflowed and timed every request out at once) exit 2 naming the option, before the model is loaded.
"""
import os
import subprocess
import sys

from serve_harness import check, failures


def refused(name, args, needle, env=None):
    e = dict(os.environ)
    e.update(env or {})
    try:
        p = subprocess.run([sys.argv[1], "serve", "--port", "0"] + args, capture_output=True, text=True, timeout=20,
                           env=e)
    except subprocess.TimeoutExpired:
        check(name, False, "the server started (still running after 20 s)")
        return
    check(name, p.returncode == 2 and needle in p.stderr, "exit %d: %s" % (p.returncode, p.stderr[-500:]))


def main():
    refused("--api-key '' is refused", ["--api-key", ""], "--api-key")
    refused("BASALT_API_KEY='' is refused", [], "BASALT_API_KEY", {"BASALT_API_KEY": ""})
    for opt in ("--request-timeout", "--read-timeout", "--idle-timeout", "--write-timeout", "--shutdown-grace"):
        for value in ("inf", "1e30", "nan"):
            refused("%s %s is refused" % (opt, value), [opt, value], opt)
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("unsafe option values refused")
    return 0


if __name__ == "__main__":
    sys.exit(main())
