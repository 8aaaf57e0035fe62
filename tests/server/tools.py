#!/usr/bin/env python3
"""Tool calling against a real `basalt serve`: tests/server/tools.cjs (the official `openai` npm client) on the
shipped target model (no chat template: the fallback system block and the Hermes convention) and on the same model
with Qwen2.5's Jinja template (tools rendered by the template); /apply-template shows what each renders.
tools.py BASALT NODE_DIR TEMPLATES_DIR
"""
import json
import os
import re
import subprocess
import sys

from serve_harness import Server, check, failures


def render(srv, body):
    status, _, data = srv.request("POST", "/apply-template", body)
    return status, json.loads(data)


def main():
    basalt, node_dir, templates = sys.argv[1], sys.argv[2], sys.argv[3]
    if not os.path.isfile(os.path.join(node_dir, "node_modules", "openai", "package.json")):
        print("FAIL: the openai npm package is not installed in %s (run scripts/setup.sh)" % node_dir)
        return 1
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tools.cjs")
    tools = [{"type": "function", "function": {"name": "add", "parameters": {"type": "object", "properties": {
        "a": {"type": "integer"}}}}}]
    turns = [{"role": "user", "content": "add 1"},
             {"role": "assistant", "content": None, "tool_calls": [
                 {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": "{\"a\": 1}"}}]},
             {"role": "tool", "tool_call_id": "call_1", "content": "2"}]
    for name, args in [("fallback", []),
                       ("qwen2.5", ["--chat-template", os.path.join(templates, "Qwen-Qwen2.5-7B-Instruct.jinja")])]:
        srv = Server(basalt, ["--ctx", "2048"] + args, name="tools")
        try:
            status, out = render(srv, {"messages": turns, "tools": tools})
            prompt = out.get("prompt", "")
            check("%s: a tool round renders" % name, status == 200, out)
            check("%s: the tool is described" % name, '"add"' in prompt, prompt)
            check("%s: the earlier call is in the prompt" % name,
                  "<tool_call>" in prompt and re.search(r'"a":\s*1', prompt) is not None, prompt)
            check("%s: the result is in the prompt" % name, "<tool_response>" in prompt, prompt)
            status, out = render(srv, {"messages": turns[:1], "tools": tools, "tool_choice": "none"})
            check("%s: tool_choice none describes no tools" % name, status == 200 and '"add"' not in out["prompt"],
                  out)
            p = subprocess.run(["node", script, node_dir, "http://127.0.0.1:%d/v1" % srv.port, "target"],
                               timeout=600)
            check("%s: tools.cjs passes" % name, p.returncode == 0, "exit %d" % p.returncode)
            check("%s: the server is alive" % name, srv.proc.poll() is None, srv.output()[-2000:])
        finally:
            srv.stop()
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
