"""proxy_bench.py -- the /proxy rows of the bench.

  proxy_bench.py EXECD NGINX_PORT NGINX_ROOT MIB N RELAY_PORT

NGINX_ROOT is the document root of an nginx already serving on
127.0.0.1:NGINX_PORT (bench/run.sh starts it, with an empty file at
/ping), and bench/relay.c listens on RELAY_PORT in front of it.  A file of
MIB MiB is written there as "proxybig".  Then, after a warm-up each,
alternating:

  download  GET /proxy/NGINX_PORT/proxybig from execd against
            GET /proxybig from nginx itself and through the relay, the
            body read into a reused buffer; 7 rounds, the median of the
            rounds' rate ratios.
  latency   GET /proxy/NGINX_PORT/ping against GET /ping from nginx, each
            on its own keep-alive connection, in alternating blocks of 50;
            the median of N requests a side.

Prints "dl_proxy_mbs dl_direct_mbs dl_pair_ratio lat_proxy_us
lat_direct_us dl_relay_mbs dl_relay_ratio lat_proxy_fresh_us
lat_relay_us" (MB = 10^6 bytes, best rates; latencies are medians;
dl_relay_ratio is execd's rate over the relay's; the last two are a
small GET on a connection of its own, through execd and through the
relay, which serves one request per connection).
execd is stopped by its pid; the file is removed.
"""

import os
import socket
import statistics
import sys
import time

import benchlib

BLOCK = 1 << 20


def die(msg):
    sys.stderr.write("proxy_bench: %s\n" % msg)
    sys.exit(1)


def read_response(s, buf, pending):
    """One response with Content-Length on s; returns bytes read past it
    (none: requests are sent one at a time)."""
    head = pending
    while b"\r\n\r\n" not in head:
        chunk = s.recv(65536)
        if not chunk:
            die("connection closed in the headers")
        head += chunk
    hdr, rest = head.split(b"\r\n\r\n", 1)
    if not hdr.startswith(b"HTTP/1.1 200"):
        die("bad answer: %r" % hdr[:200])
    length = None
    for line in hdr.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v)
    if length is None:
        die("no Content-Length: %r" % hdr[:300])
    left = length - len(rest)
    view = memoryview(buf)
    while left > 0:
        n = s.recv_into(view, min(left, len(buf)))
        if n == 0:
            die("connection closed in the body")
        left -= n
    return b""


def download(port, path, buf):
    s = socket.create_connection(("127.0.0.1", port), 60)
    t0 = time.monotonic()
    s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path.encode())
    read_response(s, buf, b"")
    t = time.monotonic() - t0
    s.close()
    return t


def latencies(port, path, n, buf):
    s = socket.create_connection(("127.0.0.1", port), 10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    req = b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path.encode()
    out = []
    for _ in range(n):
        t0 = time.monotonic_ns()
        s.sendall(req)
        read_response(s, buf, b"")
        out.append((time.monotonic_ns() - t0) / 1000)
    s.close()
    return out


def latencies_fresh(port, path, n, buf):
    """n requests each on a connection of its own, as the relay serves."""
    req = b"GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % \
        path.encode()
    out = []
    for _ in range(n):
        t0 = time.monotonic_ns()
        s = socket.create_connection(("127.0.0.1", port), 10)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.sendall(req)
        read_response(s, buf, b"")
        s.close()
        out.append((time.monotonic_ns() - t0) / 1000)
    return out


def main(argv):
    if len(argv) != 7:
        die("usage: proxy_bench.py EXECD NGINX_PORT NGINX_ROOT MIB N "
            "RELAY_PORT")
    execd, nport, root = argv[1], int(argv[2]), argv[3]
    mib, nlat, rport = int(argv[4]), int(argv[5]), int(argv[6])
    big = os.path.join(root, "proxybig")
    block = os.urandom(BLOCK)
    with open(big, "wb") as f:
        for _ in range(mib):
            f.write(block)
    tmp = os.path.dirname(big)
    d = benchlib.Execd(execd, tmp, "--log-level", "warn", name="proxy")
    try:
        buf = bytearray(BLOCK)
        ppath = "/proxy/%d/proxybig" % nport
        download(d.port, ppath, buf)
        download(nport, "/proxybig", buf)
        download(rport, "/proxybig", buf)
        de, dn, dr = [], [], []
        for _ in range(7):
            de.append(download(d.port, ppath, buf))
            dn.append(download(nport, "/proxybig", buf))
            dr.append(download(rport, "/proxybig", buf))
        latencies(d.port, "/proxy/%d/ping" % nport, 50, buf)
        latencies(nport, "/ping", 50, buf)
        le, ln, lf, lr = [], [], [], []
        for _ in range(max(1, nlat // 50)):
            le += latencies(d.port, "/proxy/%d/ping" % nport, 50, buf)
            ln += latencies(nport, "/ping", 50, buf)
            # The relay serves a connection per request: against it,
            # execd's /proxy is timed the same way.
            lf += latencies_fresh(d.port, "/proxy/%d/ping" % nport, 50,
                                  buf)
            lr += latencies_fresh(rport, "/ping", 50, buf)
        size = mib * BLOCK
        pairs = statistics.median(e and n / e for e, n in zip(de, dn))
        relay = statistics.median(e and r / e for e, r in zip(de, dr))
        print("%.0f %.0f %.3f %.1f %.1f %.0f %.3f %.1f %.1f" % (
            size / min(de) / 1e6, size / min(dn) / 1e6, pairs,
            statistics.median(le), statistics.median(ln),
            size / min(dr) / 1e6, relay, statistics.median(lf),
            statistics.median(lr)))
    finally:
        d.close()
        os.unlink(big)


if __name__ == "__main__":
    main(sys.argv)
