"""Python contexts forked from a fork server (--kernel-fork, on by default).

A context whose kernel is ipykernel comes from a Python process that has
imported ipykernel already, forked per context.  Each must still be a
kernel of its own to every client: fresh state, its own pid, key and
connection file, interrupts, restarts and death reports, Jupyter attach,
rich output, its limits; a kernelspec that says it cannot be forked, and
--kernel-fork off, launch kernels as before.

Which kernels were forked is read from execd's log ("kernel=ID pid=N
spec=S forked"): nothing else tells them apart, which is the point.  The
first context is launched while the server starts; forked_context()
makes contexts until one is forked.  execd runs here with --kernel-fork
kernels, so that every context is a kernel (test_light.py has the
default's light contexts).
"""
import calendar
import json
import os
import re
import signal
import subprocess
import tempfile
import threading
import time

from lib import (PYALL, Execd, alive, attached_print, children_of,
                 install_spec, interrupted_run, kinds, new_context, run_code,
                 texts, wait_for)

BOUND = 60      # seconds in which a server must be up, even under ASan
# Every context a kernel: light contexts are test_light's.
KERNELS = ("--kernel-fork", "kernels")

PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4"
       "2mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")


def how_started(d, pid):
    """"forked" or "started", as execd's log says of kernel pid."""
    m = re.findall(r"kernel=\S+ pid=%d spec=\S+ (forked|started)" % pid,
                   d.read_log())
    assert m, "no kernel pid=%d in the log" % pid
    return m[-1]


def kernel_pid(d, cid):
    """The pid the kernel of context cid reports of itself."""
    st, evs = run_code(d, "import os; print(os.getpid())", id=cid)
    assert st == 200, evs
    return int(texts(evs, "stdout"))


def forked_context(d, **kw):
    """A new context whose kernel was forked (waiting for the server)."""
    deadline = time.monotonic() + BOUND
    while True:
        c = new_context(d, **kw)
        pid = kernel_pid(d, c["id"])
        if how_started(d, pid) == "forked":
            return c, pid
        assert time.monotonic() < deadline, d.read_log()[-3000:]
        st, h, body = d.request("DELETE", "/code/contexts/" + c["id"])
        assert st == 200, body
        time.sleep(0.5)


def server_pids(d):
    """Children of execd that are fork servers."""
    out = []
    for pid, _ in children_of(d.proc.pid):
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                if b"execd-forkserver" in f.read():
                    out.append(pid)
        except OSError:
            pass
    return out


def test_forked_contexts_are_fresh_and_their_own():
    with Execd(*KERNELS) as d:
        a, pa = forked_context(d)
        b, pb = forked_context(d)
        servers = server_pids(d)
        assert len(servers) == 1, servers
        assert len({pa, pb, servers[0]}) == 3
        run_code(d, "secret = 41", id=a["id"])
        st, evs = run_code(d, "print(secret + 1)", id=a["id"])
        assert texts(evs, "stdout") == "42\n", evs
        st, evs = run_code(d, "print('secret' in dir(), len(In))",
                           id=b["id"])
        assert texts(evs, "stdout") == "False 3\n", evs
        keys, files = set(), set()
        for c, pid in ((a, pa), (b, pb)):
            st, conn = d.get_json("/code/contexts/%s/connection" % c["id"])
            assert st == 200, conn
            keys.add(conn["key"])
            files.add(conn["connection_file"])
            # Adopted by execd, leading a session of its own, shown as
            # a launched kernel would be.
            with open("/proc/%d/stat" % pid) as f:
                rest = f.read().rsplit(") ", 1)[1].split()
            assert int(rest[1]) == d.proc.pid, rest
            assert int(rest[2]) == pid and int(rest[3]) == pid, rest
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                cmd = f.read().rstrip(b"\0").split(b"\0")
            assert cmd[1:4] == [b"-m", b"ipykernel_launcher", b"-f"], cmd
            assert cmd[4] == conn["connection_file"].encode(), cmd
            st, evs = run_code(d, "import sys; print(sys.argv[1:])",
                               id=c["id"])
            assert conn["connection_file"] in texts(evs, "stdout"), evs
            # As `python -m` gives it: its directory first on the path.
            st, evs = run_code(d, "import os, sys\n"
                               "print(sys.path[0] == os.getcwd())",
                               id=c["id"])
            assert texts(evs, "stdout") == "True\n", evs
        assert len(keys) == 2 and len(files) == 2
        # Random numbers differ per context (each reseeds after fork).
        outs = []
        for c in (a, b):
            st, evs = run_code(d, "import random; print(random.random())",
                               id=c["id"])
            outs.append(texts(evs, "stdout"))
        assert outs[0] != outs[1], outs
        # Deleted: the kernels go, the server stays, nothing else is left.
        for c in (a, b):
            st, h, body = d.request("DELETE", "/code/contexts/" + c["id"])
            assert st == 200, body
        assert wait_for(lambda: not alive(pa) and not alive(pb), 15)
        for c in (a, b):
            st, h, body = d.request("GET", "/code/contexts/" + c["id"])
            assert st == 404, body
        # Removed once execd has reaped the kernel (just after it ended).
        assert wait_for(lambda: not any(os.path.exists(f) for f in files),
                        15), files
        assert wait_for(lambda: {p for p, s in children_of(d.proc.pid)}
                        == set(servers), 15), children_of(d.proc.pid)


