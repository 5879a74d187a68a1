"""The policy file: execd --config FILE, --print-config read back, a bad
file refused with its line and column, and SIGHUP putting a new profile
and new limits in force for jobs started afterwards (a bad file on SIGHUP
keeps the old ones)."""
import json
import os
import re
import signal
import subprocess
import tempfile

from lib import EXECD, Execd, events, wait_for

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE = os.path.join(HERE, "helpers", "syscalls.py")
EPERM = 1


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def tmpfile(text, suffix=".yaml"):
    fd, path = tempfile.mkstemp(prefix="execd-policy-", suffix=suffix)
    os.close(fd)
    write(path, text)
    return path


def run(*args, env=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith("EXECD_")}
    e.update(env or {})
    return subprocess.run([EXECD] + list(args), capture_output=True,
                          text=True, timeout=20, env=e)


def command(d, cmd, **opts):
    st, h, data = d.request("POST", "/command", timeout=30,
                            body=dict(command=cmd, **opts))
    assert st == 200, data
    return "\n".join(e["text"] for e in events(data)
                     if e["type"] == "stdout")


def probe(d, **opts):
    out = command(d, "/usr/bin/python3 %s %d" % (PROBE, d.proc.pid), **opts)
    for line in out.split("\n"):
        if line.startswith("SYSCALLS "):
            return json.loads(line[len("SYSCALLS "):])
    raise AssertionError("no probe output: %r" % out)


def session_probe(d, sid):
    """The probe run by session sid's shell."""
    st, h, data = d.request("POST", "/session/%s/run" % sid, timeout=30,
                            body={"command": "/usr/bin/python3 %s %d"
                                  % (PROBE, d.proc.pid)})
    assert st == 200, data
    out = "\n".join(e["text"] for e in events(data) if e["type"] == "stdout")
    m = re.search(r"^SYSCALLS (.*)$", out, re.M)
    assert m, out
    return json.loads(m.group(1))


def open_files(d):
    out = command(d, "cat /proc/self/limits")
    m = re.search(r"^Max open files\s+(\d+)", out, re.M)
    assert m, out
    return int(m.group(1))


def test_start_with_config():
    path = tmpfile("# a small body cap and no seccomp\n"
                   "max_body_size: 1KiB\nseccomp: off\n"
                   "no-new-privs: false\n")
    try:
        with Execd("--config", path) as d:
            st, h, data = d.request("POST", "/command",
                                    body={"command": "echo " + "x" * 2000})
            assert st == 413, (st, data)
            assert "children: seccomp off, no_new_privs off" \
                in d.read_log(), d.read_log()
            res = probe(d)
            assert res["unshare"] != EPERM, res
            assert res["NoNewPrivs"] == "0", res
    finally:
        os.unlink(path)


def test_environment_and_flags_go_over_the_file():
    path = tmpfile("seccomp: off\nmax_body_size: 1K\n")
    try:
        with Execd("--config", path, "--seccomp", "strict",
                   env={"EXECD_MAX_BODY_SIZE": "64K"}) as d:
            st, h, data = d.request("POST", "/command",
                                    body={"command": "echo " + "x" * 2000})
            assert st == 200, (st, data)
            assert "children: seccomp strict" in d.read_log()
        # EXECD_CONFIG names the file as --config does.
        r = run("--print-config", env={"EXECD_CONFIG": path})
        assert r.returncode == 0, r
        assert "\nseccomp: off\n" in r.stdout, r.stdout
    finally:
        os.unlink(path)


