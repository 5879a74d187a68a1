"""/mcp, MCP's Streamable HTTP transport, given bad input: each message
gets the JSON-RPC error or the HTTP status the specification names, and a
tool call inside a refused message never runs (the command it carries
would make a file, and none appears).  Also the session's life
(initialize, the header, DELETE), the versions agreed, the token forms,
the Origin check and what is answered 202.  And the gateway: a stdio MCP
server written with the official SDK (tests/sdk/lib/stdio-server.mjs),
named in the policy file, whose tools /mcp offers as gw__tool, with
progress, cancellation, a server that dies or floods, the same server
over loopback HTTP (a url entry), and bad mcp_servers entries refused at
start."""
import http.client
import json
import signal
import socket
import subprocess
import os
import tempfile
import threading
import time

from lib import EXECD, ROOT, Execd

TOKEN = "mcp-int-token-77e1"
BEARER = {"Authorization": "Bearer " + TOKEN}
ACCEPT = "application/json, text/event-stream"


def post(d, msg, session=None, headers=None, raw=False):
    h = {"Content-Type": "application/json", "Accept": ACCEPT}
    h.update(BEARER)
    if session:
        h["Mcp-Session-Id"] = session
    h.update(headers or {})
    body = msg if raw else json.dumps(msg)
    st, hdrs, data = d.request("POST", "/mcp", body=body, headers=h)
    return st, hdrs, json.loads(data) if data.strip() else None


def initialize(d, version="2025-06-18"):
    st, h, r = post(d, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                        "params": {"protocolVersion": version,
                                   "capabilities": {},
                                   "clientInfo": {"name": "t",
                                                  "version": "1"}}})
    assert st == 200, r
    assert h["content-type"] == "application/json"
    sid = h["mcp-session-id"]
    assert len(sid) >= 32 and sid.isascii(), sid
    st, _, r2 = post(d, {"jsonrpc": "2.0",
                         "method": "notifications/initialized"}, sid)
    assert st == 202 and r2 is None
    return sid, r["result"]


def touch_call(marker, id_=7):
    """A tools/call that would make marker if it ran."""
    return {"jsonrpc": "2.0", "id": id_, "method": "tools/call",
            "params": {"name": "run_command",
                       "arguments": {"command": "touch " + marker}}}


def rpc_error(r, code, id_):
    assert r["jsonrpc"] == "2.0", r
    assert r["id"] == id_, r
    assert r["error"]["code"] == code, r
    assert r["error"]["message"], r


def test_mcp_session_life_and_versions():
    with Execd("--access-token", TOKEN) as d:
        sid, res = initialize(d)
        assert res["protocolVersion"] == "2025-06-18"
        assert res["serverInfo"]["name"] == "execd"
        assert "tools" in res["capabilities"]
        # The older version is agreed when asked; an unknown one is
        # answered with execd's newest.
        assert initialize(d, "2025-03-26")[1]["protocolVersion"] == \
            "2025-03-26"
        assert initialize(d, "1999-01-01")[1]["protocolVersion"] == \
            "2025-06-18"
        st, _, r = post(d, {"jsonrpc": "2.0", "id": "p", "method": "ping"},
                        sid, {"MCP-Protocol-Version": "2025-06-18"})
        assert st == 200 and r == {"jsonrpc": "2.0", "id": "p",
                                   "result": {}}, r
        # A response from the client is taken, 202.
        st, _, r = post(d, {"jsonrpc": "2.0", "id": 99, "result": {}}, sid)
        assert st == 202 and r is None
        # execd's own header carries the token too.
        st, _, r = post(d, {"jsonrpc": "2.0", "id": 2, "method": "ping"},
                        sid, {"Authorization": "",
                              "X-EXECD-ACCESS-TOKEN": TOKEN})
        assert st == 200 and r["result"] == {}, r
        # GET opens a session's server stream: a session is needed.
        st, _, _ = d.request("GET", "/mcp", headers=BEARER)
        assert st == 400
        # DELETE ends the session; it is then unknown (404).
        st, _, _ = d.request("DELETE", "/mcp",
                             headers=dict(BEARER, **{"Mcp-Session-Id": sid}))
        assert st == 200
        st, _, r = post(d, {"jsonrpc": "2.0", "id": 3, "method": "ping"},
                        sid)
        assert st == 404, r
        st, _, _ = d.request("DELETE", "/mcp",
                             headers=dict(BEARER, **{"Mcp-Session-Id": sid}))
        assert st == 404


