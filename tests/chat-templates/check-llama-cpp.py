#!/usr/bin/env python3
"""Renders every corpus case (templates/NAME.jinja x conversations/CONV.json) through llama.cpp's own rendering,
`llama-server --jinja --chat-template-file NAME.jinja` and `POST /apply-template`, and compares it with the committed
expected rendering (jinja2's, expected/NAME/CONV.txt or .error). Kept outside CI: it needs a llama-server build of
the pinned llama.cpp (~/.cache/basalt-llama-cpp/build-v0.5.0, target llama-server) and a GGUF that llama-server
loads; the default is the golden tiny Llama (tokenizer.ggml.model llama, BOS <s>, EOS </s>: the bos_token and
eos_token make-expected.py passes).

    python3 tests/chat-templates/check-llama-cpp.py [--server PATH] [--model GGUF] [--write] [NAME...]

The request is llama-server's chat shape: messages, tools, add_generation_prompt, and the conversation's other keys
(enable_thinking, reasoning_effort) as chat_template_kwargs. Two llama-server conventions that are not template
rendering are switched off with its own options: `--no-prefill-assistant` (otherwise a conversation ending with an
assistant message is cut open after that message's content, to be continued) and `--override-kv
tokenizer.ggml.add_bos_token=bool:false` (otherwise a leading bos_token the template writes is cut from the text,
because the tokenizer adds BOS itself; Basalt keeps one BOS at the token level instead). llama.cpp's strftime_now
and its date_string / datetime variables read the clock: today's date in its output, in the formats the corpus
uses, is replaced by make-expected.py's fixed date before comparing.

Where llama.cpp's rendering differs from jinja2's, the case is rendered again with jinja2 (make-expected.py's
environment) in the context llama-server builds for its templates (common/chat.cpp): enable_thinking defined
(true where llama-server finds the template supports thinking, its log's "chat template, thinking = N"), date_string
and datetime defined, add_generation_prompt undefined rather than false, a leading system message merged into the
next message where the template does not support the system role, content "" on assistant tool-call messages where
it supports tool calls (its /props chat_template_caps). A rendering equal then is a difference of context, not of
Jinja, and the line says which of those made it.

--write rewrites expected-llama-cpp/ (kept apart: explained.json, the hand-written reasons for the rest): for each
differing case NAME/CONV.txt (or .error), llama.cpp's rendering, and, where llama-server's context explains it,
NAME/CONV.context.json, that context, with which CTest checks Basalt's rendering equals llama.cpp's string for
string (tests/test-chat-template.cpp). Prints one line per difference and a summary; exits 0 when the run completed
(differences are the result, not a failure).
"""
import argparse
import copy
import importlib.util
import datetime
import difflib
import json
import os
import re
import shutil
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
DATE_FORMATS = ["%Y-%m-%d", "%d %b %Y", "%B %d, %Y", "%b %d %Y"]  # strftime_now's in the corpus, date_string, datetime


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
                             "--port", str(port), "-c", "512", "-np", "1", "--no-warmup", "--no-prefill-assistant",
                             "--override-kv", "tokenizer.ggml.add_bos_token=bool:false",
                             "-lv", "4"],  # verbosity 4: the log says "chat template, thinking = N"
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


def get(port, path, timeout=20):
    with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=timeout) as r:
        return json.loads(r.read())


def server_thinking(log_path):
    # llama-server's enable_thinking default for this template (server-context.cpp logs it at startup; its log is
    # written by a worker thread, so the line may land a moment after /health answers)
    for _ in range(50):
        found = re.findall(r"chat template, thinking = (\d)", open(log_path, errors="replace").read())
        if found:
            return bool(int(found[-1]))
        time.sleep(0.1)
    return None


