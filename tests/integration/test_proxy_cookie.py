"""The proxy for a plain browser: GET /proxy/{port}/...?token=T answers
303 to the same URL without the token and sets a cookie scoped to that
port, which then opens HTTP requests and WebSocket upgrades to it and
never reaches the backend; a wrong ?token= is 401, the cookie of one port
is refused on another, and the API routes ignore the cookie."""
import base64
import hashlib
import hmac
import json
import os
import socket

import test_proxy as tp
from lib import Execd

TOKEN = "br0wser-t0ken"
NAME = "execd_proxy_token"


def trade(d, path):
    """GET path (with ?token=) and return (status, headers, body)."""
    return d.request("GET", path)


def cookie_of(h):
    """The value of the Set-Cookie header's pair, and its attributes."""
    parts = [p.strip() for p in h["set-cookie"].split(";")]
    name, value = parts[0].split("=", 1)
    assert name == NAME, h["set-cookie"]
    return value, parts[1:]


def backend_headers(body):
    return {k.lower(): v for k, v in json.loads(body)["headers"]}


def test_proxy_cookie_trade_and_use():
    with tp.Backend() as be, Execd("--access-token", TOKEN) as d:
        base = "/proxy/%d" % be.port
        st, h, body = trade(d, base + "/page.html?a=1&token=%s&b=2" % TOKEN)
        assert st == 303, (st, body)
        assert h["location"] == base + "/page.html?a=1&b=2", h
        value, attrs = cookie_of(h)
        assert "HttpOnly" in attrs and "SameSite=Strict" in attrs, attrs
        assert "Path=%s/" % base in attrs, attrs
        assert not any(a.lower().startswith(("expires", "max-age"))
                       for a in attrs), attrs
        assert TOKEN not in h["set-cookie"]
        # The value is HMAC-SHA256(sha256(token), "execd proxy cookie " +
        # scope): documented, so a client can check what it holds.
        key = hashlib.sha256(TOKEN.encode()).digest()
        want = hmac.new(key, ("execd proxy cookie %s/" % base).encode(),
                        hashlib.sha256).hexdigest()
        assert value == want
        assert be.hits == 0          # the trade never reaches the backend

        # Only the token: the Location has no query left.
        st, h, _ = trade(d, base + "/vnc.html?token=" + TOKEN)
        assert st == 303 and h["location"] == base + "/vnc.html", h
        # The port alone goes to its "/", where the cookie is sent.
        st, h, _ = trade(d, base + "?token=" + TOKEN)
        assert st == 303 and h["location"] == base + "/", h
        st, h, _ = trade(d, base + "?tok%65n=" + TOKEN + "&q")
        assert st == 303 and h["location"] == base + "/?q", h
        st, h, _ = d.request("HEAD", base + "/x?token=" + TOKEN)
        assert st == 303 and h["location"] == base + "/x", h

        # The cookie opens HTTP; the backend never sees it, other
        # cookies pass.
        st, _, body = d.request("GET", base + "/echo?x=1", headers={
            "Cookie": "theme=dark; %s=%s; lang=en" % (NAME, value)})
        assert st == 200, body
        seen = backend_headers(body)
        assert seen["cookie"] == "theme=dark; lang=en", seen
        assert json.loads(body)["target"] == "/echo?x=1"
        st, _, body = d.request("POST", base + "/echo", body=b"abc",
                                headers={"Cookie": NAME + "=" + value})
        assert st == 200, body
        seen = backend_headers(body)
        assert "cookie" not in seen, seen
        assert json.loads(body)["len"] == 3

        # ... and the WebSocket upgrade.
        s = socket.create_connection((d.host, d.port), 10)
        key = base64.b64encode(os.urandom(16)).decode()
        s.sendall(("GET %s/ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                   "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                   "Sec-WebSocket-Version: 13\r\nCookie: %s=%s\r\n\r\n"
                   % (base, key, NAME, value)).encode())
        head, buf = tp.read_head(s).split(b"\r\n\r\n", 1)
        assert head.startswith(b"HTTP/1.1 101"), head
        s.sendall(tp.ws_frame(1, b"through a cookie"))
        op, p, buf = tp.ws_read(s, buf)
        assert (op, p) == (1, b"through a cookie")
        s.close()

        # A wrong cookie, or none, is 401 like a wrong header.
        hits = be.hits
        for c in (None, NAME + "=" + "0" * 64, NAME + "=" + value[:-1],
                  NAME + "=" + TOKEN, "other=" + value):
            hdrs = {"Cookie": c} if c else {}
            st, _, body = d.request("GET", base + "/echo", headers=hdrs)
            assert st == 401, (c, st, body)
        assert be.hits == hits


def test_proxy_cookie_wrong_token_and_other_port():
    with tp.Backend() as be, tp.Backend() as other, \
            Execd("--access-token", TOKEN) as d:
        base = "/proxy/%d" % be.port
        st, h, body = trade(d, base + "/vnc.html?token=nope")
        assert st == 401, (st, body)
        assert "set-cookie" not in h
        st, h, body = trade(d, base + "/vnc.html?token=")
        assert st == 401, (st, body)
        st, h, _ = trade(d, base + "/vnc.html?token=" + TOKEN)
        assert st == 303
        value, _ = cookie_of(h)
        # Port be's cookie does not open port other.
        st, _, body = d.request("GET", "/proxy/%d/echo" % other.port,
                                headers={"Cookie": NAME + "=" + value})
        assert st == 401, body
        assert other.hits == 0
        # The API routes ignore it (a cookie would make them CSRF-able).
        for path in ("/files/info?path=/", "/services", "/metrics"):
            st, _, body = d.request("GET", path, headers={
                "Cookie": NAME + "=" + value})
            assert st == 401, (path, st, body)
        # A ?token= that is not execd's reaches the backend on a request
        # the header lets in; execd's own never does.
        st, _, body = d.request("GET", base + "/echo?token=backends",
                                headers={"X-EXECD-ACCESS-TOKEN": TOKEN})
        assert st == 200 and json.loads(body)["target"] == \
            "/echo?token=backends", body
        st, _, body = d.request("POST", base + "/echo?token=%s&k=v" % TOKEN,
                                body=b"xy")
        assert st == 200, body
        assert json.loads(body)["target"] == "/echo?k=v", body


def test_proxy_token_query_ignored_without_a_token():
    with tp.Backend() as be, Execd() as d:
        st, h, body = trade(d, "/proxy/%d/echo?token=anything" % be.port)
        assert st == 200, body
        assert "set-cookie" not in h
        assert json.loads(body)["target"] == "/echo?token=anything"
