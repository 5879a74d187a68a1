"""Jupyter Server's own gateway client against execd: Debian's
jupyter_server, started with --gateway-url pointing at execd's Jupyter
listener, lists execd's kernelspecs, starts a kernel there, and relays a
notebook client's channels WebSocket to it.  So the reference
implementation's client code checks our REST and WebSocket API.

The notebook's kernel is one of execd's contexts: an agent's POST /code
and the notebook's cells interleave on it, and deleting it through the
gateway deletes the context."""
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from jupyter_client.session import Session
import websocket

from lib import UUID_RE, Execd, events, free_port, texts, wait_for

BOUND = 60
TOKEN = "exec-tok"      # execd's
GW_TOKEN = "gw-tok"     # the notebook server's own


class NotebookServer:
    """jupyter_server in gateway mode, on loopback, stopped by its pid."""

    def __init__(self, gateway_url):
        self.dir = tempfile.mkdtemp(prefix="execd-gw-")
        self.port = free_port()
        fd, self.log_path = tempfile.mkstemp(prefix="execd-gw-log-")
        os.close(fd)
        env = dict(os.environ, JUPYTER_CONFIG_DIR=self.dir + "/cfg",
                   JUPYTER_DATA_DIR=self.dir + "/data",
                   JUPYTER_RUNTIME_DIR=self.dir + "/run", HOME=self.dir)
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jupyter_server", "--no-browser",
             "--allow-root",
             "--ip=127.0.0.1", "--port=%d" % self.port,
             "--port-retries=0", "--ServerApp.token=" + GW_TOKEN,
             "--ServerApp.root_dir=" + self.dir,
             "--gateway-url=" + gateway_url,
             "--GatewayClient.auth_token=" + TOKEN,
             "--GatewayClient.request_timeout=%d" % (BOUND + 30)],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
            env=env)
        if not wait_for(self.answers, timeout=BOUND):
            self.stop()
            raise AssertionError("jupyter_server did not start:\n" +
                                 self.read_log())

    def read_log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")[-4000:]

    def answers(self):
        if self.proc.poll() is not None:
            raise AssertionError("jupyter_server exited:\n" +
                                 self.read_log())
        try:
            return self.request("GET", "/api")[0] == 200
        except OSError:
            return False

    def request(self, method, path, body=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port,
                                       timeout=BOUND + 30)
        hdrs = {"Authorization": "token " + GW_TOKEN}
        if body is not None:
            body = json.dumps(body)
            hdrs["Content-Type"] = "application/json"
        c.request(method, path, body=body, headers=hdrs)
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, json.loads(data) if data else None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        os.unlink(self.log_path)
        shutil.rmtree(self.dir, ignore_errors=True)


def channels(nb, kid):
    """A notebook's channels WebSocket, once it reaches the kernel.

    jupyter_server 1.x's gateway handler drops what a client sends
    before its own connection to the gateway is up, so a client asks for
    kernel_info until it hears back, as JupyterLab does."""
    ws = websocket.create_connection(
        "ws://127.0.0.1:%d/api/kernels/%s/channels?token=%s" % (
            nb.port, kid, GW_TOKEN), timeout=BOUND)
    sess = Session(username="notebook")
    deadline = time.monotonic() + BOUND
    while time.monotonic() < deadline:
        m = sess.msg("kernel_info_request", {})
        m["header"]["date"] = m["header"]["date"].isoformat()
        m["channel"] = "shell"
        ws.send(json.dumps(m, default=str))
        ws.settimeout(1)
        try:
            while True:
                r = json.loads(ws.recv())
                if r["msg_type"] == "kernel_info_reply" and r[
                        "parent_header"].get("msg_id") == m["msg_id"]:
                    ws.settimeout(BOUND)
                    return ws
        except websocket.WebSocketTimeoutException:
            pass
    ws.close()
    raise AssertionError("no kernel_info_reply through the gateway")


