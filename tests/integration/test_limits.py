"""Resource limits of jobs (the "limits" field of POST /command, /session,
/code/context and /pty, and --limit), how they are enforced (a cgroup per
job, or rlimits), the error a job that hits one ends with, execd's own
safety (/ping answers throughout, children are the OOM killer's first
choice), the default user (--user), and the isolation object of
GET /metrics."""
import json
import os
import tempfile
import time

from lib import (Execd, events, expect_error, new_context, pings_during,
                 run_code, user_with_groups, wait_for)
from test_pty_ws import Conn

PY = "/usr/bin/python3"
MECHANISMS = ("cgroup v1", "cgroup v2", "rlimits")

# Fork until the kernel refuses, each child sleeping a moment; exits 1
# when a fork failed, so the leader's end is the limit's.
FORKER = (PY + " -c 'import os, time\n"
          "n = 0\n"
          "try:\n"
          "    for _ in range(2000):\n"
          "        if os.fork() == 0:\n"
          "            time.sleep(2)\n"
          "            os._exit(0)\n"
          "        n += 1\n"
          "except OSError as e:\n"
          "    print(\"refused after\", n, e)\n"
          "    raise SystemExit(1)\n"
          "print(\"never refused\", n)'")
HOG = PY + " -c 'b = bytearray(1 << 30); print(len(b))'"


def cmd(d, command, timeout=60, **body):
    """POST /command; (status, events or error body)."""
    st, h, data = d.request("POST", "/command", timeout=timeout,
                            body=dict(command=command, **body))
    if st != 200:
        return st, data
    return st, events(data)


def error_of(evs):
    errs = [e for e in evs if e["type"] == "error"]
    assert errs, evs
    return errs[0]["error"]["traceback"][0]


def stdout(evs):
    return "\n".join(e["text"] for e in evs if e["type"] == "stdout")


def mechanism(d):
    st, m = d.get_json("/metrics")
    assert st == 200, m
    return m["isolation"]["limits"]


def pings_ok(spans, bound=5.0):
    """Every ping answered within bound seconds."""
    assert spans, "no ping was sent"
    worst = max(e - s for s, e in spans)
    assert worst < bound, "a ping took %.2f s" % worst


def test_limits_bad_values_are_400_naming_the_key():
    bodies = {
        "/command": {"command": "true"},
        "/session": {},
        "/code/context": {"language": "python"},
        "/pty": {},
    }
    bad = [({"swap": "1G"}, "swap"), ({"memory": "lots"}, "memory"),
           ({"processes": -1}, "processes"), ({"processes": "64K"},
                                              "processes"),
           ({"cpu_seconds": 1.5}, "cpu_seconds"),
           ({"open_files": True}, "open_files"), ({"memory": 0}, "memory")]
    with Execd() as d:
        for path, body in bodies.items():
            for lim, key in bad:
                st, h, data = d.request("POST", path, body=dict(
                    body, limits=lim))
                obj = expect_error(st, data, 400)
                assert "'%s'" % key in obj["message"], (path, obj)
            st, h, data = d.request("POST", path, body=dict(
                body, limits=[1]))
            expect_error(st, data, 400)
        # Nothing was started by the refused requests.
        st, h, data = d.request("GET", "/pty")
        st, m = d.get_json("/metrics")
        assert st == 200


def test_limits_fork_bomb_is_contained_and_ping_answers():
    with Execd() as d:
        out = {}

        def work():
            out["r"] = cmd(d, FORKER, limits={"processes": 32})
        spans = pings_during(d, work)
        pings_ok(spans)
        st, evs = out["r"]
        assert st == 200, evs
        assert "refused after" in stdout(evs), evs
        assert error_of(evs) == "process limit of 32 reached", evs
        # Other jobs run on.
        st, evs = cmd(d, "echo fine")
        assert st == 200 and stdout(evs) == "fine", evs


