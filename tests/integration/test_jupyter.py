"""The Jupyter Server REST and WebSocket API that execd serves over its own
kernels, driven by real clients: http.client for REST, Debian's
python3-websocket (websocket-client) for /api/kernels/{id}/channels, and
jupyter_client's Session to build messages as a Jupyter front end does.

One set of kernels: a kernel started here is a code context of the
OpenSandbox API (same id), and a context made there is a kernel here."""
import base64
import http.client
import json
import re
import socket
import threading
import time

import websocket
from jupyter_client.session import Session

from lib import Execd, new_context, run_code, texts, wait_for

BOUND = 60          # seconds anything a kernel does must take at most
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9Q"
       "DwADhgGAWjR9awAAAABJRU5ErkJggg==")


def start_kernel(d, name="python3", headers=None):
    st, h, body = d.request("POST", "/api/kernels", body={"name": name},
                            headers=headers, timeout=BOUND + 30)
    assert st == 201, body
    k = json.loads(body)
    assert h["location"] == "/api/kernels/" + k["id"], h
    return k


class Client:
    """One channels WebSocket, speaking Jupyter's JSON form."""

    def __init__(self, d, kid, query="", headers=None, **kw):
        self.ws = websocket.create_connection(
            "ws://%s:%d/api/kernels/%s/channels%s" % (d.host, d.port, kid,
                                                      query),
            timeout=BOUND, header=headers or [], **kw)
        self.session = Session(username="tester")
        self.seen = []          # every message received, in order

    def send(self, channel, msg_type, content, msg_id=None, parent=None,
             session=None):
        m = self.session.msg(msg_type, content, parent=parent or {})
        m["header"]["date"] = m["header"]["date"].isoformat()
        if msg_id:
            m["header"]["msg_id"] = m["msg_id"] = msg_id
        if session:
            m["header"]["session"] = session
        m["parent_header"] = parent or {}
        m["channel"] = channel
        self.ws.send(json.dumps(m, default=str))
        return m["header"]["msg_id"]

    def execute(self, code, allow_stdin=False, stop_on_error=True, **kw):
        return self.send("shell", "execute_request", {
            "code": code, "silent": False, "store_history": True,
            "user_expressions": {}, "allow_stdin": allow_stdin,
            "stop_on_error": stop_on_error}, **kw)

    def recv(self):
        op, data = self.ws.recv_data(control_frame=True)
        if op == websocket.ABNF.OPCODE_CLOSE:
            code = int.from_bytes(data[:2], "big") if len(data) >= 2 else 0
            raise Closed(code, data[2:].decode("utf-8", "replace"))
        if op in (websocket.ABNF.OPCODE_PING, websocket.ABNF.OPCODE_PONG):
            return self.recv()
        m = json.loads(data)
        self.seen.append(m)
        return m

    def until(self, pred):
        """Messages up to and including the first that pred accepts."""
        got = []
        while True:
            m = self.recv()
            got.append(m)
            if pred(m):
                return got

    def run(self, code, **kw):
        """Execute; every message of it up to its reply and its idle."""
        return self.settle(self.execute(code, **kw))

    def settle(self, mid):
        """The messages of request mid up to its reply and its idle, in
        whichever order they come: shell and iopub are two sockets, and
        nothing orders one's messages against the other's."""
        got, reply, idle = [], False, False
        while not (reply and idle):
            m = self.recv()
            if m["parent_header"].get("msg_id") != mid:
                continue
            got.append(m)
            reply |= m["msg_type"] == "execute_reply"
            idle |= (m["msg_type"] == "status" and
                     m["content"]["execution_state"] == "idle")
        return got

    def close(self):
        self.ws.close()


class Closed(Exception):
    def __init__(self, code, reason):
        super().__init__("closed %d %s" % (code, reason))
        self.code, self.reason = code, reason


def out_text(msgs):
    return "".join(m["content"]["text"] for m in msgs
                   if m["msg_type"] == "stream")


