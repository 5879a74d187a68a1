"""ANY /proxy/{port}/{path}: the reverse proxy to servers on 127.0.0.1,
against real backends started here: Python's http.server for the ordinary
cases (methods, query strings, bodies both ways, SSE, chunked, a large
download, WebSocket echo, hop-by-hop headers) and raw sockets for the
faults (nobody listening, a garbage head, a backend that hangs, one cut
short, one that floods a client that does not read)."""
import base64
import hashlib
import http.client
import http.server
import json
import os
import socket
import struct
import threading
import time

from lib import Execd, expect_error, wait_for

TOKEN = "pr0xy-t0ken"
WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
BLOCK = hashlib.sha256(b"proxy").digest() * 2048   # 64 KiB, deterministic


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def read_body(rfile, headers):
    """A request body by Content-Length or chunked framing."""
    if "chunked" in (headers.get("Transfer-Encoding") or "").lower():
        out = b""
        while True:
            size = int(rfile.readline().split(b";")[0], 16)
            if size == 0:
                while rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return out
            out += rfile.read(size)
            rfile.readline()
    n = int(headers.get("Content-Length") or 0)
    return rfile.read(n) if n else b""


class Backend(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.port = self.server_address[1]
        self.sse_go = threading.Event()
        self.half = threading.Event()     # half of a slow body arrived
        self.hits = 0
        self.seen = []
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.sse_go.set()
        self.shutdown()
        self.server_close()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def handle_one_request(self):
        # Every method goes to one place.
        try:
            self.raw_requestline = self.rfile.readline(65537)
            if not self.raw_requestline or not self.parse_request():
                self.close_connection = True
                return
            self.server.hits += 1
            self.route()
            self.wfile.flush()
        except (ConnectionError, socket.timeout):
            self.close_connection = True

    def send(self, status, body, ctype="application/json", extra=()):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def route(self):
        path = self.path.split("?")[0]
        if path not in ("/slowbody", "/sse", "/chunked", "/big", "/hop",
                        "/status", "/ws", "/nocontent", "/notmodified"):
            body = read_body(self.rfile, self.headers)
            self.server.seen.append(self.headers)
            self.send(200, json.dumps({
                "method": self.command, "target": self.path,
                "peer": self.client_address[1],
                "headers": [[k, v] for k, v in self.headers.items()],
                "len": len(body),
                "sha": hashlib.sha256(body).hexdigest()}).encode())
        elif path == "/slowbody":
            # Read half, say so, then the rest: the proxy must pass the
            # first half on before the client has sent the second.
            n = int(self.headers["Content-Length"])
            h = hashlib.sha256()
            got = 0
            while got < n:
                b = self.rfile.read(min(65536, n - got))
                if not b:
                    break
                h.update(b)
                got += len(b)
                if got >= n // 2:
                    self.server.half.set()
            self.send(200, json.dumps({"len": got,
                                       "sha": h.hexdigest()}).encode())
        elif path == "/sse":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.chunk(b"data: one\n\n")
            self.server.sse_go.wait(30)
            self.chunk(b"data: two\n\n")
            self.chunk(b"")
        elif path == "/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Trailer", "X-Sum")
            self.end_headers()
            for part in (b"alpha ", b"b" * 70000, b" gamma"):
                self.chunk(part)
            self.wfile.write(b"0\r\nX-Sum: 1\r\n\r\n")
        elif path == "/big":
            n = int(self.path.split("n=")[1])
            self.send_response(200)
            self.send_header("Content-Length", str(n))
            self.end_headers()
            while n > 0 and self.command != "HEAD":
                b = BLOCK[:n]
                self.wfile.write(b)
                n -= len(b)
        elif path == "/hop":
            self.send(200, b"ok", "text/plain", extra=(
                ("Connection", "X-Resp-Drop"), ("X-Resp-Drop", "1"),
                ("Keep-Alive", "timeout=5"), ("Proxy-Thing", "1"),
                ("X-Kept", "yes")))
        elif path == "/status":
            self.send(418, b'{"teapot":true}')
        elif path == "/nocontent":
            self.send_response(204)
            self.end_headers()
        elif path == "/notmodified":
            self.send_response(304)
            self.send_header("ETag", '"x"')
            self.end_headers()
        else:
            self.websocket()

    def websocket(self):
        key = self.headers["Sec-WebSocket-Key"]
        acc = base64.b64encode(hashlib.sha1(
            (key + WS_GUID).encode()).digest()).decode()
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", acc)
        self.end_headers()
        self.wfile.flush()
        self.close_connection = True
        r = self.rfile
        while True:
            h = r.read(2)
            if len(h) < 2:
                return
            op, n = h[0] & 0x0f, h[1] & 0x7f
            if not h[1] & 0x80 or h[0] & 0x70:
                return       # unmasked or reserved bits: garbage, hang up
            if n == 126:
                n = struct.unpack("!H", r.read(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", r.read(8))[0]
            mask = r.read(4)
            data = bytes(c ^ mask[i % 4] for i, c in enumerate(r.read(n)))
            self.wfile.write(ws_frame(op, data, masked=False))
            self.wfile.flush()
            if op == 8:
                return


def ws_frame(op, payload, masked=True):
    n = len(payload)
    m = 0x80 if masked else 0
    if n < 126:
        head = struct.pack("!BB", 0x80 | op, m | n)
    elif n <= 0xffff:
        head = struct.pack("!BBH", 0x80 | op, m | 126, n)
    else:
        head = struct.pack("!BBQ", 0x80 | op, m | 127, n)
    if not masked:
        return head + payload
    mask = os.urandom(4)
    return head + mask + bytes(c ^ mask[i % 4] for i, c in enumerate(payload))


class RawBackend:
    """A one-shot raw TCP backend: behave(conn) runs per connection."""

    def __init__(self, behave):
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(8)
        self.port = self.ls.getsockname()[1]
        self.behave = behave
        self.conns = []
        self.sent = 0
        threading.Thread(target=self.loop, daemon=True).start()

    def loop(self):
        while True:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            self.conns.append(c)
            threading.Thread(target=self.run, args=(c,), daemon=True).start()

    def run(self, c):
        try:
            self.behave(self, c)
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.ls.close()
        for c in self.conns:
            c.close()


def read_head(c):
    buf = b""
    while b"\r\n\r\n" not in buf:
        b = c.recv(4096)
        if not b:
            break
        buf += b
    return buf


def get(d, path, **kw):
    return d.request("GET", path, **kw)


def test_proxy_methods_and_query_kept():
    with Backend() as be, Execd() as d:
        target = "/echo/a%20b/c?x=1&y=%2F%20&x=2&empty="
        for method in ("GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS",
                       "PROPFIND"):
            st, h, body = d.request(method, "/proxy/%d%s" % (be.port, target),
                                    body=b"hi" if method == "POST" else None)
            assert st == 200, (method, st, body)
            got = json.loads(body)
            assert got["method"] == method
            assert got["target"] == target, got["target"]
        st, h, body = d.request("HEAD", "/proxy/%d/echo" % be.port)
        assert st == 200 and body == b"", (st, body)
        # A backend's status and body pass through as they are.
        st, h, body = get(d, "/proxy/%d/status" % be.port)
        assert st == 418 and json.loads(body) == {"teapot": True}


def test_proxy_port_forms():
    with Backend() as be, Execd() as d:
        for path, want in (("/proxy/%d" % be.port, "/"),
                           ("/proxy/%d/" % be.port, "/"),
                           ("/proxy/%d?q=1" % be.port, "/?q=1")):
            st, _, body = get(d, path)
            assert st == 200, (path, st, body)
            assert json.loads(body)["target"] == want, (path, body)
        st, _, body = get(d, "/proxy/")
        expect_error(st, body, 400, "MISSING_QUERY")
        st, _, body = get(d, "/proxy//echo")
        expect_error(st, body, 400, "MISSING_QUERY")
        for bad in ("0", "65536", "abc", "-1", "99999999999"):
            st, _, body = get(d, "/proxy/%s/echo" % bad)
            expect_error(st, body, 400, "MISSING_QUERY")
        assert be.hits == 3


def test_proxy_request_body_streamed_both_framings():
    with Backend() as be, Execd() as d:
        data = os.urandom(1 << 20) * 24     # 24 MiB
        want = hashlib.sha256(data).hexdigest()
        rss0 = rss_kib(d.proc.pid)
        st, _, body = d.request("POST", "/proxy/%d/echo" % be.port,
                                body=data, timeout=60)
        assert st == 200, body
        got = json.loads(body)
        assert (got["len"], got["sha"]) == (len(data), want)
        # Chunked from the client: forwarded chunked.
        c = d.conn(60)
        c.request("PUT", "/proxy/%d/echo" % be.port,
                  body=(data[i:i + 300000]
                        for i in range(0, len(data), 300000)),
                  encode_chunked=True)
        r = c.getresponse()
        got = json.loads(r.read())
        c.close()
        assert r.status == 200
        assert (got["len"], got["sha"]) == (len(data), want)
        assert dict(be.seen[-1]).get("Transfer-Encoding") == "chunked"
        # Not held whole: far less than the 24 MiB body stayed resident.
        assert rss_kib(d.proc.pid) - rss0 < 16 * 1024


def test_proxy_body_reaches_backend_before_client_finishes():
    with Backend() as be, Execd() as d:
        n = 4 << 20
        part = os.urandom(n // 2)
        s = socket.create_connection((d.host, d.port), 10)
        s.sendall(b"POST /proxy/%d/slowbody HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Length: %d\r\n\r\n" % (be.port, n) + part)
        # The backend has half before the client sends the rest.
        assert be.half.wait(10), "the first half was held back"
        s.sendall(part)
        resp = b""
        while not resp.endswith(b"}"):
            b = s.recv(65536)
            assert b, resp
            resp += b
        s.close()
        head, _, rest = resp.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200"), resp
        got = json.loads(rest)
        assert got["len"] == n
        assert got["sha"] == hashlib.sha256(part + part).hexdigest()


def test_proxy_sse_arrives_as_produced():
    with Backend() as be, Execd() as d:
        c = d.conn(15)
        c.request("GET", "/proxy/%d/sse" % be.port)
        r = c.getresponse()
        assert r.status == 200
        assert r.getheader("Content-Type") == "text/event-stream"
        # The first event comes while the backend still holds the second.
        first = b""
        while b"\n\n" not in first:
            b = r.read1(100)
            assert b, first
            first += b
        assert first == b"data: one\n\n", first
        be.sse_go.set()
        rest = r.read()
        c.close()
        assert rest == b"data: two\n\n", rest


def test_proxy_chunked_response():
    with Backend() as be, Execd() as d:
        st, h, body = get(d, "/proxy/%d/chunked" % be.port)
        assert st == 200
        assert body == b"alpha " + b"b" * 70000 + b" gamma"
        assert "trailer" not in h


def test_proxy_large_download_bounded():
    with Backend() as be, Execd() as d:
        n = 192 << 20
        want = hashlib.sha256()
        left = n
        while left > 0:
            want.update(BLOCK[:left])
            left -= len(BLOCK)
        rss0 = rss_kib(d.proc.pid)
        c = d.conn(120)
        c.request("GET", "/proxy/%d/big?n=%d" % (be.port, n))
        r = c.getresponse()
        assert r.status == 200
        assert r.getheader("Content-Length") == str(n)
        # Spliced past MHD: the connection ends with the body.
        assert r.getheader("Connection") == "close"
        got = hashlib.sha256()
        total = 0
        peak = 0
        while True:
            b = r.read(1 << 20)
            if not b:
                break
            got.update(b)
            total += len(b)
            peak = max(peak, rss_kib(d.proc.pid))
        c.close()
        assert total == n
        assert got.hexdigest() == want.hexdigest()
        assert peak - rss0 < 16 * 1024, (rss0, peak)


def test_proxy_spliced_body_faults():
    """A body long enough to be spliced, cut by each side in turn."""
    n = 8 << 20
    data = BLOCK * 128                      # 8 MiB

    def head(c):
        read_head(c)
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % n)

    def stall(rb, c):
        head(c)
        c.sendall(data[:3 << 20])
        time.sleep(30)

    def die(rb, c):
        head(c)
        c.sendall(data[:2 << 20])
        c.close()

    def flood(rb, c):
        read_head(c)
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (1 << 30))
        c.settimeout(1)
        try:
            while True:
                try:
                    c.sendall(BLOCK)
                    rb.sent += len(BLOCK)
                except socket.timeout:
                    continue
        except OSError:
            rb.gone = True

    with RawBackend(stall) as st, RawBackend(die) as dy, \
            RawBackend(flood) as fl, Execd("--proxy-timeout", "1") as d:
        fl.gone = False
        for be, partial in ((st, 3 << 20), (dy, 2 << 20)):
            c = d.conn(15)
            t0 = time.monotonic()
            c.request("GET", "/proxy/%d/" % be.port)
            r = c.getresponse()
            assert r.status == 200
            assert r.getheader("Content-Length") == str(n)
            try:
                r.read()
                raise AssertionError("a cut body ended as whole")
            except http.client.IncompleteRead as e:
                assert len(e.partial) == partial, len(e.partial)
                assert e.partial == data[:partial]
            assert time.monotonic() - t0 < 10
            c.close()
            assert get(d, "/ping")[0] == 200
        # A client that stops reading holds the backend back, then leaves.
        rss0 = rss_kib(d.proc.pid)
        s = socket.create_connection((d.host, d.port), 10)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        s.sendall(b"GET /proxy/%d/ HTTP/1.1\r\nHost: x\r\n\r\n" % fl.port)
        time.sleep(2)
        assert get(d, "/ping", timeout=5)[0] == 200
        assert fl.sent < 64 << 20, fl.sent
        assert rss_kib(d.proc.pid) - rss0 < 16 * 1024
        s.close()
        deadline = time.monotonic() + 10
        while not fl.gone and time.monotonic() < deadline:
            time.sleep(0.05)
        assert fl.gone, "the backend was not let go of with the client"
        assert get(d, "/ping", timeout=5)[0] == 200


def ws_connect(d, path):
    s = socket.create_connection((d.host, d.port), 10)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
               "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
               "Sec-WebSocket-Version: 13\r\n\r\n" % (path, key)).encode())
    buf = read_head(s)
    head, rest = buf.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 101"), head
    acc = base64.b64encode(hashlib.sha1(
        (key + WS_GUID).encode()).digest())
    assert b"Sec-WebSocket-Accept: " + acc in head, head
    return s, rest


