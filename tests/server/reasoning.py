#!/usr/bin/env python3
"""A chat reply's reasoning in reasoning_content, against a real `basalt serve` (docs/server.md, "Reasoning"): the
model's output is forced with a `regex` so that it holds a reasoning block deterministically. With a template whose
generation prompt opens <think> (as DeepSeek-R1's and QwQ's do) the reply starts inside the reasoning; with one that
does not, the reply's own <think>...</think> opens it; a [THINK]...[/THINK] template (Magistral's markers) is split
at its markers. Non-streamed: message.content without the reasoning, message.reasoning_content with it; streamed:
deltas carry reasoning_content while inside the reasoning and content after, and concatenate to the same two
strings. `reasoning_format: "none"` (request) and `--reasoning-format none` (server) keep the text whole in content.
reasoning.py BASALT
"""
import json
import os
import sys
import tempfile

from serve_harness import Server, check, failures, sse_events

CHATML = ("{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{% endfor %}"
          "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
OPENS_THINK = CHATML.replace("assistant\\n' }}", "assistant\\n<think>\\n' }}") + "{# </think> #}"
MAGISTRAL = CHATML + "{# [THINK] reasoning [/THINK] #}"


def write(d, name, text):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def body(regex, **extra):
    b = {"messages": [{"role": "user", "content": "Why?"}], "max_tokens": 120, "temperature": 0, "regex": regex}
    b.update(extra)
    return b


def chat(srv, b):
    st, _, data = srv.request("POST", "/v1/chat/completions", b)
    out = json.loads(data)
    if st != 200:
        return st, out, None
    return st, out, out["choices"][0]


def stream(srv, b):
    """The deltas' reasoning_content and content concatenated, and the order of the kinds of delta."""
    c = srv.conn()
    c.request("POST", "/v1/chat/completions", body=json.dumps(dict(b, stream=True)),
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    reasoning, content, kinds = "", "", []
    for data in sse_events(r):
        if data == "[DONE]":
            break
        ev = json.loads(data)
        for ch in ev.get("choices", []):
            d = ch.get("delta", {})
            if d.get("reasoning_content"):
                reasoning += d["reasoning_content"]
                kinds.append("r")
            if d.get("content"):
                content += d["content"]
                kinds.append("c")
    c.close()
    return reasoning, content, "".join(kinds)


def both_shapes(srv, name, b, want_reasoning, want_content):
    st, out, c = chat(srv, b)
    ok = st == 200 and c["finish_reason"] == "stop"
    check(name + ": answered 200, finish_reason stop", ok, out)
    if not ok:
        return
    msg = c["message"]
    check(name + ": message.content", msg["content"] == want_content, repr(msg))
    check(name + ": message.reasoning_content", msg.get("reasoning_content") == want_reasoning, repr(msg))
    reasoning, content, kinds = stream(srv, b)
    check(name + ": streamed reasoning_content deltas", reasoning == (want_reasoning or ""), repr(reasoning))
    check(name + ": streamed content deltas", content == want_content, repr(content))
    check(name + ": reasoning deltas come before content deltas", "cr" not in kinds, kinds)


def main():
    basalt = sys.argv[1]
    d = tempfile.mkdtemp(prefix="basalt-reasoning-")
    opens = write(d, "opens-think.jinja", OPENS_THINK)
    chatml = write(d, "chatml.jinja", CHATML)
    magistral = write(d, "magistral.jinja", MAGISTRAL)

    srv = Server(basalt, ["--chat-template", opens], name="reasoning-open")
    try:
        st, _, data = srv.request("POST", "/apply-template", {"messages": [{"role": "user", "content": "Why?"}]})
        check("the template's generation prompt opens <think>", st == 200 and
              json.loads(data)["prompt"].endswith("<|im_start|>assistant\n<think>\n"), data)
        rx = "the sky is blue because of scattering\\.\n</think>\n\nRayleigh\\."
        both_shapes(srv, "opened by the prompt", body(rx), "the sky is blue because of scattering.", "Rayleigh.")
        both_shapes(srv, "reasoning_format none", body(rx, reasoning_format="none"), None,
                    "the sky is blue because of scattering.\n</think>\n\nRayleigh.")
        both_shapes(srv, "unclosed reasoning (cut by the grammar's end)", body("thinking and thinking"),
                    "thinking and thinking", "")
        st, out, _ = chat(srv, body("x", reasoning_format="raw"))
        check("reasoning_format of another value: 400 naming it", st == 400 and
              out["error"]["param"] == "reasoning_format", out)
    finally:
        srv.stop()

    srv = Server(basalt, ["--chat-template", chatml], name="reasoning-chatml")
    try:
        both_shapes(srv, "the reply's own <think>", body("<think>\nsmall steps first\n</think>\n\nDone\\."),
                    "small steps first", "Done.")
        both_shapes(srv, "no reasoning", body("Just an answer\\."), None, "Just an answer.")
        both_shapes(srv, "<think> later in the answer is content", body("Answer <think>no</think> here\\."), None,
                    "Answer <think>no</think> here.")
    finally:
        srv.stop()

    srv = Server(basalt, ["--chat-template", magistral], name="reasoning-magistral")
    try:
        both_shapes(srv, "[THINK] markers", body("\\[THINK\\]weigh both sides\\[/THINK\\]Both\\."),
                    "weigh both sides", "Both.")
    finally:
        srv.stop()

    srv = Server(basalt, ["--chat-template", chatml, "--reasoning-format", "none"], name="reasoning-off")
    try:
        rx = "<think>\nsmall steps first\n</think>\n\nDone\\."
        both_shapes(srv, "--reasoning-format none", body(rx), None, "<think>\nsmall steps first\n</think>\n\nDone.")
        both_shapes(srv, "--reasoning-format none, the request's deepseek", body(rx, reasoning_format="deepseek"),
                    "small steps first", "Done.")
    finally:
        srv.stop()

    if failures:
        print("%d failures" % len(failures))
        return 1
    print("reasoning: split into reasoning_content (non-streamed and streamed), turned off by request and server")
    return 0


if __name__ == "__main__":
    sys.exit(main())