def test_rest_shapes_and_errors():
    with Execd() as d:
        st, v = d.get_json("/api")
        assert st == 200 and v["version"].startswith("2."), v
        st, v = d.get_json("/api/status")
        assert st == 200 and set(v) == {"started", "last_activity",
                                        "kernels", "connections"}, v
        assert v["started"].endswith("Z") and v["kernels"] == 0, v

        st, v = d.get_json("/api/kernelspecs")
        assert st == 200 and v["default"] == "python3", v
        py = v["kernelspecs"]["python3"]
        assert py["name"] == "python3", py
        assert py["spec"]["language"] == "python", py
        assert "{connection_file}" in py["spec"]["argv"], py
        assert set(py["spec"]) >= {"argv", "display_name", "language",
                                   "interrupt_mode", "env", "metadata"}
        assert py["resources"]["logo-64x64"] == \
            "/kernelspecs/python3/logo-64x64.png", py
        st, one = d.get_json("/api/kernelspecs/python3")
        assert st == 200 and one == py, one
        st, h, png = d.request("GET", py["resources"]["logo-64x64"])
        assert st == 200 and h["content-type"] == "image/png", h
        assert png.startswith(b"\x89PNG"), png[:8]

        # Unknown things: 404 with Jupyter's {"message","reason"}.
        for path, text in (("/api/kernelspecs/nosuch", "nosuch"),
                           ("/kernelspecs/nosuch/logo-64x64.png", ""),
                           ("/kernelspecs/python3/nosuch.png", ""),
                           ("/kernelspecs/python3/..", ""),
                           ("/api/kernels/nosuch", "Kernel does not exist"),
                           ("/api/sessions/nosuch", "Session not found"),
                           ("/api/nosuch", "")):
            st, h, body = d.request("GET", path)
            assert st == 404, (path, st, body)
            v = json.loads(body)
            assert set(v) == {"message", "reason"}, (path, v)
            assert text in v["message"], (path, v)
        for method, path in (("DELETE", "/api/kernels/nosuch"),
                             ("POST", "/api/kernels/nosuch/interrupt"),
                             ("POST", "/api/kernels/nosuch/restart")):
            st, h, body = d.request(method, path)
            assert st == 404, (method, path, st)
            assert "Kernel does not exist" in json.loads(body)["message"]
        st, h, body = d.request("POST", "/api/kernels",
                                body={"name": "nosuch"})
        assert st == 404, (st, body)
        assert "nosuch" in json.loads(body)["message"]
        # execd's shell is a context, never a kernel.
        st, h, body = d.request("POST", "/api/kernels",
                                body={"name": "bash"})
        assert st == 404, (st, body)
        st, h, body = d.request("GET", "/api/kernels/x/channels")
        assert st == 404, st    # no such kernel, before the handshake


def test_auth_forms():
    with Execd("--access-token", "s3cret") as d:
        st, h, body = d.request("GET", "/api/kernels")
        assert st == 403 and json.loads(body)["message"] == "Forbidden"
        st, h, body = d.request("GET", "/api/kernels",
                                headers={"Authorization": "token wrong"})
        assert st == 403
        for hdrs, q in (({"Authorization": "token s3cret"}, ""),
                        ({"Authorization": "Bearer s3cret"}, ""),
                        ({}, "?token=s3cret")):
            st, h, body = d.request("GET", "/api/kernels" + q, headers=hdrs)
            assert st == 200 and json.loads(body) == [], (hdrs, st)
        # The WebSocket takes the token the same ways.
        k = start_kernel(d, headers={"Authorization": "token s3cret"})
        try:
            Client(d, k["id"])
            raise AssertionError("a channels socket opened without token")
        except websocket.WebSocketBadStatusException as e:
            assert e.status_code == 403, e
        c = Client(d, k["id"], query="?token=s3cret")
        assert "ok" in out_text(c.run("print('ok')"))
        c.close()
        c = Client(d, k["id"], headers=["Authorization: token s3cret"])
        assert "ok" in out_text(c.run("print('ok')"))
        # A page of another origin may not open one.
        try:
            Client(d, k["id"], query="?token=s3cret",
                   origin="http://evil.example")
            raise AssertionError("a cross-origin socket opened")
        except websocket.WebSocketBadStatusException as e:
            assert e.status_code == 403, e


