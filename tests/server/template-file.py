#!/usr/bin/env python3
"""basalt serve and basalt chat read tokenizer.chat_template from the GGUF: a ChatML template is recognised, a
template of no known family is refused at startup with a message naming --chat-template, which then overrides it.
The files are the shipped target with one metadata key added (the bytes are inserted after the header, padded so
that the tensor data keeps its alignment).
template-file.py BASALT TARGET_GGUF
"""
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
    size = 8 + len(key) + 4 + 8 + len(value)
    value += b" " * ((-size) % 32)  # keep the data section's alignment (general.alignment defaults to 32)
    kv = struct.pack("<Q", len(key)) + key + struct.pack("<IQ", 8, len(value)) + value
    out = data[:4] + struct.pack("<IQQ", version, n_tensors, n_kv + 1) + kv + data[24:]
    open(dst, "wb").write(out)


def main():
    basalt, target = sys.argv[1], sys.argv[2]
    d = tempfile.mkdtemp(prefix="basalt-template-")
    failures = []
    chatml = os.path.join(d, "chatml.gguf")
    unknown = os.path.join(d, "unknown.gguf")
    with_template(target, chatml, "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
                  "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}")
    with_template(target, unknown, "{% for m in messages %}### {{ m['role'] }}: {{ m['content'] }}\n{% endfor %}")

    srv = Server(basalt, ["-m", chatml], name="tmpl")
    try:
        status, _, body = srv.request("POST", "/v1/chat/completions",
                                      body={"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4,
                                            "temperature": 0})
        if status != 200:
            failures.append("chat on the ChatML file: %d %s" % (status, body[:200]))
    finally:
        srv.stop()
    if "chat template chatml" not in srv.output():
        failures.append("ChatML not recognised: " + srv.output())

    p = subprocess.run([basalt, "serve", "-m", unknown, "--port", "0"], capture_output=True, text=True, timeout=30)
    if p.returncode != 1 or "--chat-template NAME" not in p.stderr or "### {{ m['role'] }}" not in p.stderr:
        failures.append("unknown template: exit %d, %r" % (p.returncode, p.stderr))
    p = subprocess.run([basalt, "chat", "-m", unknown], input="/exit\n", capture_output=True, text=True, timeout=30)
    if p.returncode != 1 or "--chat-template NAME" not in p.stderr:
        failures.append("basalt chat, unknown template: exit %d, %r" % (p.returncode, p.stderr))

    srv = Server(basalt, ["-m", unknown, "--chat-template", "plain"], name="tmpl-override")
    try:
        status, _, body = srv.request("POST", "/v1/chat/completions",
                                      body={"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4})
        if status != 200:
            failures.append("--chat-template plain over an unknown template: %d %s" % (status, body[:200]))
    finally:
        srv.stop()
    if failures:
        print("\n".join(failures))
        return 1
    print("template-file: ChatML recognised, unknown refused naming --chat-template, the override works")
    return 0


if __name__ == "__main__":
    sys.exit(main())
