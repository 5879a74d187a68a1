"""The HTTP contract: ping, error bodies, routing, JSON request bodies."""
import json
import select
import socket
import time

from lib import (Execd, answered_amid, expect_error, pings_during,
                 wait_for)


def test_ping_is_empty_200_with_content_length_0():
    with Execd() as d:
        st, h, body = d.request("GET", "/ping")
        assert st == 200 and body == b""
        assert h.get("content-length") == "0", h
        assert "content-type" not in h, h


def test_ping_answers_within_milliseconds_of_start():
    d = Execd()
    t0 = time.monotonic()
    d.start()
    st, _, _ = d.request("GET", "/ping")
    # Generous: this guards against a start-up sleep, not a benchmark.
    assert st == 200 and time.monotonic() - t0 < 2.0


def test_unknown_path_is_404_json_and_keeps_the_connection():
    with Execd() as d:
        c = d.conn()
        st, h, body = d.request("GET", "/no/such/thing", conn=c)
        expect_error(st, body, 404, "NOT_FOUND")
        assert h["content-type"] == "application/json; charset=utf-8"
        assert h.get("connection", "").lower() != "close", h
        st, _, _ = d.request("GET", "/ping", conn=c)
        assert st == 200


def test_wrong_method_is_405_json_with_allow():
    with Execd() as d:
        st, h, body = d.request("DELETE", "/ping")
        expect_error(st, body, 405, "METHOD_NOT_ALLOWED")
        assert h["allow"] == "GET", h
        st, h, body = d.request("GET", "/directories")
        expect_error(st, body, 405)
        assert h["allow"] == "POST, DELETE", h


def test_trailing_slash_is_the_same_route():
    with Execd() as d:
        assert d.request("GET", "/ping/")[0] == 200


def test_many_requests_on_one_keep_alive_connection():
    with Execd() as d:
        c = d.conn()
        for _ in range(50):
            st, h, _ = d.request("GET", "/ping", conn=c)
            assert st == 200
        st, _, _ = d.request("POST", "/directories", body={}, conn=c)
        assert st == 200


def test_malformed_json_is_400_saying_where():
    with Execd() as d:
        st, _, body = d.request("POST", "/directories",
                                body='{"/tmp/x": {"mode": 7',
                                headers={"Content-Type": "application/json"})
        obj = expect_error(st, body, 400, "INVALID_REQUEST_BODY")
        assert "line 1, column" in obj["message"], obj


def test_empty_body_is_400():
    with Execd() as d:
        st, _, body = d.request("POST", "/directories", body="")
        expect_error(st, body, 400, "INVALID_REQUEST_BODY")


def test_wrong_field_type_is_400_naming_the_field():
    with Execd() as d:
        st, _, body = d.request("POST", "/directories",
                                body={"/tmp/q": {"mode": "755"}})
        obj = expect_error(st, body, 400, "INVALID_REQUEST_BODY")
        assert "'/tmp/q.mode'" in obj["message"], obj
        st, _, body = d.request("POST", "/directories", body=[1, 2])
        obj = expect_error(st, body, 400, "INVALID_REQUEST_BODY")
        assert "object" in obj["message"], obj


def test_body_over_the_cap_is_413():
    with Execd("--max-body-size", "1K") as d:
        big = json.dumps({"/tmp/%04d" % i: {} for i in range(200)})
        assert len(big) > 1024
        st, _, body = d.request("POST", "/directories", body=big)
        expect_error(st, body, 413, "REQUEST_TOO_LARGE")


def chunked(body, size=7):
    out = b""
    for i in range(0, len(body), size):
        part = body[i:i + size]
        out += b"%x\r\n%s\r\n" % (len(part), part)
    return out + b"0\r\n\r\n"


def test_chunked_request_body_is_accepted(tmp="/tmp/execd-chunked-test"):
    with Execd() as d:
        body = json.dumps({tmp + "/a/b": {"mode": 700}}).encode()
        resp = d.raw(b"POST /directories HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Type: application/json\r\n"
                     b"Transfer-Encoding: chunked\r\nConnection: close\r\n"
                     b"\r\n" + chunked(body))
        assert resp.startswith(b"HTTP/1.1 200"), resp
        import os
        import stat
        assert stat.S_IMODE(os.stat(tmp + "/a/b").st_mode) == 0o700
        import shutil
        shutil.rmtree(tmp)


def test_chunked_body_over_the_cap_is_413():
    with Execd("--max-body-size", "100") as d:
        body = json.dumps({"/tmp/%d" % i: {} for i in range(40)}).encode()
        resp = d.raw(b"POST /directories HTTP/1.1\r\nHost: x\r\n"
                     b"Transfer-Encoding: chunked\r\nConnection: close\r\n"
                     b"\r\n" + chunked(body, 16))
        assert resp.startswith(b"HTTP/1.1 413"), resp
        assert b'"code":"REQUEST_TOO_LARGE"' in resp, resp


