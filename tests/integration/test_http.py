"""The HTTP contract: ping, error bodies, routing, JSON request bodies."""
import json
import time

from lib import Execd, expect_error


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