def test_mcp_bad_messages_run_nothing():
    tmp = tempfile.mkdtemp(prefix="execd-mcp-")
    marker = os.path.join(tmp, "ran")
    with Execd("--access-token", TOKEN) as d:
        sid, _ = initialize(d)

        # Not JSON: -32700, HTTP 400, id null.
        st, _, r = post(d, '{"jsonrpc":"2.0","id":1,"method":"tools/call"',
                        sid, raw=True)
        assert st == 400
        rpc_error(r, -32700, None)
        # A batch (an array): refused whole, -32600.
        st, _, r = post(d, [touch_call(marker, 1), touch_call(marker, 2)],
                        sid)
        assert st == 400
        rpc_error(r, -32600, None)
        # "jsonrpc" other than "2.0", or missing: -32600 with the id.
        for bad in ("1.0", None):
            m = touch_call(marker, 5)
            if bad is None:
                del m["jsonrpc"]
            else:
                m["jsonrpc"] = bad
            st, _, r = post(d, m, sid)
            assert st == 400
            rpc_error(r, -32600, 5)
        # An id that is null, params that are not an object: -32600.
        m = touch_call(marker)
        m["id"] = None
        st, _, r = post(d, m, sid)
        assert st == 400 and r["error"]["code"] == -32600, r
        m = touch_call(marker)
        m["params"] = [1]
        st, _, r = post(d, m, sid)
        assert st == 400
        rpc_error(r, -32600, 7)
        # An unknown method: -32601.
        st, _, r = post(d, {"jsonrpc": "2.0", "id": 8,
                            "method": "resources/nothing"}, sid)
        assert st == 200
        rpc_error(r, -32601, 8)
        # A resource URI that is not an absolute file:// one: -32602.
        for uri in ("http://x/etc/hostname", "file://host/etc/hostname",
                    "file:///etc/%00x", "file://relative", 7):
            st, _, r = post(d, {"jsonrpc": "2.0", "id": 20,
                                "method": "resources/read",
                                "params": {"uri": uri}}, sid)
            assert st == 200
            rpc_error(r, -32602, 20)
        # An unknown tool: -32602.
        m = touch_call(marker, 9)
        m["params"]["name"] = "run_commandx"
        st, _, r = post(d, m, sid)
        rpc_error(r, -32602, 9)
        assert "unknown tool" in r["error"]["message"]
        m["params"]["name"] = "run_command\0x"
        st, _, r = post(d, m, sid)
        rpc_error(r, -32602, 9)
        # Arguments that fail the schema: -32602, naming the argument.
        for args, word in (({"command": 1}, "'command'"),
                           ({"command": "touch " + marker, "shell": "sh"},
                            "'shell'"),
                           ({"cwd": tmp}, "'command'"),
                           ({"command": "touch " + marker,
                             "timeout_ms": -1}, "'timeout_ms'"),
                           ({"command": "touch " + marker,
                             "env": {"A": 1}}, "'A'"),
                           ({"command": "touch " + marker + "\0 x"},
                            "NUL")):
            m = touch_call(marker, 10)
            m["params"]["arguments"] = args
            st, _, r = post(d, m, sid)
            assert st == 200
            rpc_error(r, -32602, 10)
            assert word in r["error"]["message"], r
        m = touch_call(marker, 11)
        m["params"]["arguments"] = "touch"
        st, _, r = post(d, m, sid)
        rpc_error(r, -32602, 11)

        # No session id: 400; an unknown one: 404.
        st, _, r = post(d, touch_call(marker))
        assert st == 400
        assert r["error"]["code"] == -32600 and r["id"] is None, r
        st, _, r = post(d, touch_call(marker), "0" * 32)
        assert st == 404, r
        # An unsupported MCP-Protocol-Version: 400.
        st, _, r = post(d, touch_call(marker), sid,
                        {"MCP-Protocol-Version": "2024-01-01"})
        assert st == 400, r
        # No token, a wrong one, a wrong scheme: 401 with Bearer asked.
        for auth in ({}, {"Authorization": "Bearer nope"},
                     {"Authorization": "token " + TOKEN}):
            h = {"Content-Type": "application/json",
                 "Mcp-Session-Id": sid}
            h.update(auth)
            st, hdrs, data = d.request("POST", "/mcp",
                                       body=json.dumps(touch_call(marker)),
                                       headers=h)
            assert st == 401, data
            assert hdrs["www-authenticate"] == "Bearer"
            assert json.loads(data)["error"]["code"] == -32001
        # A page of another origin: 403; a loopback one is served.
        st, _, r = post(d, touch_call(marker), sid,
                        {"Origin": "http://evil.example"})
        assert st == 403, r
        st, _, r = post(d, touch_call(marker), sid,
                        {"Origin": "http://127.0.0.1.evil.example"})
        assert st == 403, r

        assert not os.path.exists(marker)
        # The same call, well formed, does run: the marker was a fair test.
        st, _, r = post(d, touch_call(marker, 12), sid,
                        {"Origin": "http://localhost:8080"})
        assert st == 200 and r["result"]["structuredContent"][
            "exit_code"] == 0, r
        assert os.path.exists(marker)
    os.unlink(marker)
    os.rmdir(tmp)


