"""Light contexts: a Python context runs without a kernel until a client
wants one of it.

Once the fork server of a Python kernelspec serves, POST /code/context
(and the default context of POST /code, and MCP's) gives a light context:
a process forked from the server that runs each code sent to it in a
shell of its own, as a kernel's cells, over pipes.  To a client of
/code it is a context as before: its own process and state, outputs,
errors, interrupts, timeouts, limits and death reports.  When a client
wants a kernel of it (its connection file, the Jupyter API), that same
process starts IPKernelApp in its shell, state kept.  A light context
tells itself apart only by get_ipython().kernel, which is None until
then.
"""
import json
import os
import re
import signal
import socket
import threading
import time

from lib import (Execd, alive, attached_print, children_of, fork_serving,
                 interrupted_run, new_context, run_code, texts, wait_for)

BOUND = 60      # seconds in which a server must be up, even under ASan

ME = ("import os\n"
      "print(os.getpid(), os.getppid(), os.getsid(0),"
      " get_ipython().kernel is None)\n")


def light_context(d, **kw):
    """A new context, which the log says is light; its pid."""
    c = new_context(d, **kw)
    assert re.search(r"context=%s language=\S+ created \(light\)" %
                     c["id"], d.read_log()), d.read_log()[-3000:]
    st, evs = run_code(d, ME, id=c["id"])
    assert st == 200, evs
    pid, ppid, sid, none = texts(evs, "stdout").split()
    assert int(ppid) == d.proc.pid and int(sid) == int(pid), evs
    assert none == "True", evs
    return c, int(pid)


def test_light_contexts_are_fresh_their_own_and_in_order():
    with Execd() as d:
        fork_serving(d)
        a, pa = light_context(d)
        b, pb = light_context(d)
        assert pa != pb
        run_code(d, "secret = 41", id=a["id"])
        st, evs = run_code(d, "secret += 1\nsecret", id=a["id"])
        res = [e for e in evs if e["type"] in ("execution_count",
                                               "result")]
        assert res[0]["execution_count"] == 3, evs
        assert res[1]["results"] == {"text": "42"}, evs
        st, evs = run_code(d, "print('secret' in dir(), len(In))",
                           id=b["id"])
        assert texts(evs, "stdout") == "False 3\n", evs
        outs = []
        for c in (a, b):
            st, evs = run_code(d, "import random; print(random.random())",
                               id=c["id"])
            outs.append(texts(evs, "stdout"))
        assert outs[0] != outs[1], outs
        # Errors, stderr, displays and the output of its children.
        st, evs = run_code(d, "import os, sys\nprint('e', file=sys.stderr)"
                           "\nos.system('echo child')\n"
                           "from IPython.display import display\n"
                           "display({'text/plain': 'shown'}, raw=True)\n"
                           "1/0", id=a["id"])
        assert texts(evs, "stderr") == "e\n", evs
        assert "child" in texts(evs, "stdout"), evs
        assert {"text": "shown"} in [e.get("results") for e in evs], evs
        errs = [e["error"]["ename"] for e in evs if e["type"] == "error"]
        assert errs == ["ZeroDivisionError"], evs
        # Runs sent together run in order, each hearing its own output.
        got = {}

        def run(name, code):
            got[name] = run_code(d, code, id=a["id"])[1]
        t = threading.Thread(target=run, args=(
            "first", "import time\nprint('first', flush=True)\n"
            "time.sleep(1)\nprint('first again')"))
        t.start()
        time.sleep(0.3)
        run("second", "print('second')")
        t.join(BOUND)
        assert texts(got["first"], "stdout") == "first\nfirst again\n", got
        assert texts(got["second"], "stdout") == "second\n", got
        # A run whose client went away runs on, unheard: the next run
        # hears only its own.
        def left(code):
            s = socket.create_connection(("127.0.0.1", d.port))
            body = json.dumps({"code": code, "context": {"id": a["id"]}})
            s.sendall(("POST /code HTTP/1.1\r\nHost: x\r\nContent-Type: "
                       "application/json\r\nContent-Length: %d\r\n\r\n%s"
                       % (len(body), body)).encode())
            time.sleep(0.2)
            s.close()
        left("import time\ntime.sleep(0.5)\nprint('lost')")
        st, evs = run_code(d, "print('next')", id=a["id"])
        assert texts(evs, "stdout") == "next\n", evs
        # Deleted, with such a run going on: its process goes, nothing
        # of it is left.
        left("import time\ntime.sleep(30)")
        for c in (a, b):
            st, h, body = d.request("DELETE", "/code/contexts/" + c["id"])
            assert st == 200, body
        assert wait_for(lambda: not alive(pa) and not alive(pb), 15)
        st, h, body = d.request("GET", "/code/contexts/" + a["id"])
        assert st == 404, body