def test_allow_origin_admits_a_named_page():
    """--allow-origin lets one other origin's page (or any, with *) open
    channels, as Jupyter Server's allow_origin does; others stay 403."""
    for allow, ok, refused in (
            ("https://lab.example:8888", ["https://lab.example:8888"],
             ["http://lab.example:8888", "https://evil.example"]),
            ("*", ["https://anything.example"], [])):
        with Execd("--access-token", "s3cret", "--allow-origin",
                   allow) as d:
            k = start_kernel(d, headers={"Authorization": "token s3cret"})
            for origin in ok:
                c = Client(d, k["id"], query="?token=s3cret",
                           origin=origin)
                assert "ok" in out_text(c.run("print('ok')"))
                c.close()
            for origin in refused:
                try:
                    Client(d, k["id"], query="?token=s3cret",
                           origin=origin)
                    raise AssertionError("%s opened a socket" % origin)
                except websocket.WebSocketBadStatusException as e:
                    assert e.status_code == 403, e


ISOLATION = ("import re\n"
             "s = open('/proc/self/status').read()\n"
             "print({k: re.search(k + r':\\s*(\\S+)', s).group(1) for k in "
             "('Seccomp', 'NoNewPrivs', 'CapEff', 'CapBnd')})\n"
             "print(open('/proc/self/cgroup').read().count('execd-'))")


def test_kernels_of_notebooks_are_isolated_as_contexts():
    """A kernel started through /api/kernels runs under the same seccomp
    filter, no_new_privs, capabilities and cgroups as a context's."""
    with Execd() as d:
        k = start_kernel(d)
        c = Client(d, k["id"])
        mine = out_text(c.run(ISOLATION))
        c.close()
        ctx = new_context(d)
        st, evs = run_code(d, ISOLATION, id=ctx["id"])
        theirs = texts(evs, "stdout")
        assert mine == theirs, (mine, theirs)
        assert "'Seccomp': '2'" in mine and "'NoNewPrivs': '1'" in mine, \
            mine


def test_one_set_of_kernels():
    with Execd() as d:
        # A kernel started here is a context there, same id.
        k = start_kernel(d)
        assert k["name"] == "python3" and k["execution_state"] == "idle"
        assert k["connections"] == 0 and k["last_activity"].endswith("Z")
        st, v = d.get_json("/code/contexts/" + k["id"])
        assert st == 200 and v["id"] == k["id"], v
        st, evs = run_code(d, "print(6 * 7)", id=k["id"])
        assert st == 200 and texts(evs, "stdout") == "42\n", evs
        # A context made there is a kernel here.
        ctx = new_context(d)
        st, v = d.get_json("/api/kernels/" + ctx["id"])
        assert st == 200 and v["name"] == "python3", v
        st, v = d.get_json("/api/kernels")
        assert {x["id"] for x in v} == {k["id"], ctx["id"]}, v
        # Deleting either deletes both views.
        st, h, body = d.request("DELETE", "/api/kernels/" + k["id"])
        assert st == 204 and body == b"", (st, body)
        st, _ = d.get_json("/code/contexts/" + k["id"])
        assert st == 404
        st, h, body = d.request("DELETE", "/code/contexts/" + ctx["id"])
        assert st == 200
        st, _ = d.get_json("/api/kernels/" + ctx["id"])
        assert st == 404
        st, v = d.get_json("/api/kernels")
        assert v == [], v


def test_execute_display_and_two_clients():
    with Execd() as d:
        k = start_kernel(d)
        a, b = Client(d, k["id"]), Client(d, k["id"])
        wait_for(lambda: d.get_json("/api/kernels/" + k["id"])[1]
                 ["connections"] == 2)
        st, v = d.get_json("/api/status")
        assert v["kernels"] == 1 and v["connections"] == 2, v

        # Output streams as it comes: the first line before the sleep
        # ends, seen by both clients; the reply to the requester only.
        mid = a.execute("import time\nprint('one', flush=True)\n"
                        "time.sleep(1)\nprint('two')")
        first = a.until(lambda m: m["msg_type"] == "stream")
        assert first[-1]["content"]["text"] == "one\n", first
        assert first[-1]["parent_header"]["msg_id"] == mid
        assert first[-1]["channel"] == "iopub"
        a.settle(mid)
        got_b = b.until(lambda m: m["msg_type"] == "status" and
                        m["parent_header"].get("msg_id") == mid and
                        m["content"]["execution_state"] == "idle")
        assert out_text(got_b) == "one\ntwo\n", got_b
        assert not [m for m in got_b if m["channel"] == "shell"], got_b

        # A display_data with an image.
        got = b.run("from IPython.display import display, Image\n"
                    "import base64\n"
                    "display(Image(data=base64.b64decode('%s')))" % PNG)
        dd = [m for m in got if m["msg_type"] == "display_data"]
        assert dd and base64.b64decode(dd[0]["content"]["data"][
            "image/png"]).startswith(b"\x89PNG"), got
        # kernel_info, as every front end asks first.
        mid = a.send("shell", "kernel_info_request", {})
        r = a.until(lambda m: m["msg_type"] == "kernel_info_reply")[-1]
        assert r["parent_header"]["msg_id"] == mid
        assert r["content"]["language_info"]["name"] == "python"
        a.close()
        b.close()


