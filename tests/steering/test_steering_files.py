"""Steering files and specs are refused with a clear message naming the file, wherever they are opened (the engine
through Python, `basalt run --steer`), and a steered request on an encoder-decoder model is refused at submit
without wedging the engine (issue 28 items 2, 3, 5).

Files: a FIFO is refused without blocking (never opened), /dev/zero without reading, a directory and /proc/self/mem
by name, a file above the 256 MiB bound by name and size, NaN/Inf directions and a vector with no directions at
load. Specs: a scale "nan"/"inf" is refused as a scale, a layer range past the model is refused.
Run by CTest with Debian's python3 + numpy and the bindings from the build tree."""
import os
import subprocess
import tempfile
import time
import unittest

import numpy as np

import basalt
import test_steering_reference as tsr

MODELS = os.environ["BASALT_TEST_MODELS"]
LLAMA = os.path.join(MODELS, "tiny-llama-f32.gguf")
T5 = os.path.join(MODELS, "tiny-t5-f32.gguf")
PROMPT = [1, 17, 42, 99, 7]


class FilesTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.good = os.path.join(self.dir.name, "good.gguf")
        tsr.write_control_vector(self.good, tsr.directions(64, [1, 2], 3), 64)

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def bad_cases(self):
        fifo = self.path("fifo.gguf")
        os.mkfifo(fifo)
        nan = self.path("nan.gguf")
        d = tsr.directions(64, [1, 2], 4)
        d[2][5] = np.nan
        tsr.write_control_vector(nan, d, 64)
        inf = self.path("inf.gguf")
        d = tsr.directions(64, [1], 4)
        d[1][0] = np.inf
        tsr.write_control_vector(inf, d, 64)
        empty = self.path("empty.gguf")
        tsr.write_control_vector(empty, {}, 64, layer_count=0)
        huge = self.path("huge.gguf")
        with open(huge, "wb") as f:
            f.truncate((256 << 20) + 1)  # sparse
        return [
            (fifo, r"control vector '.*fifo\.gguf' is not a regular file"),
            ("/dev/zero", r"control vector '/dev/zero' is not a regular file"),
            (self.dir.name, r"control vector '.*' is a directory"),
            ("/proc/self/mem", r"cannot read control vector '/proc/self/mem'"),
            (huge, r"control vector '.*huge\.gguf' has 268435457 bytes, more than the bound of 268435456 \(256 MiB\)"),
            (nan, r"nan\.gguf: tensor 'direction\.2' holds a non-finite value \(nan\) at index 5"),
            (inf, r"inf\.gguf: tensor 'direction\.1' holds a non-finite value \(inf\) at index 0"),
            (empty, r"empty\.gguf: holds no direction\.N tensor"),
        ]

    def bad_specs(self):
        return [
            (self.good + ":nan", r"scale 'nan' is not a finite number"),
            (self.good + ":inf:1-2", r"scale 'inf' is not a finite number"),
            (self.good + ":-inf", r"scale '-inf' is not a finite number"),
            (self.good + ":1:2-9", r"layers '2-9' is past the model's 4 layers \(0\.\.3\)"),
        ]

    def test_engine_refuses_by_name_without_blocking(self):
        with basalt.Runtime() as rt, basalt.Model(LLAMA, rt) as model, basalt.Engine(rt, model) as engine:
            for spec, message in self.bad_cases() + self.bad_specs():
                start = time.monotonic()
                with self.assertRaisesRegex(basalt.BasaltError, message):
                    engine.submit(tokens=PROMPT, max_tokens=1, steer=spec)
                self.assertLess(time.monotonic() - start, 5, spec)
            # The good file still loads, and the engine still runs.
            self.assertEqual(len(engine.submit(tokens=PROMPT, max_tokens=3, steer=self.good + ":1:1-2").tokens()),
                             3)
            # A vector loaded by name: requests name it and open no file; a zero scale gives the unsteered tokens.
            engine.add_control_vector("good", self.good)
            with self.assertRaisesRegex(basalt.BasaltError, "good"):
                engine.add_control_vector("good", self.good)  # a name loaded twice
            with self.assertRaisesRegex(basalt.BasaltError, r"fifo\.gguf' is not a regular file"):
                engine.add_control_vector("fifo", self.path("fifo.gguf"))  # made by bad_cases() above
            plain = engine.submit(tokens=PROMPT, max_tokens=6).tokens()
            self.assertEqual(engine.submit(tokens=PROMPT, max_tokens=6, steer="good:0").tokens(), plain)
            by_file = engine.submit(tokens=PROMPT, max_tokens=6, steer=self.good + ":4").tokens()
            self.assertEqual(engine.submit(tokens=PROMPT, max_tokens=6, steer="good:4").tokens(), by_file)

    def test_cli_run_refuses_by_name_without_blocking(self):
        for spec, message in self.bad_cases() + self.bad_specs():
            cmd = [os.environ["BASALT_CLI"], "run", "-m", LLAMA, "-p", "x", "-n", "1", "--steer", spec]
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
            self.assertNotEqual(done.returncode, 0, spec)
            self.assertRegex(done.stderr, message)
            self.assertNotIn("basic_ios", done.stderr)


class EncoderDecoderTest(unittest.TestCase):
    def test_steered_t5_request_is_refused_and_the_engine_keeps_working(self):
        with tempfile.TemporaryDirectory() as d, basalt.Runtime() as rt, basalt.Model(T5, rt) as model:
            vec = os.path.join(d, "t5.gguf")
            tsr.write_control_vector(vec, tsr.directions(model.n_embd, [1], 5), model.n_embd, layer_count=1)
            for own_thread in (False, True):
                with basalt.Engine(rt, model, own_thread=own_thread) as engine:
                    with self.assertRaisesRegex(basalt.BasaltError, "steering is not supported for encoder-decoder"):
                        engine.submit(tokens=PROMPT, max_tokens=4, steer=vec)
                    plain = engine.submit(tokens=PROMPT, max_tokens=4)
                    self.assertIn(plain.wait(timeout=20), ("length", "stop"))
                    self.assertGreater(len(plain.tokens()), 0)


if __name__ == "__main__":
    unittest.main()
