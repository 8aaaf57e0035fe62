#!/usr/bin/env python3
"""basalt serve against malformed and abusive requests (issue 21, robustness).

malformed.py BASALT
    Each case gets its status code and an OpenAI-style error object where the server answers with JSON; the server
    stays healthy after all of them (a valid completion still works, /health answers), a full queue answers 429 with
    Retry-After, generations past --request-timeout answer 504 (or an SSE error event), a client that disconnects cancels its request, and SIGTERM with a stream running exits cleanly.
"""
import json
import socket
import sys
import threading
import time

from serve_harness import Server, sse_events

KEY = "test-secret"
AUTH = {"Authorization": "Bearer " + KEY}
failures = []


def check(name, cond, detail=""):
    if not cond:
        failures.append("%s: %s" % (name, detail))
        print("FAIL", name, detail)


def raw(server, data, read_timeout=10):
    """Sends raw bytes, returns (status or None, response bytes)."""
    s = socket.create_connection(("127.0.0.1", server.port), timeout=read_timeout)
    try:
        s.sendall(data)
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            out += chunk
            if b"\r\n\r\n" in out and out.split(b"\r\n", 1)[0].startswith(b"HTTP/1.1 4"):
                # error responses close the connection; read what is left quickly
                s.settimeout(1)
    finally:
        s.close()
    status = int(out.split(b" ", 2)[1]) if out.startswith(b"HTTP/1.1 ") else None
    return status, out


def http_case(server, name, expect, method="POST", path="/v1/completions", body=None, headers=None, auth=True):
    h = dict(AUTH) if auth else {}
    h.update(headers or {})
    status, hdrs, data = server.request(method, path, body=body, headers=h)
    check(name, status == expect, "status %d, expected %d: %s" % (status, expect, data[:300]))
    if status >= 400 and hdrs.get("content-type", "").startswith("application/json"):
        try:
            err = json.loads(data)["error"]
            check(name + " (error object)", isinstance(err["message"], str) and "type" in err and "param" in err
                  and "code" in err, data[:200])
        except Exception as e:  # noqa: BLE001
            check(name + " (error object)", False, "%s: %s" % (e, data[:200]))
    return status, hdrs, data