def test_a_forked_kernel_is_execd_child_with_its_own_thread_id():
    # Forked once, as execd's child from the start, with libc's record
    # of its main thread's id its own: signalling that thread from
    # another (pthread_kill, which reads the record) reaches it, and the
    # kernel's own children work as usual.
    code = ("import os, signal, subprocess, threading\n"
            "got = []\n"
            "signal.signal(signal.SIGUSR1, lambda *a: got.append(1))\n"
            "main = threading.main_thread().ident\n"
            "t = threading.Thread(target=signal.pthread_kill,\n"
            "                     args=(main, signal.SIGUSR1))\n"
            "t.start(); t.join()\n"
            "for _ in range(100):\n"
            "    if got: break\n"
            "    threading.Event().wait(0.01)\n"
            "print(got, threading.get_native_id() == os.getpid(),\n"
            "      subprocess.run(['true']).returncode, os.getppid())\n")
    with Execd(*KERNELS) as d:
        c, pid = forked_context(d)
        st, evs = run_code(d, code, id=c["id"])
        assert st == 200, evs
        assert texts(evs, "stdout") == "[1] True 0 %d\n" % d.proc.pid, evs


def test_forked_kernels_deleted_after_a_run_end_promptly():
    # ipykernel's control thread ends a shutdown_request with a flush of
    # stdout that waits on the iopub thread, which the app's close() (an
    # exit step) may stop first; that kernel then took the flush's whole
    # 10 s to exit.  Episodes from four clients at once hit that race in
    # about one kernel in ten.  The grace period is long so that execd's
    # SIGTERM does not hide a slow exit.
    with Execd(*KERNELS, "--grace-period", "60000") as d:
        forked_context(d)
        errs = []

        def client():
            try:
                for _ in range(6):
                    c = new_context(d)
                    st, evs = run_code(d, "print(1)", id=c["id"])
                    assert st == 200, evs
                    st, h, body = d.request("DELETE",
                                            "/code/contexts/" + c["id"])
                    assert st == 200, body
            except BaseException as e:
                errs.append(e)
        ts = [threading.Thread(target=client) for _ in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert not errs, errs

        def stamp(t):
            return calendar.timegm(time.strptime(t[:19],
                                                 "%Y-%m-%dT%H:%M:%S")) \
                + float(t[19:])

        def lags():
            log = d.read_log()
            gone = {k: stamp(t) for t, k in re.findall(
                r"(\S+)Z info \w+: context=(\S+) deleted", log)}
            ends = {k: stamp(t) for t, k in re.findall(
                r"(\S+)Z info \w+: kernel=(\S+) pid=\d+ (?:exited|killed)",
                log)}
            return gone, {k: ends[k] - t for k, t in gone.items()
                          if k in ends}
        assert wait_for(lambda: len(lags()[1]) == len(lags()[0]) >= 24, 60)
        slow = {k: v for k, v in lags()[1].items() if v > 8}
        assert not slow, slow


def test_interrupt_restart_and_death_report():
    with Execd(*KERNELS) as d:
        c, pid = forked_context(d)
        run_code(d, "kept = 7", id=c["id"])
        evs = interrupted_run(d, c["id"], "import time; time.sleep(300)")
        errs = [e["error"]["ename"] for e in evs if e["type"] == "error"]
        assert errs == ["KeyboardInterrupt"], evs
        st, evs = run_code(d, "print(kept)", id=c["id"])
        assert texts(evs, "stdout") == "7\n", evs
        # Killed mid-run: the run ends with the exit status, the context
        # goes on in a new kernel, forked too, with fresh state.
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
        assert wait_for(lambda: run_code(d, "print('kept' in dir())",
                                         id=c["id"])[1], BOUND)
        st, evs = run_code(d, "import os; print('kept' in dir(), "
                           "os.getpid())", id=c["id"])
        gone, npid = texts(evs, "stdout").split()
        assert gone == "False" and int(npid) != pid, evs
        assert how_started(d, int(npid)) == "forked"


def test_rich_output_and_jupyter_attach():
    with Execd(*KERNELS) as d:
        c, pid = forked_context(d)
        st, evs = run_code(
            d, "from IPython.display import display, Image\n"
            "import base64\n"
            "display(Image(data=base64.b64decode('%s')))" % PNG,
            id=c["id"])
        res = [e for e in evs if e["type"] == "result"]
        assert res and res[0]["results"]["image/png"].strip() == PNG, evs
        run_code(d, "shared = 'from-execd'", id=c["id"])
        st, conn = d.get_json("/code/contexts/%s/connection" % c["id"])
        assert st == 200 and conn["transport"] == "ipc", conn
        out, r = attached_print(conn["connection_file"], "shared",
                                timeout=BOUND)
        assert out == "from-execd", r


def test_limits_apply_to_forked_contexts():
    with Execd(*KERNELS, "--limit",
               "context.open_files=200,context.file_size=1MiB",
               "--limit", "context.cpu_seconds=500") as d:
        c, pid = forked_context(d)
        st, evs = run_code(
            d, "import resource as r\nprint([r.getrlimit(x) for x in "
            "(r.RLIMIT_NOFILE, r.RLIMIT_FSIZE, r.RLIMIT_CPU)])",
            id=c["id"])
        assert texts(evs, "stdout") == \
            "[(200, 200), (1048576, 1048576), (500, 501)]\n", evs
        # A request's own limits, over those.
        c2, pid2 = forked_context(d, limits={"open_files": 100})
        st, evs = run_code(
            d, "import resource as r\n"
            "print(r.getrlimit(r.RLIMIT_NOFILE))", id=c2["id"])
        assert texts(evs, "stdout") == "(100, 100)\n", evs
        # The server itself runs without them.
        with open("/proc/%d/limits" % server_pids(d)[0]) as f:
            assert not re.search(r"Max open files\s+200\s", f.read())


def test_memory_limit_of_a_forked_context_is_its_cgroup():
    with Execd(*KERNELS) as d:
        if "cgroup v" not in d.read_log():
            raise AssertionError("no cgroup found on this machine")
        c, pid = forked_context(d, limits={"memory": "256MiB"})
        with open("/proc/%d/cgroup" % pid) as f:
            mine = f.read()
        with open("/proc/%d/cgroup" % server_pids(d)[0]) as f:
            assert f.read() != mine, mine
        st, evs = run_code(d, "b = bytearray(2 << 30)", id=c["id"])
        text = json.dumps(evs)
        assert "memory limit of 256 MiB reached" in text, evs


def test_not_forkable_spec_and_option_off_launch_normally():
    with tempfile.TemporaryDirectory() as tmp:
        kd = os.path.join(tmp, "kernels", "pynofork")
        os.makedirs(kd)
        with open(os.path.join(kd, "kernel.json"), "w") as f:
            json.dump({"argv": ["/usr/bin/python3", "-m",
                                "ipykernel_launcher", "-f",
                                "{connection_file}"],
                       "display_name": "No fork", "language": "pynofork",
                       "metadata": {"execd": {"fork": False}}}, f)
        with Execd(*KERNELS, env={"JUPYTER_PATH": tmp}) as d:
            forked_context(d)       # the server is up for python
            c = new_context(d, "pynofork")
            pid = kernel_pid(d, c["id"])
            assert how_started(d, pid) == "started"
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                cmd = f.read()
            # exec'd as its spec says: no padding of a rewritten argv
            assert cmd.endswith(b".json\0") and b"-m\0ipykernel" in cmd
            assert len(server_pids(d)) == 1
    with Execd("--kernel-fork", "off") as d:
        pids = []
        for i in range(3):
            c = new_context(d)
            pids.append(kernel_pid(d, c["id"]))
            time.sleep(0.5)
        assert [how_started(d, p) for p in pids] == ["started"] * 3
        assert server_pids(d) == []


def test_server_that_dies_is_started_again():
    with Execd(*KERNELS) as d:
        c, pid = forked_context(d)
        old = server_pids(d)
        os.kill(old[0], signal.SIGKILL)
        assert wait_for(lambda: "fork server pid=%d" % old[0] in
                        d.read_log() and "ended" in d.read_log(), 10)
        # The next context is launched while a new server starts; later
        # ones are forked again; the context forked before lives on.
        c2, pid2 = forked_context(d)
        assert server_pids(d) != old
        st, evs = run_code(d, "print(1 + 1)", id=c["id"])
        assert texts(evs, "stdout") == "2\n", evs
        assert kinds(evs)[-1] == "execution_complete", evs


def test_forked_kernel_runs_as_the_default_user():
    from lib import user_with_groups
    pw, g = user_with_groups()
    with Execd(*KERNELS, "--user", pw.pw_name) as d:
        c, pid = forked_context(d)
        st, evs = run_code(d, "import os; print(os.getuid(), os.getgid(), "
                           "g.gr_gid in os.getgroups(), os.environ['HOME'])"
                           .replace("g.gr_gid", str(g.gr_gid)), id=c["id"])
        assert texts(evs, "stdout") == "%d %d True %s\n" % (
            pw.pw_uid, pw.pw_gid, pw.pw_dir), evs
        with open("/proc/%d/status" % server_pids(d)[0]) as f:
            assert re.search(r"^Uid:\s+%d\s" % pw.pw_uid, f.read(), re.M)
        st, conn = d.get_json("/code/contexts/%s/connection" % c["id"])
        assert os.stat(conn["connection_file"]).st_uid == pw.pw_uid
        # The seccomp filter and no_new_privs of a kernel are the fork's.
        with open("/proc/%d/status" % pid) as f:
            status = f.read()
        assert re.search(r"^NoNewPrivs:\s+1$", status, re.M), status
        assert re.search(r"^Seccomp:\s+2$", status, re.M), status


def test_a_fork_that_fails_falls_back_to_a_launch():
    with Execd(*KERNELS) as d:
        forked_context(d)
        old = server_pids(d)[0]
        os.kill(old, signal.SIGSTOP)    # silent: the fork times out
        try:
            c = new_context(d)
            pid = kernel_pid(d, c["id"])
        finally:
            try:
                os.kill(old, signal.SIGCONT)
            except ProcessLookupError:
                pass            # killed for its silence, as it should be
        assert how_started(d, pid) == "started"
        assert "not forked, launched: fork server for python3" in \
            d.read_log()
        assert wait_for(lambda: not alive(old), 10)
        c2, pid2 = forked_context(d)
        assert server_pids(d) != [old]


def test_a_forked_kernel_that_exits_at_once_is_reported():
    with tempfile.TemporaryDirectory() as tmp:
        kd = os.path.join(tmp, "kernels", "pyexit")
        os.makedirs(kd)
        with open(os.path.join(kd, "kernel.json"), "w") as f:
            json.dump({"argv": ["/usr/bin/python3", "-m",
                                "ipykernel_launcher", "-f",
                                "{connection_file}",
                                "--IPKernelApp.code_to_run="
                                "import os; os._exit(3)"],
                       "display_name": "Exits", "language": "pyexit"}, f)
        with Execd(*KERNELS, env={"JUPYTER_PATH": tmp}) as d:
            deadline = time.monotonic() + BOUND
            while "kernel=" not in d.read_log() or not re.search(
                    r"pid=(\d+) spec=pyexit forked", d.read_log()):
                st, h, body = d.request("POST", "/code/context",
                                        body={"language": "pyexit"},
                                        timeout=90)
                assert st == 500, body
                assert "exited with code 3" in body.decode(), body
                assert time.monotonic() < deadline, d.read_log()[-3000:]
                time.sleep(0.5)
            pid = int(re.findall(r"pid=(\d+) spec=pyexit forked",
                                 d.read_log())[-1])
            assert re.search(r"kernel=\S+ pid=%d exited with code 3" % pid,
                             d.read_log()), d.read_log()[-3000:]


NS_PROBE = "print(sorted(dir()))"


def test_a_forked_namespace_is_a_launched_ones():
    # What the server built before the fork (its imports, the script
    # magics' parsers) leaves nothing in a context's namespace: the same
    # names as in a launched kernel, at the same point (one cell run).
    with Execd(*KERNELS) as d:
        c, pid = forked_context(d)
        st, evs = run_code(d, NS_PROBE, id=c["id"])
        forked = texts(evs, "stdout")
    with Execd("--kernel-fork", "off") as d:
        c = new_context(d)
        pid = kernel_pid(d, c["id"])
        assert how_started(d, pid) == "started"
        st, evs = run_code(d, NS_PROBE, id=c["id"])
        launched = texts(evs, "stdout")
    assert forked and forked == launched, (forked, launched)
    assert "'In'" in forked and "'get_ipython'" in forked, forked


def test_magics_in_a_forked_context():
    with Execd(*KERNELS) as d:
        c, pid = forked_context(d)
        st, evs = run_code(d, "%timeit -n1 -r1 sum(range(10))", id=c["id"])
        assert "per loop" in texts(evs, "stdout"), evs
        st, evs = run_code(d, "!echo from-the-shell", id=c["id"])
        assert texts(evs, "stdout").strip() == "from-the-shell", evs
        # Script magics share one parser, built in the server: each
        # still runs its own program and reads its options.
        st, evs = run_code(d, "%%bash\necho $BASH_VERSION | cut -c1",
                           id=c["id"])
        assert texts(evs, "stdout").strip().isdigit(), evs
        st, evs = run_code(d, "%%sh --out got\necho captured", id=c["id"])
        assert texts(evs, "stdout") == "", evs
        st, evs = run_code(d, "print(got.strip())", id=c["id"])
        assert texts(evs, "stdout") == "captured\n", evs
        st, evs = run_code(d, "%%perl --out\nprint 1;",
                           id=c["id"])
        errs = [e["error"]["ename"] for e in evs if e["type"] == "error"]
        assert errs == ["UsageError"], evs
        st, evs = run_code(d, "m = get_ipython().find_cell_magic\n"
                           "print(m('sh').__doc__.split()[:6])",
                           id=c["id"])
        assert texts(evs, "stdout") == ("['%%sh', 'script', 'magic', "
                                        "'Run', 'cells', 'with']\n"), evs


def test_a_forked_context_keeps_its_own_history():
    # kernels.md: a forked kernel's history is in memory, its own cells
    # only; a launched kernel's is IPython's database, shared.
    with Execd(*KERNELS) as d:
        a, _ = forked_context(d)
        b, _ = forked_context(d)
        run_code(d, "marker_a = 1", id=a["id"])
        run_code(d, "marker_b = 2", id=b["id"])
        st, evs = run_code(d, "%history -g marker_", id=b["id"])
        out = texts(evs, "stdout")
        assert "marker_b = 2" in out and "marker_a" not in out, evs
        st, evs = run_code(d, "print(get_ipython().history_manager"
                           ".hist_file)", id=b["id"])
        assert texts(evs, "stdout") == ":memory:\n", evs
        # What a Jupyter client asks for (history_request) has its cells.
        st, conn = d.get_json("/code/contexts/%s/connection" % b["id"])
        assert st == 200, conn
        script = (
            "from jupyter_client import BlockingKernelClient\n"
            "c = BlockingKernelClient(connection_file=%r)\n"
            "c.load_connection_file(); c.start_channels()\n"
            "c.wait_for_ready(timeout=30)\n"
            "c.history(hist_access_type='tail', n=50)\n"
            "while True:\n"
            "    m = c.get_shell_msg(timeout=30)\n"
            "    if m['msg_type'] == 'history_reply':\n"
            "        break\n"
            "for s, n, src in m['content']['history']:\n"
            "    print(src)\n" % conn["connection_file"])
        r = subprocess.run(["/usr/bin/python3", "-c", script],
                           capture_output=True, text=True, timeout=BOUND)
        assert "marker_b = 2" in r.stdout.splitlines(), r
        assert "marker_a" not in r.stdout, r


SHARED_PROBE = (
    "import os, sys\n"
    "ip = get_ipython()\n"
    "print('probe_var' in dir(), 'wave' in dir(),\n"
    "      'execd_probe_mod' in sys.modules,\n"
    "      ip.find_line_magic('execd_probe') is None,\n"
    "      ip.ast_node_interactivity,\n"
    "      'execd_probe_key' in ip.config.InteractiveShell,\n"
    "      [str(p) for p in _dh] == [os.getcwd()],\n"
    "      ip.execution_count, len(In), len(Out))\n")


def test_what_the_server_built_is_not_shared_state():
    # The server builds IPython's shell once and every kernel of it
    # starts from a copy: what one context does to that shell (a
    # variable, an import, a magic, a config value, a %cd) is its own,
    # and the next context starts as a launched kernel does.
    with Execd(*KERNELS) as d:
        a, _ = forked_context(d)
        st, evs = run_code(d, SHARED_PROBE, id=a["id"])
        fresh = texts(evs, "stdout")
        # (one cell run before: forked_context's)
        assert fresh == "False False False True last_expr False True " \
            "2 3 0\n", evs
        setup = ("probe_var = 1\n"
                 "import wave, sys\n"
                 "sys.modules['execd_probe_mod'] = wave\n"
                 "from IPython.core.magic import register_line_magic\n"
                 "@register_line_magic\n"
                 "def execd_probe(line):\n"
                 "    return line\n"
                 "get_ipython().config.InteractiveShell.execd_probe_key"
                 " = 1\n"
                 "%config InteractiveShell.ast_node_interactivity = 'all'\n"
                 "%cd /\n")
        st, evs = run_code(d, setup, id=a["id"])
        assert st == 200 and not [e for e in evs if e["type"] == "error"], \
            evs
        st, evs = run_code(d, "print(os.getcwd(), len(_dh),\n"
                           "      get_ipython().ast_node_interactivity,\n"
                           "      execd_probe('x'))", id=a["id"])
        assert texts(evs, "stdout") == "/ 2 all x\n", evs
        b, _ = forked_context(d)
        st, evs = run_code(d, SHARED_PROBE, id=b["id"])
        assert texts(evs, "stdout") == fresh, evs
    # and a launched kernel says the same
    with Execd("--kernel-fork", "off") as d:
        c = new_context(d)
        kernel_pid(d, c["id"])
        st, evs = run_code(d, SHARED_PROBE, id=c["id"])
        assert texts(evs, "stdout") == fresh, evs


# A stand-in interpreter for a kernelspec: run as a fork server it says
# it is ready, then takes requests and answers none (noting each in a
# file); run as a kernel it is python3.
SILENT_SERVER = """#!/usr/bin/python3
import os, socket, struct, sys
if sys.argv[1:2] == ["-c"] and sys.argv[3:4] == ["execd-forkserver"]:
    srv = socket.socket(fileno=3)
    srv.send(struct.pack("i", 0))
    held = []
    while True:
        msg, fds, _, _ = socket.recv_fds(srv, 1 << 16, 2)
        if not msg:
            os._exit(0)
        held.append(fds)
        with open(%r, "a") as f:
            f.write("request\\n")
os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv[1:])
"""


def silent_spec(tmp):
    """A kernelspec "pysilent" whose fork server answers nothing; the
    file where it notes each request it holds."""
    noted = os.path.join(tmp, "requests")
    py = os.path.join(tmp, "python-silent")
    with open(py, "w") as f:
        f.write(SILENT_SERVER % noted)
    os.chmod(py, 0o755)
    kd = os.path.join(tmp, "kernels", "pysilent")
    os.makedirs(kd)
    with open(os.path.join(kd, "kernel.json"), "w") as f:
        json.dump({"argv": [py, "-m", "ipykernel_launcher", "-f",
                            "{connection_file}"],
                   "display_name": "Silent", "language": "pysilent"}, f)
    return noted


def hold_a_request(d, noted, got):
    """A POST /code/context of pysilent, in a thread, once its request
    is held by the server; its answer goes to got["ctx"]."""
    # the first is launched while the server starts
    new_context(d, language="pysilent")
    assert wait_for(lambda: "for pysilent: imports done" in d.read_log(),
                    BOUND), d.read_log()[-3000:]

    def create():
        try:
            got["ctx"] = d.request("POST", "/code/context",
                                   body={"language": "pysilent"},
                                   timeout=90)
        except OSError as e:
            got["ctx"] = e
    t = threading.Thread(target=create)
    t.start()
    assert wait_for(lambda: os.path.exists(noted), BOUND)
    return t


def test_a_server_slow_to_answer_does_not_stall_execd():
    # execd reads a fork server's answers on its loop: while one holds a
    # request unanswered, execd serves everything else; the context
    # waiting for it is launched once the server is given up on.
    with tempfile.TemporaryDirectory() as tmp:
        noted = silent_spec(tmp)
        with Execd(*KERNELS, env={"JUPYTER_PATH": tmp}) as d:
            got = {}
            t = hold_a_request(d, noted, got)
            try:
                st, h, body = d.request("GET", "/ping", timeout=BOUND)
                assert st == 200, body
                # answered while the request was still held
                assert "not forked" not in d.read_log(), d.read_log()
                assert "ctx" not in got
                st, h, body = d.request("GET", "/code/contexts",
                                        timeout=BOUND)
                assert st == 200, body
            finally:
                t.join(BOUND + 90)
            st, h, body = got["ctx"]
            assert st == 200, body
            c = json.loads(body)
            assert how_started(d, kernel_pid(d, c["id"])) == "started"
            assert re.search(r"kernel=%s not forked, launched: fork server "
                             r"for pysilent: " % c["id"], d.read_log()), \
                d.read_log()[-3000:]


def test_a_spec_with_options_gets_a_shell_of_its_own():
    # Options beyond -f FILE may configure the shell: a kernel of such a
    # spec builds its shell itself rather than taking the server's.
    with tempfile.TemporaryDirectory() as tmp:
        install_spec(tmp, "pyall", PYALL)
        with Execd(*KERNELS, env={"JUPYTER_PATH": tmp}) as d:
            c, pid = forked_context(d, language="pyall")
            st, evs = run_code(d, "print(get_ipython()"
                               ".ast_node_interactivity, len(In))",
                               id=c["id"])
            assert texts(evs, "stdout") == "all 3\n", evs
            # and python3's kernels, from their own server, keep theirs
            c, pid = forked_context(d)
            st, evs = run_code(d, "print(get_ipython()"
                               ".ast_node_interactivity)", id=c["id"])
            assert texts(evs, "stdout") == "last_expr\n", evs


def test_execd_stops_while_a_fork_is_awaited():
    # Nothing is launched, reported or left behind for a context whose
    # fork was still awaited when execd stopped.
    with tempfile.TemporaryDirectory() as tmp:
        noted = silent_spec(tmp)
        d = Execd(*KERNELS, env={"JUPYTER_PATH": tmp}).start()
        got = {}
        t = hold_a_request(d, noted, got)
        servers = server_pids(d)
        assert len(servers) == 1, servers
        assert d.stop() == 0, d.read_log()[-3000:]
        t.join(BOUND)
        assert "not forked" not in d.read_log(), d.read_log()[-3000:]
        assert wait_for(lambda: not alive(servers[0]), 15)