def test_request_line_is_logged_without_body():
    with Execd() as d:
        d.request("POST", "/directories",
                  body={"/tmp/secret-body-value": {"mode": "x"}})
        d.request("GET", "/ping?probe=1")
        d.stop()
        log = d.read_log()
        assert "POST /directories 400" in log, log
        assert "GET /ping?probe=1 200" in log, log
        assert "secret-body-value" not in log, log


# -- slow clients, early errors, bounded body memory -----------------------

def trickle(sock, data, every, until):
    """Send data one byte at a time, every seconds, until the peer closes
    or until seconds have passed; the seconds it took the peer to close
    (None if it never did)."""
    t0 = time.monotonic()
    for i in range(len(data)):
        if time.monotonic() - t0 > until:
            return None
        try:
            sock.sendall(data[i:i + 1])
        except OSError:
            return time.monotonic() - t0
        r, _, _ = select.select([sock], [], [], every)
        if r:
            try:
                if sock.recv(4096) == b"":
                    return time.monotonic() - t0
            except OSError:
                return time.monotonic() - t0
    return None


def test_trickled_headers_are_cut_off_at_the_header_deadline():
    # Each byte restarts the idle timeout; the header deadline does not.
    with Execd("--connection-timeout", "30",
               env={"EXECD_HEADER_TIMEOUT": "2"}) as d:
        s = socket.create_connection((d.host, d.port), 5)
        took = trickle(s, b"GET /ping HTTP/1.1\r\nHost: x\r\n" + b"X" * 200,
                       0.5, 20)
        s.close()
        assert took is not None and 1.0 <= took < 10, took
        # A client that sends its headers in time is served as before.
        assert d.request("GET", "/ping")[0] == 200


def test_a_body_below_the_minimum_rate_is_cut_off():
    with Execd("--connection-timeout", "30",
               env={"EXECD_BODY_TIMEOUT": "2",
                    "EXECD_BODY_MIN_RATE": "1K"}) as d:
        s = socket.create_connection((d.host, d.port), 5)
        s.sendall(b"POST /directories HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Type: application/json\r\n"
                  b"Content-Length: 100000\r\n\r\n")
        # Five bytes a second: far below 1 KiB/s.
        took = trickle(s, b"{" + b" " * 1000, 0.2, 30)
        s.close()
        assert took is not None and took < 15, took
        assert d.request("GET", "/ping")[0] == 200


def test_half_open_connections_do_not_lock_out_others():
    token = "half-open-token"
    with Execd("--max-connections", "200", "--access-token", token) as d:
        held = []
        try:
            for i in range(320):
                s = socket.create_connection((d.host, d.port), 5)
                s.sendall(b"GET /pi" if i % 2 else b"GET /ping HTTP/1.1\r\n"
                          b"X-EXECD-ACCESS-TOKEN: " + token.encode())
                held.append(s)
            t0 = time.monotonic()
            st, _, _ = d.request("GET", "/ping", timeout=5, headers={
                "X-EXECD-ACCESS-TOKEN": token})
            assert st == 200, st
            st, h, data = d.request(
                "POST", "/command", body={"command": "echo ok"},
                headers={"X-EXECD-ACCESS-TOKEN": token}, timeout=5)
            assert st == 200 and b"ok" in data, (st, data)
            assert time.monotonic() - t0 < 5
        finally:
            for s in held:
                s.close()


def test_streams_do_not_count_as_half_open():
    with Execd(env={"EXECD_MAX_HALF_OPEN": "8"}) as d:
        streams = []
        for _ in range(10):
            c = d.conn(timeout=20)
            c.request("POST", "/command", body=json.dumps(
                {"command": "sleep 2; echo done"}),
                headers={"Content-Type": "application/json"})
            r = c.getresponse()
            assert r.status == 200
            streams.append((c, r))
        held = []
        for _ in range(30):
            s = socket.create_connection((d.host, d.port), 5)
            s.sendall(b"GET /pi")
            held.append(s)
        assert d.request("GET", "/ping", timeout=5)[0] == 200
        for c, r in streams:
            assert b"done" in r.read()
            c.close()
        for s in held:
            s.close()


