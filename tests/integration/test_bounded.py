"""What a client does not read, or sends in excess, costs execd bounded
memory and still gets its answer: a refused body that the client writes
whole before it reads is read and dropped (a lingering close) so that
the client reads the refusal, and such sockets count among the
half-open connections."""
import socket
import urllib.error
import urllib.request

from lib import Execd, expect_error, wait_for

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
