"""code_bench.py -- the /code rows of the bench, against their baselines.

Run with the Python that has pyzmq and jupyter_server (Debian's
/usr/bin/python3: python3-zmq, python3-jupyter-server); bench/run.sh
calls it.  Standard library otherwise: http.client for execd, a raw
socket for Jupyter Server's WebSocket.

  code_bench.py exec EXECD N
      Start EXECD on 127.0.0.1 at a free port and create a python
      context; read its connection info (GET /code/contexts/{id}/connection)
      and attach a minimal ZeroMQ client to the same kernel (DEALER shell,
      SUB iopub, HMAC-SHA256 signing).  Start Jupyter Server on another
      free port (token, no browser, its own runtime, config and data
      dirs) with one python3 kernel (POST /api/kernels) and open
      /api/kernels/{id}/channels.  After 10 warm-ups on each side, run
      "1+1" N times on each side, in alternating blocks of 10 so that
      drift on a shared machine hits all four alike:
        execd       POST /code {"code":"1+1","context":{"id":...}} on one
                    keep-alive connection, until the whole stream (its
                    final event is execution_complete) is read;
        zmq         execute_request on the shell socket, until both the
                    execute_reply and the iopub status idle of that msg_id
                    are in (what execd waits for before execution_complete);
        jupyter     the same execute_request as a JSON text frame on the
                    WebSocket, until the reply and the idle are in;
        fresh       as jupyter, on a new WebSocket for each run (what
                    upstream's daemon does);
        channels    as jupyter, on execd's own /api/kernels/{id}/channels
                    of the context's kernel, with the same client code; a
                    WebSocket opened for each block (and a kernel_info
                    round trip on it, untimed) and closed after it, so
                    that execd does not copy the other blocks' iopub to
                    it while they are timed.
      Prints "execd_med execd_min zmq_med zmq_min jup_med jup_min
      fresh_med fresh_min execd_headers_med channels_med channels_min" in
      microseconds, execd_headers_med being the median time from sending
      POST /code to its response headers.
  code_bench.py fanout EXECD N [LINES]
      Start EXECD with a python context, attach the bare ZeroMQ client to
      its kernel (iopub without a high-water mark: it drops nothing) and
      N clients to its /api/kernels/{id}/channels.  One of them runs a
      cell that prints LINES (default 1000) lines, each flushed; every
      client and the ZeroMQ subscriber, each in a thread of its own,
      collect the run's iopub messages up to its status idle, while
      execd's VmRSS is sampled every millisecond.  A client passes when
      it saw the subscriber's messages, all and in order.  Prints
      "clients_ok iopub_msgs rss_idle rss_connected rss_peak rss_after
      min_bytes" (KiB; rss_idle before the clients connect; min_bytes
      the fewest bytes of message a client read).
  code_bench.py context EXECD N
      N times POST /code/context {"language":"python"} on an execd without
      a pool (each context deleted, and its kernel reaped, before the
      next), then N times on an execd started with --pool python=1, each
      taken while the pool's kernel is ready (its log said
      "kernel=... ready") and, after each, waiting for the refill's ready
      line.  Prints "nopool_med nopool_min pool_med pool_min pool_max" in
      microseconds.

  code_bench.py interrupt EXECD N
      Start EXECD with a python context and attach the bare ZeroMQ
      client to its kernel, as for exec.  N times on each side (after one
      warm-up each), alternating, a sleeping cell ("import time;
      time.sleep(30)") is interrupted once it has run for INT_AFTER
      seconds:
        execd       POST /code, then DELETE /code?id= on a second
                    connection; the time from sending the DELETE to the
                    end of the stream (its final event);
        zmq         execute_request, then SIGINT to the kernel's process
                    (found by its connection file among execd's
                    children); the time from the signal to the iopub
                    status idle of that request.
      Before each, the ZeroMQ client runs `pass` until the kernel no
      longer aborts runs after the previous interrupt (ipykernel's
      stop_on_error window), so that neither side's run is answered
      "aborted" unrun.
      Prints "execd_med execd_min zmq_med zmq_min" in microseconds.

  code_bench.py episodes EXECD N
      RL episodes, on an execd with --kernel-fork on and one with off:
      after warm-up (the fork server ready), N times one POST
      /code/context, timed, each context deleted and reaped before the
      next (no pool); then N episodes over 8 connections at once, each
      a new python context, a three-line snippet through POST /code and
      the context deleted; and (fork on) N episodes of the same snippet
      as `python3 -c` through POST /command, and 200 episodes as one
      POST /code/batch, 8 at a time (execd started with
      --batch-concurrency 8), and N one-request episodes over 8
      connections (POST /code with an ephemeral context).  Prints
      "fork_eps nofork_eps command_eps fork_ready_us nofork_ready_us
      batch_eps ephemeral_eps" (episodes per second, medians in
      microseconds).

Times are CLOCK_MONOTONIC.  Every wait is bounded; every process started
here is stopped by its pid, also on SIGTERM; every context and kernel
created here is deleted.
"""

import base64
import hashlib
import hmac
import http.client
import json
import os
import re
import secrets
import select
import signal
import socket
import statistics
import struct
import sys
import threading
import time
import types
import uuid

import zmq

import benchlib
from benchlib import (START_TIMEOUT, Execd, die, free_port, now_us, read,
                      spawn, stop)

