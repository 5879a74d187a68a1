"""Isolated sessions (/v1/isolated): overlays, read-only paths, a private
/tmp and network, a session uid, background runs and their logs, idle
expiry, teardown, and the requests refused.  As root: execd makes the
namespaces and mounts itself."""
import json
import os
import shutil
import socket
import tempfile
import threading
import time

from lib import UUID_RE, Execd, events, expect_error, wait_for

ISO = "/v1/isolated"


class Iso:
    """An execd with an upper root of its own and a workspace to use."""

    def __init__(self, *args):
        # Not under /tmp: the strict profile's /tmp is a private tmpfs.
        self.base = tempfile.mkdtemp(prefix="execd-iso-", dir="/var/tmp")
        os.chmod(self.base, 0o755)
        self.upper = os.path.join(self.base, "upper")
        self.ws = os.path.join(self.base, "ws")
        os.mkdir(self.ws)
        os.chmod(self.ws, 0o777)
        with open(os.path.join(self.ws, "kept.txt"), "w") as f:
            f.write("original\n")
        self.d = Execd("--isolation-upper-root", self.upper, *args)

    def __enter__(self):
        self.d.start()
        return self

    def __exit__(self, *exc):
        self.d.__exit__(*exc)
        shutil.rmtree(self.base, ignore_errors=True)

    def create(self, body=None, want=201):
        body = body if body is not None else {"workspace": {"path": self.ws}}
        st, h, data = self.d.request("POST", ISO + "/session", body=body)
        assert st == want, (st, data)
        obj = json.loads(data)
        if want == 201:
            assert UUID_RE.match(obj["session_id"]), obj
            assert obj["created_at"].endswith("Z"), obj
            return obj["session_id"]
        return obj

    def run(self, sid, code, **kw):
        st, h, data = self.d.request("POST", ISO + "/session/%s/run" % sid,
                                     body=dict(code=code, **kw), timeout=60)
        assert st == 200, (st, data)
        assert h["content-type"] == "text/event-stream", h
        evs = events(data)
        return [e["text"] for e in evs if e["type"] == "stdout"], evs

    def state(self, sid):
        return self.d.get_json(ISO + "/session/" + sid)


def test_overlay_write_invisible_outside_visible_inside():
    with Iso() as t:
        sid = t.create()
        out, evs = t.run(sid, "pwd; cat kept.txt; echo changed > kept.txt; "
                         "echo new > new.txt; rm -f gone.txt; cat kept.txt")
        assert out == [t.ws, "original", "changed"], evs
        # Upstream's stream: no init event, no stderr events.
        assert [e["type"] for e in evs] == ["stdout"] * 3 + [
            "execution_complete"], evs
        assert all(isinstance(e["timestamp"], int) for e in evs), evs
        with open(os.path.join(t.ws, "kept.txt")) as f:
            assert f.read() == "original\n"
        assert not os.path.exists(os.path.join(t.ws, "new.txt"))
        out, evs = t.run(sid, "cat kept.txt new.txt")
        assert out == ["changed", "new"], evs
        # The upper holds the change; the merged root looks as the real.
        out, evs = t.run(sid, "stat -c %a .")
        assert out == ["777"], evs


def test_runs_keep_exports_and_report_errors():
    with Iso() as t:
        sid = t.create()
        t.run(sid, "export A=1; b=2; cd /")
        out, evs = t.run(sid, "echo $A $b $C; pwd", envs={"C": "x y"})
        assert out == ["1 2 x y", "/"], evs
        out, evs = t.run(sid, "echo out; echo err >&2; (exit 3)")
        assert out == ["out", "err"], evs
        err = evs[-1]
        assert err["type"] == "error", evs
        assert err["error"] == {"ename": "ExitError", "evalue": "3",
                                "traceback": None}, err
        assert err["text"] == "command exited with code 3", err
        out, evs = t.run(sid, "sleep 30", timeout_seconds=1)
        assert evs[-1]["error"]["ename"] == "RuntimeError", evs
        out, evs = t.run(sid, "echo $A")
        assert out == ["1"], evs


