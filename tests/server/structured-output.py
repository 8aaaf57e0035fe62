#!/usr/bin/env python3
"""Structured output against a real `basalt serve`: chat completions with response_format json_schema (several
schema shapes, several seeds) and json_object, and completions with llama-server's `grammar` / `json_schema` and
the `regex` extension. Every reply that ends with finish_reason "stop" parses and validates against its schema
(python3-jsonschema); every reply, finished or cut by the length limit, is a prefix the grammar allows (checked
by the matching text-only rules below for the regex and GBNF cases). Bad constraints are answered 400 at submit,
naming the position or keyword.
structured-output.py BASALT
"""
import json
import re
import sys

try:
    import jsonschema  # python3-jsonschema when installed
except ImportError:
    jsonschema = None

from serve_harness import Server, check, failures

SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
                                      "age": {"type": "integer", "minimum": 0, "maximum": 120}},
     "required": ["name", "age"], "additionalProperties": False},
    {"type": "object", "properties": {"ok": {"type": "boolean"}, "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]},
                                                                         "minItems": 1, "maxItems": 3}},
     "required": ["ok", "tags"], "additionalProperties": False},
    {"type": "object", "properties": {"id": {"type": "string", "format": "uuid"}, "when": {"type": "string", "format": "date"},
                                      "kind": {"const": "event"}},
     "required": ["id", "when", "kind"], "additionalProperties": False},
    {"$defs": {"point": {"type": "object", "properties": {"x": {"type": "integer", "minimum": -9, "maximum": 9},
                                                          "y": {"type": "integer", "minimum": -9, "maximum": 9}},
                         "required": ["x", "y"], "additionalProperties": False}},
     "type": "object", "properties": {"p": {"$ref": "#/$defs/point"}, "q": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/point"}]}},
     "required": ["p", "q"], "additionalProperties": False},
    {"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]{3}$"},
                                      "note": {"type": "string", "maxLength": 5}},
     "required": ["code"], "additionalProperties": False},
]


UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
DATE = re.compile(r"[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])")


def validate(v, s, root):
    """The keywords these schemas use, for interpreters without python3-jsonschema; raises ValueError."""
    if "$ref" in s:
        return validate(v, root["$defs"][s["$ref"].split("/")[-1]], root)
    if "anyOf" in s:
        for alt in s["anyOf"]:
            try:
                return validate(v, alt, root)
            except ValueError:
                pass
        raise ValueError("no anyOf branch matches %r" % (v,))
    if "const" in s and v != s["const"]:
        raise ValueError("%r != const" % (v,))
    if "enum" in s and v not in s["enum"]:
        raise ValueError("%r not in enum" % (v,))
    t = s.get("type")
    kinds = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}
    if t == "integer" and not (isinstance(v, int) and not isinstance(v, bool)):
        raise ValueError("%r is not an integer" % (v,))
    if t in kinds and not isinstance(v, kinds[t]):
        raise ValueError("%r is not a %s" % (v, t))
    if isinstance(v, int) and not isinstance(v, bool):
        if v < s.get("minimum", v) or v > s.get("maximum", v):
            raise ValueError("%r out of range" % v)
    if isinstance(v, str):
        if len(v) > s.get("maxLength", len(v)):
            raise ValueError("%r too long" % v)
        if "pattern" in s and not re.search(s["pattern"], v):
            raise ValueError("%r does not match the pattern" % v)
        fmt = {"uuid": UUID, "date": DATE}.get(s.get("format"))
        if fmt is not None and not fmt.fullmatch(v):
            raise ValueError("%r is not a %s" % (v, s["format"]))
    if isinstance(v, list):
        if not s.get("minItems", 0) <= len(v) <= s.get("maxItems", len(v)):
            raise ValueError("%d items" % len(v))
        for x in v:
            validate(x, s.get("items", {}), root)
    if isinstance(v, dict):
        props = s.get("properties", {})
        for k in s.get("required", []):
            if k not in v:
                raise ValueError("missing %s" % k)
        for k, x in v.items():
            if k in props:
                validate(x, props[k], root)
            elif s.get("additionalProperties", True) is False:
                raise ValueError("extra property %s" % k)
    return True


def check_schema(v, schema):
    if jsonschema is not None:
        jsonschema.validate(v, schema)
    else:
        validate(v, schema, schema)


def chat(srv, body):
    status, _, data = srv.request("POST", "/v1/chat/completions", body)
    return status, json.loads(data)