def test_a_light_context_becomes_a_kernel_when_one_is_wanted():
    # A short ready timeout (a third of it: 2 s) that a run going on as
    # the kernel is wanted outlasts: the kernel's start counts from the
    # run's end.
    with Execd("--kernel-ready-timeout", "6") as d:
        fork_serving(d)
        c, pid = light_context(d)
        run_code(d, "shared = 'from-light'", id=c["id"])
        st, conn = d.get_json("/code/contexts/%s/connection" % c["id"])
        assert st == 200, conn
        assert "context=%s becomes a kernel" % c["id"] in d.read_log()
        # The same process, now a kernel, its state kept; shown as a
        # launched kernel would be.
        st, evs = run_code(d, "import os\nprint(os.getpid(), shared, "
                           "get_ipython().kernel is None, len(In))",
                           id=c["id"])
        assert texts(evs, "stdout") == "%d from-light False 4\n" % pid, evs
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            cmd = f.read().rstrip(b"\0").split(b"\0")
        assert cmd[1:4] == [b"-m", b"ipykernel_launcher", b"-f"], cmd
        assert cmd[4] == conn["connection_file"].encode(), cmd
        out, r = attached_print(conn["connection_file"], "shared",
                                timeout=BOUND)
        assert out == "from-light", r
        # Named by the Jupyter API while it runs: its run ends as it
        # would have, then it is a kernel.
        c2, pid2 = light_context(d)
        got = {}
        t = threading.Thread(target=lambda: got.update(r=run_code(
            d, "import time\ntime.sleep(3)\nprint('done')", id=c2["id"])))
        t.start()
        time.sleep(0.3)
        st, kernels = d.get_json("/api/kernels")
        assert st == 200 and c2["id"] in [k["id"] for k in kernels], kernels
        t.join(BOUND)
        st, evs = got["r"]
        assert texts(evs, "stdout") == "done\n", evs
        assert evs[-1]["type"] == "execution_complete", evs
        st, evs = run_code(d, "import os\nprint(os.getpid(), "
                           "get_ipython().kernel is None)", id=c2["id"])
        assert texts(evs, "stdout") == "%d False\n" % pid2, evs
        # Deleted as a kernel is.
        st, h, body = d.request("DELETE", "/code/contexts/" + c["id"])
        assert st == 200, body
        assert wait_for(lambda: not alive(pid), 15)
        assert wait_for(lambda: not os.path.exists(conn["connection_file"]),
                        15)


