"""POST /files/upload hands its body to the worker pool: the loop only
gathers the bytes, and one feed job at a time runs them through the
multipart parser into the temporaries (route_upload.c).  These provoke
the races around those jobs: a client that leaves while a job runs or
bytes wait for one, a parser failure found on a worker midway through a
large body, execd stopping mid-upload, and a large body arriving whole.
"""
import hashlib
import os
import shutil
import signal
import socket

from lib import Execd, expect_error, wait_for
from test_files import debris, multipart, tmpdir

BOUNDARY = "----formdata-test-0123456789"
MIB = 1 << 20


def head(n):
    return (b"POST /files/upload HTTP/1.1\r\nHost: x\r\nContent-Type: "
            b"multipart/form-data; boundary=%s\r\nContent-Length: %d\r\n"
            b"\r\n" % (BOUNDARY.encode(), n))


def send_part(d, body, upto, piece=65536):
    """Send the head and body[:upto] in pieces; returns the socket."""
    s = socket.create_connection((d.host, d.port), 30)
    s.sendall(head(len(body)))
    for i in range(0, upto, piece):
        s.sendall(body[i:min(i + piece, upto)])
    return s


def read_answer(s):
    out = b""
    while b"\r\n\r\n" not in out:
        chunk = s.recv(65536)
        if not chunk:
            break
        out += chunk
    return out


def test_clients_leaving_mid_upload_leave_no_temporaries():
    t = tmpdir()
    with open(t + "/keep", "wb") as f:
        f.write(b"the old content")
    body = multipart([({"path": t + "/keep"}, os.urandom(6 * MIB))])
    with Execd() as d:
        fds0 = d.fds()
        # Cut at points before, inside and past the pending buffer's
        # size, some by a reset rather than a close.
        for i, upto in enumerate((100000, MIB + 12345, 3 * MIB,
                                  len(body) - 100)):
            s = send_part(d, body, upto)
            if i % 2:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                             b"\x01\x00\x00\x00\x00\x00\x00\x00")
            s.close()
            assert wait_for(lambda: debris(t) == [], 20), (upto,
                                                           os.listdir(t))
            assert open(t + "/keep", "rb").read() == b"the old content"
            assert d.request("GET", "/ping")[0] == 200
        # Nothing of those uploads stays open.
        assert wait_for(lambda: d.fds() <= fds0, 20), (fds0, d.fds())
        # The same upload sent whole still works afterwards.
        s = send_part(d, body, len(body))
        assert read_answer(s).startswith(b"HTTP/1.1 200"), "whole upload"
        s.close()
        assert os.path.getsize(t + "/keep") == 6 * MIB
        assert debris(t) == []
    shutil.rmtree(t)


def test_a_bad_body_found_after_megabytes_is_the_same_400():
    t = tmpdir()
    hdr = {"Content-Type": "multipart/form-data; boundary=" + BOUNDARY}
    bad_part = b"--%s\r\n" % BOUNDARY.encode() + b"X" * 70000 + b"\r\n\r\n"
    with Execd() as d:
        # The parser's words for an over-long part header, at once...
        st, _, small = d.request("POST", "/files/upload", body=bad_part,
                                 headers=hdr)
        want = expect_error(st, small, 400, "INVALID_FILE")
        assert want["message"].startswith("malformed multipart body: "), want
        # ...and after a good pair of 4 MiB, found by a later feed job.
        good = multipart([({"path": t + "/a"}, os.urandom(4 * MIB))])
        good = good[:-len(b"--%s--\r\n" % BOUNDARY.encode())]
        st, _, body = d.request("POST", "/files/upload",
                                body=good + bad_part, headers=hdr,
                                timeout=60)
        got = expect_error(st, body, 400, "INVALID_FILE")
        assert got["message"] == want["message"], (got, want)
        # Nothing written, no temporary left.
        assert wait_for(lambda: os.listdir(t) == [], 10), os.listdir(t)
        assert d.request("GET", "/ping")[0] == 200
    shutil.rmtree(t)


def test_a_large_upload_in_small_pieces_arrives_whole():
    t = tmpdir()
    data = os.urandom(24 * MIB)
    body = multipart([({"path": t + "/big"}, data),
                      ({"path": t + "/small"}, b"tail")])
    with Execd() as d:
        s = send_part(d, body, len(body), piece=4096)
        assert read_answer(s).startswith(b"HTTP/1.1 200")
        s.close()
    with open(t + "/big", "rb") as f:
        assert hashlib.sha256(f.read()).digest() == \
            hashlib.sha256(data).digest()
    assert open(t + "/small", "rb").read() == b"tail"
    assert debris(t) == []
    shutil.rmtree(t)


def test_execd_stopping_mid_upload_ends_it_and_its_temporaries():
    t = tmpdir()
    body = multipart([({"path": t + "/f"}, os.urandom(8 * MIB))])
    d = Execd().start()
    try:
        s = send_part(d, body, 3 * MIB)
        assert wait_for(lambda: debris(t) != [], 10), os.listdir(t)
        rc = d.stop(signal.SIGTERM, timeout=30)
        assert rc == 0, d.read_log()[-3000:]
        s.close()
        assert debris(t) == [], os.listdir(t)
        assert not os.path.exists(t + "/f")
    finally:
        if d.proc.poll() is None:
            d.stop(signal.SIGKILL)
    shutil.rmtree(t)