def test_readonly_write_refused():
    with Iso() as t:
        sid = t.create({"workspace": {"path": t.ws, "mode": "ro"}})
        out, evs = t.run(sid, "echo x > kept.txt 2>&1; echo rc=$?; "
                         "cat kept.txt")
        assert "rc=1" in out and "original" in out, evs
        assert any("Read-only file system" in o for o in out), out
        with open(os.path.join(t.ws, "kept.txt")) as f:
            assert f.read() == "original\n"


def test_rw_mode_writes_through():
    with Iso() as t:
        sid = t.create({"overlays": [{"path": t.ws, "mode": "rw"}],
                        "profile": "balanced"})
        t.run(sid, "echo through > kept.txt")
        with open(os.path.join(t.ws, "kept.txt")) as f:
            assert f.read() == "through\n"


def test_persist_false_is_gone_with_the_shell():
    with Iso() as t:
        sid = t.create({"overlays": [{"path": t.ws, "persist": False}]})
        t.run(sid, "echo tmp > eph.txt")
        out, evs = t.run(sid, "cat eph.txt")
        assert out == ["tmp"], evs
        # Nothing of it on disk under the upper root.
        found = [f for _, _, fs in os.walk(os.path.join(t.upper, sid))
                 for f in fs if f == "eph.txt"]
        assert found == [], found
        assert not os.path.exists(os.path.join(t.ws, "eph.txt"))
        # The shell ends: a fresh one gets a fresh tmpfs upper.
        out, evs = t.run(sid, "exit 4")
        assert evs[-1]["error"]["ename"] == "RuntimeError", evs
        out, evs = t.run(sid, "ls eph.txt 2>&1 || echo none")
        assert out[-1] == "none", out
        # A persistent upper outlives its shell.
        sid2 = t.create({"overlays": [{"path": t.ws, "persist": True}]})
        t.run(sid2, "echo disk > kept2.txt")
        t.run(sid2, "exit 4")
        out, evs = t.run(sid2, "cat kept2.txt")
        assert out == ["disk"], evs
        st, obj = t.state(sid2)
        assert obj["overlays"] == [{"path": t.ws, "mode": "overlay",
                                    "persist": True}], obj


def test_strict_has_a_private_tmp_and_balanced_shares_it():
    with Iso() as t:
        fd, host = tempfile.mkstemp(prefix="execd-iso-host-", dir="/tmp")
        os.close(fd)
        try:
            sid = t.create()
            out, evs = t.run(sid, "ls %s 2>&1 || echo missing; "
                             "echo in > /tmp/execd-iso-inside; "
                             "stat -c %%a /tmp" % host)
            assert out[-2:] == ["missing", "1777"], out
            assert not os.path.exists("/tmp/execd-iso-inside")
            sid = t.create({"workspace": {"path": t.ws},
                            "profile": "balanced"})
            out, evs = t.run(sid, "ls %s" % host)
            assert out == [host], evs
        finally:
            os.unlink(host)


def test_private_net_cannot_reach_host_loopback():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    port = srv.getsockname()[1]
    stop = threading.Event()

    def accept():
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                c, _ = srv.accept()
                c.close()
            except OSError:
                pass
    th = threading.Thread(target=accept)
    th.start()
    try:
        with Iso() as t:
            probe = ("timeout 5 bash -c 'echo > /dev/tcp/127.0.0.1/%d' "
                     "2>/dev/null && echo reached || echo unreachable" % port)
            sid = t.create({"workspace": {"path": t.ws},
                            "share_net": False})
            out, evs = t.run(sid, probe)
            assert out == ["unreachable"], evs
            out, evs = t.run(sid, "cat /sys/class/net/lo/operstate; "
                             "ls /sys/class/net")
            assert out[-1] == "lo", out
            sid = t.create()
            out, evs = t.run(sid, probe)
            assert out == ["reached"], evs
    finally:
        stop.set()
        th.join()
        srv.close()