def ws_read(s, buf):
    while True:
        if len(buf) >= 2:
            n, at = buf[1] & 0x7f, 2
            if n == 126 and len(buf) >= 4:
                n, at = struct.unpack("!H", buf[2:4])[0], 4
            elif n == 127 and len(buf) >= 10:
                n, at = struct.unpack("!Q", buf[2:10])[0], 10
            if n < 126 or at > 2:
                if len(buf) >= at + n:
                    return buf[0] & 0x0f, buf[at:at + n], buf[at + n:]
        b = s.recv(65536)
        assert b, "closed mid-frame"
        buf += b


def test_proxy_websocket_echo():
    with Backend() as be, Execd() as d:
        s, buf = ws_connect(d, "/proxy/%d/ws" % be.port)
        s.sendall(ws_frame(1, b"hello through the proxy"))
        op, p, buf = ws_read(s, buf)
        assert (op, p) == (1, b"hello through the proxy")
        big = os.urandom(300000)
        s.sendall(ws_frame(2, big))
        op, p, buf = ws_read(s, buf)
        assert (op, p) == (2, big)
        s.sendall(ws_frame(8, struct.pack("!H", 1000)))
        op, p, buf = ws_read(s, buf)
        assert op == 8
        s.settimeout(5)
        assert s.recv(10) == b""       # both ends closed
        s.close()
        assert get(d, "/ping")[0] == 200


