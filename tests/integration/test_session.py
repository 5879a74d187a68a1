"""Bash sessions: one persistent shell per session."""
import json
import os
import tempfile
import time

from lib import UUID_RE, Execd, events, expect_error, kinds


def new_session(d, body=None):
    st, h, data = d.request("POST", "/session", body=body)
    assert st == 200, data
    sid = json.loads(data)["session_id"]
    # A dashed UUID, as upstream's.
    assert UUID_RE.match(sid), sid
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


def test_sessions_do_not_see_execd_configuration_names():
    with tempfile.TemporaryDirectory() as tmp:
        envfile = os.path.join(tmp, "envs")
        with open(envfile, "w") as f:
            f.write("FROM_FILE=f\n")
        # an isolation configuration must exist (a missing one stops execd)
        open(os.path.join(tmp, "iso"), "w").close()
        reserved = {"EXECD_ENVS": envfile, "JUPYTER_TOKEN": "jt",
                    "JUPYTER_HOST": "http://127.0.0.1:1",
                    "EXECD_ISOLATION_CONFIG": os.path.join(tmp, "iso"),
                    "EXECD_RUNTIME_INIT": "false",
                    "EXECD_LIFECYCLE_CONFIG": os.path.join(tmp, "lc")}
        with Execd(env=dict(reserved, KEEP_ME="k")) as d:
            sid = new_session(d)
            st, evs = run(d, sid, "env | cut -d= -f1 | tr '\\n' ' '")
            assert st == 200, evs
            names = set("".join(lines(evs)).split())
            assert "KEEP_ME" in names and "FROM_FILE" in names, names
            seen = names & set(reserved) - {"EXECD_LIFECYCLE_CONFIG"}
            assert not seen, seen
            # nor when the file names them later (a setEnv-style append)
            with open(envfile, "a") as f:
                f.write("JUPYTER_TOKEN=late\nLATER=l\n")
            st, evs = run(d, sid, "echo $LATER-${JUPYTER_TOKEN:-none}")
            assert "".join(lines(evs)).strip() == "l-none", evs
            # commands still see EXECD_ENVS, as upstream's (setEnv uses it)
            st, _, data = d.request("POST", "/command",
                                    body={"command": "echo $EXECD_ENVS"})
            assert st == 200, data
            assert envfile in "".join(e.get("text", "") for e in
                                      events(data)
                                      if e["type"] == "stdout"), data
