"""One-request episodes: ephemeral runs and batches of runs."""
import json
import os
import socket
import tempfile
import threading
import time

from lib import (Execd, alive, events, expect_error, kinds, run_code, texts,
                 wait_for)

# The run's pid and its kernel's connection file ("-" for a run once,
# which has none: test_runonce.py).
WHO = ("import os\n"
       "try:\n"
       "    import ipykernel.connect as k\n"
       "    f = k.get_connection_file()\n"
       "except Exception:\n"
       "    f = '-'\n"
       "print(os.getpid(), f)\n")


def gone(pid, path):
    """The kernel's process and its connection file no longer exist."""
    return not os.path.exists("/proc/%d" % pid) and not os.path.exists(path)


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
    code = (WHO.replace("print(os.getpid(), f)",
                        "open(%r, 'a').write('%%d %%s\\n' %% (os.getpid(), "
                        "f))") + "import time; time.sleep(300)\n") % marker
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


def test_idempotent_command_starts_once():
    tmp = tempfile.mkdtemp(prefix="execd-rl-")
    marker = os.path.join(tmp, "count")
    body = {"command": "echo run >> %s; echo hello; sleep 2; echo bye"
            % marker}
    key = {"Idempotency-Key": '"cmd-1"'}
    with Execd() as d:
        got = []

        def post(hdrs):
            st, h, data = d.request("POST", "/command", body=body,
                                    headers=hdrs, timeout=60)
            got.append((st, data))

        t = threading.Thread(target=post, args=(key,))
        t.start()
        assert wait_for(lambda: os.path.exists(marker), timeout=30)
        # While the first runs: the synonym header, the same key.
        post({"X-EXECD-OPERATION-ID": "cmd-1"})
        t.join(60)
        post(key)			# after it ended
        assert open(marker).read() == "run\n"
        assert [st for st, _ in got] == [200, 200, 200], got
        evs = [[(e["type"], e.get("text")) for e in events(data)
                if e["type"] != "ping"] for _, data in got]
        assert evs[0][0][0] == "init", evs
        assert evs[0] == evs[1] == evs[2], evs
        assert ("stdout", "hello") in evs[0] or \
            ("stdout", "hello\n") in evs[0], evs
        # The same key with another body, or another path: 422.
        st, h, data = d.request("POST", "/command",
                                body={"command": "echo other"}, headers=key)
        expect_error(st, data, 422, "IDEMPOTENCY_KEY_REUSED")
        st, h, data = d.request("DELETE", "/command?id=x", headers=key)
        expect_error(st, data, 422)
        assert open(marker).read() == "run\n"
        # A bad key is 400; another key runs again.
        st, h, data = d.request("POST", "/command", body=body,
                                headers={"Idempotency-Key": '"a b"'})
        expect_error(st, data, 400)
        st, h, data = d.request("POST", "/command", body=body,
                                headers={"Idempotency-Key": "cmd-2"})
        assert st == 200 and open(marker).read() == "run\nrun\n"


def test_idempotency_window_expires():
    tmp = tempfile.mkdtemp(prefix="execd-rl-")
    marker = os.path.join(tmp, "count")
    body = {"command": "echo run >> %s" % marker}
    key = {"Idempotency-Key": "w"}
    with Execd("--idempotency-window", "1") as d:
        st, h, first = d.request("POST", "/command", body=body, headers=key)
        st, h, again = d.request("POST", "/command", body=body, headers=key)
        assert open(marker).read() == "run\n"
        assert events(first)[0]["text"] == events(again)[0]["text"]
        time.sleep(1.5)
        st, h, data = d.request("POST", "/command", body=body, headers=key)
        assert st == 200 and open(marker).read() == "run\nrun\n"
        assert events(data)[0]["text"] != events(first)[0]["text"]
        # And with another body once the key is free.
        time.sleep(1.5)
        st, h, data = d.request("POST", "/command",
                                body={"command": "true"}, headers=key)
        assert st == 200


def test_idempotency_key_count_is_bounded():
    tmp = tempfile.mkdtemp(prefix="execd-rl-")
    marker = os.path.join(tmp, "count")
    body = {"command": "echo run >> %s" % marker}
    with Execd("--idempotency-keys", "2") as d:
        for k in ("a", "b", "a", "c", "a"):
            d.request("POST", "/command", body=body,
                      headers={"Idempotency-Key": k})
        # a, b; a again (kept); c evicts a; a runs again.
        assert open(marker).read() == "run\n" * 4