def test_interrupt_timeout_and_death_of_a_light_context():
    with Execd("--grace-period", "1000") as d:
        fork_serving(d)
        c, pid = light_context(d)
        run_code(d, "kept = 7", id=c["id"])
        evs = interrupted_run(d, c["id"], "import time; time.sleep(300)")
        errs = [e["error"]["ename"] for e in evs if e["type"] == "error"]
        assert errs == ["KeyboardInterrupt"], evs
        # Its timeout, the output before it kept; the state lives on.
        st, h, body = d.request("POST", "/code", body={
            "code": "import time\nprint('a', flush=True)\ntime.sleep(60)",
            "timeout": 500, "context": {"id": c["id"]}}, timeout=60)
        assert st == 200 and b"TimeoutError" in body, body
        assert b'"text":"a\\n"' in body, body
        # Its interrupt ended it: no kill follows after the grace.
        time.sleep(1.5)
        st, evs = run_code(d, "import os\nprint(kept, os.getpid())",
                           id=c["id"])
        assert texts(evs, "stdout") == "7 %d\n" % pid, evs
        # Killed mid-run: the run ends with the signal, the context goes
        # on in a new process, with fresh state.
        out = {}
        t = threading.Thread(target=lambda: out.update(r=run_code(
            d, "import time; time.sleep(300)", id=c["id"])))
        t.start()
        time.sleep(1.0)
        os.kill(pid, signal.SIGKILL)
        t.join(BOUND)
        assert not t.is_alive()
        st, evs = out["r"]
        err = [e["error"] for e in evs if e["type"] == "error"]
        assert err and "killed by signal 9" in json.dumps(err), evs
        st, evs = run_code(d, "import os; print('kept' in dir(), "
                           "os.getpid())", id=c["id"])
        gone, npid = texts(evs, "stdout").split()
        assert gone == "False" and int(npid) != pid, evs
        # One that ignores its interrupt is killed after the grace.
        st, h, body = d.request("POST", "/code", body={
            "code": "import time\nwhile True:\n  try:\n    time.sleep(60)\n"
                    "  except KeyboardInterrupt:\n    pass",
            "timeout": 300, "context": {"id": c["id"]}}, timeout=60)
        assert st == 200 and b"TimeoutError" in body, body
        st, evs = run_code(d, "print('again')", id=c["id"])
        assert texts(evs, "stdout") == "again\n", evs
        assert not alive(int(npid))


def test_limits_of_a_light_context():
    with Execd("--limit", "context.open_files=200") as d:
        if "cgroup v" not in d.read_log():
            raise AssertionError("no cgroup found on this machine")
        fork_serving(d)
        c, pid = light_context(d, limits={"memory": "256MiB"})
        st, evs = run_code(
            d, "import resource as r\n"
            "print(r.getrlimit(r.RLIMIT_NOFILE))", id=c["id"])
        assert texts(evs, "stdout") == "(200, 200)\n", evs
        servers = [p for p, _ in children_of(d.proc.pid) if p != pid]
        with open("/proc/%d/cgroup" % pid) as f:
            mine = f.read()
        for s in servers:
            with open("/proc/%d/cgroup" % s) as f:
                assert f.read() != mine, mine
        st, evs = run_code(d, "b = bytearray(2 << 30)", id=c["id"])
        assert "memory limit of 256 MiB reached" in json.dumps(evs), evs


def test_kernels_where_asked_for():
    # --kernel-fork kernels, a warm pool, and the Jupyter API's own
    # kernels give kernels, forked ones.
    with Execd("--kernel-fork", "kernels") as d:
        fork_serving(d)
        c = new_context(d)
        st, evs = run_code(d, "print(get_ipython().kernel is None)",
                           id=c["id"])
        assert texts(evs, "stdout") == "False\n", evs
        assert "(light)" not in d.read_log()
    with Execd("--pool", "python=1") as d:
        fork_serving(d)
        assert wait_for(lambda: len(re.findall(r"kernel=\S+ ready",
                                               d.read_log())) >= 2, BOUND)
        c = new_context(d)
        assert "context=%s language=python taken from the pool" % \
            c["id"] in d.read_log()
        st, h, body = d.request("POST", "/api/kernels",
                                body={"name": "python3"}, timeout=BOUND)
        assert st == 201, body
        kid = json.loads(body)["id"]
        st, evs = run_code(d, "print(get_ipython().kernel is None)",
                           id=kid)
        assert texts(evs, "stdout") == "False\n", evs