def test_stdin_goes_to_the_client_that_allowed_it():
    with Execd() as d:
        k = start_kernel(d)
        a, b = Client(d, k["id"]), Client(d, k["id"])
        mid = a.execute("name = input('who? ')\nprint('hi ' + name)",
                        allow_stdin=True)
        req = a.until(lambda m: m["channel"] == "stdin")[-1]
        assert req["msg_type"] == "input_request", req
        assert req["content"]["prompt"] == "who? "
        a.send("stdin", "input_reply", {"value": "bob"},
               parent=req["header"])
        got = a.until(lambda m: m["msg_type"] == "execute_reply")
        assert got[-1]["content"]["status"] == "ok", got
        b.until(lambda m: m["msg_type"] == "stream" and
                m["parent_header"].get("msg_id") == mid)
        assert not [m for m in b.seen if m["channel"] == "stdin"], b.seen


def test_interrupt_and_restart():
    with Execd() as d:
        k = start_kernel(d)
        c = Client(d, k["id"])
        c.run("x = 41")
        # (stop_on_error would have ipykernel abort the next cell, sent
        # within its window after the error.)
        mid = c.execute("import time; time.sleep(300)",
                        stop_on_error=False)
        c.until(lambda m: m["msg_type"] == "execute_input" and
                m["parent_header"].get("msg_id") == mid)
        # ipykernel takes SIGINT only while the code runs: execute_input
        # says the handler has begun.
        time.sleep(0.3)
        t0 = time.monotonic()
        st, h, body = d.request("POST", "/api/kernels/%s/interrupt" %
                                k["id"])
        assert st == 204 and body == b"", (st, body)
        got = c.until(lambda m: m["msg_type"] == "execute_reply")
        assert got[-1]["content"]["status"] == "error", got[-1]
        assert got[-1]["content"]["ename"] == "KeyboardInterrupt"
        assert time.monotonic() - t0 < BOUND
        assert "41" in out_text(c.run("print(x)"))     # state kept

        st, h, body = d.request("POST", "/api/kernels/%s/restart" %
                                k["id"], timeout=BOUND + 30)
        assert st == 200, (st, body)
        v = json.loads(body)
        assert v["id"] == k["id"] and v["execution_state"] in (
            "idle", "starting"), v
        c.until(lambda m: m["msg_type"] == "status" and
                m["content"]["execution_state"] == "restarting")
        # stop_on_error=False: else ipykernel aborts what reaches it
        # just after the error, the POST /code below included.
        got = c.run("print(x)", stop_on_error=False)
        err = [m for m in got if m["msg_type"] == "error"]
        assert err and err[0]["content"]["ename"] == "NameError", got
        # The same kernel for the OpenSandbox API, fresh there too.
        st, evs = run_code(d, "print('after')", id=k["id"])
        assert texts(evs, "stdout") == "after\n", evs


def test_code_run_and_channels_interleaved():
    """An agent's POST /code and a notebook's cells on one kernel, at
    once: neither takes the other's output."""
    with Execd() as d:
        k = start_kernel(d)
        c = Client(d, k["id"])
        res = {}

        def agent():
            res["agent"] = [run_code(d, "for i in range(5):\n"
                                     "    print('agent', i)", id=k["id"])
                            for _ in range(3)]

        t = threading.Thread(target=agent)
        t.start()
        cells = [c.run("for i in range(5):\n    print('cell', i)")
                 for _ in range(3)]
        t.join(BOUND)
        for got in cells:
            assert out_text(got) == "".join("cell %d\n" % i
                                            for i in range(5)), got
        for st, evs in res["agent"]:
            assert st == 200
            assert texts(evs, "stdout") == "".join(
                "agent %d\n" % i for i in range(5)), evs


