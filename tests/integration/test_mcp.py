"""/mcp, MCP's Streamable HTTP transport, given bad input: each message
gets the JSON-RPC error or the HTTP status the specification names, and a
tool call inside a refused message never runs (the command it carries
would make a file, and none appears).  Also the session's life
(initialize, the header, DELETE), the versions agreed, the token forms,
the Origin check and what is answered 202."""
import json
import socket
import os
import tempfile
import threading
import time

from lib import Execd

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
        # GET: no server stream is offered.
        st, _, _ = d.request("GET", "/mcp", headers=BEARER)
        assert st == 405
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
    """Clients that leave mid-call, streamed or not, and calls still
    running when execd stops: execd lets go of each and exits 0 (under
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
        sid2, _ = initialize(d)
        kept.append(open_call(d, sid2, {"command": "sleep 60"}, "t3", 5))
        assert kept[2].recv(12) == b"HTTP/1.1 200"
        st, _, _ = d.request("DELETE", "/mcp",
                             headers=dict(BEARER,
                                          **{"Mcp-Session-Id": sid2}))
        assert st == 200
        st, _, r = post(d, {"jsonrpc": "2.0", "id": 9, "method": "ping"},
                        sid)
        assert st == 200, r
        assert d.stop() == 0, d.read_log()[-3000:]
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