def test_413_reaches_a_client_that_writes_the_whole_body_first():
    with Execd("--max-body-size", "1K") as d:
        base = d.fds()
        big = b"[" + b"1," * (4 << 20) + b"1]"
        c = d.conn(timeout=20)
        c.request("POST", "/directories", body=big,
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        expect_error(r.status, r.read(), 413, "REQUEST_TOO_LARGE")
        c.close()
        # The lingering socket is closed once the client has gone.
        assert wait_for(lambda: d.fds() <= base, timeout=10), d.fds()


def test_buffered_bodies_share_a_memory_cap():
    with Execd("--max-body-size", "1M",
               env={"EXECD_BODY_MEMORY": "2M"}) as d:
        held = []
        for _ in range(3):
            s = socket.create_connection((d.host, d.port), 5)
            s.sendall(b"POST /directories HTTP/1.1\r\nHost: x\r\n"
                      b"Content-Type: application/json\r\n"
                      b"Content-Length: 1000000\r\n\r\n")
            held.append(s)
        # The bodies come in pieces, as from a network: 900 KB of each.
        for _ in range(15):
            for s in held:
                s.sendall(b" " * 60000)
            time.sleep(0.01)
        body = b" " * 600000 + b"{}"

        def busy():
            st, h, data = d.request("POST", "/directories", body=body,
                                    headers={"Content-Type":
                                             "application/json"})
            return (st, h, data) if st == 503 else None
        got = wait_for(busy, timeout=15, step=0.2)
        assert got, "no 503 with 2.7 MB of bodies held"
        st, h, data = got
        expect_error(st, data, 503, "SERVER_BUSY")
        assert int(h["retry-after"]) >= 1, h
        for s in held:
            s.close()
        st = wait_for(lambda: d.request(
            "POST", "/directories", body=body,
            headers={"Content-Type": "application/json"})[0] != 503,
            timeout=15, step=0.2)
        assert st, "still busy after the held bodies went away"


def test_held_bodies_count_as_declared_in_any_order():
    # Each body in one write, so execd reads them in whatever turns it
    # takes: the memory counted must not depend on that order.
    with Execd("--max-body-size", "1M",
               env={"EXECD_BODY_MEMORY": "2M"}) as d:
        for trial in range(3):
            held = []
            for _ in range(3):
                s = socket.create_connection((d.host, d.port), 5)
                s.sendall(b"POST /directories HTTP/1.1\r\nHost: x\r\n"
                          b"Content-Type: application/json\r\n"
                          b"Content-Length: 1000000\r\n\r\n")
                held.append(s)
            for s in held:
                s.sendall(b" " * 900000)
            st, h, data = d.request("POST", "/directories",
                                    body=b" " * 600000 + b"{}",
                                    headers={"Content-Type":
                                             "application/json"})
            expect_error(st, data, 503, "SERVER_BUSY")
            for s in held:
                s.close()
            assert wait_for(lambda: d.request(
                "POST", "/directories", body=b"{}",
                headers={"Content-Type": "application/json"})[0] == 200,
                timeout=15, step=0.2), "trial %d: busy after" % trial


def test_ping_answers_while_a_large_json_body_is_parsed():
    # Many small values: the slowest shape for a JSON parser.
    big = b"[" + b",".join([b'"a"'] * (15 << 18)) + b"]"
    with Execd() as d:
        res = {}

        def post():
            c = d.conn(timeout=60)
            c.request("POST", "/directories", body=big,
                      headers={"Content-Type": "application/json"})
            res["sent"] = time.monotonic()      # the parse is after this
            r = c.getresponse()
            r.read()
            res["st"], res["done"] = r.status, time.monotonic()
            c.close()
        spans = pings_during(d, post)
        assert res["st"] == 400, res
        # Parsed on the loop, the body would leave no ping answered amid
        # the wait for its reply; on a worker, pings go on.
        assert answered_amid(spans, res["sent"], res["done"]), (
            res["done"] - res["sent"], len(spans))


def test_body_field_errors_name_the_field_on_every_route():
    """A body field of the wrong kind is refused before anything runs,
    with the words each route has always used: the field's full name
    (context.id inside context), the top level before nested fields, and
    the terminal route's own lead."""
    cases = [
        ("/code/context", {"language": 3},
         "invalid request, field 'language' must be a string, "
         "not an integer"),
        ("/code", {"code": ""},
         "invalid request, field 'code' must not be empty"),
        ("/code", {"code": "x", "context": {"id": 5}},
         "invalid request, field 'context.id' must be a string, "
         "not an integer"),
        ("/code", {"code": "x", "context": {"id": 5}, "timeout": "t"},
         "invalid request, field 'timeout' must be an integer, "
         "not a string"),
        ("/code", {"code": "x", "context": []},
         "invalid request, field 'context' must be an object, "
         "not an array"),
        ("/command", {"command": "ls", "background": "yes"},
         "invalid request, field 'background' must be a boolean, "
         "not a string"),
        ("/command", [1],
         "invalid request, request body must be a JSON object, "
         "not an array"),
        ("/session", {"cwd": ["/"]},
         "invalid request, field 'cwd' must be a string, not an array"),
        ("/session/nosuch/run", {"command": None},
         "invalid request, field 'command' is required"),
        ("/pty", {"command": True},
         "error parsing request: field 'command' must be a string, "
         "not a boolean"),
    ]
    with Execd() as d:
        for path, body, msg in cases:
            st, _, data = d.request("POST", path, body=json.dumps(body))
            obj = expect_error(st, data, 400, "INVALID_REQUEST_BODY")
            assert obj["message"] == msg, (path, body, obj)
        # Nothing was started by the refused bodies.
        st, _, data = d.request("GET", "/code/contexts")
        assert st == 200 and json.loads(data) == [], data
