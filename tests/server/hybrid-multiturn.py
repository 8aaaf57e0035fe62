#!/usr/bin/env python3
"""`basalt serve` on a hybrid model (tiny-qwen35: Gated DeltaNet layers beside attention): a conversation's second
turn, which starts with the first turn's prompt and reply, reuses the prefix through a checkpoint of the recurrent
state (usage.prompt_tokens_details.cached_tokens > 0 and at least the first prompt's whole blocks) and answers what a
server without the prefix cache answers (greedy); /metrics reports the checkpoints kept. --prefix-state-mib sets the
budget.
Usage: hybrid-multiturn.py BASALT MODEL
"""
import json
import sys

from serve_harness import Server, check, failures

exe, model = sys.argv[1], sys.argv[2]
system = "You answer in one line. " + "Remember the stranger, the wooden box and the letter from an old friend. " * 3
turn1 = [{"role": "system", "content": system}, {"role": "user", "content": "What was in the box?"}]


def chat(server, messages):
    status, _, body = server.request("POST", "/v1/chat/completions",
                                     {"messages": messages, "max_tokens": 12, "temperature": 0})
    check("serve answers 200", status == 200, body[:300])
    out = json.loads(body)
    return out["choices"][0]["message"]["content"], out["usage"]


answers = {}
for name, args in (("cached", ["--prefix-state-mib", "8"]), ("uncached", ["--no-prefix-cache"])):
    server = Server(exe, ["-m", model, "--parallel", "2"] + args, name="hybrid-multiturn")
    try:
        reply1, usage1 = chat(server, turn1)
        turn2 = turn1 + [{"role": "assistant", "content": reply1}, {"role": "user", "content": "And then?"}]
        reply2, usage2 = chat(server, turn2)
        status, _, body = server.request("GET", "/metrics")
        gauges = dict(line.rsplit(" ", 1) for line in body.decode().splitlines()
                      if line.startswith("basalt_prefix_state_checkpoint"))
        answers[name] = (reply1, reply2, usage1, usage2, gauges)
    finally:
        server.stop()
r1, r2, u1, u2, gauges = answers["cached"]
cached = u2["prompt_tokens_details"]["cached_tokens"]
print("turn 1: %d prompt tokens; turn 2: %d prompt tokens, %d cached" % (u1["prompt_tokens"], u2["prompt_tokens"],
                                                                       cached))
check("the first turn has nothing cached", u1["prompt_tokens_details"]["cached_tokens"] == 0, json.dumps(u1))
check("the second turn reuses at least the first prompt's whole blocks",
      cached >= (u1["prompt_tokens"] - 1) // 16 * 16 and cached > 0, json.dumps(u2))
check("turn 1 equals the server without the prefix cache", r1 == answers["uncached"][0],
      "%r vs %r" % (r1, answers["uncached"][0]))
check("turn 2 equals the server without the prefix cache", r2 == answers["uncached"][1],
      "%r vs %r" % (r2, answers["uncached"][1]))
check("the uncached server reports nothing cached",
      answers["uncached"][3]["prompt_tokens_details"]["cached_tokens"] == 0, json.dumps(answers["uncached"][3]))
kept = float(gauges.get("basalt_prefix_state_checkpoints", "0"))
check("/metrics reports the checkpoints kept and their bytes",
      kept > 0 and float(gauges.get("basalt_prefix_state_checkpoint_bytes", "0")) > 0, json.dumps(gauges))
check("the uncached server keeps none", float(answers["uncached"][4].get("basalt_prefix_state_checkpoints", "-1")) == 0,
      json.dumps(answers["uncached"][4]))
sys.exit(1 if failures else 0)
