#!/usr/bin/env python3
"""scripts/serve-cluster.sh 3: three basalt serve replicas behind nginx (run unprivileged, own config and prefix in a
temporary folder). Requests with the same X-Prefix-Key land on one replica, whose prefix cache then hits (its
/metrics hit rate > 0); after that replica is killed, requests with the same key still succeed (proxy_next_upstream).
cluster.py BASALT SERVE_CLUSTER_SH
"""
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

PREFIX = "You are a fortune teller. Answer with one fortune about the topic, in the style of the fortune files. " * 2


def post(port, body, key=None, timeout=60):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    h = {"Content-Type": "application/json"}
    if key:
        h["X-Prefix-Key"] = key
    c.request("POST", "/v1/completions", body=json.dumps(body), headers=h)
    r = c.getresponse()
    data = r.read()
    up = r.getheader("X-Upstream")
    c.close()
    return r.status, up, data


def metrics(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    c.close()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            k, v = line.rsplit(" ", 1)
            out[k] = float(v)
    return out


def main():
    basalt, script = sys.argv[1], sys.argv[2]
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not os.access(nginx, os.X_OK):
        print("FAIL: nginx is not installed (scripts/setup.sh installs it)")
        return 1
    d = tempfile.mkdtemp(prefix="basalt-cluster-test-")
    proc = subprocess.Popen([script, "3", "--port", "0", "--dir", d, "--basalt", basalt, "--",
                             "-m", "target", "--parallel", "4"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    failures = []
    try:
        deadline = time.time() + 60
        while not os.path.exists(os.path.join(d, "front.port")):
            if proc.poll() is not None:
                print(proc.stdout.read().decode())
                return 1
            if time.time() > deadline:
                print("FAIL: the cluster did not start")
                return 1
            time.sleep(0.05)
        front = int(open(os.path.join(d, "front.port")).read())
        ports = {}
        for k in (1, 2, 3):
            ports["127.0.0.1:" + open(os.path.join(d, "replica-%d.port" % k)).read().strip()] = k
        # One key: every request reaches the same replica.
        ups = set()
        for i in range(6):
            status, up, data = post(front, {"prompt": PREFIX + "Topic %d:" % i, "max_tokens": 4, "temperature": 0},
                                    key="tenant-a/fortune-v1")
            if status != 200:
                failures.append("request %d: %d %s" % (i, status, data[:200]))
            ups.add(up)
        if len(ups) != 1 or next(iter(ups)) not in ports:
            failures.append("one prefix key reached %s, expected one replica of %s" % (ups, list(ports)))
        owner = ports.get(next(iter(ups)))
        for addr, k in ports.items():
            m = metrics(int(addr.split(":")[1]))
            served = m.get('basalt_http_requests_total{endpoint="/v1/completions",status="200"}', 0)
            hit = m.get("basalt_prefix_cache_hit_rate", 0)
            print("replica %d (%s): %d completions, prefix-cache hit rate %.3f" % (k, addr, served, hit))
            if k == owner and not (served == 6 and hit > 0):
                failures.append("the key's replica served %d with hit rate %s" % (served, hit))
            if k != owner and served != 0:
                failures.append("replica %d also served the key's requests (%d)" % (k, served))
        # Other keys spread (consistent hashing over 3 replicas: 24 keys do not all map to one).
        spread = set()
        for i in range(24):
            status, up, _ = post(front, {"prompt": "Key %d" % i, "max_tokens": 2, "temperature": 0}, key="key-%d" % i)
            if status == 200:
                spread.add(up)
        if len(spread) < 2:
            failures.append("24 keys all reached %s" % spread)
        # Kill the key's replica: later requests with the same key still succeed, on another replica.
        pid = int(open(os.path.join(d, "replica-%d.pid" % owner)).read())
        os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)
        after = set()
        for i in range(4):
            status, up, data = post(front, {"prompt": PREFIX + "After %d:" % i, "max_tokens": 4, "temperature": 0},
                                    key="tenant-a/fortune-v1")
            if status != 200:
                failures.append("after the kill, request %d: %d %s" % (i, status, data[:200]))
            after.add(up.split(",")[-1].strip() if up else up)
        if any(ports.get(a) in (None, owner) for a in after):
            failures.append("after the kill requests were served by %s (killed: replica %d)" % (after, owner))
        # A stream passes through nginx unbuffered and complete.
        c = http.client.HTTPConnection("127.0.0.1", front, timeout=60)
        c.request("POST", "/v1/completions", body=json.dumps({"prompt": "Once", "max_tokens": 8, "temperature": 0,
                                                              "stream": True}),
                  headers={"Content-Type": "application/json"})
        body = c.getresponse().read().decode()
        if not body.rstrip().endswith("data: [DONE]"):
            failures.append("stream through nginx: %r" % body[-200:])
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            failures.append("serve-cluster.sh did not stop on SIGTERM")
        out = proc.stdout.read().decode()
        if failures:
            print(out)
            for f in ("nginx-error.log",):
                p = os.path.join(d, f)
                if os.path.exists(p):
                    print(open(p).read()[-2000:])
    if failures:
        print("%d failure(s):\n  %s" % (len(failures), "\n  ".join(failures)))
        return 1
    print("cluster: affinity, hit rate and failover as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
