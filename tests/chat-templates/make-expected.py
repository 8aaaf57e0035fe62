#!/usr/bin/env python3
"""Writes the expected renderings of the chat-template corpus with an independent implementation: Python's jinja2
(Debian's python3-jinja2) set up exactly as Hugging Face transformers renders chat templates
(transformers/utils/chat_template_utils.py: ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, the
loopcontrols extension, the {% generation %} tag, tojson without HTML escaping, raise_exception, strftime_now),
with strftime_now's clock fixed so the vectors are reproducible.

    python3 tests/chat-templates/make-expected.py     # rewrites tests/chat-templates/expected/

For every templates/NAME.jinja x conversations/CONV.json it writes expected/NAME/CONV.txt (the rendering) or
expected/NAME/CONV.error (the exception jinja2 raised: Basalt must fail too). CTest compares Basalt's rendering
byte for byte (tests/test-chat-template.cpp); jinja2 is needed only to regenerate, not to test.
"""
import datetime
import json
import os
import shutil
import sys

import jinja2
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
NOW = 1768478400  # 2026-01-15 12:00:00 UTC; tests/test-chat-template.cpp passes the same
BOS, EOS = "<s>", "</s>"


class AssistantTracker(Extension):
    # transformers' {% generation %} ... {% endgeneration %}: renders its body unchanged.
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def strftime_now(fmt):
    return datetime.datetime.fromtimestamp(NOW, tz=datetime.timezone.utc).strftime(fmt)


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[AssistantTracker, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def main():
    env = environment()
    out_dir = os.path.join(HERE, "expected")
    shutil.rmtree(out_dir, ignore_errors=True)
    convs = sorted(f[:-5] for f in os.listdir(os.path.join(HERE, "conversations")) if f.endswith(".json"))
    rendered = failed = 0
    for name in sorted(os.listdir(os.path.join(HERE, "templates"))):
        if not name.endswith(".jinja"):
            continue
        with open(os.path.join(HERE, "templates", name), encoding="utf-8") as f:
            source = f.read()
        stem = name[:-6]
        os.makedirs(os.path.join(out_dir, stem), exist_ok=True)
        try:
            template = env.from_string(source)
        except Exception as e:  # a template jinja2 cannot parse: every conversation is an error
            template, parse_error = None, f"{type(e).__name__}: {e}"
        for conv in convs:
            with open(os.path.join(HERE, "conversations", conv + ".json"), encoding="utf-8") as f:
                context = json.load(f)
            path = os.path.join(out_dir, stem, conv)
            try:
                if template is None:
                    raise RuntimeError(parse_error)
                text = template.render(bos_token=BOS, eos_token=EOS, **context)
            except Exception as e:
                with open(path + ".error", "w", encoding="utf-8") as f:
                    f.write(f"{type(e).__name__}: {e}\n")
                failed += 1
                continue
            with open(path + ".txt", "w", encoding="utf-8", newline="") as f:
                f.write(text)
            rendered += 1
    print(f"jinja2 {jinja2.__version__}: {rendered} renderings, {failed} errors", file=sys.stderr)


if __name__ == "__main__":
    main()