def test_proxy_websocket_garbage():
    with Backend() as be, Execd() as d:
        s, buf = ws_connect(d, "/proxy/%d/ws" % be.port)
        s.sendall(b"\xff\x00 this is not a frame " * 100)
        s.settimeout(5)
        got = b""
        try:
            while True:
                b = s.recv(65536)
                if not b:
                    break
                got += b
        except socket.timeout:
            raise AssertionError("the tunnel stayed open after garbage")
        s.close()
        assert get(d, "/ping")[0] == 200
        fds = d.fds()
        # More garbage tunnels: none leaks a descriptor.
        for _ in range(5):
            s, buf = ws_connect(d, "/proxy/%d/ws" % be.port)
            s.sendall(b"\x00" * 1000)
            s.settimeout(5)
            while s.recv(65536):
                pass
            s.close()
        assert wait_for(lambda: d.fds() <= fds, 5), (fds, d.fds())


def test_proxy_hop_by_hop_dropped():
    with Backend() as be, Execd() as d:
        st, h, body = get(d, "/proxy/%d/echo" % be.port, headers={
            "Connection": "X-Drop, keep-alive", "X-Drop": "1",
            "Keep-Alive": "timeout=5", "Proxy-Authorization": "Basic x",
            "TE": "trailers", "X-Keep": "yes",
            "X-Forwarded-For": "10.0.0.1", "X-Forwarded-Host": "evil"})
        assert st == 200
        seen = {k.lower(): v for k, v in json.loads(body)["headers"]}
        for gone in ("x-drop", "keep-alive", "proxy-authorization", "te",
                     "x-forwarded-host"):
            assert gone not in seen, (gone, seen)
        assert seen["x-keep"] == "yes"
        assert seen["x-forwarded-for"] == "10.0.0.1, 127.0.0.1", seen
        assert seen["x-forwarded-proto"] == "http"
        assert "connection" not in seen      # keep-alive, HTTP/1.1's default
        st, h, body = get(d, "/proxy/%d/hop" % be.port)
        assert st == 200 and body == b"ok"
        for gone in ("x-resp-drop", "keep-alive", "proxy-thing"):
            assert gone not in h, (gone, h)
        assert h["x-kept"] == "yes"


