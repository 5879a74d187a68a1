"""mcp_bench.py -- the MCP rows of the bench: a tool call on /mcp against
the plain API route that does the same work.

/usr/bin/python3, standard library only (http.client); bench/run.sh
calls it.

  mcp_bench.py calls EXECD N
      Start EXECD on 127.0.0.1 at a free port and create a python context
      (POST /code/context).  Open one MCP session on its own keep-alive
      connection (initialize, notifications/initialized, then every call
      with its Mcp-Session-Id; Accept names JSON and event streams, no
      progress token, so each call is answered with JSON when it ends),
      and a second keep-alive connection for the plain API.  After 10
      warm-ups of each, N times each, in alternating blocks of 10 so that
      drift on a shared machine hits both sides alike:
        mcp command   tools/call run_command {"command":"true"}, to the
                      whole JSON answer (exit code 0, not an error);
        command       POST /command {"command":"true"}, to the end of its
                      stream (execution_complete);
        mcp code      tools/call run_code {"code":"1+1","context_id":ID},
                      to the whole answer (its text is "2");
        code          POST /code {"code":"1+1","context":{"id":ID}}, to
                      the end of its stream;
      the code sides on the same context, so on the same kernel.
      Prints "mcmd_med mcmd_min cmd_med cmd_min mcode_med mcode_min
      code_med code_min" in microseconds.

Times are CLOCK_MONOTONIC.  Every wait is bounded; execd is stopped by
its pid, also on SIGTERM; the context is deleted and the session ended.
"""

import http.client
import json
import os
import statistics
import sys

import benchlib
from benchlib import Execd, die, now_us

WARMUPS = 10
BLOCK = 10          # calls per side before switching sides
TIMEOUT = 30        # seconds for one answer
ACCEPT = "application/json, text/event-stream"


class McpSession:
    """One MCP session over Streamable HTTP on one keep-alive
    connection; JSON answers only (no progress token is ever sent)."""

    def __init__(self, port):
        self.conn = http.client.HTTPConnection("127.0.0.1", port,
                                               timeout=TIMEOUT)
        self.sid = None
        self.next_id = 1
        st, hdrs, r = self.post({
            "jsonrpc": "2.0", "id": self.take_id(), "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "execd-bench",
                                      "version": "1"}}})
        if st != 200 or "result" not in (r or {}):
            die("mcp: initialize: %d %r" % (st, r))
        self.sid = hdrs.get("mcp-session-id")
        if not self.sid:
            die("mcp: initialize answered no Mcp-Session-Id")
        st, _, _ = self.post({"jsonrpc": "2.0",
                              "method": "notifications/initialized"})
        if st != 202:
            die("mcp: notifications/initialized: %d" % st)

    def take_id(self):
        self.next_id += 1
        return self.next_id - 1

    def post(self, msg):
        """(status, lower-cased headers, decoded JSON or None)."""
        h = {"Content-Type": "application/json", "Accept": ACCEPT}
        if self.sid:
            h["Mcp-Session-Id"] = self.sid
        self.conn.request("POST", "/mcp", body=json.dumps(msg).encode(),
                          headers=h)
        r = self.conn.getresponse()
        data = r.read()
        hdrs = {k.lower(): v for k, v in r.getheaders()}
        if data.strip() and not hdrs.get("content-type", "").startswith(
                "application/json"):
            die("mcp: a %s answer, not JSON: %r"
                % (hdrs.get("content-type"), data[:200]))
        return r.status, hdrs, json.loads(data) if data.strip() else None

    def call(self, name, arguments):
        """One tools/call, timed to its whole answer: (us, result)."""
        msg = {"jsonrpc": "2.0", "id": self.take_id(), "method": "tools/call",
               "params": {"name": name, "arguments": arguments}}
        t0 = now_us()
        st, _, r = self.post(msg)
        t = now_us() - t0
        if st != 200 or not r or "result" not in r:
            die("mcp: tools/call %s: %d %r" % (name, st, r))
        if r["result"].get("isError"):
            die("mcp: tools/call %s is an error: %r" % (name, r["result"]))
        return t, r["result"]

    def close(self):
        if self.sid:
            try:
                self.conn.request("DELETE", "/mcp",
                                  headers={"Mcp-Session-Id": self.sid})
                self.conn.getresponse().read()
            except OSError:
                pass
        self.conn.close()


def plain(ex, path, body):
    """One POST of the plain API, to the end of its stream: us."""
    c = ex.conn
    t0 = now_us()
    c.request("POST", path, body=body,
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    t = now_us() - t0
    if r.status != 200 or b'"execution_complete"' not in data:
        die("execd: POST %s: %d %r" % (path, r.status, data[-400:]))
    return t, data


def cmd_calls(binary, n, tmp):
    ex = mc = None
    ctx_id = None
    try:
        ex = Execd(binary, tmp, "--runtime-dir",
                   os.path.join(tmp, "runtime"), "--log-level", "warn",
                   name="execd-mcp", timeout=TIMEOUT)
        ctx_id = ex.json("POST", "/code/context",
                         {"language": "python"})["id"]
        mc = McpSession(ex.port)

        cmd_body = json.dumps({"command": "true"}).encode()
        code_body = json.dumps({"code": "1+1",
                                "context": {"id": ctx_id}}).encode()
        cmd_args = {"command": "true"}
        code_args = {"code": "1+1", "context_id": ctx_id}

        def mcp_command():
            t, res = mc.call("run_command", cmd_args)
            if res.get("structuredContent", {}).get("exit_code") != 0:
                die("mcp: run_command true: %r" % res)
            return t

        def mcp_code():
            t, res = mc.call("run_code", code_args)
            text = "".join(c.get("text", "") for c in res.get("content", []))
            if text.strip() != "2":
                die("mcp: run_code 1+1: %r" % res)
            return t

        _, data = plain(ex, "/code", code_body)
        if b'"text":"2"' not in data.replace(b" ", b""):
            die("execd: POST /code 1+1 gave %r" % data[:600])
        for _ in range(WARMUPS):
            mcp_command()
            plain(ex, "/command", cmd_body)
            mcp_code()
            plain(ex, "/code", code_body)

        mcmd, cmd, mcode, code = [], [], [], []
        done = 0
        while done < n:
            k = min(BLOCK, n - done)
            for _ in range(k):
                mcmd.append(mcp_command())
            for _ in range(k):
                cmd.append(plain(ex, "/command", cmd_body)[0])
            for _ in range(k):
                mcode.append(mcp_code())
            for _ in range(k):
                code.append(plain(ex, "/code", code_body)[0])
            done += k
        med = statistics.median
        print("%d %d %d %d %d %d %d %d" % (
            med(mcmd), min(mcmd), med(cmd), min(cmd),
            med(mcode), min(mcode), med(code), min(code)))
    finally:
        if mc is not None:
            mc.close()
        if ex is not None:
            if ctx_id is not None and ex.proc.poll() is None:
                try:
                    ex.request("DELETE", "/code/contexts/" + ctx_id)
                except OSError:
                    pass
            ex.close()


if __name__ == "__main__":
    sys.exit(benchlib.main(sys.argv, {"calls": cmd_calls},
                           "usage: mcp_bench.py calls EXECD N\n"))