def test_mcp_allow_origin_admits_a_named_page():
    """--allow-origin admits one page's origin besides loopback ones."""
    with Execd("--access-token", TOKEN, "--allow-origin",
               "https://agent.example") as d:
        st, _, r = post(d, {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                        headers={"Origin": "https://agent.example"})
        assert st != 403, r
        st, _, r = post(d, {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                        headers={"Origin": "https://agent.example:8443"})
        assert st == 403, r


def test_mcp_tool_errors_are_results():
    with Execd("--access-token", TOKEN) as d:
        sid, _ = initialize(d)

        def tool(name, args):
            st, _, r = post(d, {"jsonrpc": "2.0", "id": 1,
                                "method": "tools/call",
                                "params": {"name": name,
                                           "arguments": args}}, sid)
            assert st == 200, r
            return r["result"]

        r = tool("read_file", {"path": "relative/path"})
        assert r["isError"] is True
        assert "absolute" in r["content"][0]["text"]
        r = tool("read_file", {"path": "/nonexistent/execd-mcp"})
        assert r["isError"] is True
        r = tool("command_output", {"id": "f" * 32})
        assert r["isError"] is True and "not found" in \
            r["content"][0]["text"]
        r = tool("delete_context", {"id": "f" * 32})
        assert r["isError"] is True
        r = tool("run_command", {"command": "true", "cwd": "/nonexistent/x"})
        assert r["isError"] is True and "cwd" in r["content"][0]["text"]
        r = tool("run_command", {"command": "true", "cwd": "/etc/hostname"})
        assert r["isError"] is True and "not a directory" in \
            r["content"][0]["text"]
        r = tool("run_command", {"command": "pwd", "cwd": "/usr"})
        assert r["structuredContent"]["stdout"] == "/usr\n", r
        r = tool("create_context", {"language": "python",
                                    "cwd": "/nonexistent/x"})
        assert r["isError"] is True and "cwd" in r["content"][0]["text"]
        r = tool("write_file", {"path": "/nonexistent/x", "content": "",
                                "mode": "9z"})
        assert r["isError"] is True and "octal" in r["content"][0]["text"]
        # The cut is marked: output past the cap is not returned whole.
        r = tool("run_command", {"command": "head -c 400000 /dev/zero | "
                                 "tr '\\0' a"})
        s = r["structuredContent"]["stdout"]
        assert len(s) < 300000, len(s)
        assert "more bytes of stdout cut" in s, s[-200:]


def open_call(d, sid, args, token=None, id_=1, name="run_command"):
    """Send a tools/call and return the socket, unread."""
    params = {"name": name, "arguments": args}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    body = json.dumps({"jsonrpc": "2.0", "id": id_, "method": "tools/call",
                       "params": params}).encode()
    s = socket.create_connection((d.host, d.port), 10)
    s.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
              TOKEN.encode() + b"\r\nMcp-Session-Id: " + sid.encode() +
              b"\r\nAccept: " + ACCEPT.encode() +
              b"\r\nContent-Type: application/json\r\nContent-Length: " +
              str(len(body)).encode() + b"\r\n\r\n" + body)
    return s


def test_mcp_calls_left_or_in_flight_at_shutdown():
    """Clients that leave mid-call, streamed or not, calls still running
    when execd stops, streamed calls held for a resume, a server stream
    and a subscription: execd lets go of each and exits 0 (under
    AddressSanitizer, with nothing leaked)."""
    with Execd("--access-token", TOKEN) as d:
        sid, _ = initialize(d)
        # Streamed (a progress token) and plain, each left by its client.
        for token in ("t1", None):
            s = open_call(d, sid, {"command": "echo x; sleep 0.5"}, token)
            assert s.recv(12) == b"HTTP/1.1 200" if token else True
            s.close()
        # A file tool on a worker, left before its answer (a grep that
        # the departure stops).
        s = open_call(d, sid, {"path": "/usr", "pattern": "zq{3}x$"},
                      None, 2, "grep")
        s.close()
        # Still running at the end: a stream, a deferred one, a context
        # being made, and a session ended under a call.
        kept = [open_call(d, sid, {"command": "sleep 60"}, "t2", 3),
                open_call(d, sid, {"command": "sleep 60"}, None, 4)]
        assert kept[0].recv(12) == b"HTTP/1.1 200"
        # A streamed call whose client left, held for a resume while it
        # runs on, and one held answered.
        for cmd, id_ in (("sleep 60", 6), ("echo done", 7)):
            s = open_call(d, sid, {"command": cmd}, "t4", id_)
            assert s.recv(12) == b"HTTP/1.1 200"
            s.close()
        sid2, _ = initialize(d)
        kept.append(open_call(d, sid2, {"command": "sleep 60"}, "t3", 5))
        assert kept[2].recv(12) == b"HTTP/1.1 200"
        st, _, _ = d.request("DELETE", "/mcp",
                             headers=dict(BEARER,
                                          **{"Mcp-Session-Id": sid2}))
        assert st == 200
        # A server stream open and a subscription live at the end.
        srv = http.client.HTTPConnection(d.host, d.port, timeout=30)
        srv.request("GET", "/mcp", headers=dict(
            BEARER, **{"Mcp-Session-Id": sid}))
        assert srv.getresponse().status == 200
        st, _, r = post(d, {"jsonrpc": "2.0", "id": 8,
                            "method": "resources/subscribe",
                            "params": {"uri": "file://" + tempfile.mkdtemp(
                                prefix="execd-mcp-") + "/x"}}, sid)
        assert st == 200 and r["result"] == {}, r
        st, _, r = post(d, {"jsonrpc": "2.0", "id": 9, "method": "ping"},
                        sid)
        assert st == 200, r
        assert d.stop() == 0, d.read_log()[-3000:]
        srv.close()
        for s in kept:
            s.close()


def test_mcp_hung_mount_costs_its_calls_not_the_daemon():
    """Tools on a path of a FUSE mount whose server never answers
    (test_fs_hang's) end with 504 after --fs-timeout, a cwd there as well,
    while other calls answer.  Needs root and /dev/fuse, as that test."""
    from test_fs_hang import HangMount
    assert os.geteuid() == 0, "needs root to mount FUSE"
    m = HangMount()
    try:
        with Execd("--access-token", TOKEN, "--fs-timeout", "2") as d:
            sid, _ = initialize(d)
            s = m.stuck
            calls = {"cwd": ("run_command", {"command": "true", "cwd": s}),
                     "ctx": ("create_context", {"cwd": s}),
                     "read": ("read_file", {"path": s + "/a"}),
                     "write": ("write_file", {"path": s + "/a",
                                              "content": "x"}),
                     "list": ("list_directory", {"path": s}),
                     "grep": ("grep", {"path": s, "pattern": "x"})}
            got = {}

            def one(name):
                tool, args = calls[name]
                h = {"Content-Type": "application/json", "Accept": ACCEPT,
                     "Mcp-Session-Id": sid}
                h.update(BEARER)
                st, _, data = d.request("POST", "/mcp", body=json.dumps(
                    {"jsonrpc": "2.0", "id": name, "method": "tools/call",
                     "params": {"name": tool, "arguments": args}}),
                    headers=h, timeout=40)
                got[name] = (st, data)

            threads = [threading.Thread(target=one, args=(n,))
                       for n in calls]
            for t in threads:
                t.start()
            time.sleep(0.5)
            st, _, r = post(d, {"jsonrpc": "2.0", "id": 1,
                                "method": "tools/call",
                                "params": {"name": "run_command",
                                           "arguments": {
                                               "command": "echo alive"}}},
                            sid)
            assert st == 200 and r["result"]["structuredContent"][
                "stdout"] == "alive\n", r
            for t in threads:
                t.join(45)
            assert sorted(got) == sorted(calls), got
            for name, (st, data) in got.items():
                assert st == 504, (name, st, data)
                assert json.loads(data)["error"]["code"] == -32054, data
            # The mount's server gone, the stuck workers end and execd
            # stops in order.
            m.close()
    finally:
        m.close()


def test_mcp_command_input_feeds_a_background_command():
    """command_input writes to the stdin of a background command started
    with stdin: true and closes it; an unknown id, a command without a
    stdin, a closed stdin and an ended command are isError results."""
    with Execd("--access-token", TOKEN) as d:
        sid, _ = initialize(d)

        def tool(name, args):
            st, _, r = post(d, {"jsonrpc": "2.0", "id": 1,
                                "method": "tools/call",
                                "params": {"name": name,
                                           "arguments": args}}, sid)
            assert st == 200, r
            return r["result"]

        def output_until(cid, want):
            end = time.time() + 30
            while True:
                r = tool("command_output", {"id": cid})
                out = r["structuredContent"]["output"]
                if want(r["structuredContent"]) or time.time() > end:
                    return out
                time.sleep(0.1)

        r = tool("run_command", {"command": "read a; echo got:$a; cat; "
                                 "echo end; sleep 30", "background": True,
                                 "stdin": True})
        cid = r["structuredContent"]["id"]
        r = tool("command_input", {"id": cid, "text": "hello\n"})
        assert "isError" not in r, r
        assert r["structuredContent"] == {"written": 6, "closed": False}
        out = output_until(cid, lambda s: "got:hello" in s["output"])
        assert "got:hello\n" in out, out
        r = tool("command_input", {"id": cid, "text": "rest\n",
                                   "close": True})
        assert r["structuredContent"] == {"written": 5, "closed": True}, r
        out = output_until(cid, lambda s: "end" in s["output"])
        assert out == "got:hello\nrest\nend\n", out
        # Closed: the command still runs (its sleep), its stdin is gone.
        r = tool("command_input", {"id": cid, "text": "more"})
        assert r["isError"] is True and "closed" in \
            r["content"][0]["text"], r
        tool("interrupt", {"id": cid})
        output_until(cid, lambda s: not s["running"])
        r = tool("command_input", {"id": cid, "text": "x"})
        assert r["isError"] is True and "not running" in \
            r["content"][0]["text"], r

        r = tool("command_input", {"id": "f" * 32, "text": "x"})
        assert r["isError"] is True and "not found" in \
            r["content"][0]["text"], r
        r = tool("run_command", {"command": "sleep 30", "background": True})
        cid = r["structuredContent"]["id"]
        r = tool("command_input", {"id": cid, "text": "x"})
        assert r["isError"] is True and "no stdin" in \
            r["content"][0]["text"], r
        tool("interrupt", {"id": cid})
        # text is required, close a boolean: the schema says so.
        st, _, r = post(d, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                            "params": {"name": "command_input",
                                       "arguments": {"id": cid,
                                                     "close": "yes"}}}, sid)
        rpc_error(r, -32602, 2)