def test_proxy_nobody_listening_502():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with Execd() as d:
        st, h, body = get(d, "/proxy/%d/x" % port)
        expect_error(st, body, 502, "BAD_GATEWAY")
        assert h["content-type"].startswith("application/json")
        st, h, body = d.request("POST", "/proxy/%d/x" % port,
                                body=b"y" * 100000)
        expect_error(st, body, 502, "BAD_GATEWAY")
        assert get(d, "/ping")[0] == 200


def test_proxy_malformed_head_502():
    def garbage(rb, c):
        read_head(c)
        c.sendall(b"SPDY/9 what\r\n\r\n")
        c.close()

    def cut(rb, c):
        read_head(c)
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" +
                  b"x" * 10)
        c.close()

    def silent_close(rb, c):
        read_head(c)
        c.close()

    with RawBackend(garbage) as g, RawBackend(cut) as ct, \
            RawBackend(silent_close) as sc, Execd() as d:
        st, _, body = get(d, "/proxy/%d/" % g.port)
        expect_error(st, body, 502, "BAD_GATEWAY")
        st, _, body = get(d, "/proxy/%d/" % sc.port)
        expect_error(st, body, 502, "BAD_GATEWAY")
        # After the head: the response is cut short, visibly.
        c = d.conn(10)
        c.request("GET", "/proxy/%d/" % ct.port)
        r = c.getresponse()
        assert r.status == 200
        try:
            data = r.read()
            raise AssertionError("a short body read as whole: %r" % data)
        except http.client.IncompleteRead:
            pass
        c.close()
        assert get(d, "/ping")[0] == 200


