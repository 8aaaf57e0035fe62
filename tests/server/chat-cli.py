#!/usr/bin/env python3
"""basalt chat driven through stdin: replies stream to stdout, the conversation carries across turns (the second
reply equals `basalt batch` on the rendered two-turn prompt), /reset forgets it, /exit quits; CRLF line ends and a
leading UTF-8 byte-order mark are not part of the lines ("/exit\r" quits).
chat-cli.py BASALT
"""
import json
import subprocess
import sys

N = 12


def chat(basalt, lines):
    p = subprocess.run([basalt, "chat", "--samplers", "greedy", "-n", str(N)], input="\n".join(lines) + "\n",
                       capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise SystemExit("basalt chat exited %d: %s" % (p.returncode, p.stderr))
    return p.stdout


def main():
    basalt = sys.argv[1]
    failures = []
    a = chat(basalt, ["Hello", "/exit", "never read"])
    b = chat(basalt, ["Hi", "/reset", "Hello", "/exit"])
    c = chat(basalt, ["Hello", "How are you"])
    # CRLF line ends and a UTF-8 byte-order mark at the start are no part of the lines: the same chat, and
    # "/exit\r" quits.
    d = chat(basalt, ["\ufeffHello\r", "/exit\r", "never read"])
    if d != a:
        failures.append("CRLF lines and a BOM change the chat or /exit\\r is not a command: %r vs %r" % (d, a))
    if not a.endswith("\n") or len(a) < 2:
        failures.append("no reply: %r" % a)
    if "(conversation reset)\n" not in b or not b.endswith("(conversation reset)\n" + a):
        failures.append("/reset did not forget: %r vs %r" % (b, a))
    if not c.startswith(a):
        failures.append("the first reply differs between runs: %r vs %r" % (c, a))
    r1, r2 = a[:-1], c[len(a):-1]
    prompt = "User: Hello\nAssistant: " + r1 + "\nUser: How are you\nAssistant:"
    job = {"id": 1, "prompt": prompt, "max_tokens": N, "samplers": "greedy", "stop": ["\nUser:"]}
    p = subprocess.run([basalt, "batch", "--requests", "-"], input=json.dumps(job) + "\n", capture_output=True,
                       text=True, timeout=60)
    want = json.loads(p.stdout.splitlines()[0])["text"] if p.returncode == 0 else None
    if want != r2:
        failures.append("second turn %r != basalt batch on the rendered conversation %r" % (r2, want))
    if "never read" in a:
        failures.append("/exit did not quit")
    if failures:
        print("\n".join(failures))
        return 1
    print("chat: replies %r / %r" % (r1, r2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