def test_limits_memory_hog_is_killed_with_its_limit_named():
    with Execd() as d:
        if mechanism(d) == "rlimits":
            raise AssertionError("this machine has a writable cgroup; "
                                 "execd did not find it")
        out = {}

        def work():
            out["r"] = cmd(d, HOG, limits={"memory": "64MiB"})
        spans = pings_during(d, work)
        pings_ok(spans)
        st, evs = out["r"]
        assert st == 200, evs
        assert error_of(evs) == ("memory limit of 64 MiB reached: killed "
                                 "by the kernel"), evs
        # Under the limit, the same program runs.
        st, evs = cmd(d, PY + " -c 'b = bytearray(16 << 20); "
                      "print(len(b))'", limits={"memory": "256MiB"})
        assert stdout(evs) == str(16 << 20), evs


def test_limits_disk_filler_stops_at_file_size():
    with Execd() as d, tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "fill")
        st, evs = cmd(d, "head -c 50000000 /dev/zero > " + path,
                      limits={"file_size": "1MiB"})
        assert st == 200, evs
        assert error_of(evs) == "file size limit of 1 MiB reached", evs
        assert os.path.getsize(path) == 1 << 20
        st, h, data = d.request("GET", "/ping")
        assert st == 200


def test_limits_cpu_seconds():
    with Execd() as d:
        t0 = time.monotonic()
        st, evs = cmd(d, PY + " -c 'while True: pass'",
                      limits={"cpu_seconds": 1})
        assert st == 200, evs
        assert error_of(evs) == "CPU time limit of 1 s reached", evs
        assert time.monotonic() - t0 < 30


def test_limits_defaults_flags_and_the_child_oom_score():
    with Execd("--limit", "command.open_files=64,session.open_files=80",
               "--limit", "pty.processes=20") as d:
        st, evs = cmd(d, "ulimit -n; ulimit -c; "
                      "cat /proc/self/oom_score_adj")
        assert stdout(evs).split() == ["64", "0", "500"], evs
        # A request goes over the defaults, "unlimited" lifts one.
        st, evs = cmd(d, "ulimit -n; ulimit -c", limits={
            "open_files": 100, "core": "unlimited"})
        assert stdout(evs).split() == ["100", "unlimited"], evs
        st, m = d.get_json("/metrics")
        iso = m["isolation"]
        assert iso["limits"] in MECHANISMS, iso
        assert iso["default_limits"]["command"] == {"open_files": 64,
                                                    "core": 0}, iso
        assert iso["default_limits"]["pty"]["processes"] == 20, iso
        assert iso["seccomp"] == "default" and iso["no_new_privs"], iso
        assert iso["oom_score_adj"] <= 0, iso
        assert iso["user"] is None, iso
        # execd's own score is never above its children's.
        with open("/proc/%d/oom_score_adj" % d.proc.pid) as f:
            assert int(f.read()) <= 0
    assert "limits: " in d.read_log()


def session_run(d, sid, command):
    st, h, data = d.request("POST", "/session/%s/run" % sid, timeout=30,
                            body={"command": command})
    assert st == 200, data
    return events(data)


def cgroup_file(pid_file_cmd, ctrl, name):
    """Shell text printing the file name of the job's ctrl cgroup."""
    return ("p=$(grep -E '^[0-9]+:%s:' /proc/self/cgroup | cut -d: -f3); "
            "cat /sys/fs/cgroup/%s$p/%s" % (ctrl, ctrl, name))


def test_limits_of_a_session_hold_for_its_shell():
    with Execd("--limit", "session.open_files=80") as d:
        st, h, data = d.request("POST", "/session", body={
            "limits": {"processes": 40, "memory": "512MiB"}})
        assert st == 200, data
        sid = json.loads(data)["session_id"]
        evs = session_run(d, sid, "ulimit -n")
        assert stdout(evs) == "80", evs
        if mechanism(d) == "cgroup v1":
            evs = session_run(d, sid, cgroup_file(None, "pids", "pids.max"))
            assert stdout(evs) == "40", evs
            evs = session_run(d, sid, cgroup_file(
                None, "memory", "memory.limit_in_bytes"))
            assert stdout(evs) == str(512 << 20), evs
        # The shell survives a fork bomb of one of its runs.
        evs = session_run(d, sid, FORKER)
        assert "refused after" in stdout(evs), evs
        evs = session_run(d, sid, "echo still")
        assert stdout(evs) == "still", evs