def execute(ws, session, code):
    """Run code as a notebook cell; its stream text, once idle."""
    m = session.msg("execute_request", {
        "code": code, "silent": False, "store_history": True,
        "user_expressions": {}, "allow_stdin": False,
        "stop_on_error": True})
    m["header"]["date"] = m["header"]["date"].isoformat()
    m["channel"] = "shell"
    ws.send(json.dumps(m, default=str))
    mid, out, reply, idle = m["header"]["msg_id"], "", None, False
    deadline = time.monotonic() + BOUND
    while (reply is None or not idle) and time.monotonic() < deadline:
        r = json.loads(ws.recv())
        if r.get("parent_header", {}).get("msg_id") != mid:
            continue
        if r["msg_type"] == "stream":
            out += r["content"]["text"]
        elif r["msg_type"] == "execute_reply":
            reply = r["content"]
        elif r["msg_type"] == "status":
            idle = r["content"]["execution_state"] == "idle"
    assert reply is not None and idle, (out, reply)
    return out, reply


def test_jupyter_server_in_gateway_mode_drives_execds_kernel():
    with Execd("--access-token", TOKEN,
               "--jupyter-listen", "127.0.0.1:0") as d:
        m = re.search(r"Jupyter Server API listening on 127\.0\.0\.1:(\d+)",
                      d.read_log())
        assert m, d.read_log()
        nb = NotebookServer("http://127.0.0.1:%s" % m.group(1))
        try:
            # execd's kernelspecs, through the notebook server.
            st, specs = nb.request("GET", "/api/kernelspecs")
            assert st == 200 and "python3" in specs["kernelspecs"], specs
            # A notebook's session starts its kernel on execd.
            st, s = nb.request("POST", "/api/sessions", {
                "path": "agent.ipynb", "type": "notebook", "name": "",
                "kernel": {"name": "python3"}})
            assert st == 201, s
            kid = s["kernel"]["id"]
            assert UUID_RE.match(kid), kid
            # The same kernel is a context of the OpenSandbox API.
            st, ctx = d.get_json("/code/contexts/" + kid, headers={
                "X-EXECD-ACCESS-TOKEN": TOKEN})
            assert st == 200 and ctx["id"] == kid, ctx
            st, k = nb.request("GET", "/api/kernels/" + kid)
            assert st == 200 and k["name"] == "python3", k

            # The notebook's cells, relayed by the notebook server.
            ws = channels(nb, kid)
            try:
                sess = Session(username="notebook")
                out, reply = execute(ws, sess, "x = 20\nprint('cell', x)")
                assert reply["status"] == "ok" and out == "cell 20\n", (
                    out, reply)
                # The agent's run between two cells sees the same state.
                st, _, data = d.request("POST", "/code", body={
                    "code": "x += 1\nprint('agent', x)",
                    "context": {"id": kid}}, headers={
                    "X-EXECD-ACCESS-TOKEN": TOKEN}, timeout=BOUND)
                assert st == 200, data
                assert texts(events(data), "stdout") == "agent 21\n", data
                out, reply = execute(ws, sess, "print('cell', x * 2)")
                assert out == "cell 42\n", (out, reply)
                # An error comes back as a notebook shows it.
                out, reply = execute(ws, sess, "1/0")
                assert reply["status"] == "error" and \
                    reply["ename"] == "ZeroDivisionError", reply
            finally:
                ws.close()

            # Interrupt and restart through the gateway.
            st, _ = nb.request("POST", "/api/kernels/%s/interrupt" % kid)
            assert st == 204, st
            st, k = nb.request("POST", "/api/kernels/%s/restart" % kid)
            assert st == 200 and k["id"] == kid, k
            ws = channels(nb, kid)
            try:
                out, reply = execute(ws, Session(username="notebook"),
                                     "print('x' in dir())")
                assert out == "False\n", out   # state gone
            finally:
                ws.close()

            # Shut down through the gateway: the context is gone too.
            st, _ = nb.request("DELETE", "/api/sessions/" + s["id"])
            assert st == 204, st
            assert wait_for(lambda: d.get_json(
                "/code/contexts/" + kid, headers={
                    "X-EXECD-ACCESS-TOKEN": TOKEN})[0] == 404,
                timeout=BOUND), "context %s still there" % kid
        except Exception as e:
            raise AssertionError("%s\n--- jupyter_server log ---\n%s" % (
                e, nb.read_log()))
        finally:
            nb.stop()