def main():
    basalt = sys.argv[1]
    srv = Server(basalt, ["--api-key", KEY, "--max-body", "65536", "--max-header", "4096", "--read-timeout", "1"],
                 name="malformed")
    n_cases = 0
    try:
        ok = {"model": "target", "prompt": "The best way to", "max_tokens": 4, "temperature": 0}
        # --- HTTP level (raw bytes) ---
        raw_cases = [
            ("garbage request line", b"HELLO\r\n\r\n", 400),
            ("bad HTTP version", b"GET /health HTTP/9.9\r\nHost: x\r\n\r\n", 400),
            ("header block over --max-header", b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 8000 +
             b"\r\n\r\n", 431),
            ("body over --max-body (Content-Length)", b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
             b"Content-Length: 100000\r\n\r\n" + b"{" * 100, 413),
            ("Content-Length not a number", b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
             400),
            ("bad chunk size", b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
             b"zz\r\nabc\r\n0\r\n\r\n", 400),
            ("partial request times out (--read-timeout)", b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
             b"Content-Length: 50\r\n\r\n{\"prompt\":", None),
            ("header line without colon", b"GET /health HTTP/1.1\r\nHost x\r\n\r\n", 400),
        ]
        for name, data, expect in raw_cases:
            t0 = time.time()
            status, out = raw(srv, data)
            check(name, status == expect, "status %s, expected %s: %r" % (status, expect, out[:200]))
            n_cases += 1
            if "times out" in name:
                check(name + " (in time)", time.time() - t0 < 5, "took %.1f s" % (time.time() - t0))

        # --- routes, methods, auth ---
        cases = [
            ("GET on /v1/completions", 405, dict(method="GET", body=None)),
            ("DELETE on /v1/models", 405, dict(method="DELETE", path="/v1/models", body=None)),
            ("POST on /health", 405, dict(path="/health", body="{}")),
            ("unknown path", 404, dict(path="/v1/audio/speech", body=ok)),
            ("unknown model in /v1/models/ID", 404, dict(method="GET", path="/v1/models/gpt-4", body=None)),
            ("no API key", 401, dict(body=ok, auth=False)),
            ("wrong API key", 401, dict(body=ok, auth=False, headers={"Authorization": "Bearer nope"})),
            ("Basic instead of Bearer", 401, dict(body=ok, auth=False, headers={"Authorization": "Basic " + KEY})),
            ("text/plain body", 415, dict(body=json.dumps(ok), headers={"Content-Type": "text/plain"})),
            # --- body ---
            ("empty body", 400, dict(body="")),
            ("not JSON", 400, dict(body="hello")),
            ("truncated JSON", 400, dict(body='{"prompt": "a"')),
            ("JSON array", 400, dict(body="[1,2]")),
            ("JSON string", 400, dict(body='"prompt"')),
            ("invalid UTF-8 in a string", 400, dict(body=b'{"prompt":"\xff\xfe abc"}')),
            ("overlong UTF-8 encoding", 400, dict(body=b'{"prompt":"\xc0\xaf"}')),
            ("lone surrogate escape", 400, dict(body='{"prompt":"\\ud800"}')),
            ("deeply nested JSON", 400, dict(body="[" * 20000 + "]" * 20000)),
            ("unknown field", 400, dict(body=dict(ok, frobnicate=1))),
            ("missing prompt", 400, dict(body={"model": "target"})),
            ("prompt is a number", 400, dict(body=dict(ok, prompt=42))),
            ("prompt is empty", 400, dict(body=dict(ok, prompt=""))),
            ("prompt is an empty array", 400, dict(body=dict(ok, prompt=[]))),
            ("token id past the vocabulary", 400, dict(body=dict(ok, prompt=[1, 999999]))),
            ("negative token id", 400, dict(body=dict(ok, prompt=[1, -3]))),
            ("prompt longer than the context", 400, dict(body=dict(ok, prompt=[5] * 400))),
            ("max_tokens a string", 400, dict(body=dict(ok, max_tokens="10"))),
            ("max_tokens 0", 400, dict(body=dict(ok, max_tokens=0))),
            ("max_tokens a float", 400, dict(body=dict(ok, max_tokens=1e30))),
            ("max_tokens an oversized integer", 400,
             dict(body='{"prompt":"a","max_tokens":99999999999999999999999999}')),
            ("temperature negative", 400, dict(body=dict(ok, temperature=-1))),
            ("temperature a string", 400, dict(body=dict(ok, temperature="hot"))),
            ("temperature overflowing", 400, dict(body='{"prompt":"a","temperature":1e400}')),
            ("top_p above 1", 400, dict(body=dict(ok, top_p=1.5))),
            ("top_k negative", 400, dict(body=dict(ok, top_k=-1))),
            ("n 0", 400, dict(body=dict(ok, n=0))),
            ("n 100", 400, dict(body=dict(ok, n=100))),
            ("stop a number", 400, dict(body=dict(ok, stop=5))),
            ("stop list with a number", 400, dict(body=dict(ok, stop=["a", 1]))),
            ("logit_bias not an object", 400, dict(body=dict(ok, logit_bias=[1, 2]))),
            ("logit_bias key not an id", 400, dict(body=dict(ok, logit_bias={"abc": 1}))),
            ("logit_bias value out of range", 400, dict(body=dict(ok, logit_bias={"5": 1000}))),
            ("frequency_penalty above 2", 400, dict(body=dict(ok, frequency_penalty=3))),
            ("seed negative", 400, dict(body=dict(ok, seed=-5))),
            ("stream not a boolean", 400, dict(body=dict(ok, stream="yes"))),
            ("stream_options without stream", 400, dict(body=dict(ok, stream_options={"include_usage": True}))),
            ("samplers with temperature", 400, dict(body=dict(ok, samplers="greedy"))),
            ("unknown sampler in samplers", 400,
             dict(body={"prompt": "a", "max_tokens": 2, "samplers": "nucleus:0.9;dist"})),
            ("unknown decoder", 400, dict(body=dict(ok, decoder="warp:9"))),
            ("steering file missing", 400, dict(body=dict(ok, steer="/nonexistent/vector.gguf:1"))),
            ("echo", 400, dict(body=dict(ok, echo=True))),
            ("logprobs above 20", 400, dict(body=dict(ok, logprobs=21))),
            ("logprobs a boolean (completions)", 400, dict(body=dict(ok, logprobs=True))),
            ("top_logprobs on completions", 400, dict(body=dict(ok, top_logprobs=2))),
            ("logprobs with decoder beam", 400, dict(body=dict(ok, logprobs=2, decoder="beam:width=2"))),
            ("chat: top_logprobs without logprobs", 400,
             dict(path="/v1/chat/completions", body={"messages": [{"role": "user", "content": "hi"}],
                                                     "top_logprobs": 2})),
            ("chat: top_logprobs above 20", 400,
             dict(path="/v1/chat/completions", body={"messages": [{"role": "user", "content": "hi"}],
                                                     "logprobs": True, "top_logprobs": 21})),
            ("chat: logprobs an integer", 400,
             dict(path="/v1/chat/completions", body={"messages": [{"role": "user", "content": "hi"}],
                                                     "logprobs": 3})),
            ("another model", 404, dict(body=dict(ok, model="gpt-4"))),
            ("chat: messages missing", 400, dict(path="/v1/chat/completions", body={"model": "target"})),
            ("chat: messages empty", 400, dict(path="/v1/chat/completions", body={"messages": []})),
            ("chat: unknown role", 400,
             dict(path="/v1/chat/completions", body={"messages": [{"role": "robot", "content": "hi"}]})),
            ("chat: content a number", 400,
             dict(path="/v1/chat/completions", body={"messages": [{"role": "user", "content": 5}]})),
            ("chat: system message not first", 400,
             dict(path="/v1/chat/completions",
                  body={"messages": [{"role": "user", "content": "a"}, {"role": "system", "content": "b"}]})),
            ("chat: tools", 400,
             dict(path="/v1/chat/completions",
                  body={"messages": [{"role": "user", "content": "a"}], "tools": [{"type": "function"}]})),
            ("chat: image content part", 400,
             dict(path="/v1/chat/completions",
                  body={"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": "x"}]}]})),
        ]
        for name, expect, kw in cases:
            http_case(srv, name, expect, **kw)
            n_cases += 1
        print("%d malformed cases" % n_cases)
        check("at least 40 cases", n_cases >= 40, str(n_cases))

        # --- still healthy ---
        status, _, data = srv.request("GET", "/health")
        check("healthy after the cases", status == 200, data)
        status, _, data = http_case(srv, "a valid completion after the cases", 200, body=ok)
        if status == 200:
            r = json.loads(data)
            check("usage", r["usage"]["completion_tokens"] == 4 and r["usage"]["prompt_tokens"] > 0, data)
        check("the server is still running", srv.proc.poll() is None, srv.output())
    finally:
        srv.stop()

    # --- bounded queue, disconnect, SIGTERM with a stream running ---
    srv = Server(basalt, ["--parallel", "1", "--max-queue", "1", "--shutdown-grace", "30"], name="queue")
    try:
        long_req = {"prompt": "Once upon a time", "max_tokens": 200, "temperature": 0, "ignore_eos": True,
                    "stream": True}
        conns, resps = [], []
        for _ in range(2):
            c = srv.conn()
            c.request("POST", "/v1/completions", body=json.dumps(long_req), headers={"Content-Type": "application/json"})
            conns.append(c)
        for c in conns:
            resps.append(c.getresponse())
        status, hdrs, data = srv.request("POST", "/v1/completions", body=long_req)
        check("full queue answers 429", status == 429, "%d %s" % (status, data[:200]))
        check("429 has Retry-After", "retry-after" in hdrs, str(hdrs))
        # The first client goes away mid-stream: its request is cancelled.
        next(sse_events(resps[0]))
        conns[0].sock.shutdown(socket.SHUT_RDWR)
        conns[0].close()
        # The second stream completes in full.
        events = list(sse_events(resps[1]))
        check("second stream ends with [DONE]", events and events[-1] == "[DONE]", events[-2:])
        deadline = time.time() + 10
        cancelled = 0
        while time.time() < deadline:
            try:
                cancelled = srv.metric('basalt_generations_total{finish_reason="cancelled"}')
            except KeyError:
                cancelled = 0
            if cancelled >= 1:
                break
            time.sleep(0.05)
        check("a disconnected client's request is cancelled", cancelled >= 1, srv.output()[-500:])
        # SIGTERM while a stream runs: it finishes (grace), the server exits 0.
        c = srv.conn()
        c.request("POST", "/v1/completions", body=json.dumps(dict(long_req, max_tokens=150)),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        first = next(sse_events(r))
        srv.proc.send_signal(15)
        rest = list(sse_events(r))
        check("a stream running at SIGTERM finishes", first and rest and rest[-1] == "[DONE]", rest[-2:])
        srv.proc.wait(20)
        check("SIGTERM exits 0", srv.proc.returncode == 0, srv.output())
    finally:
        srv.stop()
    # --- per-request timeout: requests queued behind others run past --request-timeout: 504 / an SSE error event ---
    srv = Server(basalt, ["--parallel", "1", "--max-queue", "8", "--request-timeout", "0.05"], name="timeout")
    try:
        body = {"prompt": "Once upon a time", "max_tokens": 250, "temperature": 0, "ignore_eos": True}
        results = [None] * 4

        def go(i):
            if i < 3:
                results[i] = srv.request("POST", "/v1/completions", body=body)[0]
            else:
                c = srv.conn()
                c.request("POST", "/v1/completions", body=json.dumps(dict(body, stream=True)),
                          headers={"Content-Type": "application/json"})
                results[i] = list(sse_events(c.getresponse()))

        threads = [threading.Thread(target=go, args=(i,)) for i in range(4)]
        for i, t in enumerate(threads):
            t.start()
            time.sleep(0.02)  # queue order: the stream is last
        for t in threads:
            t.join(30)
        codes = results[:3]
        events = results[3] or []
        check("a generation past --request-timeout answers 504", 504 in codes, str(codes))
        check("a stream past --request-timeout ends with an error event and [DONE]",
              len(events) >= 2 and events[-1] == "[DONE]" and '"timeout' in events[-2], str(events[-2:]))
        status, _, _ = srv.request("GET", "/health")
        check("healthy after timeouts", status == 200, str(status))
        check("504 counted in /metrics", srv.metric('basalt_http_requests_total{endpoint="/v1/completions",status="504"}') >= 1)
    finally:
        srv.stop()
    if failures:
        print("\n%d failure(s):\n  %s" % (len(failures), "\n  ".join(failures)))
        return 1
    print("malformed: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