def test_limits_of_a_terminal_end_it_with_the_limit_named():
    with Execd() as d:
        st, h, data = d.request("POST", "/pty", body={
            "command": HOG, "limits": {"memory": "64MiB"}})
        assert st in (200, 201), data
        c = Conn(d, json.loads(data)["session_id"])
        try:
            deadline = time.monotonic() + 30
            got = None
            while time.monotonic() < deadline and got is None:
                fin, op, p = c.read(max(0.1, deadline - time.monotonic()))
                if op == 1 and json.loads(p)["type"] == "exit":
                    got = json.loads(p)
                assert op != 8 or got, p
            assert got is not None
            assert got.get("error") == ("memory limit of 64 MiB reached: "
                                        "killed by the kernel"), got
        finally:
            c.close()


def test_limits_of_a_context_name_the_oom_kill():
    with Execd() as d:
        st, h, data = d.request("POST", "/code/context", timeout=90, body={
            "language": "python", "limits": {"memory": "256MiB"}})
        assert st == 200, data
        cid = json.loads(data)["id"]
        st, evs = run_code(d, "x = 1 + 1\nprint(x)", id=cid)
        assert st == 200, evs
        st, evs = run_code(d, "b = bytearray(2 << 30)", id=cid)
        text = json.dumps(evs)
        assert "memory limit of 256 MiB reached" in text, evs
        assert "out of memory" in text, evs
        # A context without limits is not affected.
        ctx = new_context(d)
        st, evs = run_code(d, "print(2 + 2)", id=ctx["id"])
        assert any(e.get("text", "").strip() == "4" for e in evs), evs


def test_limits_process_limit_is_exact():
    # The leader and 7 forks: the 8th is refused, whichever thread of
    # execd forked the leader into its cgroup (see cgroup.c).
    with Execd() as d:
        if mechanism(d) == "rlimits":
            raise AssertionError("no cgroup found on this machine")
        for i in range(3):
            if i == 2:
                time.sleep(0.2)     # after a quiet spell too
            st, evs = cmd(d, FORKER, limits={"processes": 8})
            assert st == 200, evs
            assert stdout(evs).startswith("refused after 7 "), (i, evs)


def test_limits_jobs_stopped_at_once_leave_execd_running():
    # A job stopped as soon as it has started: everything in its cgroup
    # is killed, and for a moment execd has a thread there.
    with Execd() as d:
        if mechanism(d) == "rlimits":
            raise AssertionError("no cgroup found on this machine")
        for i in range(12):
            time.sleep(0.05 if i % 2 else 0)
            st, h, data = d.request("POST", "/command", timeout=30, body={
                "command": "sleep 300", "background": True,
                "limits": {"processes": 4, "memory": "64MiB"}})
            assert st == 200, data
            cid = events(data)[0]["text"]
            st, h, data = d.request("DELETE", "/command?id=" + cid)
            assert st == 200, data
        assert d.proc.poll() is None, "execd died"
        st, h, data = d.request("GET", "/ping")
        assert st == 200, data
        st, evs = cmd(d, "echo fine", limits={"processes": 4})
        assert st == 200 and stdout(evs) == "fine", evs


def test_limits_stop_kills_the_whole_cgroup_and_it_is_removed():
    with Execd() as d:
        if mechanism(d) == "rlimits":
            raise AssertionError("no cgroup found on this machine")
        st, h, data = d.request("POST", "/command", timeout=30, body={
            "command": "setsid sleep 300 & echo $!; sleep 300",
            "background": True, "limits": {"processes": 16}})
        assert st == 200, data
        evs = events(data)
        cid = evs[0]["text"]
        logs = lambda: d.request("GET", "/command/%s/logs" % cid)[2]
        assert wait_for(lambda: logs().strip().isdigit(), timeout=10)
        escaped = int(logs().strip())
        with open("/proc/%d/cgroup" % escaped) as f:
            path = [ln.split(":")[2] for ln in f.read().splitlines()
                    if ln.split(":")[1] == "pids"][0]
        assert "/job-" in path, path
        st, h, data = d.request("DELETE", "/command?id=" + cid)
        assert st == 200, data
        assert wait_for(lambda: not os.path.exists("/proc/%d" % escaped),
                        timeout=10), "a process of the job survived"
        assert wait_for(lambda: not os.path.exists(
            "/sys/fs/cgroup/pids" + path), timeout=10), path