def test_session_uid_cannot_read_root_only_file():
    with Iso() as t:
        secret = os.path.join(t.ws, "secret")
        with open(secret, "w") as f:
            f.write("s3cret\n")
        os.chmod(secret, 0o600)
        sid = t.create({"workspace": {"path": t.ws}, "uid": 65534,
                        "gid": 65534})
        out, evs = t.run(sid, "id -u; id -g; cat secret 2>&1; "
                         "echo mine > mine.txt && cat mine.txt")
        assert out[:2] == ["65534", "65534"], out
        assert "Permission denied" in out[2], out
        assert out[3] == "mine", out
        st, obj = t.state(sid)
        assert obj["uid"] == 65534 and obj["gid"] == 65534, obj


def test_background_run_and_logs_by_cursor():
    with Iso() as t:
        sid = t.create()
        code = "for i in $(seq 1 3000); do echo line$i; done; echo e >&2; " \
               "(exit 5)"
        st, h, data = t.d.request("POST", ISO + "/session/%s/run" % sid,
                                  body={"code": code, "background": True})
        assert st == 202, data
        obj = json.loads(data)
        rid = obj["run_id"]
        assert UUID_RE.match(rid) and obj["session_id"] == sid, obj
        path = ISO + "/session/%s/runs/%s" % (sid, rid)

        def done():
            st, o = t.d.get_json(path)
            return o if st == 200 and not o["running"] else None
        o = wait_for(done, timeout=60)
        assert o and o["exit_code"] == 5 and "finished_at" in o, o
        got, cursor = b"", 0
        for _ in range(100):
            st, h, data = t.d.request("GET", path + "/logs?cursor=%d"
                                      % cursor)
            assert st == 200, data
            assert h["content-type"].startswith("text/plain"), h
            nxt = int(h["execd-isolated-tail-cursor"])
            got += data
            if nxt == cursor:
                break
            assert nxt == cursor + len(data), (nxt, cursor, len(data))
            cursor = nxt
        lines = got.decode().split("\n")
        assert lines[0] == "line1" and "line3000" in lines and "e" in lines
        # A cursor past the end is clamped; bad cursors are refused.
        st, h, data = t.d.request("GET", path + "/logs?cursor=99999999")
        assert st == 200 and data == b"", data
        assert int(h["execd-isolated-tail-cursor"]) == len(got), h
        for bad, msg in (("-1", "cursor cannot be negative"),
                         ("x", "cursor must be an integer")):
            st, h, data = t.d.request("GET", path + "/logs?cursor=" + bad)
            obj = expect_error(st, data, 400)
            assert obj["message"] == msg, obj
        st, h, data = t.d.request("GET", ISO + "/session/%s/runs/%s" % (
            sid, "0" * 8 + "-0000-4000-8000-" + "0" * 12))
        expect_error(st, data, 404, "SESSION_NOT_FOUND")


def test_idle_sessions_expire():
    with Iso() as t:
        sid = t.create({"workspace": {"path": t.ws},
                        "idle_timeout_seconds": 1})
        st, obj = t.state(sid)
        assert obj["idle_timeout_seconds"] == 1, obj
        assert 0 <= obj["idle_remaining_seconds"] <= 1, obj
        gone = wait_for(lambda: t.state(sid)[0] == 404, timeout=15)
        assert gone
        # Removed on a worker, soon after.
        assert wait_for(lambda: not os.path.exists(
            os.path.join(t.upper, sid)))
        # 0: never.
        sid = t.create({"workspace": {"path": t.ws},
                        "idle_timeout_seconds": 0})
        time.sleep(2)
        assert t.state(sid)[0] == 200


def ns_of(pid):
    try:
        return os.readlink("/proc/%d/ns/mnt" % pid)
    except OSError:
        return None


