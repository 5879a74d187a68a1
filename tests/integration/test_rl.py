"""One-request episodes: ephemeral runs and batches of runs."""
import json
import os
import socket
import tempfile

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


def batch(d, items, timeout=120, **kw):
    st, h, body = d.request("POST", "/code/batch",
                            body=dict(items=items, **kw), timeout=timeout)
    return st, json.loads(body)


def test_batch_answers_each_item_in_order():
    png = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
           "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
    items = [
        {"code": "import sys; print('out'); print('err', file=sys.stderr)"
                 "; 6*7", "language": "python"},
        {"code": "1/0", "language": "python"},
        {"code": "from IPython.display import display\n"
                 "display({'image/png': '%s', 'text/plain': '<img>'}, "
                 "raw=True)" % png, "language": "python"},
        {"code": WHO, "language": "python"},
        {"code": "x", "language": "nosuchlanguage"},
        {"code": "import time; time.sleep(30)", "language": "python",
         "timeout": 500},
    ]
    with Execd() as d:
        st, doc = batch(d, items)
        assert st == 200, doc
        got = doc["items"]
        assert len(got) == len(items), got
        a = got[0]
        assert a["status"] == "ok" and a["error"] is None, a
        assert a["stdout"] == "out\n" and a["stderr"] == "err\n", a
        assert a["results"] == [{"text": "42"}], a
        assert isinstance(a["duration_ms"], int) and a["duration_ms"] >= 0
        b = got[1]
        assert b["status"] == "error", b
        assert b["error"]["ename"] == "ZeroDivisionError", b
        assert b["error"]["evalue"] == "division by zero", b
        assert isinstance(b["error"]["traceback"], list), b
        c = got[2]
        assert c["status"] == "ok", c
        assert c["results"] == [{"image/png": png, "text": "<img>"}], c
        pid, path = got[3]["stdout"].split()
        assert got[4]["status"] == "error", got[4]
        assert got[4]["error"]["ename"] == "LanguageNotSupported", got[4]
        assert got[5]["status"] == "error", got[5]
        assert got[5]["error"]["ename"] == "TimeoutError", got[5]
        assert wait_for(lambda: gone(int(pid), path), timeout=30)
        assert wait_for(lambda: d.get_json("/code/contexts")[1] == [],
                        timeout=30)
        ids = [i["context"] for i in got if "context" in i]
        assert len(set(ids)) == len(ids) == 5, got


def test_batch_items_do_not_share_state_and_respect_concurrency():
    marker = os.path.join(tempfile.mkdtemp(prefix="execd-rl-"), "m")
    # Each item notes its start and end; at most 2 overlap.
    code = ("import time, os\n"
            "open(%r, 'a').write('s\\n'); time.sleep(0.5)\n"
            "open(%r, 'a').write('e\\n')\n"
            "print('v' in dir())\nv = 1\n") % (marker, marker)
    with Execd("--batch-concurrency", "2") as d:
        st, doc = batch(d, [{"code": code, "language": "python"}] * 5,
                        concurrency=4)
        assert st == 200, doc
        assert [i["stdout"] for i in doc["items"]] == ["False\n"] * 5, doc
        depth = peak = 0
        for line in open(marker).read().split():
            depth += 1 if line == "s" else -1
            peak = max(peak, depth)
        assert peak <= 2, peak
        st, doc = batch(d, [{"code": code, "language": "python"}] * 2,
                        concurrency=1)
        marks = open(marker).read().split()[10:]
        assert marks == ["s", "e", "s", "e"], marks


def test_batch_bad_requests():
    bad = [
        {},
        {"items": []},
        {"items": "x"},
        {"items": [{"code": "1"}]},
        {"items": [{"language": "python"}]},
        {"items": [{"code": "", "language": "python"}]},
        {"items": [{"code": "1", "language": "command"}]},
        {"items": [{"code": "1", "language": "python", "x": 1}]},
        {"items": [{"code": "1", "language": "python", "timeout": -1}]},
        {"items": [{"code": "1", "language": "python",
                    "limits": {"nope": 1}}]},
        {"items": [{"code": "1", "language": "python"}], "concurrency": 0},
        {"items": [{"code": "1", "language": "python"}] * 1001},
    ]
    with Execd() as d:
        for body in bad:
            st, h, data = d.request("POST", "/code/batch", body=body)
            expect_error(st, data, 400)
            assert json.loads(data)["code"], data


def test_client_leaving_a_batch_stops_it():
    marker = os.path.join(tempfile.mkdtemp(prefix="execd-rl-"), "m")
    code = ("import os, time, ipykernel.connect as k\n"
            "open(%r, 'a').write('%%d %%s\\n' %% (os.getpid(), "
            "k.get_connection_file()))\n"
            "time.sleep(300)\n") % marker
    with Execd() as d:
        s = socket.create_connection(("127.0.0.1", d.port), timeout=60)
        body = json.dumps({"items": [{"code": code, "language": "python"}]
                           * 4, "concurrency": 2}).encode()
        s.sendall(b"POST /code/batch HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(body) + body)
        assert wait_for(lambda: os.path.exists(marker) and len(
            open(marker).read().split("\n")) == 3, timeout=60)
        runs = [ln.split() for ln in open(marker).read().split("\n") if ln]
        assert all(alive(int(p)) for p, _ in runs), runs
        s.close()
        for p, path in runs:
            assert wait_for(lambda: gone(int(p), path), timeout=30), p
        assert wait_for(lambda: d.get_json("/code/contexts")[1] == [],
                        timeout=30)
        # The two items that waited never started.
        assert len(open(marker).read().split("\n")) == 3