def test_idempotent_json_answers_and_code_runs():
    with Execd() as d:
        key = {"Idempotency-Key": "ctx"}
        st, h, a = d.request("POST", "/code/context",
                             body={"language": "python"}, headers=key,
                             timeout=90)
        st2, h2, b = d.request("POST", "/code/context",
                               body={"language": "python"}, headers=key,
                               timeout=90)
        assert st == st2 == 200 and a == b, (a, b)
        st, lst = d.get_json("/code/contexts")
        assert len(lst) == 1, lst
        cid = json.loads(a)["id"]
        run = {"code": "n = globals().get('n', 0) + 1\nprint(n)",
               "context": {"id": cid}}
        key = {"Idempotency-Key": "run-1"}
        st, h, a = d.request("POST", "/code", body=run, headers=key,
                             timeout=60)
        st, h, b = d.request("POST", "/code", body=run, headers=key,
                             timeout=60)
        assert texts(events(a), "stdout") == "1\n", a
        assert a.replace(b"\n", b"") and \
            [e for e in events(a) if e["type"] != "ping"] == \
            [e for e in events(b) if e["type"] != "ping"], (a, b)
        st, evs = run_code(d, "print(n)", id=cid)
        assert texts(evs, "stdout") == "1\n", evs
        # An ephemeral run repeated: one context, one answer.
        eph = {"code": "print(1)", "context": {"language": "python",
                                               "ephemeral": True}}
        key = {"Idempotency-Key": "eph"}
        st, h, a = d.request("POST", "/code", body=eph, headers=key,
                             timeout=60)
        st, h, b = d.request("POST", "/code", body=eph, headers=key,
                             timeout=60)
        assert events(a)[0]["text"] == events(b)[0]["text"]
        # A batch repeated: the same document.
        bb = {"items": [{"code": "import os; os.getpid()",
                         "language": "python"}]}
        key = {"Idempotency-Key": "batch"}
        st, h, a = d.request("POST", "/code/batch", body=bb, headers=key,
                             timeout=60)
        st2, h, b = d.request("POST", "/code/batch", body=bb, headers=key,
                              timeout=60)
        assert st == st2 == 200 and a == b
        # An interrupt repeated answers as the first did.
        key = {"Idempotency-Key": "int"}
        st, h, a = d.request("DELETE", "/code?id=nope", headers=key)
        st2, h, b = d.request("DELETE", "/code?id=nope", headers=key)
        assert st == st2 == 404 and a == b


def test_idempotent_code_run_repeated_while_it_runs_follows_it():
    with Execd() as d:
        run = {"code": "import time\nprint('a', flush=True)\n"
                       "time.sleep(2)\nprint('b')",
               "context": {"language": "python", "ephemeral": True}}
        key = {"Idempotency-Key": "live"}
        got = []

        def post():
            st, h, data = d.request("POST", "/code", body=run, headers=key,
                                    timeout=90)
            got.append(data)

        t = threading.Thread(target=post)
        t.start()
        time.sleep(1)
        post()
        t.join(90)
        a, b = [[e for e in events(x) if e["type"] != "ping"] for x in got]
        assert a == b, (a, b)
        assert texts(a, "stdout") == "a\nb\n", a
        assert kinds(a)[-1] == "execution_complete", a


def test_idempotent_stdin_writes_once():
    with Execd() as d:
        st, h, data = d.request("POST", "/command", body={
            "command": "cat", "stdin": True, "background": True})
        cid = events(data)[0]["text"]
        key = {"Idempotency-Key": "in-1"}
        for _ in range(2):
            st, h, body = d.request("POST", "/command/%s/stdin" % cid,
                                    body=b"once\n", headers=key)
            assert st == 200 and body == b"", (st, body)
        st, h, body = d.request("POST", "/command/%s/stdin" % cid,
                                body=b"twice\n", headers=key)
        expect_error(st, body, 422, "IDEMPOTENCY_KEY_REUSED")
        st, h, body = d.request("POST", "/command/%s/stdin?close=true"
                                % cid, body=b"")
        assert st == 200, body

        def logs():
            st, h, b = d.request("GET", "/command/%s/logs" % cid)
            return b
        assert wait_for(lambda: b"once" in logs(), timeout=20)
        time.sleep(0.3)
        assert logs().count(b"once") == 1, logs()
