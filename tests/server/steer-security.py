"""basalt serve: control vectors are the operator's (issue 28 items 3 and 5). Vectors load at start from
--control-vector NAME=FILE and --steer-dir DIR; a request's "steer" names one ("NAME[:SCALE[:A-B]]") and makes the
server open no file: a path (existing or not, a FIFO, /dev/zero, a directory) is an unknown name, answered 400 at
once with the same message whatever the path is. Bad files refuse the start, naming the file.
Usage: steer-security.py BASALT_CLI GOLDEN_MODELS_DIR SOURCE_DIR"""
import os
import sys
import subprocess
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_harness import Server  # noqa: E402

BASALT, MODELS, SOURCE = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, os.path.join(SOURCE, "tools", "train"))
from gguf_writer import GGUFWriter  # noqa: E402

MODEL = os.path.join(MODELS, "tiny-llama-f32.gguf")  # n_embd 64, 4 layers
failures = []


def check(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else ": " + str(detail)))
    if not cond:
        failures.append(name)


def write_vector(path, layers, seed, scale=4.0, poison=None):
    rng = np.random.default_rng(seed)
    w = GGUFWriter()
    w.add_string("general.architecture", "controlvector")
    w.add_string("controlvector.model_hint", "llama")
    w.add_i32("controlvector.layer_count", len(layers))
    for il in layers:
        v = (scale * rng.standard_normal(64)).astype(np.float32)
        if poison is not None:
            v[3] = poison
        w.add_tensor("direction.%d" % il, v, 0)
    w.write(path)


def main():
    d = tempfile.mkdtemp(prefix="basalt-steer-security-")
    good = os.path.join(d, "good.gguf")
    write_vector(good, [1, 2, 3], 1)
    steer_dir = os.path.join(d, "vectors")
    os.mkdir(steer_dir)
    write_vector(os.path.join(steer_dir, "sad.gguf"), [2, 3], 2)
    os.mkfifo(os.path.join(steer_dir, "pipe.gguf"))  # not a regular file: skipped, never opened
    open(os.path.join(steer_dir, "notes.txt"), "w").write("not a vector\n")
    fifo = os.path.join(d, "fifo.gguf")
    os.mkfifo(fifo)
    nan = os.path.join(d, "nan.gguf")
    write_vector(nan, [1], 3, poison=np.nan)

    # Bad vectors refuse the start, naming the file, without blocking.
    starts = [
        (["--control-vector", "f=" + fifo], "fifo.gguf' is not a regular file"),
        (["--control-vector", "z=/dev/zero"], "'/dev/zero' is not a regular file"),
        (["--control-vector", "dir=" + d], "is a directory"),
        (["--control-vector", "n=" + nan], "nan.gguf: tensor 'direction.1' holds a non-finite value"),
        (["--control-vector", "missing=" + os.path.join(d, "missing.gguf")], "cannot open control vector"),
        (["--control-vector", "noequals"], "--control-vector 'noequals' is not NAME=FILE"),
        (["--control-vector", "a:b=" + good], "name 'a:b' must be 1..255 bytes without ':'"),
        (["--control-vector", "sad=" + good, "--steer-dir", steer_dir], "'sad' is already loaded"),
        (["--steer-dir", os.path.join(d, "nope")], "--steer-dir '.*nope' is not a directory"),
    ]
    import re
    for args, message in starts:
        t0 = time.monotonic()
        done = subprocess.run([BASALT, "serve", "-m", MODEL, "--port", "0"] + args, capture_output=True, text=True,
                              timeout=60)
        check("start refused: %s" % " ".join(args)[-60:],
              done.returncode == 1 and re.search(message, done.stderr) is not None and time.monotonic() - t0 < 30,
              (done.returncode, done.stderr[-400:]))

    s = Server(BASALT, ["-m", MODEL, "--control-vector", "happy=" + good, "--steer-dir", steer_dir])
    try:
        def complete(steer=None, timeout=30):
            body = {"prompt": [1, 17, 42, 99, 7], "max_tokens": 8, "temperature": 0}
            if steer is not None:
                body["steer"] = steer
            return s.request("POST", "/v1/completions", body, timeout=timeout)

        def text(resp):
            import json
            return json.loads(resp[2])["choices"][0]["text"]

        plain = complete()
        check("plain request", plain[0] == 200, plain)
        happy = complete("happy")
        check("named vector steers", happy[0] == 200 and text(happy) != text(plain), happy)
        zero = complete("happy:0")
        check("scale 0 equals plain", zero[0] == 200 and text(zero) == text(plain), zero)
        again = complete("happy:1:1-3")
        check("scale and range of a named vector", again[0] == 200 and text(again) == text(happy), again)
        both = complete(["happy:0.5:2-3", "sad:-1"])
        check("two named vectors (one from --steer-dir)", both[0] == 200, both)

        import json
        messages = {}
        for path in ["/etc/passwd", "/nonexistent/vector.gguf", fifo, "/dev/zero", d, good,
                     os.path.join(steer_dir, "sad.gguf"), "pipe", "notes"]:
            t0 = time.monotonic()
            r = complete(path + ":1", timeout=10)
            took = time.monotonic() - t0
            msg = json.loads(r[2])["error"]["message"] if r[0] == 400 else ""
            check("path %s is an unknown name, 400 at once" % path, r[0] == 400 and took < 5, (r, took))
            messages[path] = msg.replace(path[:64], "X")  # the name given is echoed (at most 64 bytes)
            check("message names the loaded vectors only: %s" % path,
                  "loaded: happy, sad" in msg and not any(w in messages[path] for w in
                                                          ("exist", "directory", "regular", "GGUF", "open")), msg)
        check("the same message for every path", len(set(messages.values())) == 1, messages)
        for spec, why in [("happy:nan", "scale"), ("happy:inf", "scale"), ("happy:1:2-9", "past the model"),
                          ("happy:1:3-1", "not a range"), ("happy:1:1-2:x", "NAME")]:
            r = complete(spec)
            check("bad spec %s is 400" % spec, r[0] == 400 and why in r[2].decode(), r)
        r = complete(["happy"] * 17)
        check("17 vectors in one request are 400", r[0] == 400 and "at most 16" in r[2].decode(), r)
        health = s.request("GET", "/health", timeout=5)
        check("/health still answers", health[0] == 200, health)
    finally:
        s.stop()
    if failures:
        print("%d failed: %s" % (len(failures), failures))
        sys.exit(1)
    print("all passed")


if __name__ == "__main__":
    main()