def test_proxy_hanging_backend_times_out():
    def hang(rb, c):
        read_head(c)
        time.sleep(30)

    def stall(rb, c):
        read_head(c)
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc")
        time.sleep(30)

    with RawBackend(hang) as h, RawBackend(stall) as s, \
            Execd("--proxy-timeout", "1") as d:
        t0 = time.monotonic()
        st, _, body = get(d, "/proxy/%d/" % h.port, timeout=15)
        expect_error(st, body, 504, "TIMEOUT")
        assert time.monotonic() - t0 < 10
        c = d.conn(15)
        c.request("GET", "/proxy/%d/" % s.port)
        r = c.getresponse()
        assert r.status == 200
        try:
            r.read()
            raise AssertionError("a stalled body ended as whole")
        except http.client.IncompleteRead as e:
            assert e.partial == b"abc"
        c.close()
        assert get(d, "/ping")[0] == 200


def test_proxy_flood_to_a_client_that_does_not_read():
    stop = threading.Event()

    def flood(rb, c):
        read_head(c)
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: x/y\r\n"
                  b"Connection: close\r\n\r\n")
        c.settimeout(1)
        while not stop.is_set():
            try:
                c.sendall(BLOCK)
                rb.sent += len(BLOCK)
            except socket.timeout:
                continue

    with RawBackend(flood) as fb, Execd() as d:
        rss0 = rss_kib(d.proc.pid)
        s = socket.create_connection((d.host, d.port), 10)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        s.sendall(b"GET /proxy/%d/ HTTP/1.1\r\nHost: x\r\n\r\n" % fb.port)
        time.sleep(3)                       # not reading
        sent = fb.sent
        assert get(d, "/ping", timeout=5)[0] == 200
        time.sleep(1)
        # The backend is held back (socket buffers only), and execd
        # holds no more than a little.
        assert fb.sent - sent < 8 << 20, (sent, fb.sent)
        assert fb.sent < 64 << 20, fb.sent
        assert rss_kib(d.proc.pid) - rss0 < 16 * 1024
        # Reading again drains it.
        got = s.recv(1 << 16)
        assert got.startswith(b"HTTP/1.1 200")
        stop.set()
        s.close()
        assert get(d, "/ping", timeout=5)[0] == 200