def test_delete_leaves_no_mount_process_or_upper():
    with Iso() as t:
        sid = t.create()
        st, obj = t.d.get_json(ISO + "/sessions")
        assert [s["session_id"] for s in obj["sessions"]] == [sid], obj
        assert t.d.get_json("/metrics")[1]["isolation"][
            "isolated_sessions"] == 1
        # A process that leaves the shell's group and session, in a shell
        # that then ends (a fresh one, in fresh namespaces, follows it),
        # and another in the shell now.
        t.run(sid, "setsid sleep 1000 > /dev/null 2>&1 < /dev/null & "
              "echo hi > x; exit 1")
        t.run(sid, "setsid sleep 1001 > /dev/null 2>&1 < /dev/null &")
        mine = ns_of(t.d.proc.pid)
        inside = [int(p) for p in os.listdir("/proc") if p.isdigit()
                  and ns_of(int(p)) not in (None, mine)
                  and t.upper in open("/proc/%s/mountinfo" % p).read()]
        assert len(inside) >= 3, inside
        st, h, data = t.d.request("DELETE", ISO + "/session/" + sid)
        assert st == 200 and data == b"", data
        assert wait_for(lambda: not any(os.path.exists("/proc/%d" % p)
                                        and ns_of(p) is not None
                                        for p in inside), timeout=10), inside
        with open("/proc/%d/mountinfo" % t.d.proc.pid) as f:
            assert t.upper not in f.read()
        assert wait_for(lambda: not os.path.exists(
            os.path.join(t.upper, sid)))
        assert t.d.get_json(ISO + "/sessions")[1] == {"sessions": []}
        assert t.d.get_json("/metrics")[1]["isolation"][
            "isolated_sessions"] == 0
        st, h, data = t.d.request("DELETE", ISO + "/session/" + sid)
        expect_error(st, data, 404, "SESSION_NOT_FOUND")


def test_bad_requests_refused():
    with Iso() as t:
        cases = [
            ({}, 400, "workspace or overlays is required"),
            ({"workspace": {"path": "rel/ws"}}, 400, "must be an absolute"),
            ({"workspace": {"path": t.ws, "mode": "x"}}, 400,
             'invalid workspace mode "x": must be rw, overlay, or ro'),
            ({"overlays": [{"path": t.ws, "mode": "bad"}]}, 400,
             'invalid overlays[0] mode "bad"'),
            ({"overlays": [{"path": t.ws, "mode": "ro", "persist": True}]},
             400, 'overlays[0]: persist applies only to mode "overlay"'),
            ({"workspace": {"path": t.ws}, "profile": "loose"}, 400,
             "unknown isolation profile"),
            ({"workspace": {"path": t.ws}, "uid_mode": "x"}, 400,
             'invalid uid_mode "x": must be "setpriv" or "userns"'),
            ({"workspace": {"path": t.ws},
              "env_passthrough": {"mode": "x"}}, 400,
             'invalid env_passthrough mode "x": must be "deny" or "allow"'),
            ({"workspace": {"path": t.ws}, "binds": [{"dest": "/x"}]}, 400,
             "binds[0].source is required"),
            ({"workspace": {"path": t.ws}, "binds": [{"source": "a"}]}, 400,
             'binds[0].source "a" must be an absolute path'),
            ({"workspace": {"path": t.ws}, "binds": [{"source": t.ws}]},
             400, "not in allowlist"),
            ({"workspace": {"path": t.ws + "/nope"}}, 400,
             "must be an existing path"),
            ({"workspace": {"path": "/tmp"}}, 400, "strict"),
        ]
        for body, want, msg in cases:
            st, h, data = t.d.request("POST", ISO + "/session", body=body)
            obj = expect_error(st, data, want)
            assert msg in obj["message"], (body, obj)
        st, h, data = t.d.request("POST", ISO + "/session", body="{",
                                  headers={"Content-Type":
                                           "application/json"})
        expect_error(st, data, 400, "INVALID_REQUEST_BODY")
        assert os.listdir(t.upper) == []
        nope = "0" * 8 + "-0000-4000-8000-" + "0" * 12
        for m, p in (("GET", ""), ("DELETE", ""), ("GET", "/runs/" + nope)):
            st, h, data = t.d.request(m, ISO + "/session/" + nope + p)
            obj = expect_error(st, data, 404, "SESSION_NOT_FOUND")
            assert obj["message"] in ("session not found", "run not found")
        st, h, data = t.d.request("POST", ISO + "/session/%s/run" % nope,
                                  body={"code": "true"})
        expect_error(st, data, 404, "SESSION_NOT_FOUND")
        sid = t.create()
        for body in ({}, {"code": ""}, {"code": "true",
                                        "timeout_seconds": -1}):
            st, h, data = t.d.request("POST", ISO + "/session/%s/run" % sid,
                                      body=body)
            expect_error(st, data, 400, "INVALID_REQUEST_BODY")
        # diff and commit are real here (test_isolated_diff.py).
        st, caps = t.d.get_json(ISO + "/session/%s/diff" % sid)
        assert st == 200 and caps["overlays"][0]["changes"] == [], caps


