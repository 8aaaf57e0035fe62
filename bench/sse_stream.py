"""The events of an OpenAI-style server-sent-event stream (`data: {...}` lines up to `data: [DONE]`), shared by the
bench load generators (serve-load.py, admission-chat.py)."""
import json
import time


def sse_events(response):
    """Yields (arrival time from time.perf_counter(), parsed JSON object) for each `data:` line of an
    http.client response until `[DONE]` or the end of the stream; other lines are skipped."""
    while True:
        line = response.readline()
        if not line:
            return
        if not line.startswith(b"data: "):
            continue
        data = line[6:].strip()
        if data == b"[DONE]":
            return
        now = time.perf_counter()
        yield now, json.loads(data)