def test_limits_rlimits_when_cgroups_are_off():
    with Execd("--cgroups", "off") as d, \
            tempfile.TemporaryDirectory() as tmp:
        assert mechanism(d) == "rlimits"
        assert "rlimits" in d.read_log()
        st, evs = cmd(d, "head -c 5000000 /dev/zero > %s/f" % tmp,
                      limits={"file_size": "64K"})
        assert error_of(evs) == "file size limit of 64 KiB reached", evs
        # Memory is RLIMIT_DATA: the allocation is refused.
        st, evs = cmd(d, HOG + " || echo refused",
                      limits={"memory": "64MiB"})
        assert "MemoryError" in json.dumps(evs), evs
        st, evs = cmd(d, "cat /proc/self/cgroup | grep -c /job- || true")
        assert stdout(evs) == "0", evs


def test_limits_default_user_with_groups_and_environment():
    pw, g = user_with_groups()
    with Execd("--user", pw.pw_name) as d:
        st, evs = cmd(d, "id -u; id -g; id -G; echo $HOME $USER $LOGNAME")
        lines = stdout(evs).split("\n")
        assert lines[0] == str(pw.pw_uid), evs
        assert lines[1] == str(pw.pw_gid), evs
        assert str(g.gr_gid) in lines[2].split(), evs
        assert lines[3] == "%s %s %s" % (pw.pw_dir, pw.pw_name,
                                         pw.pw_name), evs
        # A request's uid still wins.
        st, evs = cmd(d, "id -u", uid=65534)
        assert stdout(evs) == "65534", evs
        # Sessions and terminals run as the user too.
        st, h, data = d.request("POST", "/session", body={})
        sid = json.loads(data)["session_id"]
        evs = session_run(d, sid, "id -u")
        assert stdout(evs) == str(pw.pw_uid), evs
        # So do kernels: the code of a context runs as the user.
        ctx = new_context(d)
        st, evs = run_code(d, "import os; print(os.getuid(), os.getgid(), "
                           "os.environ['HOME'])", id=ctx["id"])
        out = "".join(e["text"] for e in evs if e["type"] == "stdout").strip()
        assert out == "%d %d %s" % (pw.pw_uid, pw.pw_gid, pw.pw_dir), evs
        # ... with its connection file its own and no one else's.
        st, evs = run_code(d, "import os, ipykernel\n"
                           "st = os.stat(ipykernel.get_connection_file())\n"
                           "print(st.st_uid, oct(st.st_mode & 0o777))",
                           id=ctx["id"])
        out = "".join(e["text"] for e in evs if e["type"] == "stdout").strip()
        assert out == "%d 0o600" % pw.pw_uid, evs
        # A kernel that cannot start leaves none of its files behind.
        st, conn = d.get_json("/code/contexts/%s/connection" % ctx["id"])
        kdir = os.path.dirname(conn["connection_file"])
        before = sorted(os.listdir(kdir))
        with tempfile.TemporaryDirectory() as private:   # 0700, not the user's
            st, h, data = d.request("POST", "/code/context", timeout=90,
                                    body={"language": "python",
                                          "cwd": private})
            assert st != 200, data
        assert sorted(os.listdir(kdir)) == before, (before, kdir)
        st, m = d.get_json("/metrics")
        assert m["isolation"]["user"] == pw.pw_name, m
    with Execd("--user", "65534") as d:
        st, evs = cmd(d, "id -u; echo $USER")
        assert stdout(evs).split() == ["65534", "nobody"], evs
    st = Execd("--user", "no-such-user-here")
    try:
        st.start(timeout=5)
        raise AssertionError("execd started with an unknown user")
    except AssertionError as e:
        assert "no-such-user-here" in str(e), e