def test_malformed_and_forged_messages():
    with Execd() as d:
        k = start_kernel(d)
        good = Client(d, k["id"])
        bad_frames = [
            "not json",
            "[1,2]",
            json.dumps({"header": {"msg_id": "x", "msg_type": "t"},
                        "channel": "iopub"}),
            json.dumps({"header": {"msg_id": "x", "msg_type": "t"},
                        "channel": "nosuch"}),
            json.dumps({"header": {"msg_type": "t"}, "channel": "shell"}),
            json.dumps({"header": "h", "channel": "shell"}),
            json.dumps({"header": {"msg_id": "x", "msg_type": "t"},
                        "content": [], "channel": "shell"}),
        ]
        for frame in bad_frames:
            c = Client(d, k["id"])
            c.ws.send(frame)
            try:
                c.until(lambda m: False)
            except Closed as e:
                assert e.code == 1007 and e.reason, (frame, e.code)
        # A binary frame whose offsets are wrong.
        c = Client(d, k["id"])
        c.ws.send_binary(b"\x00\x00\x00\x09" + b"\xff" * 8)
        try:
            c.until(lambda m: False)
        except Closed as e:
            assert e.code == 1007, e.code
        assert "malformed" in d.read_log()

        # Forged: another client's pending msg_id (and its session).
        mid = good.execute("import time; time.sleep(1); print('mine')")
        thief = Client(d, k["id"])
        thief.execute("print('stolen')", msg_id=mid,
                      session=good.session.session)
        try:
            thief.until(lambda m: m["channel"] == "shell")
            raise AssertionError("a forged msg_id was answered")
        except Closed as e:
            assert e.code == 1008 and "msg_id" in e.reason, e
        got = good.until(lambda m: m["msg_type"] == "execute_reply" and
                         m["parent_header"].get("msg_id") == mid)
        assert got[-1]["content"]["status"] == "ok"
        assert "stolen" not in out_text(good.seen)
        # A forged parent_header routes nothing: replies follow msg_id.
        mid2 = good.send("shell", "kernel_info_request", {},
                         parent={"msg_id": mid, "session": "x"})
        r = good.until(lambda m: m["msg_type"] == "kernel_info_reply")[-1]
        assert r["parent_header"]["msg_id"] == mid2
        # The kernel is unharmed.
        assert "fine" in out_text(good.run("print('fine')"))


def test_slow_client_is_dropped():
    with Execd() as d:
        k = start_kernel(d)
        fast = Client(d, k["id"])
        slow = Client(d, k["id"])
        slow.ws.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        # 26 MiB of output, past a client's 16 MiB bound and what the
        # sockets hold (a few MiB); slow reads none.  Paced at 2 MiB/s, so
        # that the fast client (Python) keeps up on a loaded machine too.
        got = fast.run("import sys, time\nfor i in range(26):\n"
                       "    sys.stdout.write('x' * (1 << 20))\n"
                       "    sys.stdout.flush()\n    time.sleep(0.5)\n"
                       "print('end')")
        assert out_text(got).endswith("end\n")
        wait_for(lambda: "reads too slowly" in d.read_log(), BOUND)
        wait_for(lambda: d.get_json("/api/kernels/" + k["id"])[1]
                 ["connections"] == 1, BOUND)
        # The others go on.  (What the slow one was sent stays queued
        # before its close frame, so it never reads a close code.)
        assert "ok" in out_text(fast.run("print('ok')"))
        slow.ws.sock.close()


