"""Starts `basalt serve` on a free loopback port for a test and stops it (SIGTERM, checked to exit 0 in time)."""
import http.client
import json
import os
import signal
import subprocess
import tempfile
import time

# The checks of one test script: check() prints each and records what failed in failures (shared, never rebound).
failures = []


def check(name, cond, detail=""):
    if not cond:
        failures.append("%s: %s" % (name, detail))
        print("FAIL", name, detail)
    else:
        print("ok  ", name)


class Server:
    def __init__(self, basalt, args=(), env=None, name="serve"):
        self.dir = tempfile.mkdtemp(prefix="basalt-%s-" % name)
        self.port_file = os.path.join(self.dir, "port")
        self.log_path = os.path.join(self.dir, "server.log")
        self.log = open(self.log_path, "w")
        e = dict(os.environ)
        e.update(env or {})
        self.proc = subprocess.Popen([basalt, "serve", "--port", "0", "--port-file", self.port_file] + list(args),
                                     stdout=self.log, stderr=subprocess.STDOUT, env=e)
        deadline = time.time() + 30
        while not os.path.exists(self.port_file):
            if self.proc.poll() is not None:
                raise RuntimeError("basalt serve exited with %d:\n%s" % (self.proc.returncode, self.output()))
            if time.time() > deadline:
                self.proc.kill()
                raise RuntimeError("basalt serve did not start in 30 s:\n" + self.output())
            time.sleep(0.02)
        self.port = int(open(self.port_file).read())

    def output(self):
        if not self.log.closed:
            self.log.flush()
        return open(self.log_path).read()

    def conn(self, timeout=60):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, timeout=60):
        """Returns (status, headers dict (lowercase), body bytes)."""
        c = self.conn(timeout)
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        hdrs = {k.lower(): v for k, v in r.getheaders()}
        c.close()
        return r.status, hdrs, data

    def metric(self, name):
        status, _, body = self.request("GET", "/metrics")
        assert status == 200
        for line in body.decode().splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                return float(line.rsplit(" ", 1)[1])
        raise KeyError(name)

    def stop(self, timeout=20):
        """SIGTERM; the server must exit 0 within timeout seconds."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                raise AssertionError("basalt serve did not exit %d s after SIGTERM:\n%s" % (timeout, self.output()))
        out = self.output()
        self.log.close()
        if self.proc.returncode != 0:
            raise AssertionError("basalt serve exited with %d:\n%s" % (self.proc.returncode, out))


def sse_events(resp):
    """Yields the data of each Server-Sent Event of a streaming http.client response (as text)."""
    buf = b""
    while True:
        line = resp.readline()
        if not line:
            return
        if line in (b"\n", b"\r\n"):
            if buf:
                yield buf.decode()
            buf = b""
            continue
        if line.startswith(b"data: "):
            buf += line[6:].rstrip(b"\r\n")
