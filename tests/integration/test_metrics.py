"""GET /metrics and the GET /metrics/watch stream."""
import json
import os
import socket
import time

from lib import Execd, wait_for

FIELDS = ["cpu_count", "cpu_used_pct", "mem_total_mib", "mem_used_mib",
          "timestamp"]


def check_sample(m, isolation=False):
    """Upstream's fields; GET /metrics adds the isolation object and the
    loop's longest stall (the watch stream does not)."""
    ours = ["isolation", "loop_stall_max_ms"]
    assert sorted(m) == sorted(FIELDS + (ours if isolation else [])), m
    if isolation:
        assert m["isolation"]["limits"] in ("cgroup v1", "cgroup v2",
                                            "rlimits"), m
        assert isinstance(m["loop_stall_max_ms"], int), m
        assert m["loop_stall_max_ms"] >= 0, m
    assert m["cpu_count"] >= 1
    assert 0 <= m["cpu_used_pct"] <= 100, m
    assert m["mem_total_mib"] > 0
    assert 0 <= m["mem_used_mib"] <= m["mem_total_mib"], m
    assert abs(m["timestamp"] - time.time() * 1000) < 60000, m


def test_metrics_fields_and_no_sampling_sleep():
    with Execd() as d:
        took = []
        for _ in range(3):
            t0 = time.monotonic()
            st, h, body = d.request("GET", "/metrics")
            took.append(time.monotonic() - t0)
            assert st == 200
            assert h["content-type"] == "application/json; charset=utf-8"
            check_sample(json.loads(body), isolation=True)
        # Upstream sleeps a second to sample; a sleep would be in each.
        assert min(took) < 0.9, took
        # Keys come sorted and compact, as upstream's encoder writes them.
        assert body.startswith(b'{"cpu_count":'), body


def test_metrics_memory_describes_our_cgroup_or_host():
    with Execd() as d:
        st, m = d.get_json("/metrics")
        with open("/proc/meminfo") as f:
            total = int(f.readline().split()[1]) / 1024
        assert m["mem_total_mib"] <= total + 1, (m, total)


def test_metrics_cpu_use_rises_under_load():
    with Execd() as d:
        d.get_json("/metrics")
        pid = os.fork()
        if pid == 0:  # burn one CPU for a short while, in our cgroup
            end = time.monotonic() + 1.0
            while time.monotonic() < end:
                pass
            os._exit(0)
        time.sleep(0.9)
        st, m = d.get_json("/metrics")
        os.waitpid(pid, 0)
        # One busy CPU of cpu_count, measured over ~0.9 s.
        assert m["cpu_used_pct"] >= 100 / m["cpu_count"] / 4, m


def read_stream(d, path, want, timeout=10, headers=b""):
    """Open a stream, return (head, [events]) after want events."""
    s = socket.create_connection((d.host, d.port), timeout)
    s.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: x\r\n" +
              headers + b"\r\n")
    buf = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        buf += s.recv(65536)
        if b"\r\n\r\n" in buf:
            head, body = buf.split(b"\r\n\r\n", 1)
            if dechunk(body)[0].count(b"\n\n") >= want:
                break
    head, body = buf.split(b"\r\n\r\n", 1)
    return s, head.decode(), dechunk(body)


def dechunk(b):
    """(payload, complete) of a chunked body read so far."""
    out = b""
    while True:
        i = b.find(b"\r\n")
        if i < 0:
            return out, False
        n = int(b[:i], 16)
        if n == 0:
            return out, True
        if len(b) < i + 2 + n + 2:
            return out, False
        out += b[i + 2:i + 2 + n]
        b = b[i + 2 + n + 2:]


def test_watch_streams_a_sample_a_second_with_stream_headers():
    with Execd() as d:
        t0 = time.monotonic()
        s, head, (payload, done) = read_stream(d, "/metrics/watch", 3)
        dt = time.monotonic() - t0
        s.close()
        lines = head.lower().split("\r\n")
        assert lines[0].startswith("http/1.1 200"), head
        for want in ("content-type: text/event-stream",
                     "cache-control: no-cache", "x-accel-buffering: no",
                     "transfer-encoding: chunked"):
            assert want in lines, (want, head)
        events = [e for e in payload.split(b"\n\n") if e]
        assert len(events) >= 3, payload
        for e in events:
            assert b"\n" not in e
            check_sample(json.loads(e))
        # The first sample comes at once, then about one a second.
        assert 1.5 < dt < 6, dt


def test_watch_client_leaving_frees_the_stream():
    with Execd() as d:
        d.request("GET", "/ping")
        base = d.fds()
        for _ in range(5):
            s, _, _ = read_stream(d, "/metrics/watch", 1)
            s.close()
        # The daemon notices at its next push (within a second or so).
        assert wait_for(lambda: d.fds() <= base, timeout=5), (d.fds(), base)
        assert d.request("GET", "/ping")[0] == 200


def test_watch_is_not_cut_by_the_idle_timeout():
    with Execd("--connection-timeout", "1") as d:
        s, head, (payload, done) = read_stream(d, "/metrics/watch", 4,
                                               timeout=15)
        s.close()
        assert len([e for e in payload.split(b"\n\n") if e]) >= 4, payload


def test_shutdown_ends_watch_with_a_final_event_and_terminator():
    d = Execd().start()
    s, _, _ = read_stream(d, "/metrics/watch", 1)
    d.send(15)
    buf = b""
    s.settimeout(10)
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    assert buf.endswith(b"0\r\n\r\n"), buf
    assert b'{"error":"execd is shutting down"}\n\n' in buf, buf
    assert d.stop() == 0


def test_watch_pings_every_few_seconds_like_every_stream():
    with Execd() as d:
        s, head, (payload, done) = read_stream(d, "/metrics/watch", 6,
                                               timeout=15)
        s.close()
        events = [json.loads(e) for e in payload.split(b"\n\n") if e]
        pings = [e for e in events if e.get("type") == "ping"]
        assert pings, events
        assert all(sorted(p) == ["text", "timestamp", "type"] and
                   p["text"] == "pong" for p in pings), pings
        samples = [e for e in events if "type" not in e]
        assert len(samples) >= 3, events
        for m in samples:
            check_sample(m)