def test_proxy_token_required():
    with Backend() as be, Execd("--access-token", TOKEN) as d:
        st, _, body = get(d, "/proxy/%d/echo" % be.port)
        assert st == 401, body
        st, _, body = d.request("POST", "/proxy/%d/echo" % be.port,
                                body=b"z" * 10000)
        assert st == 401, body
        assert be.hits == 0
        st, _, body = get(d, "/proxy/%d/echo" % be.port,
                          headers={"X-EXECD-ACCESS-TOKEN": TOKEN})
        assert st == 200
        seen = {k.lower(): v for k, v in json.loads(body)["headers"]}
        assert seen["x-execd-access-token"] == TOKEN   # as upstream


def test_proxy_backend_connections_kept_and_retried():
    with Backend() as be, Execd() as d:
        peers = {json.loads(get(d, "/proxy/%d/echo" % be.port)[2])["peer"]
                 for _ in range(5)}
        assert len(peers) == 1, peers       # one kept connection

    # A backend that answers one request per connection and then drops
    # the connection silently: the next request, sent on the kept one,
    # goes again on a new connection and is answered.
    def one_per_conn(rb, c):
        read_head(c)
        rb.sent += 1
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        read_head(c)                        # the second request: dropped
        c.close()

    with RawBackend(one_per_conn) as rb, Execd() as d:
        for _ in range(4):
            st, _, body = get(d, "/proxy/%d/" % rb.port)
            assert (st, body) == (200, b"ok"), (st, body)
        assert rb.sent == 4
        # A body is never sent on a kept connection: no retry needed.
        st, _, body = d.request("POST", "/proxy/%d/" % rb.port, body=b"x")
        assert (st, body) == (200, b"ok"), (st, body)


def test_proxy_shutdown_with_proxied_requests_open():
    def hang(rb, c):
        read_head(c)
        time.sleep(30)

    with Backend() as be, RawBackend(hang) as h:
        d = Execd().start()
        sse = socket.create_connection((d.host, d.port), 10)
        sse.sendall(b"GET /proxy/%d/sse HTTP/1.1\r\nHost: x\r\n\r\n"
                    % be.port)
        got = b""
        while b"data: one" not in got:
            b = sse.recv(4096)
            assert b, got
            got += b
        ws, _ = ws_connect(d, "/proxy/%d/ws" % be.port)
        held = socket.create_connection((d.host, d.port), 10)
        held.sendall(b"GET /proxy/%d/ HTTP/1.1\r\nHost: x\r\n\r\n" % h.port)
        upload = socket.create_connection((d.host, d.port), 10)
        upload.sendall(b"POST /proxy/%d/ HTTP/1.1\r\nHost: x\r\n"
                       b"Content-Length: 100000000\r\n\r\n" % h.port +
                       b"u" * (4 << 20))
        spliced = socket.create_connection((d.host, d.port), 10)
        spliced.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        spliced.sendall(b"GET /proxy/%d/big?n=%d HTTP/1.1\r\nHost: x\r\n\r\n"
                        % (be.port, 1 << 30))
        time.sleep(0.5)
        t0 = time.monotonic()
        assert d.stop(timeout=15) == 0
        assert time.monotonic() - t0 < 10
        for s in (sse, ws, held, upload, spliced):
            s.close()


def test_proxy_responses_without_a_body():
    with Backend() as be, Execd() as d:
        st, h, body = d.request("HEAD", "/proxy/%d/big?n=12345" % be.port)
        assert (st, body) == (200, b"")
        assert h["content-length"] == "12345", h
        st, h, body = get(d, "/proxy/%d/nocontent" % be.port)
        assert (st, body) == (204, b"")
        assert "transfer-encoding" not in h and "content-length" not in h
        st, h, body = get(d, "/proxy/%d/notmodified" % be.port)
        assert (st, body) == (304, b"")
        assert h["etag"] == '"x"' and "transfer-encoding" not in h
        # And the kept connection still serves the next request.
        st, _, body = get(d, "/proxy/%d/echo" % be.port)
        assert st == 200 and json.loads(body)["target"] == "/echo"

    # A backend that sends a body after a HEAD answer anyway, a little
    # late: the next request must not read it as its answer.
    def late_body(rb, c):
        while read_head(c):
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n")
            time.sleep(0.05)
            c.sendall(b"ok")

    with RawBackend(late_body) as rb, Execd() as d:
        for _ in range(3):
            st, _, _ = d.request("HEAD", "/proxy/%d/" % rb.port)
            assert st == 200
            st, _, body = get(d, "/proxy/%d/" % rb.port)
            assert (st, body) == (200, b"ok"), (st, body)