def stream_call(d, sid, args, token="t", id_=1, name="run_command"):
    """A streamed tools/call: its connection and response, unread."""
    conn = http.client.HTTPConnection(d.host, d.port, timeout=30)
    h = {"Content-Type": "application/json", "Accept": ACCEPT,
         "Mcp-Session-Id": sid}
    h.update(BEARER)
    conn.request("POST", "/mcp", json.dumps(
        {"jsonrpc": "2.0", "id": id_, "method": "tools/call",
         "params": {"name": name, "arguments": args,
                    "_meta": {"progressToken": token}}}), h)
    r = conn.getresponse()
    assert r.status == 200, r.read()
    assert r.getheader("Content-Type").startswith("text/event-stream")
    return conn, r


def sse_events(r):
    """Each event of an event stream as (id, message), until its end."""
    ev_id, data = None, []
    while True:
        line = r.readline()
        if not line:
            return
        line = line.decode().rstrip("\n")
        if line == "":
            if data:
                yield ev_id, json.loads("\n".join(data))
            ev_id, data = None, []
        elif line.startswith("id: "):
            ev_id = line[4:]
        elif line.startswith("data: "):
            data.append(line[6:])


def test_mcp_log_messages_follow_the_level_set():
    """logging/setLevel takes the eight levels of the specification and
    refuses others; a streamed call carries notifications/message at or
    above the level: the command's start at info (the default), the
    output cut at warning.  Event ids are S-1, S-2, ... on one stream."""
    with Execd("--access-token", TOKEN) as d:
        sid, res = initialize(d)
        assert res["capabilities"]["logging"] == {}, res
        for bad in ({"level": "loud"}, {"level": 3}, {}):
            st, _, r = post(d, {"jsonrpc": "2.0", "id": 2,
                                "method": "logging/setLevel",
                                "params": bad}, sid)
            rpc_error(r, -32602, 2)

        def logs(args):
            conn, r = stream_call(d, sid, args)
            evs = list(sse_events(r))
            conn.close()
            ids = [e[0] for e in evs]
            stream = ids[0].split("-")[0]
            assert ids == ["%s-%d" % (stream, i + 1)
                           for i in range(len(ids))], ids
            assert "result" in evs[-1][1], evs[-1]
            return [m["params"] for _, m in evs
                    if m.get("method") == "notifications/message"]

        got = logs({"command": "echo hi"})
        assert len(got) == 1 and got[0]["level"] == "info", got
        assert got[0]["logger"] == "execd" and "started" in got[0]["data"]
        big = {"command": "head -c 300000 /dev/zero | tr '\\0' a"}
        st, _, r = post(d, {"jsonrpc": "2.0", "id": 3,
                            "method": "logging/setLevel",
                            "params": {"level": "warning"}}, sid)
        assert st == 200 and r["result"] == {}, r
        assert logs({"command": "echo hi"}) == []
        got = logs(big)
        assert [g["level"] for g in got] == ["warning"], got
        assert "cut" in got[0]["data"], got
        post(d, {"jsonrpc": "2.0", "id": 4, "method": "logging/setLevel",
                 "params": {"level": "error"}}, sid)
        assert logs(big) == []