def test_sessions():
    with Execd() as d:
        st, h, body = d.request("POST", "/api/sessions", body={
            "path": "a.ipynb", "type": "notebook", "name": "a",
            "kernel": {"name": "python3"}}, timeout=BOUND + 30)
        assert st == 201, body
        s = json.loads(body)
        assert h["location"] == "/api/sessions/" + s["id"]
        assert s["path"] == "a.ipynb" and s["type"] == "notebook"
        assert s["notebook"] == {"path": "a.ipynb", "name": "a"}
        kid = s["kernel"]["id"]
        assert s["kernel"]["name"] == "python3"
        # The same path: the same session.
        st, h, body = d.request("POST", "/api/sessions", body={
            "path": "a.ipynb", "type": "notebook"})
        assert st == 201 and json.loads(body)["id"] == s["id"]
        # On a running kernel (a context of the OpenSandbox API).
        ctx = new_context(d)
        st, h, body = d.request("POST", "/api/sessions", body={
            "path": "b.py", "type": "console",
            "kernel": {"id": ctx["id"]}})
        assert st == 201, body
        s2 = json.loads(body)
        assert s2["kernel"]["id"] == ctx["id"] and "notebook" not in s2
        st, v = d.get_json("/api/sessions")
        assert {x["id"] for x in v} == {s["id"], s2["id"]}, v
        st, v = d.get_json("/api/sessions/" + s["id"])
        assert st == 200 and v["id"] == s["id"], v
        assert v["kernel"]["id"] == kid, v
        # Rename, and move to another running kernel: the old one goes.
        st, h, body = d.request("PATCH", "/api/sessions/" + s["id"], body={
            "path": "c.ipynb", "kernel": {"id": ctx["id"]}})
        assert st == 200, body
        v = json.loads(body)
        assert v["path"] == "c.ipynb" and v["kernel"]["id"] == ctx["id"]
        wait_for(lambda: d.get_json("/api/kernels/" + kid)[0] == 404)
        st, h, body = d.request("PATCH", "/api/sessions/" + s["id"],
                                body={"kernel": {"id": "nosuch"}})
        assert st == 400 and "No such kernel" in json.loads(body)["message"]
        st, h, body = d.request("POST", "/api/sessions",
                                body={"type": "notebook"})
        assert st == 400 and "path" in json.loads(body)["message"]
        # Delete: the session and its kernel.
        st, h, body = d.request("DELETE", "/api/sessions/" + s2["id"])
        assert st == 204, body
        st, _ = d.get_json("/code/contexts/" + ctx["id"])
        assert st == 404
        # The other session's kernel went with it: it is gone too.
        st, v = d.get_json("/api/sessions")
        assert v == [], v
        st, h, body = d.request("DELETE", "/api/sessions/" + s["id"])
        assert st == 404


def test_second_listener_serves_only_jupyter():
    with Execd("--access-token", "s3cret",
               "--jupyter-listen", "127.0.0.1:0") as d:
        m = re.search(r"Jupyter Server API listening on 127\.0\.0\.1:(\d+)",
                      d.read_log())
        assert m, d.read_log()
        port = int(m.group(1))
        assert port != d.port

        def get(path, headers=None):
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            c.request("GET", path, headers=headers or {})
            r = c.getresponse()
            return r.status, r.read()

        auth = {"Authorization": "token s3cret"}
        st, body = get("/api/kernels", auth)
        assert st == 200 and json.loads(body) == [], (st, body)
        assert get("/api/kernels")[0] == 403     # the same token
        st, body = get("/api/kernelspecs", auth)
        assert "python3" in json.loads(body)["kernelspecs"]
        # Only these routes: OpenSandbox's are not there.
        assert get("/code/contexts", {"X-EXECD-ACCESS-TOKEN": "s3cret"})[
            0] == 404
        assert get("/ping")[0] in (401, 404)


def test_auto_listener_answers_the_sdk_probe():
    """The code-interpreter SDK (1.1) waits for a Jupyter server by
    running bash -c 'exec 3<>/dev/tcp/127.0.0.1/${JUPYTER_PORT:-44771}'
    through /command: with kernels installed, execd alone answers it."""
    with Execd("--jupyter-listen", "auto") as d:
        log = d.read_log()
        if "no Jupyter listener on 127.0.0.1:44771" in log:
            # Another daemon on this machine holds the port: a warning
            # is what auto promises then, and something answers there.
            pass
        else:
            assert "Jupyter Server API listening on 127.0.0.1:44771" in \
                log, log
            st, h, body = d.request("GET", "/api", headers={})
            assert st == 200
        st, h, body = d.request("POST", "/command", body={
            "command": "bash -c 'exec 3<>/dev/tcp/127.0.0.1/"
                       "${JUPYTER_PORT:-44771}' && echo ready"},
            timeout=30)
        assert st == 200 and b"ready" in body, body


