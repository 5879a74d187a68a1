"""What a client does not read, or sends in excess, costs execd bounded
memory and still gets its answer: a refused body that the client writes
whole before it reads is read and dropped (a lingering close) so that
the client reads the refusal, and such sockets count among the
half-open connections; a code run's output that its client does not
read waits on disk, cut to its head and tail, and arrives when the
client reads again."""
import json
import os
import socket
import threading
import time
import urllib.error
import urllib.request

from lib import (Execd, events, expect_error, kinds, new_context, run_code,
                 texts, under_asan, wait_for)

MIB = 1 << 20


def big_command_body(size):
    """A JSON body of about size bytes for POST /command."""
    return b'{"command": "echo ' + b"x" * size + b'"}'


def test_413_reaches_http_client_sending_64_mib_first():
    # The default --max-body-size is 16 MiB; the body is four times that
    # and http.client writes all of it before it reads the answer.
    with Execd() as d:
        body = big_command_body(64 * MIB)
        c = d.conn(timeout=60)
        c.request("POST", "/command", body=body,
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        expect_error(r.status, r.read(), 413, "REQUEST_TOO_LARGE")
        c.close()
        assert d.request("GET", "/ping")[0] == 200


def test_413_reaches_urllib_sending_64_mib_first():
    with Execd() as d:
        req = urllib.request.Request(
            "http://%s:%d/command" % (d.host, d.port),
            data=big_command_body(64 * MIB),
            headers={"Content-Type": "application/json"})
        try:
            urllib.request.urlopen(req, timeout=60)
            raise AssertionError("a 64 MiB body was accepted")
        except urllib.error.HTTPError as e:
            expect_error(e.code, e.read(), 413, "REQUEST_TOO_LARGE")


def refused_and_held(d):
    """A request refused at its headers (413) whose body has only begun:
    the socket stays open and execd lingers on it."""
    s = socket.create_connection((d.host, d.port), 5)
    s.sendall(b"POST /command HTTP/1.1\r\nHost: x\r\n"
              b"Content-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % (64 * MIB) + b"{" * 1000)
    got = b""
    while b"REQUEST_TOO_LARGE" not in got:
        chunk = s.recv(4096)
        assert chunk, got
        got += chunk
    assert got.startswith(b"HTTP/1.1 413 "), got
    return s


def test_lingering_sockets_count_as_half_open():
    with Execd(env={"EXECD_MAX_HALF_OPEN": "3"}) as d:
        base = d.fds()
        held = [refused_and_held(d) for _ in range(10)]
        def trickle():
            # Bytes keep coming on each, so none ends for being idle.
            for s in held:
                try:
                    s.send(b" " * 100)
                except OSError:
                    pass
            return d.fds() <= base + 3
        try:
            # Ten lingering sockets, three allowed: the oldest give way.
            assert wait_for(trickle, timeout=3, step=0.5), (d.fds(), base)
            assert d.request("GET", "/ping", timeout=5)[0] == 200
            st, _, data = d.request("POST", "/command", timeout=10,
                                    body={"command": "echo ok"})
            assert st == 200 and b"ok" in data, (st, data)
        finally:
            for s in held:
                s.close()
        assert wait_for(lambda: d.fds() <= base, timeout=10), d.fds()


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class RssPeak(threading.Thread):
    """The highest VmRSS of a process, sampled until stopped."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.peak, self.done = pid, rss_kib(pid), False

    def run(self):
        while not self.done:
            self.peak = max(self.peak, rss_kib(self.pid))
            time.sleep(0.02)

    def stop(self):
        self.done = True
        self.join()
        return self.peak


# 200 MiB in 2048 writes of 100 KiB, each a numbered line: at up to about
# 50 MB/s, as fast as code that computes what it prints, and slower than
# execd decodes (a kernel's PUB socket drops what its subscriber does not
# take in time; see test_code's slow reader).
BLOCKS, BLOCK = 2048, 100 << 10
LOUD = ("import sys, time\n"
        "for i in range(%d):\n"
        "    sys.stdout.write('%%09d' %% i + 'y' * %d + '\\n')\n"
        "    sys.stdout.flush()\n"
        "    time.sleep(0.002)\n" % (BLOCKS, BLOCK - 10))
UNREAD_S = 12       # the client reads nothing for this long


def test_unread_kernel_output_stays_bounded_then_arrives_cut():
    # Under AddressSanitizer freed memory waits in a quarantine before it
    # is used again: without one, RSS means what it means in the other
    # builds (which ignore the option).
    asan = os.environ.get("ASAN_OPTIONS", "")
    env = {"ASAN_OPTIONS": asan + (":" if asan else "") +
           "quarantine_size_mb=0:allocator_release_to_os_interval_ms=0"}
    with Execd(env=env) as d:
        ctx = new_context(d)
        st, evs = run_code(d, "print('warm')", id=ctx["id"])
        assert texts(evs, "stdout") == "warm\n", evs
        base_fds = d.fds()
        time.sleep(0.5)
        rss = RssPeak(d.proc.pid)
        base = rss.peak
        rss.start()
        c = d.conn(timeout=120)
        c.request("POST", "/code", body=json.dumps(
            {"code": LOUD, "context": {"id": ctx["id"]}}),
            headers={"Content-Type": "application/json"})
        r = c.getresponse()
        assert r.status == 200
        time.sleep(UNREAD_S)
        data = r.read()
        peak = rss.stop()
        c.close()
        evs = events(data)
        k = kinds(evs)
        assert k[-1] == "execution_complete", k[-5:]
        marks = [i for i, e in enumerate(evs) if e["type"] == "stderr"]
        assert len(marks) == 1, [evs[i]["text"][:200] for i in marks]
        # --max-output 16M: the first 8 MiB, the marker, the last 8 MiB.
        head = texts(evs[:marks[0]], "stdout")
        tail = texts(evs[marks[0]:], "stdout")
        half = 8 * MIB
        assert len(head) == half and len(tail) == half, (len(head),
                                                         len(tail))
        line = "y" * (BLOCK - 10) + "\n"
        assert head.startswith("000000000" + line + "000000001"), head[:20]
        assert tail.endswith("%09d" % (BLOCKS - 1) + line), tail[-20:]
        dropped = BLOCKS * BLOCK - 2 * half
        m = evs[marks[0]]["text"]
        assert "%d bytes dropped" % dropped in m, m
        # The product's promise: under 8 MiB more while nobody reads
        # (ASan's allocator adds its own overhead: bounded, not 8 MiB).
        grew = peak - base
        bound = (24 if under_asan(d) else 8) << 10
        assert grew < bound, "execd grew by %d KiB" % grew
        # The run's spool file is gone with the run.
        assert wait_for(lambda: d.fds() <= base_fds, timeout=10), (
            d.fds(), base_fds)
