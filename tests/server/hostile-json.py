#!/usr/bin/env python3
"""basalt serve against hostile request bodies (issue 28, items 1, 10 and 12).

hostile-json.py BASALT
    JSON nested 70,000 deep (in max_tokens, user, a prompt array, a logit_bias value) and an object of 100,000 keys
    are refused with a 400 naming the bound, quickly, and the server stays up; error messages quote at most a short
    excerpt of a wrong value; a prompt of more bytes than 64 per context token is refused before it is tokenized; a
    decoder that needs more cache sequences than --max-request-seqs is refused naming both.
"""
import json
import sys
import time

from serve_harness import Server, check, failures



def post(srv, body, path="/v1/completions"):
    t0 = time.time()
    status, _, data = srv.request("POST", path, body=body, timeout=120)
    return status, data, time.time() - t0


def error_message(data):
    try:
        return json.loads(data)["error"]["message"]
    except Exception:  # noqa: BLE001
        return ""


def main():
    basalt = sys.argv[1]
    srv = Server(basalt, ["--max-request-seqs", "4", "--max-body", str(8 << 20)], name="hostile-json")
    try:
        deep = "[" * 70000 + "]" * 70000
        deep_obj = '{"a":' * 70000 + "1" + "}" * 70000
        cases = [
            ("max_tokens nested 70,000 deep", '{"prompt":"a","max_tokens":%s}' % deep),
            ("user nested 70,000 deep", '{"prompt":"a","user":%s}' % deep),
            ("prompt array nested 70,000 deep", '{"prompt":[%s]}' % deep),
            ("logit_bias value nested 70,000 deep", '{"prompt":"a","logit_bias":{"1":%s}}' % deep),
            ("objects nested 70,000 deep", '{"prompt":"a","user":%s}' % deep_obj),
        ]
        for name, body in cases:
            status, data, _ = post(srv, body)
            check(name, status == 400 and "nested deeper than 64 levels" in error_message(data),
                  "status %d: %s" % (status, data[:200]))
            check(name + ": the server is still up", srv.request("GET", "/health")[0] == 200)
        status, data, _ = post(srv, '{"prompt":"a","max_tokens":%s}' % ("[" * 63 + "]" * 63))
        check("64 levels (the body's object and 63 arrays) are parsed (a type error, not a depth error)",
              status == 400 and "nested" not in error_message(data) and len(data) < 1000,
              "status %d: %s" % (status, data[:300]))

        obj = "{" + ",".join('"k%d":1' % i for i in range(1024)) + "}"
        status, data, took = post(srv, '{"prompt":"a","user":[%s]}' % ",".join([obj] * 400))
        check("8 MB of 1024-key objects is parsed in bounded time", status == 400 and took < 10 and
              "'user' must be a string" in error_message(data), "status %d in %.1f s: %s" % (status, took, data[:200]))
        print("    (8 MB of 1024-key objects: %.2f s)" % took)

        keys = "{" + ",".join('"k%d":1' % i for i in range(100000)) + "}"
        status, data, took = post(srv, '{"prompt":"a","user":%s}' % keys)
        check("an object of 100,000 keys is refused quickly", status == 400 and took < 2 and
              "more than 1024 keys" in error_message(data), "status %d in %.1f s: %s" % (status, took, data[:200]))

        for field, value in [("max_tokens", list(range(100000))), ("user", ["x" * 1000] * 1000),
                             ("temperature", "t" * 100000), ("logit_bias", {"1": list(range(100000))}),
                             ("prompt", [[1, 2, list(range(100000))]])]:
            status, data, _ = post(srv, {"prompt": "a", field: value} if field != "prompt" else {field: value})
            check("a wide wrong '%s' is quoted short" % field, status == 400 and len(data) < 1000,
                  "status %d, %d bytes: %s" % (status, len(data), data[:200]))

        n_ctx = json.loads(post(srv, {"prompt": "a", "max_tokens": 100000})[1])["error"]["message"]
        n_ctx = int(n_ctx.rsplit("]", 1)[0].rsplit(" ", 1)[1])  # "'max_tokens' must lie in [1, N], not ..."
        status, data, took = post(srv, {"prompt": "a" * (64 * n_ctx + 1), "max_tokens": 1})
        check("a prompt of more than 64 bytes per context token is refused before tokenizing",
              status == 400 and "bytes" in error_message(data) and "before" in error_message(data),
              "status %d: %s" % (status, data[:300]))
        status, data, took = post(srv, {"messages": [{"role": "user", "content": "a" * (64 * n_ctx + 1)}]},
                                  "/v1/chat/completions")
        check("a chat of more than 64 bytes per context token is refused before tokenizing",
              status == 400 and "bytes" in error_message(data), "status %d: %s" % (status, data[:300]))

        status, data, _ = post(srv, {"prompt": "The", "max_tokens": 2, "decoder": "beam:width=32"})
        msg = error_message(data)
        check("beam:width=32 over --max-request-seqs 4 is refused naming both",
              status == 400 and "32" in msg and "--max-request-seqs 4" in msg, "status %d: %s" % (status, data[:300]))
        status, data, _ = post(srv, {"prompt": "The", "max_tokens": 2, "decoder": "beam:width=4"})
        check("beam:width=4 within --max-request-seqs 4 runs", status == 200, "status %d: %s" % (status, data[:300]))
        status, data, _ = post(srv, {"prompt": "The", "max_tokens": 2, "decoder": "warp:9"})
        check("an unknown decoder is a 400 naming 'decoder'",
              status == 400 and json.loads(data)["error"]["param"] == "decoder", "status %d: %s" % (status, data[:300]))

        status, data, _ = post(srv, {"prompt": "The best way to", "max_tokens": 4, "temperature": 0})
        check("a valid completion still works", status == 200, "status %d: %s" % (status, data[:300]))
    finally:
        srv.stop()
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("all hostile bodies refused cleanly")
    return 0


if __name__ == "__main__":
    sys.exit(main())
