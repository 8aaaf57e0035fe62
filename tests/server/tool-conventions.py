#!/usr/bin/env python3
"""The XML-argument and harmony tool-call conventions against a real `basalt serve`, each with its model's own chat
template from the corpus: Qwen3-Coder, GLM-4.6 and MiniMax-M2 on the shipped target model, gpt-oss on tiny-gpt-oss
(whose <|channel|>, <|message|>, <|start|> and <|end|> are control tokens the call grammar writes as token ids).
For each: a tool round renders in the template's own spelling (/apply-template); tool_choice required and a named
function give calls that parse, name a declared tool and validate against its schema (finish_reason tool_calls, or
length when the tiny model wanders); the same request streamed gives deltas that reassemble to the same message;
tool_choice auto answers 200 with whatever calls it holds parsed. (The city is an enum: the tiny models would write a
raw string parameter until the length limit; raw values are covered by test-tool-calls.cpp.)
tool-conventions.py BASALT GOLDEN_MODELS_DIR TEMPLATES_DIR
"""
import json
import os
import sys

from serve_harness import Server, check, failures, sse_events

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "The weather forecast of a city",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "enum": ["Paris", "Oslo", "Lima"], "description": "The city"},
            "days": {"type": "integer", "minimum": 1, "maximum": 7}},
            "required": ["city", "days"], "additionalProperties": False}}},
    {"type": "function", "function": {
        "name": "add", "description": "Adds two numbers",
        "parameters": {"type": "object", "properties": {
            "a": {"type": "integer", "minimum": 0, "maximum": 99},
            "b": {"type": "integer", "minimum": 0, "maximum": 99}},
            "required": ["a", "b"], "additionalProperties": False}}},
]

ROUND = [{"role": "user", "content": "add 1 and 2"},
         {"role": "assistant", "content": None, "tool_calls": [
             {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": "{\"a\": 1, \"b\": 2}"}}]},
         {"role": "tool", "tool_call_id": "call_1", "content": "3"}]


def validate(name, args):
    """None when args (a JSON text) are valid arguments of tool name, else why not."""
    try:
        value = json.loads(args)
    except ValueError:
        return "not JSON: %r" % args
    schema = next(t["function"]["parameters"] for t in TOOLS if t["function"]["name"] == name)
    if not isinstance(value, dict):
        return "not an object"
    for k in schema["required"]:
        if k not in value:
            return "missing " + k
    for k, v in value.items():
        p = schema["properties"].get(k)
        if p is None:
            return "extra " + k
        if p["type"] == "string" and (not isinstance(v, str) or v not in p.get("enum", [v])):
            return "%s=%r out of its schema" % (k, v)
        if p["type"] == "integer" and (not isinstance(v, int) or isinstance(v, bool)
                                       or not p["minimum"] <= v <= p["maximum"]):
            return "%s=%r out of its schema" % (k, v)
    return None


def chat(srv, body):
    st, _, data = srv.request("POST", "/v1/chat/completions", body, timeout=300)
    return st, json.loads(data)