WARMUPS = 10
BLOCK = 10          # round trips per side before switching sides
TIMEOUT = 30        # seconds, for one reply or one readiness wait
CODE = "1+1"
SLEEP_CODE = "import time; time.sleep(30)"
INT_AFTER = 0.3     # seconds a sleeping cell runs before its interrupt
READY_TIMEOUT = 60  # seconds for a pool kernel to be ready

QUICKACK = getattr(socket, "TCP_QUICKACK", 12)


# --- execd ------------------------------------------------------------------

def start_execd(binary, tmp, name, *args):
    """An execd with a runtime dir of its own, once it answers /ping."""
    ex = Execd(binary, tmp, "--runtime-dir",
               os.path.join(tmp, name + "-runtime"), *args, name=name,
               timeout=TIMEOUT)
    ex.request("GET", "/ping")
    return ex


def execd_run(ex, body):
    """One POST /code, whole stream read: (total_us, headers_us)."""
    c = ex.conn
    t0 = now_us()
    c.request("POST", "/code", body=body,
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    t1 = now_us()
    data = r.read()
    t2 = now_us()
    if r.status != 200 or b'"execution_complete"' not in data:
        die("execd: POST /code: %d %r" % (r.status, data[-400:]))
    return t2 - t0, t1 - t0, data


# --- a bare ZeroMQ client ----------------------------------------------------

DELIM = b"<IDS|MSG>"


def iso_now():
    return time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())


def header(session, msg_type):
    return {"msg_id": uuid.uuid4().hex, "session": session,
            "username": "bench", "date": iso_now(), "msg_type": msg_type,
            "version": "5.3"}


def execute_content():
    return {"code": CODE, "silent": False, "store_history": True,
            "user_expressions": {}, "allow_stdin": False,
            "stop_on_error": True}


class ZmqClient:
    """DEALER on shell, SUB on iopub, HMAC-SHA256 signing; nothing more."""

    def __init__(self, info):
        if info.get("signature_scheme", "hmac-sha256") != "hmac-sha256":
            die("unexpected signature scheme %r" % info["signature_scheme"])
        self.key = info["key"].encode()
        self.session = uuid.uuid4().hex
        self.ctx = zmq.Context()
        tr, ip = info["transport"], info["ip"]

        def url(port):
            if tr == "ipc":
                return "ipc://%s-%s" % (ip, port)
            return "tcp://%s:%s" % (ip, port)

        self.shell = self.ctx.socket(zmq.DEALER)
        self.shell.linger = 0
        self.shell.connect(url(info["shell_port"]))
        self.iopub = self.ctx.socket(zmq.SUB)
        self.iopub.linger = 0
        self.iopub.setsockopt(zmq.SUBSCRIBE, b"")
        self.iopub.connect(url(info["iopub_port"]))
        self.poller = zmq.Poller()
        self.poller.register(self.shell, zmq.POLLIN)
        self.poller.register(self.iopub, zmq.POLLIN)

    def send(self, msg_type, content):
        h = header(self.session, msg_type)
        parts = [json.dumps(h).encode(), b"{}", b"{}",
                 json.dumps(content).encode()]
        mac = hmac.new(self.key, digestmod=hashlib.sha256)
        for p in parts:
            mac.update(p)
        self.shell.send_multipart([DELIM, mac.hexdigest().encode()] + parts)
        return h["msg_id"]

    @staticmethod
    def split(frames):
        """(header, parent_header, content) of a received message."""
        i = frames.index(DELIM)
        return (json.loads(frames[i + 2]), json.loads(frames[i + 3]),
                frames[i + 5])

    def wait(self, msg_id, reply_type, timeout=TIMEOUT):
        """Until the reply_type and the iopub idle of msg_id are in."""
        replied = idle = False
        deadline = time.monotonic() + timeout
        while not (replied and idle):
            left = deadline - time.monotonic()
            if left <= 0:
                die("zmq: no %s%s for %s" % (
                    "" if replied else reply_type,
                    "" if idle else " idle", msg_id))
            for sock, _ in self.poller.poll(left * 1000):
                h, p, content = self.split(sock.recv_multipart())
                if p.get("msg_id") != msg_id:
                    continue
                if sock is self.shell and h["msg_type"] == reply_type:
                    if json.loads(content).get("status") != "ok":
                        die("zmq: %s: %s" % (reply_type, content[:400]))
                    replied = True
                elif (sock is self.iopub and h["msg_type"] == "status"
                      and b'"idle"' in content):
                    idle = True

    def ready(self):
        """kernel_info_request until iopub answers (the SUB has joined)."""
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            mid = self.send("kernel_info_request", {})
            try:
                self.wait(mid, "kernel_info_reply", timeout=1)
                return
            except RuntimeError:
                continue
        die("zmq: the kernel's iopub never answered")

    def drain(self):
        """Drop what queued up (other clients' runs on the same kernel)."""
        while self.poller.poll(0):
            for sock, _ in self.poller.poll(0):
                sock.recv_multipart()

    def wait_idle(self, msg_id, timeout=TIMEOUT):
        """Until the iopub status idle of msg_id; whatever the reply."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                die("zmq: no idle for %s" % msg_id)
            for sock, _ in self.poller.poll(left * 1000):
                h, p, content = self.split(sock.recv_multipart())
                if (sock is self.iopub and p.get("msg_id") == msg_id
                        and h["msg_type"] == "status"
                        and b'"idle"' in content):
                    return

    def iopub_of(self, msg_id, timeout=TIMEOUT):
        """As WsClient.iopub_of, from the kernel's iopub socket itself."""
        got = []
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not self.iopub.poll(left * 1000):
                die("zmq: no idle for %s after %d iopub messages"
                    % (msg_id, len(got)))
            h, p, content = self.split(self.iopub.recv_multipart())
            if p.get("msg_id") != msg_id:
                continue
            c = json.loads(content)
            t = h["msg_type"]
            got.append((h["msg_id"], t, c.get("text") if t == "stream"
                        else None))
            if t == "status" and c["execution_state"] == "idle":
                return got

    def past_abort(self, timeout=TIMEOUT):
        """After a run that ended in an error (a KeyboardInterrupt too),
        ipykernel aborts the execute_requests that reach it until a
        marker it queues behind them is handled; a run sent at once may
        be answered "aborted" without running.  Run `pass` until one is
        not aborted, so that the next timed run is not."""
        deadline = time.monotonic() + timeout
        while True:
            mid = self.send("execute_request",
                            dict(execute_content(), code="pass"))
            status = idle = None
            while status is None or not idle:
                left = deadline - time.monotonic()
                if left <= 0:
                    die("zmq: a `pass` run still aborted after %d s"
                        % timeout)
                for sock, _ in self.poller.poll(left * 1000):
                    h, p, content = self.split(sock.recv_multipart())
                    if p.get("msg_id") != mid:
                        continue
                    if (sock is self.shell and
                            h["msg_type"] == "execute_reply"):
                        status = json.loads(content).get("status")
                    elif (sock is self.iopub and h["msg_type"] == "status"
                          and b'"idle"' in content):
                        idle = True
            if status != "aborted":
                return
            time.sleep(0.01)

    def interrupted(self, pid):
        """A sleeping cell, SIGINT after INT_AFTER: signal to idle, us."""
        content = dict(execute_content(), code=SLEEP_CODE)
        mid = self.send("execute_request", content)
        time.sleep(INT_AFTER)
        t0 = now_us()
        os.kill(pid, signal.SIGINT)
        self.wait_idle(mid)
        return now_us() - t0

    def round_trip(self):
        t0 = now_us()
        self.wait(self.send("execute_request", execute_content()),
                  "execute_reply")
        return now_us() - t0

    def close(self):
        self.shell.close()
        self.iopub.close()
        self.ctx.term()


