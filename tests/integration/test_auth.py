"""Access control: the token, the 401 body, and where execd listens."""
import json

from lib import Execd

TOKEN = "s3cr3t-t0ken-value"
BODY_401 = (b'{"error":"Unauthorized: invalid or missing header '
            b'X-EXECD-ACCESS-TOKEN"}')


def check_401(st, h, body):
    assert st == 401, (st, body)
    assert body == BODY_401, body
    assert h["content-type"] == "application/json; charset=utf-8", h


def test_every_request_needs_the_token():
    with Execd("--access-token", TOKEN, "--listen", "127.0.0.1:0") as d:
        for method, path in [("GET", "/metrics"),
                             ("GET", "/nope"), ("DELETE", "/ping"),
                             ("POST", "/directories"),
                             ("GET", "/metrics/watch")]:
            check_401(*d.request(method, path))
            check_401(*d.request(method, path, headers={
                "X-EXECD-ACCESS-TOKEN": TOKEN + "x"}))
            check_401(*d.request(method, path, headers={
                "X-EXECD-ACCESS-TOKEN": ""}))
        st, _, _ = d.request("GET", "/metrics",
                             headers={"x-execd-access-token": TOKEN})
        assert st == 200
        st, _, _ = d.request("GET", "/nope",
                             headers={"X-EXECD-ACCESS-TOKEN": TOKEN})
        assert st == 404


def test_probes_answer_without_the_token():
    """As in 1.1: /ping and /ready are what a Kubernetes probe asks,
    and a probe sends no token; a wrong one is not held against them."""
    with Execd("--access-token", TOKEN, "--listen", "127.0.0.1:0") as d:
        for hdrs in ({}, {"X-EXECD-ACCESS-TOKEN": "wrong"}):
            st, _, body = d.request("GET", "/ping", headers=hdrs)
            assert st == 200 and body == b"", (st, body)
            st, _, body = d.request("GET", "/ready", headers=hdrs)
            assert st == 200, (st, body)
            assert json.loads(body) == {"initialized": True}, body
        # the method is still the route's: anything else is guarded
        check_401(*d.request("POST", "/ping"))
        check_401(*d.request("GET", "/ping/x"))


def test_401_with_a_body_sent():
    with Execd("--access-token", TOKEN, "--listen", "127.0.0.1:0") as d:
        check_401(*d.request("POST", "/directories",
                             body={"/tmp/should-not-exist-401": {}}))
        import os
        assert not os.path.exists("/tmp/should-not-exist-401")


def test_token_from_environment_and_never_logged():
    with Execd("--listen", "127.0.0.1:0",
               env={"EXECD_ACCESS_TOKEN": TOKEN}) as d:
        check_401(*d.request("GET", "/metrics"))
        st, _, _ = d.request("GET", "/metrics",
                             headers={"X-EXECD-ACCESS-TOKEN": TOKEN})
        assert st == 200
        d.request("GET", "/metrics",
                  headers={"X-EXECD-ACCESS-TOKEN": "guess"})
        d.stop()
        log = d.read_log()
        assert TOKEN not in log and "guess" not in log, log


def test_without_token_binds_loopback_and_says_so():
    with Execd("--port", "0") as d:
        first = d.read_log().splitlines()[0]
        assert "listening on 127.0.0.1:" in first, first
        assert "loopback only" in first, first
        assert d.request("GET", "/ping")[0] == 200


def test_with_token_binds_all_addresses_by_default():
    with Execd("--port", "0", "--access-token", TOKEN) as d:
        first = d.read_log().splitlines()[0]
        assert "listening on 0.0.0.0:" in first, first
        assert "token required" in first, first


def test_listen_without_token_warns_in_first_line():
    with Execd("--listen", "0.0.0.0:0") as d:
        first = d.read_log().splitlines()[0]
        assert "WITHOUT an access token" in first, first
        st, body = d.get_json("/metrics")
        assert st == 200 and json.dumps(body)


def test_children_do_not_inherit_the_token():
    with Execd("--listen", "127.0.0.1:0",
               env={"EXECD_ACCESS_TOKEN": TOKEN}) as d:
        st, h, body = d.request(
            "POST", "/command",
            body={"command": "echo ${EXECD_ACCESS_TOKEN:-none}"},
            headers={"X-EXECD-ACCESS-TOKEN": TOKEN})
        assert st == 200, body
        out = [json.loads(x) for x in body.split(b"\n") if x.strip()]
        assert [e["text"] for e in out if e["type"] == "stdout"] == \
            ["none"], out