def streamed(srv, body):
    """The message the stream's deltas reassemble to, and its finish_reason."""
    c = srv.conn(300)
    c.request("POST", "/v1/chat/completions", body=json.dumps(dict(body, stream=True)),
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    content, reasoning, calls, finish = "", "", {}, None
    for data in sse_events(r):
        if data == "[DONE]":
            break
        for ch in json.loads(data).get("choices", []):
            d = ch.get("delta", {})
            content += d.get("content") or ""
            reasoning += d.get("reasoning_content") or ""
            for tc in d.get("tool_calls") or []:
                call = calls.setdefault(tc["index"], {"id": "", "name": "", "arguments": ""})
                call["id"] += tc.get("id") or ""
                fn = tc.get("function") or {}
                call["name"] += fn.get("name") or ""
                call["arguments"] += fn.get("arguments") or ""
            finish = ch.get("finish_reason") or finish
    c.close()
    return content, reasoning, [calls[i] for i in sorted(calls)], finish


def run(basalt, name, model, template, spelled):
    srv = Server(basalt, ["-m", model, "--ctx", "2048", "--chat-template", template], name="toolconv")
    try:
        st, _, data = srv.request("POST", "/apply-template", {"messages": ROUND, "tools": TOOLS})
        prompt = json.loads(data).get("prompt", "") if st == 200 else data.decode()
        check("%s: a tool round renders the call as the template spells it" % name,
              st == 200 and spelled in prompt and "get_weather" in prompt, prompt[-600:])
        ended = 0
        for seed in range(3):
            for choice in ["required", {"type": "function", "function": {"name": "add"}}]:
                what = "%s: seed %d tool_choice %s" % (name, seed, json.dumps(choice))
                body = {"messages": [{"role": "user", "content": "Weather in Paris for 3 days?"}], "tools": TOOLS,
                        "tool_choice": choice, "parallel_tool_calls": seed == 2, "max_tokens": 160,
                        "temperature": 0.9, "seed": seed}
                st, out = chat(srv, body)
                if not check(what + ": 200", st == 200, out) and st != 200:
                    continue
                c = out["choices"][0]
                msg = c["message"]
                calls = msg.get("tool_calls") or []
                check(what + ": tool_calls", len(calls) >= 1 and msg["content"] is None, msg)
                check(what + ": finish_reason", c["finish_reason"] in ("tool_calls", "length"), c["finish_reason"])
                if c["finish_reason"] == "tool_calls":
                    ended += 1
                    for call in calls:
                        fn = call["function"]
                        ok = fn["name"] in ("get_weather", "add") and (isinstance(choice, str) or fn["name"] == "add")
                        why = validate(fn["name"], fn["arguments"]) if ok else "tool " + fn["name"]
                        check(what + ": %s(%s) validates" % (fn["name"], fn["arguments"]), why is None, why)
                content, reasoning, scalls, finish = streamed(srv, body)
                same = (content == (msg["content"] or "") and reasoning == msg.get("reasoning_content", "")
                        and finish == c["finish_reason"]
                        and [(x["name"], x["arguments"], x["id"] != "") for x in scalls]
                        == [(x["function"]["name"], x["function"]["arguments"], True) for x in calls])
                check(what + ": streamed deltas reassemble to the message", same,
                      "%r vs %r" % ((content, reasoning, scalls, finish), (msg, c["finish_reason"])))
        check("%s: most constrained replies end by themselves" % name, ended >= 3, "%d of 6" % ended)
        st, out = chat(srv, {"messages": [{"role": "user", "content": "hi"}], "tools": TOOLS, "max_tokens": 40,
                             "seed": 1, "temperature": 0.9})
        check("%s: tool_choice auto answers" % name, st == 200, out)
        for call in out.get("choices", [{}])[0].get("message", {}).get("tool_calls") or []:
            check("%s: auto's call parses" % name, call["function"]["name"] in ("get_weather", "add"), call)
        check("%s: the server is alive" % name, srv.proc.poll() is None, srv.output()[-2000:])
    finally:
        srv.stop()


def main():
    basalt, golden, templates = sys.argv[1], sys.argv[2], sys.argv[3]
    target = "target"  # the shipped model
    for name, model, template, spelled in [
            ("qwen3-coder", target, "Qwen3-Coder.jinja", "<function=add>\n<parameter=a>\n1\n</parameter>"),
            ("glm", target, "GLM-4.6.jinja", "<tool_call>add\n<arg_key>a</arg_key>\n<arg_value>1</arg_value>"),
            ("minimax-m2", target, "MiniMax-M2.jinja", "<invoke name=\"add\">\n<parameter name=\"a\">1</parameter>"),
            ("gpt-oss", os.path.join(golden, "tiny-gpt-oss-f32.gguf"), "openai-gpt-oss-120b.jinja",
             "<|start|>assistant to=functions.add<|channel|>commentary json<|message|>")]:
        run(basalt, name, model, os.path.join(templates, template), spelled)
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
