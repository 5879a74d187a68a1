"""Signals, children, orphans, descriptors and connection limits; what a
killed execd leaves behind."""
import http.client
import json
import os
import shutil
import signal
import socket
import tempfile
import time

from lib import Execd, alive, children_of, wait_for


def ping_ok(d):
    try:
        return d.request("GET", "/ping")[0] == 200
    except (OSError, http.client.HTTPException):
        return False


def test_sigterm_and_sigint_exit_0():
    for sig in (signal.SIGTERM, signal.SIGINT):
        d = Execd().start()
        assert d.request("GET", "/ping")[0] == 200
        t0 = time.monotonic()
        assert d.stop(sig) == 0
        assert time.monotonic() - t0 < 3
        assert "stopped" in d.read_log()


def test_shutdown_terminates_children():
    # The shell starts a child, then becomes execd: the child is execd's.
    d = Execd(wrapper="sleep 300 & exec").start()
    kids = wait_for(lambda: children_of(d.proc.pid))
    assert kids, "no child"
    pid = kids[0][0]
    assert d.stop() == 0
    assert not alive(pid)


def test_child_ignoring_sigterm_is_killed_after_the_grace_period():
    d = Execd("--grace-period", "300",
              wrapper="(trap '' TERM; exec sleep 300) & exec").start()
    kids = wait_for(lambda: children_of(d.proc.pid))
    pid = kids[0][0]
    time.sleep(0.2)  # let the subshell install its trap and exec
    t0 = time.monotonic()
    assert d.stop() == 0
    assert 0.25 < time.monotonic() - t0 < 5
    assert not alive(pid)
    assert "SIGKILL" in d.read_log()