# --- Jupyter Server ----------------------------------------------------------

class JupyterServer:
    """Debian's jupyter_server on a free port of 127.0.0.1, with a token."""

    def __init__(self, python, tmp):
        self.dir = os.path.join(tmp, "jupyter")
        env = dict(os.environ)
        for sub in ("runtime", "config", "data", "root"):
            os.makedirs(os.path.join(self.dir, sub), exist_ok=True)
        env["JUPYTER_RUNTIME_DIR"] = os.path.join(self.dir, "runtime")
        env["JUPYTER_CONFIG_DIR"] = os.path.join(self.dir, "config")
        env["JUPYTER_DATA_DIR"] = os.path.join(self.dir, "data")
        env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"  # as execd does
        self.token = secrets.token_hex(16)
        self.port = free_port()
        self.log_path = os.path.join(self.dir, "server.log")
        self.proc = spawn([
            python, "-m", "jupyter_server", "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            "--ServerApp.port=%d" % self.port,
            "--ServerApp.port_retries=0",
            "--ServerApp.token=" + self.token,
            "--ServerApp.root_dir=" + os.path.join(self.dir, "root"),
            "--ServerApp.open_browser=False",
        ] + (["--allow-root"] if os.geteuid() == 0 else []),
            self.log_path, env)
        self.hdrs = {"Authorization": "token " + self.token}
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if self.proc.poll() is not None:
                die("jupyter server exited with %s at start: %s"
                    % (self.proc.returncode, read(self.log_path)[-800:]))
            try:
                st, _ = self.request("GET", "/api/status")
                if st == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                die("jupyter server did not answer /api/status: "
                    + read(self.log_path)[-800:])
            time.sleep(0.1)
        self.kernel = None

    def request(self, method, path, body=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port,
                                       timeout=TIMEOUT)
        try:
            hdrs = dict(self.hdrs)
            if body is not None:
                body = json.dumps(body).encode()
                hdrs["Content-Type"] = "application/json"
            c.request(method, path, body=body, headers=hdrs)
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def start_kernel(self):
        st, data = self.request("POST", "/api/kernels", {"name": "python3"})
        if st not in (200, 201):
            die("jupyter server: POST /api/kernels: %d %r" % (st, data[:400]))
        self.kernel = json.loads(data)["id"]
        return self.kernel

    def close(self):
        if self.kernel is not None and self.proc.poll() is None:
            try:
                self.request("DELETE", "/api/kernels/" + self.kernel)
            except OSError:
                pass
        return stop(self.proc)