def test_mcp_resumes_a_dropped_stream_with_last_event_id():
    """A client that loses a streamed call's stream comes back with GET
    and Last-Event-ID: it gets the events it missed, then the rest and
    the response, once; again after the end while the call is held.
    An id that is not execd's or names
    no held stream is 400; an ended session is 404."""
    with Execd("--access-token", TOKEN) as d:
        sid, _ = initialize(d)
        lines = "".join("line%d\n" % i for i in range(1, 7))
        conn, r = stream_call(d, sid, {"command": "for i in 1 2 3 4 5 6; "
                                       "do echo line$i; sleep 0.3; done"})
        first, last = [], None
        for ev_id, m in sse_events(r):
            assert m.get("method") in ("notifications/progress",
                                       "notifications/message"), m
            last = ev_id
            if m["method"] == "notifications/progress":
                first.append(m["params"]["message"])
                if len(first) == 2:
                    break
        conn.close()
        assert "".join(first) == "line1\nline2\n", first

        def resume(event_id, session=sid):
            c = http.client.HTTPConnection(d.host, d.port, timeout=30)
            h = dict(BEARER, Accept="text/event-stream")
            if session:
                h["Mcp-Session-Id"] = session
            if event_id is not None:
                h["Last-Event-ID"] = event_id
            c.request("GET", "/mcp", headers=h)
            return c, c.getresponse()

        c, r = resume(last)
        assert r.status == 200, r.read()
        evs = list(sse_events(r))
        c.close()
        stream, n = last.split("-")
        assert evs[0][0] == "%s-%d" % (stream, int(n) + 1), evs[0]
        rest = [m["params"]["message"] for _, m in evs
                if m.get("method") == "notifications/progress"]
        assert "".join(first + rest) == lines, (first, rest)
        res = evs[-1][1]
        assert res["id"] == 1 and \
            res["result"]["structuredContent"]["stdout"] == lines, res
        # Held after its end: the whole stream again from its start.
        c, r = resume(stream + "-0")
        assert r.status == 200
        evs = list(sse_events(r))
        c.close()
        assert evs[-1][1]["result"]["structuredContent"]["stdout"] == lines
        assert "".join(m["params"]["message"] for _, m in evs
                       if m.get("method") == "notifications/progress") \
            == lines
        # The request id is free again once answered.
        conn, r = stream_call(d, sid, {"command": "true"})
        assert "result" in list(sse_events(r))[-1][1]
        conn.close()

        for event_id, status in (("bogus", 400),
                                 ("01-1", 400), ("999999-1", 400)):
            c, r = resume(event_id)
            assert r.status == status, (event_id, r.status, r.read())
            c.close()
        c, r = resume(last, None)
        assert r.status == 400
        c.close()
        st, _, _ = d.request("DELETE", "/mcp",
                             headers=dict(BEARER, **{"Mcp-Session-Id": sid}))
        assert st == 200
        c, r = resume(last)
        assert r.status == 404
        c.close()
        assert d.stop() == 0, d.read_log()[-3000:]


