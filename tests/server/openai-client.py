#!/usr/bin/env python3
"""Runs tests/server/openai-client.cjs (the official `openai` npm package) against a basalt serve it starts.
openai-client.py BASALT NODE_DIR
NODE_DIR holds node_modules/openai (scripts/setup.sh installs the pinned version there); missing it fails the test.
"""
import os
import subprocess
import sys

from serve_harness import Server


def main():
    basalt, node_dir = sys.argv[1], sys.argv[2]
    if not os.path.isfile(os.path.join(node_dir, "node_modules", "openai", "package.json")):
        print("FAIL: the openai npm package is not installed in %s (run scripts/setup.sh)" % node_dir)
        return 1
    srv = Server(basalt, ["--api-key", "sk-test"], name="openai")
    try:
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "openai-client.cjs")
        p = subprocess.run(["node", script, node_dir, "http://127.0.0.1:%d/v1" % srv.port, "sk-test", "target"],
                           timeout=120)
        rc = p.returncode
        if srv.proc.poll() is not None:
            print("FAIL: the server died:\n" + srv.output())
            rc = 1
    finally:
        srv.stop()
    return rc


if __name__ == "__main__":
    sys.exit(main())
