"""What execd's children run under: the seccomp profiles, no_new_privs,
the capability bounding set, and execd out of their reach.  Every kind
of child is checked: a command, a command run as another user, a
session's shell, a kernel and a terminal's shell."""
import base64
import json
import os
import socket

from lib import (Execd, children_of, events, new_context, run_code, texts,
                 wait_for)

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE = os.path.join(HERE, "helpers", "syscalls.py")
EPERM = 1

# The default profile's classes; each fails with EPERM only when refused.
CLASSES = ["mount", "setns", "unshare", "clone_newuser", "clone_newnet",
           "clock_settime", "add_key", "io_uring_setup", "userfaultfd",
           "perf_event_open", "personality_no_aslr"]
# Calls aimed at execd: refused in every profile.
PROTECT = ["execd_kill", "execd_kill_upper_bits", "execd_kill_group",
           "execd_kill_all", "execd_tgkill", "execd_tkill",
           "execd_pidfd_open", "execd_prlimit64", "execd_ptrace_attach",
           "execd_process_vm_readv"]


def parse(out):
    for line in out.split("\n"):
        if line.startswith("SYSCALLS "):
            return json.loads(line[len("SYSCALLS "):])
    raise AssertionError("no probe output: %r" % out)


def probe_cmd(d, **opts):
    st, h, data = d.request("POST", "/command", timeout=30, body=dict(
        command="/usr/bin/python3 %s %d" % (PROBE, d.proc.pid), **opts))
    assert st == 200, data
    evs = events(data)
    return parse("\n".join(e["text"] for e in evs if e["type"] == "stdout"))


def probe_session(d):
    st, h, data = d.request("POST", "/session", body={})
    assert st == 200, data
    sid = json.loads(data)["session_id"]
    st, h, data = d.request("POST", "/session/%s/run" % sid, timeout=30,
                            body={"command": "/usr/bin/python3 %s %d"
                                  % (PROBE, d.proc.pid)})
    assert st == 200, data
    return parse("\n".join(e["text"] for e in events(data)
                           if e["type"] == "stdout"))


def probe_kernel(d):
    """The checks made by the kernel process itself."""
    ctx = new_context(d)
    st, evs = run_code(d, "import os\nos.environ['EXECD_PID'] = '%d'\n"
                       "exec(open(%r).read().replace('__main__', "
                       "'__probe__'))\nmain(%d)"
                       % (d.proc.pid, PROBE, d.proc.pid), id=ctx["id"])
    assert st == 200, evs
    return parse(texts(evs, "stdout"))


def status_of(pid):
    with open("/proc/%d/status" % pid) as f:
        return dict(line.rstrip("\n").split(":\t", 1) for line in f
                    if ":\t" in line)


def terminal_shell(d):
    """Start a terminal's shell (a WebSocket writer connects) and return
    the status of that shell, read from /proc."""
    st, h, data = d.request("POST", "/pty", body={})
    assert st in (200, 201), data
    tid = json.loads(data)["session_id"]
    before = {p for p, _ in children_of(d.proc.pid)}
    s = socket.create_connection((d.host, d.port), 10)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(("GET /pty/%s/ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
               "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
               "Sec-WebSocket-Version: 13\r\n\r\n" % (tid, key)).encode())
    assert s.recv(4096).startswith(b"HTTP/1.1 101"), "no upgrade"
    try:
        new = wait_for(lambda: {p for p, _ in children_of(d.proc.pid)}
                       - before)
        assert new, "no shell started"
        pid = new.pop()
        # Until it has exec'd, the child is a copy of execd.
        assert wait_for(lambda: status_of(pid)["Name"] != "execd")
        return status_of(pid)
    finally:
        s.close()


def assert_default(res, who):
    for k in CLASSES:
        assert res[k] == EPERM, (who, k, res)
    assert res["clone3"] == 38, (who, res)          # ENOSYS: use clone
    for k in ("personality_query", "personality_linux32",
              "process_vm_readv_self"):
        assert res[k] == 0, (who, k, res)
    assert res["Seccomp"] == "2" and res["NoNewPrivs"] == "1", (who, res)
    assert_protected(res, who)


def assert_protected(res, who):
    for k in PROTECT:
        assert res[k] == EPERM, (who, k, res)
    assert res["execd_threads"] > 1, res
    assert res["execd_kill_threads"] == [EPERM], (who, res)
    for k in ("execd_proc_environ", "execd_proc_mem", "execd_proc_fd"):
        assert res[k] in (1, 13), (who, k, res)     # EPERM or EACCES


def test_every_child_runs_under_the_default_profile():
    with Execd() as d:
        assert_default(probe_cmd(d), "command")
        # With limits a child is forked from inside its cgroup, by a
        # thread of execd that carries the filter (see cgroup.c): it is
        # born under it, once.
        for i in range(3):
            res = probe_cmd(d, limits={"processes": 64})
            assert_default(res, "command with limits %d" % i)
            assert res["Seccomp_filters"] == "1", res
        if os.geteuid() == 0:
            res = probe_cmd(d, uid=65534, cwd="/")
            assert_default(res, "command as 65534")
            assert res["CapBnd"] == "00000000a00425fb", res
        assert_default(probe_session(d), "session")
        assert_default(probe_kernel(d), "kernel")
        st = terminal_shell(d)
        assert st["Seccomp"] == "2" and st["NoNewPrivs"] == "1", st
        assert st["CapBnd"] == "00000000a00425fb", st
        assert "seccomp default" in d.read_log(), d.read_log()


def test_strict_refuses_tracing_too():
    with Execd("--seccomp", "strict") as d:
        res = probe_cmd(d)
        assert res["process_vm_readv_self"] == EPERM, res
        for k in CLASSES:
            assert res[k] == EPERM, (k, res)


def test_off_refuses_nothing_but_still_protects_execd():
    with Execd("--seccomp", "off") as d:
        res = probe_cmd(d)
        for k in CLASSES + ["clone3"]:
            assert res[k] != EPERM and res[k] != 38, (k, res)
        assert_protected(res, "off")


def test_log_mode_allows_and_still_protects_execd():
    with Execd("--seccomp-mode", "log") as d:
        res = probe_cmd(d)
        for k in CLASSES + ["clone3"]:
            assert res[k] != EPERM and res[k] != 38, (k, res)
        assert_protected(res, "log")


def test_no_new_privs_and_capabilities_are_configurable():
    with Execd("--no-new-privs", "no", "--capabilities",
               "chown,CAP_NET_RAW") as d:
        res = probe_cmd(d)
        assert res["NoNewPrivs"] == "0", res
        assert res["CapBnd"] == "%016x" % (1 << 0 | 1 << 13), res
        assert res["Seccomp"] == "2", res
        st, h, data = d.request("POST", "/command", body={
            "command": "grep CapEff /proc/self/status"})
        if os.geteuid() == 0:
            assert b"0000000000002001" in data, data


def test_bad_isolation_options_are_refused_at_start():
    for args, want in ((["--seccomp", "loose"], "--seccomp"),
                       (["--seccomp-mode", "warn"], "--seccomp-mode"),
                       (["--no-new-privs", "maybe"], "--no-new-privs"),
                       (["--capabilities", "chown,sys_fly"], "sys_fly")):
        d = Execd(*args)
        try:
            d.start(timeout=5)
            d.stop()
            raise AssertionError("started with %r" % args)
        except AssertionError as e:
            assert "exited with 2" in str(e) and want in str(e), (args, e)
