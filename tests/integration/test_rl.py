"""One-request episodes: ephemeral runs and batches of runs."""
import json
import os
import socket

from lib import Execd, expect_error, kinds, run_code, texts, wait_for

WHO = ("import os, ipykernel.connect as k\n"
       "print(os.getpid(), k.get_connection_file())\n")


def gone(pid, path):
    """The kernel's process and its connection file no longer exist."""
    return not os.path.exists("/proc/%d" % pid) and not os.path.exists(path)


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


def test_ephemeral_run_streams_then_its_context_is_gone():
    with Execd() as d:
        st, evs = run_code(d, WHO + "6*7", language="python", ephemeral=True)
        assert st == 200, evs
        cid = evs[0]["text"]
        assert evs[0]["type"] == "init" and cid, evs[0]
        pid, path = texts(evs, "stdout").split()
        pid = int(pid)
        assert [e for e in evs if e["type"] == "result"][0]["results"] == \
            {"text": "42"}, evs
        assert kinds(evs)[-1] == "execution_complete", evs
        st, h, body = d.request("GET", "/code/contexts/" + cid)
        expect_error(st, body, 404, "CONTEXT_NOT_FOUND")
        assert wait_for(lambda: gone(pid, path), timeout=30), (pid, path)
        st, lst = d.get_json("/code/contexts")
        assert lst == [], lst
        # Not the default context: a plain run makes its own.
        st, evs = run_code(d, "1", language="python")
        assert evs[0]["text"] != cid


def test_ephemeral_runs_do_not_share_state():
    with Execd() as d:
        run_code(d, "v = 1", language="python", ephemeral=True)
        st, evs = run_code(d, "print(v)", language="python", ephemeral=True)
        err = [e for e in evs if e["type"] == "error"][0]["error"]
        assert err["ename"] == "NameError", evs


def test_ephemeral_run_bad_requests():
    with Execd() as d:
        for ctx in ({"ephemeral": True}, {"id": "x", "ephemeral": True,
                                           "language": "python"},
                    {"language": "python", "ephemeral": "yes"}):
            st, h, body = d.request("POST", "/code",
                                    body={"code": "1", "context": ctx})
            expect_error(st, body, 400)


def test_client_leaving_an_ephemeral_run_ends_it():
    with Execd() as d:
        s = socket.create_connection(("127.0.0.1", d.port), timeout=60)
        body = json.dumps({"code": WHO + "import time; time.sleep(300)",
                           "context": {"language": "python",
                                       "ephemeral": True}}).encode()
        s.sendall(b"POST /code HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(body) + body)
        got = b""
        while b"stdout" not in got:
            chunk = s.recv(65536)
            assert chunk, got
            got += chunk
        line = [x for x in got.split(b"\n") if b'"stdout"' in x][0]
        ev = json.loads(line[line.index(b"{"):])
        pid, path = ev["text"].split()
        pid = int(pid)
        assert alive(pid)
        s.close()
        assert wait_for(lambda: gone(pid, path), timeout=30), (pid, path)
        st, lst = d.get_json("/code/contexts")
        assert lst == [], lst