def test_mcp_resource_subscription_on_the_server_stream():
    """resources/subscribe follows a file: a write, an atomic replace and
    a deletion each send notifications/resources/updated with its URI on
    the session's server stream (GET /mcp); a new GET ends the one
    before, and so does the session's end.  A missing directory is
    -32002, a URI that is not file:// -32602."""
    tmp = tempfile.mkdtemp(prefix="execd-mcp-")
    path = os.path.join(tmp, "watched.txt")
    with open(path, "w") as f:
        f.write("one\n")
    uri = "file://" + path
    with Execd("--access-token", TOKEN) as d:
        sid, res = initialize(d)
        assert res["capabilities"]["resources"]["subscribe"] is True

        def server_stream():
            c = http.client.HTTPConnection(d.host, d.port, timeout=30)
            c.request("GET", "/mcp", headers=dict(
                BEARER, Accept="text/event-stream",
                **{"Mcp-Session-Id": sid}))
            r = c.getresponse()
            assert r.status == 200, r.read()
            assert r.getheader("Content-Type").startswith(
                "text/event-stream")
            return c, r

        def rpc(method, params, id_=5):
            st, _, r = post(d, {"jsonrpc": "2.0", "id": id_,
                                "method": method, "params": params}, sid)
            assert st == 200, r
            return r

        old_c, old = server_stream()
        c, r = server_stream()
        # The first stream ended when the second opened.
        assert list(sse_events(old)) == []
        old_c.close()
        assert rpc("resources/subscribe", {"uri": uri})["result"] == {}
        # Again: still one subscription.
        assert rpc("resources/subscribe", {"uri": uri})["result"] == {}
        events = sse_events(r)

        def updated():
            _, m = next(events)
            assert m == {"jsonrpc": "2.0",
                         "method": "notifications/resources/updated",
                         "params": {"uri": uri}}, m

        with open(os.path.join(tmp, "other"), "w") as f:
            f.write("not this one")
        with open(path, "a") as f:
            f.write("two\n")
        updated()
        st, _, w = post(d, {"jsonrpc": "2.0", "id": 6, "method": "tools/call",
                            "params": {"name": "write_file", "arguments": {
                                "path": path, "content": "three\n"}}}, sid)
        assert "isError" not in w["result"], w
        updated()
        os.unlink(path)
        updated()
        assert rpc("resources/unsubscribe", {"uri": uri})["result"] == {}

        r2 = rpc("resources/subscribe",
                 {"uri": "file:///nonexistent/execd-mcp/x"})
        rpc_error(r2, -32002, 5)
        r2 = rpc("resources/subscribe", {"uri": "http://x/y"})
        rpc_error(r2, -32602, 5)
        rpc("resources/subscribe", {"uri": uri})
        st, _, _ = d.request("DELETE", "/mcp",
                             headers=dict(BEARER, **{"Mcp-Session-Id": sid}))
        assert st == 200
        assert list(events) == []
        c.close()
        assert d.stop() == 0, d.read_log()[-3000:]


# --- the gateway to the sandbox's own MCP servers -------------------------

GW_SERVER = os.path.join(ROOT, "tests", "sdk", "lib", "stdio-server.mjs")


def gw_policy(tmp, extra=""):
    """A policy file naming the test server as "gw"."""
    assert os.path.isdir(os.path.join(ROOT, "tests", "sdk", "node_modules",
                                      "@modelcontextprotocol")), \
        "run tests/sdk/install.sh (the gateway's server needs the MCP SDK)"
    path = os.path.join(tmp, "gw.yaml")
    with open(path, "w") as f:
        f.write("mcp_servers:\n  gw:\n    command: [node, %s]\n"
                "    env: {GW_VAR: \"hello there\"}\n    cwd: %s\n%s"
                % (json.dumps(GW_SERVER), json.dumps(tmp), extra))
    return path


def gw_call(d, sid, name, args, id_=1):
    st, _, r = post(d, {"jsonrpc": "2.0", "id": id_, "method": "tools/call",
                        "params": {"name": name, "arguments": args}}, sid)
    assert st == 200, r
    return r


def gw_text(r):
    return "".join(c.get("text", "") for c in r["result"]["content"])


def gw_servers(d, sid):
    r = gw_call(d, sid, "list_mcp_servers", {}, id_="ls")
    return {s["name"]: s for s in r["result"]["structuredContent"]["servers"]}


def test_mcp_gateway_lists_and_relays_a_stdio_server():
    tmp = tempfile.mkdtemp(prefix="execd-gw-")
    with Execd("--access-token", TOKEN, "--config", gw_policy(tmp)) as d:
        sid, _ = initialize(d)
        # Nothing started before it is needed.
        gw = gw_servers(d, sid)["gw"]
        assert gw["state"] == "idle" and gw["tools"] is None, gw
        assert gw["kind"] == "stdio" and gw["restarts"] == 0, gw
        # tools/list starts it and merges its tools under the prefix,
        # description and schema as the server gave them.
        st, _, r = post(d, {"jsonrpc": "2.0", "id": 2,
                            "method": "tools/list"}, sid)
        assert st == 200, r
        tools = {t["name"]: t for t in r["result"]["tools"]}
        for n in ("run_command", "list_mcp_servers", "gw__echo", "gw__slow",
                  "gw__die", "gw__flood", "gw__env"):
            assert n in tools, sorted(tools)
        assert tools["gw__echo"]["description"] == "Answer the text given."
        assert tools["gw__echo"]["inputSchema"]["properties"]["text"] == \
            {"type": "string"}, tools["gw__echo"]
        gw = gw_servers(d, sid)["gw"]
        assert gw["state"] == "running" and gw["tools"] == 5, gw
        # A call answers through execd; env and cwd are the policy's.
        r = gw_call(d, sid, "gw__echo", {"text": "hi"})
        assert gw_text(r) == "echo: hi" and not r["result"].get("isError")
        r = gw_call(d, sid, "gw__env", {"name": "GW_VAR"})
        assert gw_text(r) == "hello there", r
        r = gw_call(d, sid, "gw__env", {"name": "PWD"})
        assert gw_text(r) == tmp, r
        # The server's own argument check answers as it does.
        r = gw_call(d, sid, "gw__echo", {"text": 5})
        assert r["result"]["isError"] or "error" in r, r
        # A call too large to pass on fails alone; the server goes on.
        r = gw_call(d, sid, "gw__echo", {"text": "y" * (1 << 21)})
        assert r["result"]["isError"] and "over 1 MiB" in gw_text(r), r
        assert gw_text(gw_call(d, sid, "gw__echo", {"text": "ok"})) == \
            "echo: ok"
        assert gw_servers(d, sid)["gw"]["restarts"] == 0
        # An unknown tool of it, or an unknown server: -32602.
        for name in ("gw__nothing", "zz__echo", "gw_echo"):
            r = gw_call(d, sid, name, {}, id_=9)
            rpc_error(r, -32602, 9)


