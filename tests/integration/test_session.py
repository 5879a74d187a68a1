"""Bash sessions: one persistent shell per session."""
import json
import os
import time

from lib import Execd, events, expect_error, kinds


def new_session(d, body=None):
    st, h, data = d.request("POST", "/session", body=body)
    assert st == 200, data
    sid = json.loads(data)["session_id"]
    assert len(sid) == 32, sid
    return sid


def run(d, sid, command, **kw):
    st, h, data = d.request("POST", "/session/%s/run" % sid,
                            body=dict(command=command, **kw), timeout=60)
    if st != 200:
        return st, json.loads(data)
    return st, events(data)


def lines(evs, kind="stdout"):
    return [e["text"] for e in evs if e["type"] == kind]


def test_state_survives_between_runs():
    with Execd() as d:
        sid = new_session(d)
        st, evs = run(d, sid, "x=5; export Y=6; f() { echo fn $1; }; "
                      "alias ll='echo aliased'; cd /tmp")
        assert kinds(evs) == ["init", "execution_complete"], evs
        assert evs[0]["text"] == sid
        st, evs = run(d, sid, "echo $x $Y; f a; ll; pwd")
        assert lines(evs) == ["5 6", "fn a", "aliased", "/tmp"], evs


def test_stdout_and_stderr_apart_and_exit_status():
    with Execd() as d:
        sid = new_session(d)
        st, evs = run(d, sid, "echo out; echo err >&2; printf 'a\\n\\nb'")
        assert lines(evs) == ["out", "a", "\n", "b"], evs
        assert lines(evs, "stderr") == ["err"], evs
        st, evs = run(d, sid, "false")
        assert kinds(evs)[-1] == "error", evs
        err = evs[-1]["error"]
        assert err["ename"] == "CommandExecError" and err["evalue"] == "1"


def test_cwd_override_sticks_and_empty_body_creates():
    with Execd() as d:
        st, h, data = d.request("POST", "/session", body="",
                                headers={"Content-Type": "application/json"})
        assert st == 200, data
        sid = json.loads(data)["session_id"]
        run(d, sid, "true", cwd="/usr")
        st, evs = run(d, sid, "pwd")
        assert lines(evs) == ["/usr"], evs


def test_exit_resets_the_session_and_says_so():
    with Execd() as d:
        sid = new_session(d)
        run(d, sid, "v=kept")
        st, evs = run(d, sid, "exit 7")
        err = evs[-1]["error"]
        assert err["evalue"] == "7", err
        assert "fresh state" in err["traceback"][-1], err
        st, evs = run(d, sid, "echo [$v]")
        assert lines(evs) == ["[]"], evs


def test_errors_before_any_event():
    with Execd() as d:
        st, obj = run(d, "nope", "true")
        assert st == 404 and obj["code"] == "CONTEXT_NOT_FOUND", obj
        sid = new_session(d)
        st, h, data = d.request("POST", "/session/%s/run" % sid, body={})
        expect_error(st, data, 400, "INVALID_REQUEST_BODY")
        st, h, data = d.request("POST", "/session", body={"cwd": "rel"})
        expect_error(st, data, 400, "INVALID_REQUEST_BODY")
        st, h, data = d.request("DELETE", "/session/" + sid)
        assert st == 200 and data == b""
        st, h, data = d.request("DELETE", "/session/" + sid)
        expect_error(st, data, 404, "CONTEXT_NOT_FOUND")


def test_timeout_stops_the_run_and_keeps_the_session():
    with Execd("--grace-period", "300") as d:
        sid = new_session(d)
        run(d, sid, "kept=yes")
        st, evs = run(d, sid, "sleep 30", timeout=300)
        err = evs[-1]["error"]
        assert err["evalue"] == "-1" and "timeout" in err["traceback"][0]
        st, evs = run(d, sid, "echo $kept")
        assert lines(evs) == ["yes"], evs


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return (int(rest[11]) + int(rest[12])) / os.sysconf("SC_CLK_TCK")


def test_a_shell_that_closes_its_stdout_does_not_spin_the_daemon():
    with Execd() as d:
        sid = new_session(d)
        st, evs = run(d, sid, "exec 1>&- 2>&-")
        assert kinds(evs)[-1] == "execution_complete", evs
        # A daemon spinning on the closed pipe would burn most of these
        # two seconds; an idle one wakes once a second.
        before = cpu_seconds(d.proc.pid)
        time.sleep(2.0)
        assert cpu_seconds(d.proc.pid) - before < 0.6
        st, evs = run(d, sid, "true")     # the session still answers
        assert kinds(evs)[-1] == "execution_complete", evs
