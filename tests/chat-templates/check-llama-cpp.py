#!/usr/bin/env python3
"""Renders every corpus case (templates/NAME.jinja x conversations/CONV.json) through llama.cpp's own rendering,
`llama-server --jinja --chat-template-file NAME.jinja` and `POST /apply-template`, and compares it with the committed
expected rendering (jinja2's, expected/NAME/CONV.txt or .error). Kept outside CI: it needs a llama-server build of
the pinned llama.cpp (~/.cache/basalt-llama-cpp/build-v0.5.0, target llama-server) and a GGUF that llama-server
loads; the default is the golden tiny Llama (tokenizer.ggml.model llama, BOS <s>, EOS </s>: the bos_token and
eos_token make-expected.py passes).

    python3 tests/chat-templates/check-llama-cpp.py [--server PATH] [--model GGUF] [--write] [NAME...]

The request is llama-server's chat shape: messages, tools, add_generation_prompt, and the conversation's other keys
(enable_thinking, reasoning_effort) as chat_template_kwargs. llama.cpp's strftime_now reads the clock: today's date
in its output, in the formats the corpus uses, is replaced by make-expected.py's fixed date before comparing.
--write stores each differing llama.cpp rendering as expected-llama-cpp/NAME/CONV.txt (or .error). Prints one line
per difference and a summary; exits 0 when the run completed (differences are the result, not a failure).
"""
import argparse
import datetime
import difflib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
NOW = 1768478400  # make-expected.py's fixed clock
DATE_FORMATS = ["%Y-%m-%d", "%d %b %Y", "%B %d, %Y"]  # the strftime_now formats of the corpus


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(port, path, body, timeout=60):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        data = e.read()
        try:
            return e.code, json.loads(data)
        except ValueError:
            return e.code, {"error": {"message": data.decode("utf-8", "replace")}}


def start(server, model, template, log):
    port = free_port()
    proc = subprocess.Popen([server, "-m", model, "--jinja", "--chat-template-file", template, "--host", "127.0.0.1",
                             "--port", str(port), "-c", "512", "-np", "1", "--no-warmup"],
                            stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 60
    while time.time() < deadline:
        if proc.poll() is not None:
            return None, port
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=2) as r:
                if r.status == 200:
                    return proc, port
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.1)
    proc.kill()
    proc.wait()
    return None, port


def stop(proc):
    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def request_body(context):
    body = {"messages": context["messages"]}
    if not context.get("add_generation_prompt", True):  # llama-server's default is true
        body["add_generation_prompt"] = False
    if "tools" in context:
        body["tools"] = context["tools"]
    kwargs = {k: v for k, v in context.items() if k not in ("messages", "tools", "add_generation_prompt")}
    if kwargs:
        body["chat_template_kwargs"] = kwargs
    return body


def fix_dates(text):
    today = datetime.datetime.now(datetime.timezone.utc)
    fixed = datetime.datetime.fromtimestamp(NOW, tz=datetime.timezone.utc)
    for fmt in DATE_FORMATS:
        for day in (today, datetime.datetime.now()):  # llama.cpp formats local time
            text = text.replace(day.strftime(fmt), fixed.strftime(fmt))
    return text


def first_difference(a, b):
    i = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
    return "at byte %d: jinja2 %r / llama.cpp %r" % (i, a[max(0, i - 30):i + 50], b[max(0, i - 30):i + 50])


def main():
    home = os.path.expanduser("~/.cache/basalt-llama-cpp/build-v0.5.0/bin/llama-server")
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--server", default=home)
    ap.add_argument("--model", default=os.path.join(ROOT, "..", "shared", "testdata", "golden", "models",
                                                     "tiny-llama-f32.gguf"))
    ap.add_argument("--write", action="store_true", help="store differing renderings under expected-llama-cpp/")
    ap.add_argument("names", nargs="*", help="templates to check (default: all)")
    a = ap.parse_args()
    convs = sorted(f[:-5] for f in os.listdir(os.path.join(HERE, "conversations")) if f.endswith(".json"))
    names = a.names or sorted(f[:-6] for f in os.listdir(os.path.join(HERE, "templates")) if f.endswith(".jinja"))
    log_dir = tempfile.mkdtemp(prefix="basalt-llama-cpp-templates-")
    counts = {"equal": 0, "both raise": 0, "differ": 0, "refused template": 0}
    for name in names:
        log_path = os.path.join(log_dir, name + ".log")
        with open(log_path, "w") as log:
            proc, port = start(a.server, a.model, os.path.join(HERE, "templates", name + ".jinja"), log)
        if proc is None:
            tail = open(log_path, errors="replace").read().strip().splitlines()[-3:]
            print("REFUSED %s: llama-server did not start (%s)" % (name, " | ".join(tail)))
            counts["refused template"] += len(convs)
            continue
        try:
            for conv in convs:
                with open(os.path.join(HERE, "conversations", conv + ".json"), encoding="utf-8") as f:
                    context = json.load(f)
                base = os.path.join(HERE, "expected", name, conv)
                want_error = os.path.exists(base + ".error")
                want = None if want_error else open(base + ".txt", encoding="utf-8", newline="").read()
                status, out = post(port, "/apply-template", request_body(context))
                got_error = status != 200
                got = None if got_error else fix_dates(out["prompt"])
                if want_error and got_error:
                    counts["both raise"] += 1
                    continue
                if not want_error and not got_error and got == want:
                    counts["equal"] += 1
                    continue
                counts["differ"] += 1
                if want_error:
                    print("DIFFER %s/%s: jinja2 raises (%s), llama.cpp renders %d bytes" %
                          (name, conv, open(base + ".error").read().strip(), len(got)))
                elif got_error:
                    print("DIFFER %s/%s: llama.cpp answers %d (%s), jinja2 renders" %
                          (name, conv, status, out.get("error", {}).get("message", out)))
                else:
                    print("DIFFER %s/%s: %s" % (name, conv, first_difference(want, got)))
                    for line in list(difflib.unified_diff(want.splitlines(), got.splitlines(), "jinja2", "llama.cpp",
                                                          lineterm="", n=0))[2:8]:
                        print("    " + line)
                if a.write:
                    d = os.path.join(HERE, "expected-llama-cpp", name)
                    os.makedirs(d, exist_ok=True)
                    if got_error:
                        with open(os.path.join(d, conv + ".error"), "w", encoding="utf-8") as f:
                            f.write(out.get("error", {}).get("message", json.dumps(out)) + "\n")
                    else:
                        with open(os.path.join(d, conv + ".txt"), "w", encoding="utf-8", newline="") as f:
                            f.write(got)
        finally:
            stop(proc)
    total = sum(counts.values())
    print("llama.cpp vs jinja2 over %d cases: %s (server logs in %s)" %
          (total, ", ".join("%d %s" % (v, k) for k, v in counts.items()), log_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