def test_mcp_gateway_relays_progress_and_cancel():
    tmp = tempfile.mkdtemp(prefix="execd-gw-")
    marker = os.path.join(tmp, "cancelled")
    with Execd("--access-token", TOKEN, "--config", gw_policy(tmp)) as d:
        sid, _ = initialize(d)
        # Progress the server sends goes out under the client's token.
        conn, r = stream_call(d, sid, {"steps": 3, "ms": 50}, token="tok",
                              name="gw__slow")
        evs = [m for _, m in sse_events(r)]
        conn.close()
        prog = [m["params"] for m in evs
                if m.get("method") == "notifications/progress"]
        assert [(p["progressToken"], p["progress"], p["total"],
                 p["message"]) for p in prog] == \
            [("tok", i, 3, "step %d" % i) for i in (1, 2, 3)], evs
        assert evs[-1]["id"] == 1, evs
        assert gw_text(evs[-1]) == "done after 3 steps", evs[-1]
        # notifications/cancelled reaches the server (its handler sees
        # the abort and writes the marker); the call is answered at once.
        conn, r = stream_call(d, sid, {"steps": 600, "ms": 100,
                                       "marker": marker},
                              token="c", id_=2, name="gw__slow")
        it = sse_events(r)
        _, first = next(it)
        assert first["method"] == "notifications/progress", first
        st, _, _ = post(d, {"jsonrpc": "2.0",
                            "method": "notifications/cancelled",
                            "params": {"requestId": 2}}, sid)
        assert st == 202
        last = [m for _, m in it][-1]
        conn.close()
        assert last["id"] == 2 and last["result"]["isError"], last
        assert "cancelled" in gw_text(last), last
        deadline = time.time() + 20
        while not os.path.exists(marker) and time.time() < deadline:
            time.sleep(0.1)
        assert os.path.exists(marker), "the server never saw the cancel"
        # The server lives on.
        assert gw_text(gw_call(d, sid, "gw__echo", {"text": "x"})) == \
            "echo: x"
        # Relayed calls still running when execd stops, one streamed and
        # one answered as JSON: execd lets go of both and exits 0 (under
        # AddressSanitizer, with nothing leaked).
        held = open_call(d, sid, {"steps": 600, "ms": 100}, id_=8,
                         name="gw__slow")
        conn, r = stream_call(d, sid, {"steps": 600, "ms": 100},
                              token="z", id_=9, name="gw__slow")
        next(sse_events(r))
    held.close()
    conn.close()


def test_mcp_gateway_server_that_dies_or_floods():
    tmp = tempfile.mkdtemp(prefix="execd-gw-")
    with Execd("--access-token", TOKEN, "--config", gw_policy(tmp)) as d:
        sid, _ = initialize(d)
        # It exits mid-call: a tool error naming it, its status and its
        # stderr, well before the HTTP client's 30 s.
        t0 = time.time()
        r = gw_call(d, sid, "gw__die", {"code": 3})
        assert time.time() - t0 < 25
        assert r["result"]["isError"], r
        txt = gw_text(r)
        assert "'gw'" in txt and "exit status 3" in txt, txt
        assert "dying with 3" in txt, txt
        gw = gw_servers(d, sid)["gw"]
        assert gw["state"] == "dead" and "exit status 3" in \
            gw["last_end"], gw
        # The next call starts it again.
        assert gw_text(gw_call(d, sid, "gw__echo", {"text": "back"})) == \
            "echo: back"
        gw = gw_servers(d, sid)["gw"]
        assert gw["state"] == "running" and gw["restarts"] == 1, gw
        # Killed from outside while a call runs: the call fails, no hang.
        conn, resp = stream_call(d, sid, {"steps": 600, "ms": 100},
                                 token="k", id_=3, name="gw__slow")
        it = sse_events(resp)
        next(it)
        os.kill(gw["pid"], signal.SIGKILL)
        last = [m for _, m in it][-1]
        conn.close()
        assert last["id"] == 3 and last["result"]["isError"], last
        assert "killed by signal 9" in gw_text(last), last
        # A line over 8 MiB is flooding: stopped, the call fails.
        r = gw_call(d, sid, "gw__flood", {"mib": 9}, id_=4)
        assert r["result"]["isError"], r
        assert "flooded stdout: a line over 8 MiB" in gw_text(r), r
        assert gw_text(gw_call(d, sid, "gw__echo", {"text": "again"},
                               id_=5)) == "echo: again"
        gw = gw_servers(d, sid)["gw"]
        assert gw["restarts"] == 3, gw
        assert "mcp: server gw" in d.read_log()


def test_mcp_gateway_follows_tools_list_pages():
    """A server whose tools/list gives one tool a page: all are listed,
    beside another server's, and each answers."""
    tmp = tempfile.mkdtemp(prefix="execd-gw-")
    extra = "  pg:\n    command: [node, %s, --pages, \"4\"]\n" % \
        json.dumps(GW_SERVER)
    with Execd("--access-token", TOKEN, "--config",
               gw_policy(tmp, extra)) as d:
        sid, _ = initialize(d)
        st, _, r = post(d, {"jsonrpc": "2.0", "id": 2,
                            "method": "tools/list"}, sid)
        names = [t["name"] for t in r["result"]["tools"]]
        assert [n for n in names if n.startswith("pg__")] == \
            ["pg__p0", "pg__p1", "pg__p2", "pg__p3"], names
        assert "gw__echo" in names, names
        assert gw_text(gw_call(d, sid, "pg__p3", {})) == "called p3"
        servers = gw_servers(d, sid)
        assert servers["pg"]["tools"] == 4, servers
        assert servers["gw"]["state"] == "running", servers


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_server(port, log):
    """The test server over Streamable HTTP on port, once it listens."""
    p = subprocess.Popen(["node", GW_SERVER, "--http", str(port)],
                         stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 1).close()
            return p
        except OSError:
            time.sleep(0.1)
    p.kill()
    raise AssertionError("the HTTP MCP server did not listen")


