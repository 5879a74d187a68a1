"""Runs once: batch items and ephemeral runs forked without a kernel.

Once the fork server of a Python kernelspec serves, a context made for
one run (a batch item's, an ephemeral run's) is a process forked from
it that runs the code in the server's shell and exits: no kernel, no
connection file.  To the client it is a fresh context as before: the
same outputs, errors, limits, timeouts and interrupts, and nothing of
it left once the run is over.  A run once reports itself here through
get_ipython().kernel, which only a kernel has.
"""
import json
import re
import tempfile
import time

from lib import (PYALL, Execd, expect_error, fork_serving, install_spec,
                 run_code, texts, wait_for)

BOUND = 60      # seconds in which a server must be up, even under ASan

KERNEL = re.compile(r"kernel=\S+ pid=\d+ spec=\S+ (?:forked|started)")
ME = ("import os\n"
      "print(os.getpid(), os.getppid(), get_ipython().kernel is None)\n")


def batch(d, items, timeout=120, **kw):
    st, h, body = d.request("POST", "/code/batch",
                            body=dict(items=items, **kw), timeout=timeout)
    assert st == 200, body
    return json.loads(body)["items"]


def gone(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(") ")[1][0] == "Z"
    except OSError:
        return True


def test_batch_items_run_once_as_a_kernel_would_run_them():
    png = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
           "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
    items = [
        ME,
        "import os, sys\nprint('out')\nos.system('echo child; "
        "echo child-err >&2')\nprint('err', file=sys.stderr)\n6*7",
        "from IPython.display import display\n"
        "display({'image/png': '%s', 'text/plain': '<img>'}, raw=True)"
        % png,
        "v = 1\nprint('v' in dir())\n1/0",
        "input('?')",
        "%%bash\necho magic",
        "import os; print('x', flush=True); os.kill(os.getpid(), 9)",
        "import subprocess\n"
        "p = subprocess.Popen(['sleep', '300'])\nprint(p.pid)",
        "def f(:",
    ]
    with Execd() as d:
        fork_serving(d)
        kernels = len(KERNEL.findall(d.read_log()))
        got = batch(d, [{"code": c, "language": "python"} for c in items])
        pid, ppid, once = got[0]["stdout"].split()
        assert int(ppid) == d.proc.pid and once == "True", got[0]
        a = got[1]
        assert a["status"] == "ok" and a["results"] == [{"text": "42"}], a
        assert sorted(a["stdout"].split()) == ["child", "out"], a
        assert sorted(a["stderr"].split()) == ["child-err", "err"], a
        assert got[2]["results"] == [{"image/png": png, "text": "<img>"}]
        e = got[3]
        assert e["stdout"] == "True\n", e
        assert e["error"]["ename"] == "ZeroDivisionError", e
        assert e["error"]["evalue"] == "division by zero", e
        assert any("1/0" in re.sub(r"\x1b\[[0-9;]*m", "", t)
                   for t in e["error"]["traceback"]), e
        assert got[4]["error"]["ename"] == "StdinNotImplementedError"
        assert got[5]["stdout"] == "magic\n", got[5]
        k = got[6]
        assert k["stdout"] == "x\n" and k["error"]["ename"] == \
            "KernelError", k
        assert "killed by signal 9" in k["error"]["evalue"], k
        # What an item started is gone with it.
        assert wait_for(lambda: gone(int(got[7]["stdout"])), timeout=30)
        assert got[8]["error"]["ename"] == "SyntaxError", got[8]
        assert gone(int(pid))
        ids = {i["context"] for i in got}
        assert len(ids) == len(items), got
        st, lst = d.get_json("/code/contexts")
        assert lst == [], lst
        # No kernel was started for the items.
        assert len(KERNEL.findall(d.read_log())) == kernels, d.read_log()


def test_a_run_once_is_fresh_and_under_its_limits():
    with Execd("--limit", "context.open_files=200") as d:
        fork_serving(d)
        code = ("import resource as r\n"
                "print(r.getrlimit(r.RLIMIT_NOFILE), 'v' in dir())\n"
                "v = 1\n" + ME)
        got = batch(d, [{"code": code, "language": "python"},
                        {"code": code, "language": "python",
                         "limits": {"open_files": 100}}], concurrency=1)
        # Code of any size (over the fork server's 64 KiB requests).
        big = batch(d, [{"code": "x = 1\n" * 20000 + ME,
                         "language": "python"}])
        assert big[0]["stdout"].split()[2] == "True", big
        first = got[0]["stdout"].split("\n")
        assert first[0] == "(200, 200) False", got[0]
        assert got[1]["stdout"].split("\n")[0] == "(100, 100) False", got[1]
        assert first[1].split()[2] == "True", got[0]
        # A memory limit is its cgroup's (as test_forkserver requires).
        assert "cgroup v" in d.read_log(), "no cgroup found on this machine"
        got = batch(d, [{"code": "b = bytearray(2 << 30)",
                         "language": "python",
                         "limits": {"memory": "128MiB"}}])
        assert "memory limit of 128 MiB reached" in \
            got[0]["error"]["evalue"], got


def test_an_ephemeral_run_once_streams_times_out_and_is_interrupted():
    with Execd() as d:
        fork_serving(d)
        st, evs = run_code(d, ME + "print(1)\n6*7", language="python",
                           ephemeral=True)
        assert st == 200, evs
        out = texts(evs, "stdout").split()
        assert out[2:] == ["True", "1"], evs
        res = [e for e in evs if e["type"] in ("execution_count",
                                               "result")]
        assert res[0]["execution_count"] == 1, evs
        assert res[1]["results"] == {"text": "42"}, evs
        assert evs[-1]["type"] == "execution_complete", evs
        # Its timeout: the output before it is kept.
        st, h, body = d.request("POST", "/code", body={
            "code": "import time\nprint('a', flush=True)\ntime.sleep(60)",
            "timeout": 500, "context": {"language": "python",
                                        "ephemeral": True}}, timeout=60)
        assert st == 200 and b"TimeoutError" in body, body
        assert b'"text":"a\\n"' in body, body
        # One that ignores its interrupt is killed after the grace.
        st, h, body = d.request("POST", "/code", body={
            "code": "import time\nwhile True:\n  try:\n    time.sleep(60)\n"
                    "  except KeyboardInterrupt:\n    pass",
            "timeout": 300, "context": {"language": "python",
                                        "ephemeral": True}}, timeout=60)
        assert st == 200 and b"TimeoutError" in body, body
        # An interrupt by its context id (the init event's).
        import threading
        got = {}

        def run():
            got["evs"] = run_code(d, ME + "import time\ntime.sleep(60)",
                                  language="python", ephemeral=True)[1]
        t = threading.Thread(target=run)
        t.start()
        assert wait_for(lambda: len(d.get_json("/code/contexts")[1]) == 1,
                        timeout=30)
        cid = d.get_json("/code/contexts")[1][0]["id"]
        # It has no kernel to attach to, and runs nothing more.
        st, h, body = d.request("GET", "/code/contexts/%s/connection" % cid)
        expect_error(st, body, 409)
        st, evs = run_code(d, "print('second')", id=cid)
        assert "second" not in texts(evs, "stdout"), evs
        assert [e for e in evs if e["type"] == "error"], evs
        time.sleep(0.5)
        st, h, body = d.request("DELETE", "/code?id=" + cid)
        assert st == 200, body
        t.join(60)
        assert not t.is_alive()
        errs = [e["error"]["ename"] for e in got["evs"]
                if e["type"] == "error"]
        assert errs == ["KeyboardInterrupt"], got["evs"]
        assert wait_for(lambda: d.get_json("/code/contexts")[1] == [],
                        timeout=30)
        st, h, body = d.request("DELETE", "/code?id=" + cid)
        expect_error(st, body, 404)


def test_a_spec_with_options_runs_its_items_in_kernels():
    # Options beyond -f FILE may configure the shell, and a run once has
    # only the server's: such a spec's items get kernels of their own.
    with tempfile.TemporaryDirectory() as tmp:
        install_spec(tmp, "pyall", PYALL)
        with Execd(env={"JUPYTER_PATH": tmp}) as d:
            fork_serving(d, language="pyall", spec="pyall")
            got = batch(d, [{"code": "1\n2\n" + ME, "language": "pyall"}])
            assert got[0]["results"] == [{"text": "1"}, {"text": "2"}], got
            assert got[0]["stdout"].split()[2] == "False", got
            # python3's items, from their own server, run once
            fork_serving(d)
            got = batch(d, [{"code": ME, "language": "python"}])
            assert got[0]["stdout"].split()[2] == "True", got