def test_print_config_round_trip():
    path = tmpfile("listen: \"127.0.0.1:0\"\npool: python=1\n"
                   "capabilities: chown,net_raw\n"
                   "limits:\n  command: {memory: 256MiB, processes: 64}\n"
                   "  languages: {python: {cpu_seconds: 600}}\n")
    tok = tmpfile("tok-file-secret\n", suffix=".tok")
    one = two = None
    try:
        r = run("--config", path, "--access-token", "flag-secret",
                "--limit", "pty.open_files=99", "--print-config",
                env={"EXECD_GRACE_PERIOD": "1234",
                     "EXECD_ACCESS_TOKEN_FILE": tok})
        assert r.returncode == 0, r
        assert "secret" not in r.stdout, r.stdout
        assert "# access_token: never printed\n" in r.stdout
        for want in ("\ngrace_period: 1234\n", "\npool: python=1\n",
                     "\n  command: {memory: 268435456, processes: 64, "
                     "core: 0}\n", "\n  pty: {open_files: 99, core: 0}\n",
                     "\n    python: {cpu_seconds: 600}\n"):
            assert want in r.stdout, (want, r.stdout)
        one = tmpfile(r.stdout)
        r2 = run("--config", one, "--print-config")
        assert r2.returncode == 0, r2
        assert r2.stdout == r.stdout
        # The printed file also starts a daemon.
        with Execd("--config", one) as d:
            assert d.get_json("/ping") is not None
        two = tmpfile(r2.stdout)
    finally:
        for p in (path, tok, one, two):
            if p:
                os.unlink(p)


def test_a_bad_file_refuses_to_start_with_its_line_and_column():
    cases = [
        ("port: 1\nprot: 2\n", ":2:1: unknown key 'prot'"),
        ("max_connections: [1]\n",
         ":1:18: max_connections wants a single value, not a list"),
        ("port: 70000\n", ":1:7: port: invalid value for --port: '70000'"),
        ("limits:\n  command: {memory: lots}\n",
         ":2:21: limits.command.memory: limit 'memory': bad value"),
        ("seccomp: off\nseccomp: strict\n",
         ":2:1: 'seccomp' given twice (first at line 1)"),
    ]
    for text, want in cases:
        path = tmpfile(text)
        try:
            r = run("--config", path)
            assert r.returncode == 2, (text, r)
            assert ("execd: " + path + want) in r.stderr, (text, r.stderr)
            assert "listening" not in r.stderr, r.stderr
        finally:
            os.unlink(path)
    r = run("--config", "/nonexistent/execd.yaml")
    assert r.returncode == 2, r
    assert "/nonexistent/execd.yaml: No such file" in r.stderr, r.stderr


def test_sighup_puts_the_new_policy_in_force_for_new_jobs():
    path = tmpfile("seccomp: off\nlimits: {command: {open_files: 200}}\n")
    try:
        with Execd("--config", path) as d:
            assert probe(d)["unshare"] != EPERM
            assert open_files(d) == 200
            # A session's shell started now keeps the old profile.
            st, h, data = d.request("POST", "/session", body={})
            assert st == 200, data
            sid = json.loads(data)["session_id"]
            st, h, data = d.request("POST", "/session/%s/run" % sid,
                                    timeout=30, body={"command": "true"})
            assert st == 200, data

            write(path, "seccomp: default\n"
                  "limits: {command: {open_files: 300}}\n")
            d.send(signal.SIGHUP)
            assert wait_for(lambda: d.read_log().count("read again") == 1,
                            timeout=10), d.read_log()
            res = probe(d)
            assert res["unshare"] == EPERM and res["mount"] == EPERM, res
            assert open_files(d) == 300
            # The session's shell, and what it runs, keep "off".
            res = session_probe(d, sid)
            assert res["unshare"] != EPERM, res
            # Its filter predates the SIGHUP, yet protects every thread
            # execd has now.
            assert res["execd_kill_threads"] == [EPERM], res

            # A bad file: logged with its line, the policy kept.
            write(path, "seccomp: off\nlimits: {command: {open_files: x}}\n")
            d.send(signal.SIGHUP)
            assert wait_for(lambda: "policy in force is kept"
                            in d.read_log(), timeout=10), d.read_log()
            assert (path + ":2:32: limits.command.open_files") \
                in d.read_log(), d.read_log()
            assert probe(d)["unshare"] == EPERM
            assert open_files(d) == 300
            assert d.get_json("/ping") is not None
    finally:
        os.unlink(path)


def threads(pid):
    return len(os.listdir("/proc/%d/task" % pid))