def comm(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return ""


def test_orphans_are_adopted_and_reaped():
    # The wrapper's subshell exits after execd started, orphaning its own
    # child; as a subreaper execd adopts that child and must reap it when
    # it exits, leaving no zombie.
    d = Execd(wrapper="(sleep 0.4; sleep 1.5 & exit 0) & exec").start()
    adopted = wait_for(lambda: [p for p, st in children_of(d.proc.pid)
                                if comm(p) == "sleep" and st != "Z"
                                and not children_of(p)], timeout=5)
    assert adopted, children_of(d.proc.pid)
    assert wait_for(lambda: not children_of(d.proc.pid), timeout=10), \
        children_of(d.proc.pid)
    assert d.request("GET", "/ping")[0] == 200
    assert d.stop() == 0


def test_no_descriptor_leak_after_many_requests():
    with Execd("--max-body-size", "64") as d:
        d.request("GET", "/ping")
        base = d.fds()
        for i in range(100):
            d.request("GET", "/ping")
            d.request("GET", "/metrics")
            d.request("GET", "/nope")
            d.request("POST", "/directories", body="{bad")
            d.request("POST", "/directories", body="x" * 100)
        assert wait_for(lambda: d.fds() <= base, timeout=5), (d.fds(), base)


def test_idle_connection_is_closed_after_the_timeout():
    with Execd("--connection-timeout", "1") as d:
        s = socket.create_connection((d.host, d.port), 10)
        s.sendall(b"GET /ping HTTP/1.1\r\nHo")   # a slow, stalled client
        t0 = time.monotonic()
        s.settimeout(10)
        data = s.recv(100)
        assert time.monotonic() - t0 < 5
        assert data == b"" or data.startswith(b"HTTP/1.1"), data
        s.close()


def assert_refused_past(d, limit, request=None):
    """limit connections are held (each having sent request, if given,
    and seen its answer start); one more is closed unserved."""
    held = []
    for _ in range(limit):
        h = socket.create_connection((d.host, d.port), 5)
        if request is not None:
            h.sendall(request)
            assert h.recv(100).startswith(b"HTTP/1.1 200"), "not held"
        held.append(h)
    time.sleep(0.2)
    s = socket.create_connection((d.host, d.port), 5)
    try:
        s.sendall(b"GET /ping HTTP/1.1\r\nHost: x\r\n\r\n")
        data = s.recv(100)
    except ConnectionResetError:
        data = b""
    assert data == b"", data
    for h in held:
        h.close()
    assert wait_for(lambda: ping_ok(d))


def test_per_address_connection_limit():
    with Execd("--max-connections-per-ip", "2") as d:
        assert_refused_past(d, 2)


def test_total_connection_limit():
    # Connections that only wait give way to new ones (test_http), so
    # the limit is held with streams, which never do.
    with Execd("--max-connections", "3") as d:
        assert_refused_past(d, 3, b"GET /metrics/watch HTTP/1.1\r\n"
                            b"Host: x\r\n\r\n")


def test_no_new_connections_once_shutting_down():
    d = Execd("--grace-period", "1500",
              wrapper="(trap '' TERM; exec sleep 300) & exec").start()
    wait_for(lambda: children_of(d.proc.pid))
    time.sleep(0.2)
    d.send(signal.SIGTERM)
    time.sleep(0.3)   # execd now waits for its stubborn child
    assert d.proc.poll() is None
    try:
        socket.create_connection((d.host, d.port), 2).close()
        refused = False
    except ConnectionRefusedError:
        refused = True
    assert refused
    assert d.stop() == 0


def test_as_pid_1_reaps_orphans_and_stops_on_sigterm():
    # execd as PID 1 of a new PID namespace, as in a container.
    d = Execd(wrapper="exec unshare --pid --fork --kill-child sh -c "
              "'(sleep 0.4; sleep 1 & exit 0) & exec \"$0\" \"$@\"'")
    d.start()
    execd = wait_for(lambda: [p for p, st in children_of(d.proc.pid)
                              if comm(p) == "execd"])
    assert execd, children_of(d.proc.pid)
    pid = execd[0]
    assert wait_for(lambda: [p for p, st in children_of(pid)
                             if comm(p) == "sleep" and not children_of(p)],
                    timeout=5), children_of(pid)
    assert wait_for(lambda: not children_of(pid), timeout=10), \
        children_of(pid)
    assert d.request("GET", "/ping")[0] == 200
    os.kill(pid, signal.SIGTERM)
    assert d.proc.wait(10) == 0
    assert "stopped" in d.read_log()


def start_slow_upload(d, path, size):
    """Send the headers of an upload of size bytes to path, then 8 MiB of
    its content; the open socket."""
    b = b"----crash-test-boundary"
    head = (b"--%s\r\nContent-Disposition: form-data; name=\"metadata\"; "
            b"filename=\"metadata\"\r\nContent-Type: application/json"
            b"\r\n\r\n%s\r\n--%s\r\nContent-Disposition: form-data; "
            b"name=\"file\"; filename=\"blob\"\r\nContent-Type: "
            b"application/octet-stream\r\n\r\n" % (
                b, json.dumps({"path": path}).encode(), b))
    tail = b"\r\n--%s--\r\n" % b
    s = socket.create_connection((d.host, d.port), 10)
    s.sendall(b"POST /files/upload HTTP/1.1\r\nHost: x\r\nContent-Type: "
              b"multipart/form-data; boundary=%s\r\nContent-Length: %d"
              b"\r\n\r\n" % (b, len(head) + size + len(tail)))
    s.sendall(head)
    for i in range(8):
        s.sendall(b"x" * (1 << 20))
    return s


def temporaries(dirpath, base):
    return [n for n in os.listdir(dirpath)
            if n.startswith("." + base + ".execd-")]


def test_upload_temporaries_of_a_killed_execd_are_removed_at_start():
    run = tempfile.mkdtemp(prefix="execd-run-")
    files = tempfile.mkdtemp(prefix="execd-up-")
    try:
        d = Execd("--runtime-dir", run).start()
        s = start_slow_upload(d, files + "/big.bin", 40 << 20)
        # The temporary is there and growing; then execd dies.
        assert wait_for(lambda: [n for n in temporaries(files, "big.bin")
                                 if os.path.getsize(os.path.join(files, n))
                                 >= 4 << 20], timeout=10), \
            os.listdir(files)
        d.proc.kill()
        d.proc.wait()
        s.close()
        left = temporaries(files, "big.bin")
        assert len(left) == 1, os.listdir(files)
        # Files that only look like ours: never recorded, so kept.
        fakes = [os.path.join(files, ".other.execd-AbCdEf"),
                 os.path.join(files, ".big.bin.execd-Zz9Zz9")]
        for f in fakes:
            with open(f, "w") as fh:
                fh.write("not ours")
        d2 = Execd("--runtime-dir", run).start()
        # The log says "listening" a moment before the sweep is done.
        assert wait_for(lambda: "removed 1 upload temporaries" in
                        d2.read_log(), timeout=5), d2.read_log()
        assert not os.path.exists(os.path.join(files, left[0])), \
            os.listdir(files)
        for f in fakes:
            with open(f) as fh:
                assert fh.read() == "not ours", f
        assert not os.path.exists(files + "/big.bin")
        # A temporary of a live execd sharing the directory is left alone.
        s = start_slow_upload(d2, files + "/live.bin", 40 << 20)
        assert wait_for(lambda: temporaries(files, "live.bin"), timeout=10)
        d3 = Execd("--runtime-dir", run).start()
        # Answering means its start-up (and any sweep) is over.
        assert d3.request("GET", "/ping")[0] == 200
        assert d3.stop() == 0
        assert temporaries(files, "live.bin"), os.listdir(files)
        assert "upload temporaries" not in d3.read_log()
        s.close()
        assert wait_for(lambda: not temporaries(files, "live.bin"),
                        timeout=10), os.listdir(files)
        assert d2.stop() == 0
    finally:
        shutil.rmtree(run, ignore_errors=True)
        shutil.rmtree(files, ignore_errors=True)
