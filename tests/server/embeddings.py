#!/usr/bin/env python3
"""POST /v1/embeddings and /v1/rerank on a real basalt serve (docs/embeddings.md): the official openai npm client's
embeddings.create round trip on tiny-bert, the answer equal to `basalt embed --json`, refusals per input, a
generative model answering 400 naming why; /v1/rerank on a small reranker (tests/reranker-model.hpp, tiny-bert's
vocabulary): each document's score equal to `basalt embed --pooling rank` of the pair, sorted, top_n; refused on a
model without a rank head.
embeddings.py BASALT NODE_DIR GOLDEN_MODELS RERANKER
"""
import json
import os
import subprocess
import sys

from serve_harness import Server, check, failures


def main():
    basalt, node_dir, models, reranker = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
    bert = os.path.join(models, "tiny-bert-f32.gguf")
    text = "Once upon a time, the stranger opened the wooden box."
    srv = Server(basalt, ["-m", bert], name="embeddings")
    try:
        status, _, body = srv.request("POST", "/v1/embeddings", {"input": [text, "the box"]})
        check("embeddings answer 200", status == 200, body[:200])
        got = json.loads(body)
        cli = json.loads(subprocess.run([basalt, "embed", "-m", bert, "--json", text, "the box"], check=True,
                                        capture_output=True, text=True).stdout)
        same = all(abs(a - b) < 1e-6 for d, e in zip(got["data"], cli["data"])
                   for a, b in zip(d["embedding"], e["embedding"]))
        check("served vectors equal basalt embed's", same and len(got["data"]) == 2)
        check("usage counts the input tokens", got["usage"]["prompt_tokens"] == cli["usage"]["prompt_tokens"] == 23,
              got["usage"])
        status, _, body = srv.request("POST", "/v1/embeddings", {"input": ["fine", "x" * 10, [1] * 300]})
        check("an input past the context: 400 naming it", status == 400 and b"input 2" in body, body[:200])
        for bad, what in [({"input": 3}, "input"), ({"input": []}, "input"), ({"input": ""}, "empty"),
                          ({"input": "a", "encoding_format": "hex"}, "encoding_format"),
                          ({"input": "a", "dimensions": 0}, "dimensions"), ({"input": [[1, 99999]]}, "vocabulary"),
                          ({"input": "a", "model": "other"}, "serves")]:
            status, _, body = srv.request("POST", "/v1/embeddings", bad)
            check("refused: %s" % json.dumps(bad)[:60], status in (400, 404) and what.encode() in body, body[:200])
        status, _, body = srv.request("POST", "/v1/rerank", {"query": "box", "documents": ["a box"]})
        check("rerank without a rank head: 400", status == 400 and b"no rank head" in body, body[:200])
        status, _, body = srv.request("POST", "/v1/completions", {"prompt": "hi", "max_tokens": 2})
        check("generation on an embedding model: 400", status == 400 and b"cannot generate" in body, body[:200])
        if os.path.isfile(os.path.join(node_dir, "node_modules", "openai", "package.json")):
            script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "openai-embeddings.cjs")
            p = subprocess.run(["node", script, node_dir, "http://127.0.0.1:%d/v1" % srv.port, "tiny-bert-f32"],
                               timeout=120)
            check("openai npm client embeddings.create", p.returncode == 0)
        else:
            check("the openai npm package is installed in %s (scripts/setup.sh)" % node_dir, False)
    finally:
        srv.stop()
    srv = Server(basalt, ["-m", reranker], name="rerank")
    try:
        docs = ["the wooden box", "once upon a time", "a stranger", "opened"]
        status, _, body = srv.request("POST", "/v1/rerank", {"query": "the box", "documents": docs, "top_n": 3,
                                                              "return_documents": True})
        check("rerank answers 200", status == 200, body[:300])
        got = json.loads(body) if status == 200 else {"results": []}
        results = got["results"]
        check("top_n results, best first", len(results) == 3 and
              all(results[i]["relevance_score"] >= results[i + 1]["relevance_score"] for i in range(2)), results)
        # Each score is the rank head's on the pair [CLS] query [SEP] document [SEP] (query and document token ids).
        def ids(text):
            out = subprocess.run([basalt, "tokenize", "-m", reranker, text], check=True, capture_output=True,
                                 text=True).stdout.strip()
            return [int(x) for x in out.split(",")]
        q = ids("the box")
        for r in results:
            d = ids(docs[r["index"]])
            pair = q + d[1:]
            status, _, b = srv.request("POST", "/v1/embeddings", {"input": [pair]})
            want = subprocess.run([basalt, "embed", "-m", reranker, "--pooling", "rank", "--json", "--input", "-"],
                                  input=docs[r["index"]], capture_output=True, text=True)
            check("rerank result %d carries its document" % r["index"], r["document"]["text"] == docs[r["index"]])
            check("served model embeds the pair (rank pooling is the file's)", status == 200, b[:200])
            if status == 200:
                score = json.loads(b)["data"][0]["embedding"]
                check("relevance_score of %d = the head's score of its pair" % r["index"],
                      len(score) == 1 and abs(score[0] - r["relevance_score"]) < 1e-5, (score, r))
            check("basalt embed --pooling rank runs on the reranker", want.returncode == 0, want.stderr[:200])
        check("usage counts the pairs' tokens", got.get("usage", {}).get("prompt_tokens", 0) > 0, got.get("usage"))
        for bad, what in [({"documents": ["a"]}, "query"), ({"query": "q", "documents": []}, "documents"),
                          ({"query": "q", "documents": ["a"], "top_n": 0}, "top_n")]:
            status, _, body = srv.request("POST", "/v1/rerank", bad)
            check("rerank refused: %s" % json.dumps(bad), status == 400 and what.encode() in body, body[:200])
    finally:
        srv.stop()
    srv = Server(basalt, ["-m", os.path.join(models, "tiny-llama-f32.gguf")], name="embeddings-llama")
    try:
        status, _, body = srv.request("POST", "/v1/embeddings", {"input": "hi"})
        check("a generative model: 400 naming why", status == 400 and b"cannot embed" in body, body[:200])
    finally:
        srv.stop()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