def main():
    basalt = sys.argv[1]
    srv = Server(basalt, ["-m", "target", "--ctx", "1024"])
    try:
        stopped = 0
        for i, schema in enumerate(SCHEMAS):
            for seed in range(3):
                body = {"messages": [{"role": "user", "content": "Give me JSON."}], "max_tokens": 900,
                        "temperature": 0.8, "seed": seed,
                        "response_format": {"type": "json_schema",
                                            "json_schema": {"name": "s%d" % i, "schema": schema, "strict": True}}}
                status, out = chat(srv, body)
                if status != 200:
                    check("schema %d seed %d answered 200" % (i, seed), False, out)
                    continue
                c = out["choices"][0]
                text = c["message"]["content"]
                if c["finish_reason"] != "stop":
                    continue
                stopped += 1
                try:
                    check_schema(json.loads(text), schema)
                    check("schema %d seed %d: the reply validates" % (i, seed), True)
                except Exception as e:  # noqa: BLE001 (any parse or validation error fails the check)
                    check("schema %d seed %d: the reply validates" % (i, seed), False, "%r: %s" % (text, e))
        check("most constrained replies end by themselves (finish_reason stop)", stopped >= 10, "%d of 15" % stopped)

        status, out = chat(srv, {"messages": [{"role": "user", "content": "JSON please"}],
                                 "max_tokens": 900, "seed": 1, "temperature": 0.7,
                                 "response_format": {"type": "json_object"}})
        c = out["choices"][0] if status == 200 else {}
        check("json_object: answered 200", status == 200, out)
        if c.get("finish_reason") == "stop":
            check("json_object: the reply is a JSON object", isinstance(json.loads(c["message"]["content"]), dict), c)
        else:
            check("json_object: the reply starts an object", c.get("message", {}).get("content", "").startswith("{"), c)

        status, out = chat(srv, {"messages": [{"role": "user", "content": "x"}], "max_tokens": 5,
                                 "response_format": {"type": "text"}})
        check("response_format text: unconstrained, 200", status == 200, out)

        # completions: llama-server's grammar and json_schema, and regex
        def complete(extra, max_tokens=40):
            body = {"prompt": "Once upon a time", "max_tokens": max_tokens, "seed": 3, "temperature": 0.9}
            body.update(extra)
            st, _, data = srv.request("POST", "/v1/completions", body)
            return st, json.loads(data)

        status, out = complete({"regex": "[a-z]{3,8}( [a-z]{3,8}){0,3}\\."})
        if status == 200:
            t, fin = out["choices"][0]["text"], out["choices"][0]["finish_reason"]
            ok = re.fullmatch("[a-z]{3,8}( [a-z]{3,8}){0,3}\\.", t) if fin == "stop" else re.fullmatch("[a-z ]*", t)
            check("regex: the text matches", ok is not None, "%r %s" % (t, fin))
        else:
            check("regex: answered 200", False, out)
        status, out = complete({"grammar": 'root ::= "answer: " ("yes" | "no") "."\n'})
        check("grammar: the text is one of the two sentences",
              status == 200 and out["choices"][0]["text"] in ("answer: yes.", "answer: no."), out)
        status, out = complete({"json_schema": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1,
                                                                                        "maximum": 3}},
                                                "required": ["n"], "additionalProperties": False}}, 400)
        if status == 200 and out["choices"][0]["finish_reason"] == "stop":
            check("json_schema: n in 1..3", json.loads(out["choices"][0]["text"])["n"] in (1, 2, 3), out)
        else:
            check("json_schema: answered 200", status == 200, out)

        # refused at submit, naming what is wrong
        status, out = complete({"grammar": "root ::= foo\n"})
        check("undefined rule: 400 naming it", status == 400 and "undefined rule 'foo'" in out["error"]["message"], out)
        status, out = complete({"grammar": 'root ::= "a" |\n  ( "b"\n'})
        check("syntax error: 400 with line:column", status == 400 and re.search(r"at \d+:\d+", out["error"]["message"]),
              out)
        status, out = complete({"json_schema": {"type": "object", "allOf": [{}]}})
        check("unsupported keyword: 400 naming it", status == 400 and "'allOf'" in out["error"]["message"], out)
        status, out = complete({"regex": "(a"})
        check("bad regex: 400", status == 400 and "regex" in out["error"]["message"], out)
        status, out = chat(srv, {"messages": [{"role": "user", "content": "x"}],
                                 "response_format": {"type": "xml"}})
        check("unknown response_format type: 400", status == 400 and out["error"]["param"] == "response_format", out)
        status, out = complete({"grammar": 'root ::= "a"\n', "regex": "a"})
        check("two constraints: 400", status == 400, out)
    finally:
        srv.stop()
    if failures:
        print("%d failure(s)" % len(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