V1 = "v1.kernel.websocket.jupyter.org"


def v1_pack(channel, parts):
    """A v1 frame, written here from the protocol's description: a count
    of offsets, the offsets (64-bit little-endian), the channel, then the
    parts."""
    chunks = [channel.encode()] + parts
    n = len(chunks) + 1
    offsets, at = [], 8 * (n + 1)
    for c in chunks:
        offsets.append(at)
        at += len(c)
    offsets.append(at)
    return b"".join([n.to_bytes(8, "little")] +
                    [o.to_bytes(8, "little") for o in offsets] + chunks)


def v1_unpack(data):
    n = int.from_bytes(data[:8], "little")
    offs = [int.from_bytes(data[8 * (i + 1):8 * (i + 2)], "little")
            for i in range(n)]
    channel = data[offs[0]:offs[1]].decode()
    parts = [data[offs[i]:offs[i + 1]] for i in range(1, n - 1)]
    return channel, [json.loads(p) for p in parts[:4]], parts[4:]


def test_v1_subprotocol():
    with Execd() as d:
        k = start_kernel(d)
        url = "ws://%s:%d/api/kernels/%s/channels" % (d.host, d.port,
                                                      k["id"])
        ws = websocket.create_connection(url, timeout=BOUND,
                                         subprotocols=[V1, "other"])
        assert ws.getsubprotocol() == V1
        legacy = Client(d, k["id"])     # offers none: the JSON form
        assert legacy.ws.getsubprotocol() is None
        s = Session(username="tester")
        m = s.msg("execute_request", {
            "code": "print('v1 works')", "silent": False,
            "store_history": True, "user_expressions": {},
            "allow_stdin": False, "stop_on_error": True})
        m["header"]["date"] = m["header"]["date"].isoformat()
        ws.send_binary(v1_pack("shell", [json.dumps(x).encode() for x in (
            m["header"], {}, {}, m["content"])]))
        # Until its reply and its idle, in either order (two sockets).
        got, reply, idle = [], None, False
        while reply is None or not idle:
            op, data = ws.recv_data()
            assert op == websocket.ABNF.OPCODE_BINARY, op
            channel, (header, parent, meta, content), bufs = v1_unpack(data)
            got.append((channel, header["msg_type"], content))
            if header["msg_type"] == "execute_reply":
                assert channel == "shell" and parent["msg_id"] == \
                    m["header"]["msg_id"]
                reply = content
            idle |= (header["msg_type"] == "status" and
                     parent.get("msg_id") == m["header"]["msg_id"] and
                     content["execution_state"] == "idle")
        assert reply["status"] == "ok", got
        assert ("iopub", "stream", {"name": "stdout",
                                    "text": "v1 works\n"}) in got, got
        # The JSON client on the same kernel saw the same output.
        legacy.until(lambda x: x["msg_type"] == "stream" and
                     x["content"]["text"] == "v1 works\n")
        # A text frame is no v1 message: closed with the reason.
        ws.send("{}")
        op, data = ws.recv_data(control_frame=True)
        while op != websocket.ABNF.OPCODE_CLOSE:
            op, data = ws.recv_data(control_frame=True)
        assert int.from_bytes(data[:2], "big") == 1007, data
        assert "ok" in out_text(legacy.run("print('ok')"))


def test_idle_cull_spares_kernels_in_use_by_jupyter_clients():
    """--context-idle-timeout counts a kernel's Jupyter clients as use: a
    kernel with a channels client is kept, and goes once it has none."""
    with Execd("--context-idle-timeout", "2") as d:
        k = start_kernel(d)
        c = Client(d, k["id"])
        time.sleep(4)
        st, _ = d.get_json("/api/kernels/" + k["id"])
        assert st == 200, "culled while a client was connected"
        assert "ok" in out_text(c.run("print('ok')"))
        c.close()
        assert wait_for(lambda: d.get_json("/api/kernels/" + k["id"])[0]
                        == 404, BOUND), "never culled once unused"
