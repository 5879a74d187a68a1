"""Signals, children, orphans, descriptors and connection limits."""
import http.client
import os
import signal
import socket
import time

from lib import Execd, children_of, wait_for


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


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


def assert_refused_past(d, limit):
    """limit connections are held; one more is closed unserved."""
    held = [socket.create_connection((d.host, d.port), 5)
            for _ in range(limit)]
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
    with Execd("--max-connections", "3") as d:
        assert_refused_past(d, 3)


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
