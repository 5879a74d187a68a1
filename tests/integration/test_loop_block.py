"""Downloads of files that a read may wait on forever (/proc/kmsg waits
for the next kernel message) must never hold the event loop: /ping
answers meanwhile, the body ends within a bound, and SIGTERM stops
execd at once.  Files of pseudo file systems that do have content
(/proc/version, /proc/<pid>/status: their size says 0) still download
whole."""
import os
import socket
import stat
import time

from lib import Execd, wait_for

KMSG = "/proc/kmsg"
# A download of a pseudo file ends after at most 2 s without new bytes
# and 30 s in all (pseudofile.c); a body that has not ended well past
# that means the bound does not hold.
END_WITHIN = 45


def kmsg_usable():
    """Why /proc/kmsg cannot be used here, or None when it can: reading
    it needs root (CAP_SYSLOG), and container runtimes may mask it."""
    if os.geteuid() != 0:
        return "not root"
    try:
        fd = os.open(KMSG, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        return "cannot open %s: %s" % (KMSG, e)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "%s is masked (not a regular file)" % KMSG
    finally:
        os.close(fd)
    return None


def skip_unless_kmsg():
    why = kmsg_usable()
    if why is not None:
        print("skipped: %s needs a readable %s (%s)" % (
            __name__, KMSG, why))
        return True
    return False


def hold_download(d, query):
    """Send the request on a raw socket and read nothing of the answer."""
    s = socket.create_connection((d.host, d.port), 5)
    s.sendall(b"GET /files/download?" + query.encode() +
              b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    return s


def read_to_close(s, limit):
    """Everything the server sends until it closes, within limit s."""
    out = b""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        s.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            break
        if not chunk:
            return out, True
        out += chunk
    return out, False


def ping_ok(d):
    st, _, _ = d.request("GET", "/ping", timeout=5)
    return st == 200


def test_kmsg_download_leaves_ping_answering_and_ends():
    if skip_unless_kmsg():
        return
    with Execd() as d:
        s = hold_download(d, "path=" + KMSG)
        time.sleep(0.5)     # the request is in, its body not read
        for _ in range(3):
            assert ping_ok(d)
        out, closed = read_to_close(s, END_WITHIN)
        s.close()
        assert closed, "the body did not end within %d s: %r" % (
            END_WITHIN, out[:200])
        head = out.split(b"\r\n", 1)[0]
        assert head.startswith(b"HTTP/1.1 200"), out[:200]
        assert out.endswith(b"0\r\n\r\n"), out[-200:]     # ended cleanly
        assert len(out) < (16 << 20) + 65536, len(out)
        assert ping_ok(d)
        t0 = time.monotonic()
        rc = d.stop(timeout=5)
        assert rc == 0, (rc, time.monotonic() - t0)


def test_sigterm_stops_execd_while_a_kmsg_download_waits():
    if skip_unless_kmsg():
        return
    with Execd() as d:
        s = hold_download(d, "path=" + KMSG)
        time.sleep(0.5)
        assert ping_ok(d)
        rc = d.stop(timeout=5)
        s.close()
        assert rc == 0, rc


def test_kmsg_line_window_leaves_ping_answering_and_ends():
    if skip_unless_kmsg():
        return
    with Execd() as d:
        s = hold_download(d, "path=%s&offset=1000000&limit=1" % KMSG)
        time.sleep(0.5)
        assert ping_ok(d)
        out, closed = read_to_close(s, END_WITHIN)
        s.close()
        assert closed, "the window did not end within %d s" % END_WITHIN
        assert out.startswith(b"HTTP/1.1 200"), out[:200]
        assert ping_ok(d)


def test_pseudo_files_of_size_zero_download_with_their_content():
    with open("/proc/version", "rb") as f:
        want = f.read()
    assert want, "the test holds: /proc/version has content"
    with Execd() as d:
        st, h, body = d.request("GET", "/files/download?path=/proc/version")
        assert st == 200, body
        assert body == want, (body, want)
        path = "/proc/%d/status" % d.proc.pid
        st, h, body = d.request(
            "GET", "/files/download?path=%s&offset=1&limit=2" % path)
        assert st == 200, body
        lines = body.split(b"\n")
        assert len(lines) == 2 and lines[0].startswith(b"Name:") and \
            lines[1].startswith(b"Umask:"), body
        assert wait_for(lambda: ping_ok(d), timeout=5)


def test_a_client_leaving_a_waiting_kmsg_download_leaks_nothing():
    if skip_unless_kmsg():
        return
    with Execd() as d:
        assert ping_ok(d)
        base = d.fds()
        for _ in range(3):
            s = hold_download(d, "path=" + KMSG)
            time.sleep(0.3)
            s.close()       # gone while the response sleeps
        assert ping_ok(d)
        # The wait ends within its idle bound, and the fd with it.
        assert wait_for(lambda: d.fds() <= base, timeout=15), \
            (base, os.listdir("/proc/%d/fd" % d.proc.pid))
        assert ping_ok(d)