def test_mcp_gateway_relays_an_http_server():
    """A url entry: its tools listed and called over loopback HTTP, with
    progress; the server gone is a tool error, and back it is reached
    again (a new session)."""
    tmp = tempfile.mkdtemp(prefix="execd-gw-")
    port = free_port()
    path = os.path.join(tmp, "p.yaml")
    with open(path, "w") as f:
        f.write("mcp_servers:\n  web:\n    url: http://127.0.0.1:%d/mcp\n"
                % port)
    log = open(os.path.join(tmp, "server.log"), "w")
    srv = http_server(port, log)
    try:
        with Execd("--access-token", TOKEN, "--config", path) as d:
            sid, _ = initialize(d)
            st, _, r = post(d, {"jsonrpc": "2.0", "id": 2,
                                "method": "tools/list"}, sid)
            names = [t["name"] for t in r["result"]["tools"]]
            assert "web__echo" in names and "web__slow" in names, names
            r = gw_call(d, sid, "web__echo", {"text": "over http"})
            assert gw_text(r) == "echo: over http", r
            conn, resp = stream_call(d, sid, {"steps": 3, "ms": 30},
                                     token="h", id_=3, name="web__slow")
            evs = [m for _, m in sse_events(resp)]
            conn.close()
            prog = [m["params"]["progress"] for m in evs
                    if m.get("method") == "notifications/progress"]
            assert prog == [1, 2, 3], evs
            assert gw_text(evs[-1]) == "done after 3 steps", evs
            web = gw_servers(d, sid)["web"]
            assert web["kind"] == "http" and web["state"] == "running", web
            # Gone: a tool error, not a hang.
            srv.kill()
            srv.wait()
            r = gw_call(d, sid, "web__echo", {"text": "x"}, id_=4)
            assert r["result"]["isError"], r
            assert "web" in gw_text(r), r
            assert gw_servers(d, sid)["web"]["state"] == "dead"
            # Back (a new process, sessions lost): reached again.
            srv = http_server(port, log)
            r = gw_call(d, sid, "web__echo", {"text": "again"}, id_=5)
            assert gw_text(r) == "echo: again", r
            web = gw_servers(d, sid)["web"]
            assert web["state"] == "running" and web["restarts"] >= 1, web
    finally:
        srv.kill()
        srv.wait()
        log.close()


def test_mcp_gateway_server_that_cannot_start():
    tmp = tempfile.mkdtemp(prefix="execd-gw-")
    path = os.path.join(tmp, "p.yaml")
    with open(path, "w") as f:
        f.write("mcp_servers:\n  nope:\n    command: [/nonexistent/mcp]\n"
                "  web:\n    url: http://127.0.0.1:9/mcp\n")
    with Execd("--access-token", TOKEN, "--config", path) as d:
        sid, _ = initialize(d)
        st, _, r = post(d, {"jsonrpc": "2.0", "id": 2,
                            "method": "tools/list"}, sid)
        assert st == 200 and any(t["name"] == "list_mcp_servers"
                                 for t in r["result"]["tools"]), r
        r = gw_call(d, sid, "nope__x", {})
        assert r["result"]["isError"], r
        assert "could not start" in gw_text(r), r
        r = gw_call(d, sid, "web__x", {})
        assert r["result"]["isError"], r
        assert "connect: Connection refused" in gw_text(r), r
        servers = gw_servers(d, sid)
        assert servers["nope"]["state"] == "dead", servers
        assert servers["web"]["state"] == "dead", servers
        assert servers["web"]["kind"] == "http", servers


def test_mcp_gateway_bad_policy_entries_are_refused():
    tmp = tempfile.mkdtemp(prefix="execd-gw-")
    cases = [
        ("mcp_servers: {a__b: {command: [x]}}", "without \"__\""),
        ("mcp_servers: {Big: {command: [x]}}", "not 'Big'"),
        ("mcp_servers: {a: {url: \"http://10.1.2.3:80/mcp\"}}",
         "loopback host"),
        ("mcp_servers: {a: {url: \"https://127.0.0.1:8443/\"}}",
         "must be http://"),
        ("mcp_servers: {a: {command: [x], url: \"http://[::1]:1/\"}}",
         "not both"),
        ("mcp_servers: {a: {command: \"x y\"}}", "a list of words"),
        ("mcp_servers: {a: {command: [x], env: [A]}}", "a mapping"),
        ("mcp_servers: {a: {command: [x], what: 1}}", "unknown key 'what'"),
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("EXECD_")}
    for text, want in cases:
        path = os.path.join(tmp, "bad.yaml")
        with open(path, "w") as f:
            f.write(text + "\n")
        r = subprocess.run([EXECD, "--config", path, "--print-config"],
                           capture_output=True, text=True, timeout=20,
                           env=env)
        assert r.returncode != 0, (text, r)
        assert path + ":1:" in r.stderr and want in r.stderr, \
            (text, r.stderr)
