"""files_bench.py -- the file-transfer rows of the bench.

  files_bench.py EXECD NGINX_PORT NGINX_ROOT MIB

NGINX_ROOT is the document root of an nginx already serving on
127.0.0.1:NGINX_PORT (bench/run.sh starts it).  A file of MIB MiB of
random-looking bytes is written there as "big".  Then, after one warm-up
each, alternating, best kept (7 downloads and 3 uploads a side; memory
bandwidth on a shared machine swings by 2x from one second to the next):

  download  GET /files/download?path=NGINX_ROOT/big from execd against
            GET /big from nginx, the body read into a reused buffer
            and discarded; execd's VmRSS is sampled while it sends.
  upload    POST /files/upload of MIB MiB (Content-Length, one metadata
            part and one file part) to execd, which writes it beside the
            target, syncs and renames it, against dd writing the same size
            from /dev/zero to the same directory with conv=fsync; execd's
            VmRSS is sampled while it receives.

Prints "dl_execd_mbs dl_nginx_mbs dl_rss_kib ul_execd_mbs ul_dd_mbs
ul_rss_kib idle_rss_kib dl_pair_ratio" (MB = 10^6 bytes; RSS the peak
seen; the last is the median, over the download pairs, of execd's rate
over nginx's).  Every
process started here is stopped by its pid; the files are removed.
"""

import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import benchlib

BLOCK = 1 << 20


def die(msg):
    sys.stderr.write("files_bench: %s\n" % msg)
    sys.exit(1)


def rss_kib(pid):
    """VmRSS of pid in KiB, 0 when it cannot be read."""
    try:
        return benchlib.rss_kib(pid)
    except (OSError, RuntimeError):
        return 0


class Sampler:
    """Peak VmRSS of pid, sampled every 20 ms while running."""

    def __init__(self, pid):
        self.pid, self.peak, self.stop = pid, 0, False
        self.t = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stop:
            self.peak = max(self.peak, rss_kib(self.pid))
            time.sleep(0.02)

    def __enter__(self):
        self.t.start()
        return self

    def __exit__(self, *exc):
        self.stop = True
        self.t.join()


def read_response(s, buf):
    """Read one HTTP/1.1 response with Content-Length; returns body bytes."""
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(65536)
        if not chunk:
            die("connection closed in the headers")
        head += chunk
    hdr, rest = head.split(b"\r\n\r\n", 1)
    if not re.match(rb"HTTP/1\.1 20[06]", hdr):
        die("bad answer: %r" % hdr[:200])
    m = re.search(rb"(?i)\r\ncontent-length: *(\d+)", hdr)
    if not m:
        die("no Content-Length: %r" % hdr[:300])
    left = int(m.group(1)) - len(rest)
    view = memoryview(buf)
    while left > 0:
        n = s.recv_into(view, min(left, len(buf)))
        if n == 0:
            die("connection closed in the body")
        left -= n
    return int(m.group(1))


def download(port, path):
    """Seconds to GET path and read its body."""
    buf = bytearray(BLOCK)
    s = socket.create_connection(("127.0.0.1", port), 60)
    t0 = time.monotonic()
    s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path.encode())
    read_response(s, buf)
    t = time.monotonic() - t0
    s.close()
    return t


def upload(port, target, mib, block):
    """Seconds to POST an upload of mib MiB and get its answer."""
    b = b"----bench-boundary"
    head = (b"--%s\r\nContent-Disposition: form-data; name=\"metadata\"; "
            b"filename=\"metadata\"\r\n\r\n%s\r\n--%s\r\nContent-Disposition:"
            b" form-data; name=\"file\"; filename=\"f\"\r\n\r\n" % (
                b, json.dumps({"path": target}).encode(), b))
    tail = b"\r\n--%s--\r\n" % b
    size = len(head) + mib * BLOCK + len(tail)
    s = socket.create_connection(("127.0.0.1", port), 120)
    t0 = time.monotonic()
    s.sendall(b"POST /files/upload HTTP/1.1\r\nHost: x\r\nContent-Type: "
              b"multipart/form-data; boundary=%s\r\nContent-Length: %d\r\n"
              b"\r\n" % (b, size) + head)
    for _ in range(mib):
        s.sendall(block)
    s.sendall(tail)
    resp = s.recv(4096)
    t = time.monotonic() - t0
    s.close()
    if not resp.startswith(b"HTTP/1.1 200"):
        die("upload answered %r" % resp[:200])
    return t


def dd(target, mib):
    t0 = time.monotonic()
    subprocess.run(["dd", "if=/dev/zero", "of=" + target, "bs=1M",
                    "count=%d" % mib, "conv=fsync"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=300)
    return time.monotonic() - t0


def main(argv):
    if len(argv) != 5:
        die("usage: files_bench.py EXECD NGINX_PORT NGINX_ROOT MIB")
    execd, nport, root, mib = argv[1], int(argv[2]), argv[3], int(argv[4])
    big = os.path.join(root, "big")
    block = os.urandom(BLOCK)
    with open(big, "wb") as f:
        for _ in range(mib):
            f.write(block)
    port = benchlib.free_port()
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen([execd, "--listen", "127.0.0.1:%d" % port,
                             "--log-level", "warn"], stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 5
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    die("execd did not listen")
                time.sleep(0.02)
        idle = rss_kib(proc.pid)
        size = mib * BLOCK
        url = "/files/download?path=" + big
        download(port, url)
        download(nport, "/big")
        de, dn = [], []
        with Sampler(proc.pid) as sd:
            for _ in range(7):
                de.append(download(port, url))
                dn.append(download(nport, "/big"))
        target = os.path.join(root, "up")
        ddout = os.path.join(root, "dd")
        ue, ud = [], []
        with Sampler(proc.pid) as su:
            for _ in range(3):
                ue.append(upload(port, target, mib, block))
                ud.append(dd(ddout, mib))
        if os.path.getsize(target) != size:
            die("the upload wrote %d bytes" % os.path.getsize(target))
        for p in (big, target, ddout):
            os.unlink(p)
        # Each execd download is paired with the nginx one right after
        # it; the median of the pairs' ratios is steadier than a ratio of
        # bests when the machine's speed drifts.
        pairs = statistics.median(n / e for e, n in zip(de, dn))
        print("%.0f %.0f %d %.0f %.0f %d %d %.3f" % (
            size / min(de) / 1e6, size / min(dn) / 1e6, sd.peak,
            size / min(ue) / 1e6, size / min(ud) / 1e6, su.peak, idle,
            pairs))
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    main(sys.argv)