def sighup_to_a_looser_profile(lim):
    # A looser profile reaches new jobs, and a job forked before keeps
    # running.  Jobs with limits are forked by threads of execd that carry
    # the filter (see cgroup.c's residents): such a job must outlive the
    # thread that forked it (a child's parent-death signal is tied to that
    # thread), which retires on SIGHUP.
    extra = {"limits": lim} if lim else {}
    path = tmpfile("seccomp: default\n")
    try:
        with Execd("--config", path) as d:
            for _ in range(3):
                res = probe(d, **extra)
                assert res["unshare"] == EPERM, res
                assert res["Seccomp_filters"] == "1", res
            st, h, data = d.request("POST", "/command", timeout=30, body=dict(
                {"command": "sleep 300", "background": True}, **extra))
            assert st == 200, data
            cid = events(data)[0]["text"]
            before = threads(d.proc.pid)

            write(path, "seccomp: off\n")
            d.send(signal.SIGHUP)
            assert wait_for(lambda: d.read_log().count("read again") == 1,
                            timeout=10), d.read_log()
            for _ in range(3):
                res = probe(d, **extra)
                assert res["unshare"] != EPERM, res
                assert res["Seccomp_filters"] == "1", res
            status = lambda: d.get_json("/command/status/" + cid)[1]
            assert status()["running"] is True, status()
            st, h, data = d.request("DELETE", "/command?id=" + cid)
            assert st == 200, data
            # The retired threads end once their jobs are over.
            assert wait_for(lambda: threads(d.proc.pid) <= before,
                            timeout=10), (threads(d.proc.pid), before)
            res = probe(d, **extra)
            assert res["unshare"] != EPERM, res
    finally:
        os.unlink(path)


def test_sighup_to_a_looser_profile_holds_for_jobs_with_limits():
    sighup_to_a_looser_profile({"processes": 64})


def test_sighup_to_a_looser_profile_holds_for_jobs_without_limits():
    sighup_to_a_looser_profile(None)


def test_sighups_past_the_spare_threads_keep_jobs_working_and_execd_safe():
    # Renewals use threads made at start (cgroup.c); once those are used
    # up, children of jobs with limits join their cgroups themselves.
    lim = {"processes": 64}
    path = tmpfile("seccomp: default\n")
    try:
        with Execd("--config", path) as d:
            st, h, data = d.request("POST", "/session", body={})
            assert st == 200, data
            sid = json.loads(data)["session_id"]
            before = threads(d.proc.pid)
            for n in range(1, 6):
                write(path, "seccomp: %s\n" % ("off" if n % 2 else "default"))
                d.send(signal.SIGHUP)
                assert wait_for(lambda: d.read_log().count("read again") == n,
                                timeout=10), d.read_log()
                res = probe(d, limits=lim)
                assert (res["unshare"] == EPERM) == (n % 2 == 0), (n, res)
                assert res["Seccomp_filters"] == "1", (n, res)
                assert res["execd_kill_threads"] == [EPERM], (n, res)
            assert "jobs with limits join theirs themselves" in d.read_log()
            assert threads(d.proc.pid) <= before, (threads(d.proc.pid), before)
            # The shell started first is still kept from every thread.
            assert session_probe(d, sid)["execd_kill_threads"] == [EPERM]
    finally:
        os.unlink(path)


def test_sighup_without_a_file_changes_nothing():
    with Execd() as d:
        d.send(signal.SIGHUP)
        assert wait_for(lambda: "no --config file" in d.read_log(),
                        timeout=10), d.read_log()
        assert probe(d)["unshare"] == EPERM


def top_keys(text):
    """The top-level keys of a policy file, set or left as comments
    ("# key:")."""
    return {m.group(1) for m in
            re.finditer(r"^(?:# )?([a-z_]+):", text, re.M)}


def test_the_example_file_loads_and_says_the_defaults():
    example = os.path.join(HERE, "..", "..", "docs", "execd.yaml")
    r = run("--config", example, "--print-config")
    assert r.returncode == 0, r
    printed = run("--print-config").stdout
    assert r.stdout == printed
    with open(example) as f:
        missing = top_keys(printed) - top_keys(f.read())
    assert not missing, "docs/execd.yaml lacks %s" % sorted(missing)