def test_capabilities_honest_and_503_when_unavailable():
    with Iso() as t:
        st, caps = t.d.get_json(ISO + "/capabilities")
        assert st == 200 and caps["available"] is True, caps
        assert caps["setpriv_available"] is True, caps
        assert caps["userns_available"] is True, caps
        assert caps["diff_supported"] is True, caps
        assert caps["commit_supported"] is True, caps
    # An upper root execd cannot make: no session can be made.
    with Execd("--isolation-upper-root", "/proc/execd-no/upper") as d:
        st, caps = d.get_json(ISO + "/capabilities")
        assert st == 200 and caps["available"] is False, caps
        assert "/proc/execd-no/upper" in caps["message"], caps
        for m, p in (("POST", "/session"), ("GET", "/sessions"),
                     ("GET", "/session/x"), ("DELETE", "/session/x")):
            st, h, data = d.request(m, ISO + p, body={"workspace": {
                "path": "/"}} if m == "POST" else None)
            obj = expect_error(st, data, 503, "SERVICE_UNAVAILABLE")
            assert obj["message"] == "isolation unavailable", obj


def test_stale_uppers_of_a_killed_execd_reclaimed():
    with Iso() as t:
        sid = t.create()
        t.run(sid, "echo x > y")
        assert os.path.isdir(os.path.join(t.upper, sid))
        # Another execd on the same root leaves a live one's alone.
        with Execd("--isolation-upper-root", t.upper) as d2:
            st, caps = d2.get_json(ISO + "/capabilities")
            assert caps["available"] is True, caps
            assert os.path.isdir(os.path.join(t.upper, sid))
        t.d.proc.kill()
        t.d.proc.wait()
        with Execd("--isolation-upper-root", t.upper) as d3:
            assert wait_for(lambda: not os.path.exists(
                os.path.join(t.upper, sid)), timeout=10)
            assert "removing 1 directories" in d3.read_log()


def test_background_log_keeps_the_first_16_mib():
    with Iso() as t:
        sid = t.create()
        st, h, data = t.d.request("POST", ISO + "/session/%s/run" % sid,
                                  body={"code": "head -c 17M /dev/zero | "
                                        "tr '\\0' a; echo; echo tail",
                                        "background": True})
        assert st == 202, data
        path = ISO + "/session/%s/runs/%s" % (sid, json.loads(data)["run_id"])
        assert wait_for(lambda: t.d.get_json(path)[1]["running"] is False,
                        timeout=60)
        st, h, data = t.d.request("GET", path + "/logs", timeout=60)
        assert st == 200 and len(data) == 16 << 20, len(data)
        assert int(h["execd-isolated-tail-cursor"]) == 16 << 20, h
        assert set(data) == {ord("a")}
        st, h, data = t.d.request("GET", path + "/logs?cursor=%d"
                                  % (16 << 20))
        assert st == 200 and data == b"", data