def jinja2_environment():
    spec = importlib.util.spec_from_file_location("make_expected", os.path.join(HERE, "make-expected.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def llama_server_context(context, thinking, caps):
    # The variables llama-server's common_chat_templates_apply gives a template that jinja2's (transformers')
    # call does not, as (name, context with it) pairs applied in order; each is a no-op where it changes nothing.
    fixed = datetime.datetime.fromtimestamp(NOW, tz=datetime.timezone.utc)
    steps = []
    ctx = copy.deepcopy(context)
    if "enable_thinking" not in ctx and thinking is not None:
        ctx["enable_thinking"] = thinking
        steps.append(("enable_thinking=%s" % ("true" if thinking else "false"), copy.deepcopy(ctx)))
    if "preserve_reasoning" not in ctx:  # llama-server's default kwarg (--reasoning-preserve) and what it sets
        ctx.update(preserve_reasoning=True, preserve_thinking=True, clear_thinking=False,
                   truncate_history_thinking=False, drop_thinking=False)
        steps.append(("preserve_reasoning (clear_thinking false, ...)", copy.deepcopy(ctx)))
    if isinstance(ctx.get("reasoning_effort"), str) and ctx["reasoning_effort"]:
        ctx["reasoning_strength"] = ctx["reasoning_effort"]
        steps.append(("reasoning_strength = reasoning_effort", copy.deepcopy(ctx)))
    ctx.setdefault("date_string", fixed.strftime("%d %b %Y"))
    ctx.setdefault("datetime", fixed.strftime("%b %d %Y"))
    steps.append(("date_string/datetime defined", copy.deepcopy(ctx)))
    if ctx.get("add_generation_prompt") is False:
        del ctx["add_generation_prompt"]
        steps.append(("add_generation_prompt undefined", copy.deepcopy(ctx)))
    msgs = ctx["messages"]
    if not caps.get("supports_system_role", True) and msgs and msgs[0].get("role") == "system":
        if len(msgs) > 1:
            msgs[1]["content"] = msgs[0]["content"] + "\n" + msgs[1]["content"]
        del msgs[0]
        steps.append(("system message merged into the next", copy.deepcopy(ctx)))
    if not caps.get("supports_object_arguments", False):
        changed = False
        for m in msgs:
            for call in m.get("tool_calls") or []:
                fn = call.get("function", {})
                if not isinstance(fn.get("arguments"), str):
                    fn["arguments"] = json.dumps(fn.get("arguments"), ensure_ascii=False, separators=(",", ":"))
                    changed = True
        if changed:
            steps.append(("tool-call arguments as JSON text", copy.deepcopy(ctx)))
    if caps.get("supports_tool_calls", False):
        changed = False
        for m in msgs:
            if "tool_calls" in m and "content" not in m:
                m["content"] = ""
                changed = True
        if changed:
            steps.append(("content \"\" on tool-call messages", copy.deepcopy(ctx)))
    return ctx, steps


def explain(template, base_context, got, ctx, steps, bos, eos):
    # None when jinja2 in llama-server's context does not give llama.cpp's rendering; else the steps it needs
    def render(c):
        try:
            return template.render(bos_token=bos, eos_token=eos, **c)
        except Exception:  # noqa: BLE001 (any jinja2 failure is simply "not this context")
            return None
    if render(ctx) != got:
        return None
    needed = []
    for i, (name, ctx_i) in enumerate(steps):  # the steps that change jinja2's rendering
        if render(base_context if i == 0 else steps[i - 1][1]) != render(ctx_i):
            needed.append(name)
    return needed


def first_difference(a, b):
    i = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
    return "at byte %d: jinja2 %r / llama.cpp %r" % (i, a[max(0, i - 30):i + 50], b[max(0, i - 30):i + 50])


def main():
    home = os.path.expanduser("~/.cache/basalt-llama-cpp/build-v0.5.0/bin/llama-server")
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--server", default=home)
    ap.add_argument("--model", default=os.path.join(ROOT, "..", "shared", "testdata", "golden", "models",
                                                     "tiny-llama-f32.gguf"))
    ap.add_argument("--write", action="store_true", help="rewrite expected-llama-cpp/ (all templates only)")
    ap.add_argument("names", nargs="*", help="templates to check (default: all)")
    a = ap.parse_args()
    if a.write and a.names:
        ap.error("--write rewrites the whole expected-llama-cpp/: give no template names")
    me = jinja2_environment()
    env = me.environment()
    convs = sorted(f[:-5] for f in os.listdir(os.path.join(HERE, "conversations")) if f.endswith(".json"))
    names = a.names or sorted(f[:-6] for f in os.listdir(os.path.join(HERE, "templates")) if f.endswith(".jinja"))
    log_dir = tempfile.mkdtemp(prefix="basalt-llama-cpp-templates-")
    out_dir = os.path.join(HERE, "expected-llama-cpp")
    if a.write:
        for entry in os.listdir(out_dir) if os.path.isdir(out_dir) else []:
            if os.path.isdir(os.path.join(out_dir, entry)):
                shutil.rmtree(os.path.join(out_dir, entry))
    counts = {"equal": 0, "both raise": 0, "differ in context": 0, "differ otherwise": 0, "refused template": 0}
    for name in names:
        log_path = os.path.join(log_dir, name + ".log")
        template_path = os.path.join(HERE, "templates", name + ".jinja")
        with open(log_path, "w") as log:
            proc, port = start(a.server, a.model, template_path, log)
        if proc is None:
            tail = open(log_path, errors="replace").read().strip().splitlines()[-3:]
            print("REFUSED %s: llama-server did not start (%s)" % (name, " | ".join(tail)))
            counts["refused template"] += len(convs)
            continue
        try:
            thinking = server_thinking(log_path)
            caps = get(port, "/props").get("chat_template_caps", {})
            with open(template_path, encoding="utf-8") as f:
                template = env.from_string(f.read())
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
                ctx, steps = llama_server_context(context, thinking, caps)
                needed = None if got_error else explain(template, context, got, ctx, steps, me.BOS, me.EOS)
                counts["differ otherwise" if needed is None else "differ in context"] += 1
                if needed is not None:
                    print("CONTEXT %s/%s: jinja2 renders llama.cpp's text with %s" %
                          (name, conv, ", ".join(needed) or "llama-server's context"))
                elif want_error:
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
                    d = os.path.join(out_dir, name)
                    os.makedirs(d, exist_ok=True)
                    if got_error:
                        with open(os.path.join(d, conv + ".error"), "w", encoding="utf-8") as f:
                            f.write(out.get("error", {}).get("message", json.dumps(out)) + "\n")
                        continue
                    with open(os.path.join(d, conv + ".txt"), "w", encoding="utf-8", newline="") as f:
                        f.write(got)
                    if needed is not None:
                        with open(os.path.join(d, conv + ".context.json"), "w", encoding="utf-8") as f:
                            json.dump({"explained_by": needed, "context": ctx}, f, ensure_ascii=False, indent=1)
                            f.write("\n")
        finally:
            stop(proc)
    total = sum(counts.values())
    print("llama.cpp vs jinja2 over %d cases: %s (server logs in %s)" %
          (total, ", ".join("%d %s" % (v, k) for k, v in counts.items()), log_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
