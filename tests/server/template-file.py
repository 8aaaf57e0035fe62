#!/usr/bin/env python3
"""basalt serve and basalt chat render tokenizer.chat_template from the GGUF with the Jinja interpreter
(docs/chat-templates.md): a ChatML template and a template of no known family are both rendered as written
(POST /apply-template shows the prompt), a template that does not parse is refused at startup naming its
line:column and --chat-template, which then overrides it (a family NAME or a template FILE, with
--chat-template-kwargs and a request's chat_template_kwargs as template variables); raise_exception answers 400
naming the template position; /tokenize and /detokenize answer in llama-server's shape.
The files are the shipped target with one metadata key added (the bytes are inserted after the header, padded so
that the tensor data keeps its alignment).
template-file.py BASALT TARGET_GGUF
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

from serve_harness import Server


def with_template(src, dst, template):
    data = open(src, "rb").read()
    magic, version, n_tensors, n_kv = struct.unpack_from("<4sIQQ", data, 0)
    assert magic == b"GGUF" and version >= 2, (magic, version)
    key = b"tokenizer.chat_template"
    value = template.encode()
    size = 8 + len(key) + 4 + 8 + len(value) + 4
    # keep the data section's alignment (general.alignment defaults to 32) with a padded Jinja comment
    value += b"{#" + b" " * ((-size) % 32) + b"#}"
    kv = struct.pack("<Q", len(key)) + key + struct.pack("<IQ", 8, len(value)) + value
    out = data[:4] + struct.pack("<IQQ", version, n_tensors, n_kv + 1) + kv + data[24:]
    open(dst, "wb").write(out)


def main():
    basalt, target = sys.argv[1], sys.argv[2]
    d = tempfile.mkdtemp(prefix="basalt-template-")
    failures = []
    chatml = os.path.join(d, "chatml.gguf")
    unknown = os.path.join(d, "unknown.gguf")
    broken = os.path.join(d, "broken.gguf")
    with_template(target, chatml, "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
                  "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"
                  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
    with_template(target, unknown, "{% for m in messages %}### {{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
                  "{% if m is defined %}{{ raise_exception('never') }}{% endif %}"
                  "{% if messages[0]['content'] == 'boom' %}{{ raise_exception('no booms here') }}{% endif %}")
    with_template(target, broken, "{% for m in messages %}\n{{ m['content'] + }}\n{% endfor %}")
    hi = {"messages": [{"role": "user", "content": "Hi"}]}

    def expect(srv, path, body, status, what, contains=None):
        st, _, b = srv.request("POST", path, body=body)
        b = b.decode() if isinstance(b, bytes) else b
        if st != status or (contains is not None and contains not in b):
            failures.append("%s: %d %s" % (what, st, b[:300]))
            return None
        try:
            return json.loads(b)
        except ValueError:
            return None

    srv = Server(basalt, ["-m", chatml], name="tmpl")
    try:
        expect(srv, "/v1/chat/completions", dict(hi, max_tokens=4, temperature=0), 200, "chat on the ChatML file")
        r = expect(srv, "/apply-template", hi, 200, "apply-template, ChatML")
        if r is not None and r.get("prompt") != "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n":
            failures.append("apply-template, ChatML: %r" % r)
        r = expect(srv, "/tokenize", {"content": "Hello world"}, 200, "tokenize")
        ids = r.get("tokens") if r else None
        if not ids or not all(isinstance(i, int) for i in ids):
            failures.append("tokenize: %r" % r)
        else:
            r = expect(srv, "/detokenize", {"tokens": ids}, 200, "detokenize")
            if r is None or r.get("content", "").lstrip(" ") != "Hello world":
                failures.append("detokenize: %r" % r)
            r = expect(srv, "/tokenize", {"content": "Hello world", "with_pieces": True}, 200, "tokenize pieces")
            if r is None or "".join(t["piece"] for t in r["tokens"]).lstrip(" ") != "Hello world" or \
                    [t["id"] for t in r["tokens"]] != ids:
                failures.append("tokenize with_pieces: %r" % r)
        expect(srv, "/detokenize", {"tokens": [-1]}, 400, "detokenize of a bad id")
        expect(srv, "/tokenize", {"content": 5}, 400, "tokenize of a number")
        st, _, _ = srv.request("GET", "/apply-template")
        if st != 405:
            failures.append("GET /apply-template: %d" % st)
    finally:
        srv.stop()
    if "chat template jinja" not in srv.output():
        failures.append("the ChatML file's template is not rendered by the interpreter: " + srv.output())

    srv = Server(basalt, ["-m", unknown], name="tmpl-unknown")
    try:
        r = expect(srv, "/apply-template", {"messages": [{"role": "system", "content": "S"}, hi["messages"][0]]}, 200,
                   "apply-template, a template of no known family")
        if r is not None and r.get("prompt") != "### system: S\n### user: Hi\n":
            failures.append("apply-template, no known family: %r" % r)
        expect(srv, "/v1/chat/completions", {"messages": [{"role": "user", "content": "boom"}]}, 400,
               "raise_exception answers 400 naming the template position", contains="no booms here")
        expect(srv, "/apply-template", {"messages": [{"role": "user", "content": "boom"}]}, 400,
               "raise_exception in apply-template", contains="chat template 2:")
    finally:
        srv.stop()

    p = subprocess.run([basalt, "serve", "-m", broken, "--port", "0"], capture_output=True, text=True, timeout=30)
    if p.returncode != 1 or "--chat-template NAME|FILE" not in p.stderr or "chat template 2:" not in p.stderr:
        failures.append("a template that does not parse: exit %d, %r" % (p.returncode, p.stderr))
    p = subprocess.run([basalt, "chat", "-m", broken], input="/exit\n", capture_output=True, text=True, timeout=30)
    if p.returncode != 1 or "--chat-template NAME|FILE" not in p.stderr:
        failures.append("basalt chat, a template that does not parse: exit %d, %r" % (p.returncode, p.stderr))

    srv = Server(basalt, ["-m", broken, "--chat-template", "plain"], name="tmpl-override")
    try:
        expect(srv, "/v1/chat/completions", dict(hi, max_tokens=4), 200, "--chat-template plain over a broken one")
    finally:
        srv.stop()

    tfile = os.path.join(d, "mine.jinja")
    with open(tfile, "w") as f:
        f.write("{{ 'think:' ~ (enable_thinking | default(true)) ~ '|' }}"
                "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}"
                "{% if tools %}[tools: {{ tools | map(attribute='function.name') | join(',') }}]{% endif %}")
    srv = Server(basalt, ["-m", broken, "--chat-template", tfile, "--chat-template-kwargs", '{"enable_thinking": false}'],
                 name="tmpl-file")
    try:
        r = expect(srv, "/apply-template", hi, 200, "--chat-template FILE with --chat-template-kwargs")
        if r is not None and r.get("prompt") != "think:False|<user>Hi":
            failures.append("--chat-template FILE with kwargs: %r" % r)
        body = dict(hi, chat_template_kwargs={"enable_thinking": True},
                    tools=[{"type": "function", "function": {"name": "get_weather", "parameters": {}}}])
        r = expect(srv, "/apply-template", body, 200, "a request's chat_template_kwargs and tools")
        if r is not None and r.get("prompt") != "think:True|<user>Hi[tools: get_weather]":
            failures.append("request chat_template_kwargs and tools: %r" % r)
        expect(srv, "/v1/chat/completions", dict(body, max_tokens=4), 200, "chat with tools on a Jinja template")
    finally:
        srv.stop()
    p = subprocess.run([basalt, "serve", "-m", broken, "--chat-template-kwargs", "[1]"], capture_output=True,
                       text=True, timeout=30)
    if p.returncode != 2 or "--chat-template-kwargs must be a JSON object" not in p.stderr:
        failures.append("--chat-template-kwargs not an object: exit %d, %r" % (p.returncode, p.stderr))
    if failures:
        print("\n".join(failures))
        return 1
    print("template-file: templates rendered by the interpreter, a broken one refused naming line:column and "
          "--chat-template, FILE and kwargs overrides, apply-template/tokenize/detokenize")
    return 0


if __name__ == "__main__":
    sys.exit(main())