class WsClient:
    """A minimal WebSocket client (RFC 6455, text frames, no extensions)
    on /api/kernels/{id}/channels, speaking Jupyter's JSON messages."""

    def __init__(self, server, kernel_id):
        """server: anything with .port and .token (None: send none), so
        Jupyter Server and execd are spoken to alike."""
        self.name = getattr(server, "name", "jupyter server")
        self.nbytes = 0
        self.session = uuid.uuid4().hex
        self.sock = socket.create_connection(("127.0.0.1", server.port),
                                             TIMEOUT)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        key = base64.b64encode(secrets.token_bytes(16)).decode()
        auth = ("Authorization: token %s\r\n" % server.token
                if server.token else "")
        req = ("GET /api/kernels/%s/channels?session_id=%s HTTP/1.1\r\n"
               "Host: 127.0.0.1:%d\r\n"
               "Upgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n"
               "%s\r\n"
               % (kernel_id, self.session, server.port, key, auth))
        self.sock.sendall(req.encode())
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                die("%s closed the WebSocket handshake" % self.name)
            self.buf += chunk
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        if not head.startswith(b"HTTP/1.1 101"):
            die("%s: WebSocket handshake: %r" % (self.name, head[:400]))

    def _need(self, n):
        while len(self.buf) < n:
            # Jupyter Server writes a reply's frames without TCP_NODELAY:
            # acknowledge at once, or Nagle there and a delayed ACK here
            # add ~40 ms to most round trips.  Linux clears the flag, so
            # set it before every read.
            self.sock.setsockopt(socket.IPPROTO_TCP, QUICKACK, 1)
            chunk = self.sock.recv(65536)
            if not chunk:
                die("%s closed the WebSocket" % self.name)
            self.buf += chunk

    def _frame_in_buf(self):
        """True when self.buf holds at least one whole frame."""
        b = self.buf
        if len(b) < 2:
            return False
        n, off = b[1] & 0x7F, 2
        if n == 126:
            if len(b) < 4:
                return False
            n, off = struct.unpack(">H", b[2:4])[0], 4
        elif n == 127:
            if len(b) < 10:
                return False
            n, off = struct.unpack(">Q", b[2:10])[0], 10
        if b[1] & 0x80:
            off += 4
        return len(b) >= off + n

    def drain(self, quiet=0.02):
        """Drop the messages that queued up (other clients' runs on the
        same kernel) until none has come for `quiet` seconds, so that a
        timed round trip reads only its own."""
        while True:
            while self._frame_in_buf():
                op, _, payload = self.recv_frame()
                if op == 0x9:
                    self.send_frame(0xA, payload)
                elif op == 0x8:
                    die("%s closed the WebSocket: %r" % (self.name, payload))
            r, _, _ = select.select([self.sock], [], [], quiet)
            if not r:
                return
            chunk = self.sock.recv(65536)
            if not chunk:
                die("%s closed the WebSocket" % self.name)
            self.buf += chunk

    def recv_frame(self):
        """(opcode, fin, payload) of the next frame."""
        self._need(2)
        b0, b1 = self.buf[0], self.buf[1]
        n, off = b1 & 0x7F, 2
        if n == 126:
            self._need(4)
            n, off = struct.unpack(">H", self.buf[2:4])[0], 4
        elif n == 127:
            self._need(10)
            n, off = struct.unpack(">Q", self.buf[2:10])[0], 10
        mask = b""
        if b1 & 0x80:
            self._need(off + 4)
            mask, off = self.buf[off:off + 4], off + 4
        self._need(off + n)
        payload, self.buf = self.buf[off:off + n], self.buf[off + n:]
        if mask:
            payload = bytes(c ^ mask[i % 4] for i, c in enumerate(payload))
        return b0 & 0x0F, bool(b0 & 0x80), payload

    def send_frame(self, opcode, payload):
        mask = secrets.token_bytes(4)
        n = len(payload)
        if n < 126:
            head = struct.pack(">BB", 0x80 | opcode, 0x80 | n)
        elif n < 65536:
            head = struct.pack(">BBH", 0x80 | opcode, 0x80 | 126, n)
        else:
            head = struct.pack(">BBQ", 0x80 | opcode, 0x80 | 127, n)
        pad = (-n) % 4
        words = int.from_bytes(payload + b"\0" * pad, "big")
        rep = int.from_bytes(mask * ((n + pad) // 4), "big")
        masked = (words ^ rep).to_bytes(n + pad, "big")[:n] if n else b""
        self.sock.sendall(head + mask + masked)

    def recv_msg(self):
        """The next text message, answering pings on the way."""
        parts = []
        while True:
            op, fin, payload = self.recv_frame()
            if op == 0x9:
                self.send_frame(0xA, payload)
                continue
            if op == 0xA:
                continue
            if op == 0x8:
                die("%s closed the WebSocket: %r" % (self.name, payload))
            parts.append(payload)
            if fin:
                return b"".join(parts)

    def send(self, msg_type, content):
        h = header(self.session, msg_type)
        self.send_frame(0x1, json.dumps({
            "header": h, "parent_header": {}, "metadata": {},
            "content": content, "buffers": [], "channel": "shell",
        }).encode())
        return h["msg_id"]

    def wait(self, msg_id, reply_type, timeout=TIMEOUT):
        replied = idle = False
        self.sock.settimeout(timeout)
        try:
            while not (replied and idle):
                m = json.loads(self.recv_msg())
                if m.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                t = m["header"]["msg_type"]
                if m["channel"] == "shell" and t == reply_type:
                    if m["content"].get("status") != "ok":
                        die("%s: %s: %r" % (self.name, t, m["content"]))
                    replied = True
                elif (m["channel"] == "iopub" and t == "status"
                      and m["content"]["execution_state"] == "idle"):
                    idle = True
        except socket.timeout:
            die("%s: no %s%s for %s" % (
                self.name, "" if replied else reply_type,
                "" if idle else " idle", msg_id))

    def ready(self):
        self.wait(self.send("kernel_info_request", {}), "kernel_info_reply")

    def round_trip(self):
        t0 = now_us()
        self.wait(self.send("execute_request", execute_content()),
                  "execute_reply")
        return now_us() - t0

    def iopub_of(self, msg_id, timeout=TIMEOUT):
        """Every iopub message of request msg_id up to its status idle, as
        (msg_id, msg_type, stream text or None); other messages skipped.
        Also counts the payload bytes read in self.nbytes."""
        got = []
        self.sock.settimeout(timeout)
        try:
            while True:
                data = self.recv_msg()
                self.nbytes += len(data)
                m = json.loads(data)
                if (m.get("channel") != "iopub" or
                        m.get("parent_header", {}).get("msg_id") != msg_id):
                    continue
                t = m["header"]["msg_type"]
                got.append((m["header"]["msg_id"], t,
                            m["content"].get("text") if t == "stream"
                            else None))
                if (t == "status" and
                        m["content"]["execution_state"] == "idle"):
                    return got
        except socket.timeout:
            die("%s: no idle for %s after %d iopub messages"
                % (self.name, msg_id, len(got)))

    @staticmethod
    def fresh_round_trip(server, kernel_id):
        """Upstream's way: a new WebSocket for the one execute_request,
        closed once the reply and the idle are in."""
        t0 = now_us()
        ws = WsClient(server, kernel_id)
        try:
            ws.wait(ws.send("execute_request", execute_content()),
                    "execute_reply")
            return now_us() - t0
        finally:
            ws.close()

    def close(self):
        try:
            self.send_frame(0x8, struct.pack(">H", 1000))
        except OSError:
            pass
        self.sock.close()


# --- the verbs ---------------------------------------------------------------

def execd_ws_server(ex):
    """What WsClient needs to open execd's channels (no token set)."""
    return types.SimpleNamespace(port=ex.port, token=None, name="execd")


def cmd_exec(binary, n, tmp):
    ex = js = zc = ws = xw = None
    ctx_id = None
    try:
        ex = start_execd(binary, tmp, "execd", "--log-level", "warn")
        ctx_id = ex.json("POST", "/code/context", {"language": "python"})["id"]
        info = ex.json("GET", "/code/contexts/%s/connection" % ctx_id)
        for f in ("transport", "ip", "key", "shell_port", "iopub_port",
                  "connection_file"):
            if f not in info:
                die("connection info without %r: %r" % (f, sorted(info)))
        zc = ZmqClient(info)
        zc.ready()
        js = JupyterServer(sys.executable, tmp)
        ws = WsClient(js, js.start_kernel())
        ws.ready()

        body = json.dumps({"code": CODE, "context": {"id": ctx_id}}).encode()
        _, _, data = execd_run(ex, body)
        events = [json.loads(e) for e in data.split(b"\n\n") if e.strip()]
        if not any(e.get("type") == "result"
                   and e.get("results", {}).get("text") == "2"
                   for e in events) or events[-1]["type"] != \
                "execution_complete":
            die("execd: 1+1 gave %r" % data[:600])
        for _ in range(WARMUPS):
            execd_run(ex, body)
            zc.round_trip()
            ws.round_trip()
            WsClient.fresh_round_trip(js, js.kernel)
            xw = WsClient(execd_ws_server(ex), ctx_id)
            xw.ready()
            xw.round_trip()
            xw.close()
            xw = None
        zc.drain()

        e_t, e_h, z_t, j_t, f_t, x_t = [], [], [], [], [], []
        done = 0
        while done < n:
            k = min(BLOCK, n - done)
            for _ in range(k):
                t, h, _ = execd_run(ex, body)
                e_t.append(t)
                e_h.append(h)
            zc.drain()
            for _ in range(k):
                z_t.append(zc.round_trip())
            for _ in range(k):
                j_t.append(ws.round_trip())
            for _ in range(k):
                f_t.append(WsClient.fresh_round_trip(js, js.kernel))
            # execd's channels, kept open for the block: opened here and
            # closed after it so that execd does not also copy the other
            # blocks' iopub to it (every client of a kernel gets all of
            # it), which would weigh on the POST /code rows.  A
            # kernel_info round trip first, untimed.
            xw = WsClient(execd_ws_server(ex), ctx_id)
            xw.ready()
            xw.drain()
            for _ in range(k):
                x_t.append(xw.round_trip())
            xw.close()
            xw = None
            done += k
        med = statistics.median
        print("%d %d %d %d %d %d %d %d %d %d %d" % (
            med(e_t), min(e_t), med(z_t), min(z_t), med(j_t), min(j_t),
            med(f_t), min(f_t), med(e_h), med(x_t), min(x_t)))
    finally:
        if xw is not None:
            xw.close()
        if ws is not None:
            ws.close()
        if js is not None:
            js.close()
        if zc is not None:
            zc.close()
        if ex is not None:
            if ctx_id is not None and ex.proc.poll() is None:
                try:
                    ex.request("DELETE", "/code/contexts/" + ctx_id)
                except OSError:
                    pass
            ex.close()


FANOUT_LINE = "x" * 200


def fanout_code(lines):
    """A cell that prints `lines` lines, each flushed: about one stream
    message apiece on iopub."""
    return ("for i in range(%d):\n    print(%r, i, flush=True)\n"
            % (lines, FANOUT_LINE))


def cmd_fanout(binary, n, tmp, lines="1000"):
    """n clients on one kernel's channels; one of them runs a cell that
    prints `lines` lines; each client collects the run's iopub messages,
    and so does a bare ZeroMQ subscriber of the kernel (the reference).
    execd's RSS is sampled throughout."""
    lines = int(lines)
    ex = zc = None
    clients = []
    ctx_id = None
    try:
        ex = start_execd(binary, tmp, "execd-fanout", "--log-level", "warn")
        ctx_id = ex.json("POST", "/code/context", {"language": "python"})["id"]
        info = ex.json("GET", "/code/contexts/%s/connection" % ctx_id)
        zc = ZmqClient(info)
        zc.iopub.rcvhwm = 0         # the reference drops nothing
        zc.ready()
        body = json.dumps({"code": CODE, "context": {"id": ctx_id}}).encode()
        execd_run(ex, body)
        time.sleep(0.2)
        pid = ex.proc.pid
        rss_idle = benchlib.rss_kib(pid)
        srv = execd_ws_server(ex)
        for _ in range(n):
            c = WsClient(srv, ctx_id)
            clients.append(c)
            c.ready()
        for c in clients:
            c.drain()
        zc.drain()
        time.sleep(0.2)
        rss_conn = benchlib.rss_kib(pid)

        peak = [rss_conn]
        done = threading.Event()

        def sample():
            while not done.is_set():
                try:
                    peak[0] = max(peak[0], benchlib.rss_kib(pid))
                except OSError:
                    return
                time.sleep(0.001)

        results = [None] * (n + 1)

        def collect(i, who, mid):
            try:
                results[i] = who.iopub_of(mid)
            except Exception as e:      # reported below, not lost
                results[i] = e

        sampler = threading.Thread(target=sample)
        sampler.start()
        mid = clients[0].send("execute_request",
                              dict(execute_content(),
                                   code=fanout_code(lines)))
        readers = [threading.Thread(target=collect, args=(i, c, mid))
                   for i, c in enumerate(clients)]
        readers.append(threading.Thread(target=collect, args=(n, zc, mid)))
        for t in readers:
            t.start()
        for t in readers:
            t.join()
        time.sleep(0.2)
        done.set()
        sampler.join()
        rss_after = benchlib.rss_kib(pid)

        ref = results[n]
        if isinstance(ref, Exception):
            die("the zmq reference: %s" % ref)
        text = "".join(t for _, k, t in ref if k == "stream")
        if text.count("\n") != lines:
            die("the cell printed %d lines, not %d"
                % (text.count("\n"), lines))
        ids = [m for m, _, _ in ref]
        ok = 0
        for i, r in enumerate(results[:n]):
            if isinstance(r, Exception):
                sys.stderr.write("client %d: %s\n" % (i, r))
            elif [m for m, _, _ in r] != ids:
                sys.stderr.write("client %d saw %d of %d iopub messages, or "
                                 "not in order\n" % (i, len(r), len(ids)))
            else:
                ok += 1
        print("%d %d %d %d %d %d %d" % (
            ok, len(ids), rss_idle, rss_conn, peak[0], rss_after,
            min(c.nbytes for c in clients)))
    finally:
        for c in clients:
            c.close()
        if zc is not None:
            zc.close()
        if ex is not None:
            if ctx_id is not None and ex.proc.poll() is None:
                try:
                    ex.request("DELETE", "/code/contexts/" + ctx_id)
                except OSError:
                    pass
            ex.close()


def kernel_of(ex, connection_file):
    """The pid of execd's child that runs the kernel of connection_file."""
    for pid in benchlib.children(ex.proc.pid):
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if connection_file.encode() in argv:
            return pid
    die("no child of execd runs the kernel of %s" % connection_file)


def execd_interrupted(ex, ctx_id):
    """POST a sleeping cell, DELETE /code after INT_AFTER: DELETE to the
    end of the stream, us."""
    body = json.dumps({"code": SLEEP_CODE, "context": {"id": ctx_id}})
    c = ex.conn
    c.request("POST", "/code", body=body,
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 200:
        die("execd: POST /code: %d %r" % (r.status, r.read()[:400]))
    d = http.client.HTTPConnection("127.0.0.1", ex.port, timeout=TIMEOUT)
    d.connect()
    time.sleep(INT_AFTER)
    t0 = now_us()
    d.request("DELETE", "/code?id=" + ctx_id)
    dr = d.getresponse()
    dr.read()
    data = r.read()
    t1 = now_us()
    d.close()
    if dr.status != 200 or b'"KeyboardInterrupt"' not in data or \
            b'"execution_complete"' not in data:
        die("execd: interrupted run: DELETE %d, %r" % (dr.status,
                                                       data[-400:]))
    return t1 - t0


def cmd_interrupt(binary, n, tmp):
    ex = zc = None
    ctx_id = None
    try:
        ex = start_execd(binary, tmp, "execd", "--log-level", "warn")
        ctx_id = ex.json("POST", "/code/context", {"language": "python"})["id"]
        info = ex.json("GET", "/code/contexts/%s/connection" % ctx_id)
        pid = kernel_of(ex, info["connection_file"])
        zc = ZmqClient(info)
        zc.ready()
        ours, base = [], []
        for i in range(n + 1):     # the first of each is a warm-up
            zc.past_abort()
            t = execd_interrupted(ex, ctx_id)
            zc.drain()
            zc.past_abort()
            b = zc.interrupted(pid)
            if i > 0:
                ours.append(t)
                base.append(b)
        med = statistics.median
        print("%d %d %d %d" % (med(ours), min(ours), med(base), min(base)))
    finally:
        if zc is not None:
            zc.close()
        if ex is not None:
            if ctx_id is not None and ex.proc.poll() is None:
                try:
                    ex.request("DELETE", "/code/contexts/" + ctx_id)
                except OSError:
                    pass
            ex.close()


def log_count(ex, pattern):
    return len(re.findall(pattern, read(ex.log_path)))


def wait_log(ex, pattern, count, timeout, what):
    """Until pattern occurs count times in ex's log."""
    deadline = time.monotonic() + timeout
    while log_count(ex, pattern) < count:
        if ex.proc.poll() is not None:
            die("execd exited while waiting for %s: %s"
                % (what, read(ex.log_path)[-600:]))
        if time.monotonic() > deadline:
            die("no %s within %d s: %s" % (what, timeout,
                                           read(ex.log_path)[-600:]))
        time.sleep(0.005)


READY = r"kernel=[0-9a-f-]+ ready\b"


def create_delete(ex):
    """One timed POST /code/context; the context deleted and reaped after."""
    t0 = now_us()
    st, data = ex.request("POST", "/code/context", {"language": "python"})
    t = now_us() - t0
    if st != 200:
        die("execd: POST /code/context: %d %r" % (st, data[:400]))
    cid = json.loads(data)["id"]
    st, data = ex.request("DELETE", "/code/contexts/" + cid)
    if st not in (200, 204):
        die("execd: DELETE /code/contexts/%s: %d %r" % (cid, st, data[:400]))
    wait_log(ex, r"reaped: (?:kernel|context)=%s\b" % cid, 1, 10,
             "reaping of " + cid)
    return t


def cmd_context(binary, n, tmp):
    nopool, pool = [], []
    ex = start_execd(binary, tmp, "execd-nopool", "--log-level", "info")
    try:
        for _ in range(n):
            nopool.append(create_delete(ex))
    finally:
        ex.close()
    ex = start_execd(binary, tmp, "execd-pool", "--log-level", "info",
                     "--pool", "python=1")
    try:
        for i in range(n):
            wait_log(ex, READY, i + 1, READY_TIMEOUT,
                     "ready pool kernel (%d)" % (i + 1))
            pool.append(create_delete(ex))
        # Leave no kernel starting behind: the last refill, then stop.
        wait_log(ex, READY, n + 1, READY_TIMEOUT, "last refill")
    finally:
        ex.close()
    print("%d %d %d %d %d" % (statistics.median(nopool), min(nopool),
                              statistics.median(pool), min(pool),
                              max(pool)))


def spawn_true(sh="/bin/sh"):
    """Spawn `sh -c true` directly and wait for it: microseconds."""
    t0 = now_us()
    pid = os.posix_spawn(sh, [sh, "-c", "true"], os.environ)
    os.waitpid(pid, 0)
    return now_us() - t0


def cmd_command(binary, n, tmp):
    """POST /command of `true` to its final event, vs spawning it; and a
    GET /ping on the same connection: the HTTP round trip's share."""
    ex = start_execd(binary, tmp, "execd-command", "--log-level", "warn")
    body = json.dumps({"command": "true"}).encode()
    ours, base, bash, ping = [], [], [], []
    try:
        for i in range(n + 10):
            c = ex.conn
            t0 = now_us()
            c.request("POST", "/command", body=body,
                      headers={"Content-Type": "application/json"})
            r = c.getresponse()
            data = r.read()
            t = now_us() - t0
            if r.status != 200 or b'"execution_complete"' not in data:
                die("execd: POST /command: %d %r" % (r.status, data[-400:]))
            b = spawn_true()
            bb = spawn_true("/bin/bash")
            t0 = now_us()
            c.request("GET", "/ping")
            r = c.getresponse()
            r.read()
            p = now_us() - t0
            if r.status != 200:
                die("execd: GET /ping: %d" % r.status)
            if i >= 10:
                ours.append(t)
                base.append(b)
                bash.append(bb)
                ping.append(p)
    finally:
        ex.close()
    print("%d %d %d %d %d %d" % (statistics.median(ours), min(ours),
                                 statistics.median(base), min(base),
                                 statistics.median(bash),
                                 statistics.median(ping)))

# --- RL episodes: a fresh context per episode --------------------------------

EPISODE_CODE = ("import math\n"
                "x = [math.sqrt(i) for i in range(100)]\n"
                "print(sum(x))")
EPISODE_CLIENTS = 8
FORK_READY = r"fork server pid=\d+ for \S+: imports done, serving"


def episode(conn, what):
    """One episode: "context" (new context, the snippet, delete it),
    "ephemeral" (the snippet in one POST /code of an ephemeral context)
    or "command" (the snippet as python3 -c through POST /command)."""
    def post(path, body):
        conn.request("POST", path, body=json.dumps(body).encode(),
                     headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        data = r.read()
        if r.status != 200:
            die("execd: POST %s: %d %r" % (path, r.status, data[-400:]))
        return data
    if what == "command":
        data = post("/command", {"command": "/usr/bin/python3 -c '%s'"
                                 % EPISODE_CODE.replace("\n", ";")})
    elif what == "ephemeral":
        data = post("/code", {"code": EPISODE_CODE, "context": {
            "language": "python", "ephemeral": True}})
    else:
        cid = json.loads(post("/code/context",
                              {"language": "python"}))["id"]
        data = post("/code", {"code": EPISODE_CODE, "context": {"id": cid}})
        conn.request("DELETE", "/code/contexts/" + cid)
        r = conn.getresponse()
        r.read()
        if r.status not in (200, 204):
            die("execd: DELETE /code/contexts/%s: %d" % (cid, r.status))
    if b'"execution_complete"' not in data or b"661.4629" not in data:
        die("execd: an episode's output: %r" % data[-400:])


def episodes_per_s(ex, what, n):
    """n episodes over EPISODE_CLIENTS connections at once: per second."""
    import threading
    left = [n]
    lock = threading.Lock()
    errs = []

    def client():
        conn = http.client.HTTPConnection("127.0.0.1", ex.port,
                                          timeout=TIMEOUT)
        try:
            while True:
                with lock:
                    if left[0] == 0:
                        return
                    left[0] -= 1
                episode(conn, what)
        except BaseException as e:   # die() exits: keep the first cause
            errs.append(e)
        finally:
            conn.close()
    ts = [threading.Thread(target=client) for _ in range(EPISODE_CLIENTS)]
    t0 = now_us()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errs:
        die("an episode failed: %r" % errs[0])
    return n * 1e6 / (now_us() - t0)


BATCH_ITEMS = 200


def batch_per_s(ex, n):
    """n episodes as one POST /code/batch, EPISODE_CLIENTS at a time (as
    many as the clients of episodes_per_s; execd is started with
    --batch-concurrency that high): per second, the request's whole
    time."""
    body = json.dumps({"items": [{"code": EPISODE_CODE,
                                  "language": "python"}] * n,
                       "concurrency": EPISODE_CLIENTS}).encode()
    conn = http.client.HTTPConnection("127.0.0.1", ex.port, timeout=600)
    try:
        t0 = now_us()
        conn.request("POST", "/code/batch", body=body,
                     headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        data = r.read()
        t = now_us() - t0
    finally:
        conn.close()
    if r.status != 200:
        die("execd: POST /code/batch: %d %r" % (r.status, data[-400:]))
    items = json.loads(data)["items"]
    bad = [i for i in items if i.get("status") != "ok"
           or "661.4629" not in i.get("stdout", "")]
    if len(items) != n or bad:
        die("execd: a batch item's answer: %r" % (bad[:1] or len(items)))
    return n * 1e6 / t


def cmd_episodes(binary, n, tmp):
    """Episodes/s with 8 clients, with the fork server and without, and
    the same snippet as python3 -c through POST /command; and the median
    of one fresh context ready (no pool), with and without; and (fork on)
    BATCH_ITEMS episodes as one POST /code/batch, and N one-request
    episodes (ephemeral runs).  Prints "fork_eps nofork_eps command_eps
    fork_ready_us nofork_ready_us batch_eps ephemeral_eps"."""
    out = {}
    for fork in ("on", "off"):
        ex = start_execd(binary, tmp, "execd-episodes-" + fork,
                         "--log-level", "info", "--kernel-fork", fork,
                         "--batch-concurrency", str(EPISODE_CLIENTS))
        try:
            create_delete(ex)       # starts the server (fork on)
            if fork == "on":
                wait_log(ex, FORK_READY, 1, READY_TIMEOUT, "fork server")
            for _ in range(3):
                create_delete(ex)
            ready = [create_delete(ex) for _ in range(n)]
            out[fork] = (episodes_per_s(ex, "context", n),
                         statistics.median(ready))
            if fork == "on":
                out["command"] = episodes_per_s(ex, "command", n)
                out["batch"] = batch_per_s(ex, BATCH_ITEMS)
                out["ephemeral"] = episodes_per_s(ex, "ephemeral", n)
        finally:
            ex.close()
    print("%.1f %.1f %.1f %d %d %.1f %.1f" % (
        out["on"][0], out["off"][0], out["command"], out["on"][1],
        out["off"][1], out["batch"], out["ephemeral"]))


if __name__ == "__main__":
    sys.exit(benchlib.main(sys.argv, {"exec": cmd_exec,
                                      "context": cmd_context,
                                      "command": cmd_command,
                                      "interrupt": cmd_interrupt,
                                      "fanout": cmd_fanout,
                                      "episodes": cmd_episodes},
                           "usage: code_bench.py exec|context|command|"
                           "interrupt|episodes EXECD N\n"
                           "       code_bench.py fanout EXECD CLIENTS "
                           "[LINES]\n"))
