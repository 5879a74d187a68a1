"""Isolated sessions with uid_mode "userns": the shell in a user namespace
of its own, the mount and network namespaces owned by it.  As root every
id inside is the same id outside; as an unprivileged execd (no
CAP_SYS_ADMIN, no CAP_SETUID) the session's uid is execd's outside, and
this is the only way such an execd makes sessions."""
import json
import os
import subprocess

from lib import expect_error, wait_for
from test_isolated import ISO, Iso

NOBODY = 65534
AS_NOBODY = "exec setpriv --reuid=65534 --regid=65534 --clear-groups"


def host_allows_unprivileged_userns():
    """What the kernel says to an unprivileged unshare -U, asked of it."""
    r = subprocess.run(["setpriv", "--reuid=%d" % NOBODY,
                        "--regid=%d" % NOBODY, "--clear-groups",
                        "unshare", "-U", "true"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return r.returncode == 0


class Unpriv(Iso):
    """An Iso whose execd runs as nobody."""

    def __init__(self, *args):
        Iso.__init__(self, *args)
        os.chmod(self.base, 0o777)
        self.d.wrapper = AS_NOBODY
        self.d.env.update({"HOME": "/tmp", "TMPDIR": "/tmp"})


def status_of_shell(t, sid):
    out, evs = t.run(sid, "grep -E '^(NoNewPrivs|Seccomp|CapEff):' "
                     "/proc/self/status; unshare -U true 2>/dev/null; "
                     "echo unshare=$?")
    return out, evs


def mounted(pid, path):
    with open("/proc/%d/mountinfo" % pid) as f:
        return path in f.read()


def check_session(t, sid, uid_inside, owner_outside):
    """Overlay write invisible outside; uid; diff; commit; delete."""
    out, evs = t.run(sid, "id -u; id -g; echo made > new.txt; "
                     "mkdir d && echo x > d/f; cat kept.txt")
    assert out == [str(uid_inside), str(uid_inside), "original"], evs
    assert not os.path.exists(os.path.join(t.ws, "new.txt"))
    assert not os.path.exists(os.path.join(t.ws, "d"))
    # The sandbox of every child: no_new_privs, the seccomp filter (no
    # namespace of its own from the session), no capabilities.
    out, evs = status_of_shell(t, sid)
    assert "NoNewPrivs:\t1" in out and "Seccomp:\t2" in out, out
    if uid_inside != 0:
        assert "CapEff:\t0000000000000000" in out, out
    assert out[-1] == "unshare=1", out
    # The upper holds the changes, owned by the mapped outside ids.
    st, h, data = t.d.request("GET", ISO + "/session/%s/diff" % sid)
    assert st == 200, data
    ch = {c["path"]: c for o in json.loads(data)["overlays"]
          for c in o["changes"]}
    assert set(ch) == {t.ws + "/new.txt", t.ws + "/d", t.ws + "/d/f"}, ch
    assert ch[t.ws + "/new.txt"]["change"] == "added", ch
    assert ch[t.ws + "/new.txt"]["size"] == 5, ch
    st, h, data = t.d.request("POST", ISO + "/session/%s/commit" % sid)
    assert st == 200, data
    res = json.loads(data)
    assert sorted(res["applied"]) == [t.ws + "/d", t.ws + "/d/f",
                                      t.ws + "/new.txt"], res
    assert res["conflicts"] == [] and res["failed"] == [], res
    with open(os.path.join(t.ws, "new.txt")) as f:
        assert f.read() == "made\n"
    assert os.stat(os.path.join(t.ws, "new.txt")).st_uid == owner_outside
    assert os.stat(os.path.join(t.ws, "d", "f")).st_uid == owner_outside
    st, h, data = t.d.request("DELETE", ISO + "/session/" + sid)
    assert st == 200, data
    assert wait_for(lambda: not os.path.exists(os.path.join(t.upper, sid)))
    assert not mounted(t.d.proc.pid, t.upper)
    assert t.d.get_json(ISO + "/sessions")[1] == {"sessions": []}


def test_userns_session_as_root_maps_every_id_as_itself():
    with Iso() as t:
        st, caps = t.d.get_json(ISO + "/capabilities")
        assert caps["userns_available"] is True, caps
        assert caps["setpriv_available"] is True, caps
        sid = t.create({"workspace": {"path": t.ws}, "uid_mode": "userns",
                        "uid": 1000, "gid": 1000, "share_net": False})
        out, evs = t.run(sid, "cat /proc/self/uid_map /proc/self/gid_map; "
                         "stat -c %u:%g kept.txt; readlink /proc/self/ns/user")
        assert out[0].split() == ["0", "0", "4294967295"], out
        assert out[1].split() == ["0", "0", "4294967295"], out
        # Files keep their owners: root's is root's inside too.
        assert out[2] == "0:0", out
        mine = os.readlink("/proc/self/ns/user")
        assert out[-1] != mine, out
        st, obj = t.d.get_json(ISO + "/session/" + sid)
        assert obj["uid_mode"] == "userns" and obj["uid"] == 1000, obj
        # The file routes work on its view, as its uid.
        st, h, data = t.d.request("POST", ISO + "/session/%s/directories"
                                  % sid, body={t.ws + "/viaroute": {
                                      "mode": 755}})
        assert st == 200, data
        out, evs = t.run(sid, "stat -c %u viaroute; rmdir viaroute")
        assert out == ["1000"], evs
        assert not os.path.exists(os.path.join(t.ws, "viaroute"))
        check_session(t, sid, 1000, 1000)


def test_userns_session_as_unprivileged_execd():
    with Unpriv() as t:
        st, caps = t.d.get_json(ISO + "/capabilities")
        assert st == 200, caps
        assert caps["setpriv_available"] is False, caps
        assert "CAP_SYS_ADMIN" in caps["message"], caps
        if not host_allows_unprivileged_userns():
            # This host says no: execd must say so, and why.
            assert caps["available"] is False, caps
            assert caps["userns_available"] is False, caps
            assert "user namespace" in caps["userns_message"], caps
            st, h, data = t.d.request(
                "POST", ISO + "/session",
                body={"workspace": {"path": t.ws}, "uid_mode": "userns"})
            expect_error(st, data, 503)
            return
        assert caps["available"] is True, caps
        assert caps["userns_available"] is True, caps
        assert "userns_message" not in caps, caps
        # Without CAP_SYS_ADMIN, setuid sessions cannot be made...
        st, h, data = t.d.request(
            "POST", ISO + "/session",
            body={"workspace": {"path": t.ws}, "uid_mode": "setpriv"})
        expect_error(st, data, 503, "NOT_SUPPORTED")
        assert b"CAP_SYS_ADMIN" in data, data
        # ...and no uid_mode means userns.  uid 0 inside is execd's uid
        # outside, and nothing more.
        sid = t.create({"workspace": {"path": t.ws}, "uid": 0,
                        "share_net": False})
        out, evs = t.run(sid, "cat /proc/self/uid_map")
        assert out[0].split() == ["0", str(NOBODY), "1"], out
        st, obj = t.d.get_json(ISO + "/session/" + sid)
        assert obj["idle_timeout_seconds"] == 0, obj
        # The file routes need CAP_SYS_ADMIN (setns into the shell's
        # mount namespace): refused as not supported, with the reason.
        st, h, data = t.d.request(
            "GET", ISO + "/session/%s/files/info?path=%s" % (sid, t.ws))
        expect_error(st, data, 503, "NOT_SUPPORTED")
        assert b"CAP_SYS_ADMIN" in data, data
        check_session(t, sid, 0, NOBODY)
        # Without a uid, the session's is execd's own.
        sid = t.create({"workspace": {"path": t.ws}})
        out, evs = t.run(sid, "id -u; echo hidden > other.txt; "
                         "cat other.txt")
        assert out == [str(NOBODY), "hidden"], out
        assert not os.path.exists(os.path.join(t.ws, "other.txt"))
        st, h, data = t.d.request("DELETE", ISO + "/session/" + sid)
        assert st == 200, data
        # persist false: the upper on a tmpfs of the shell's namespace,
        # which execd reads through /proc/<shell>/root.
        sid = t.create({"overlays": [{"path": t.ws, "mode": "overlay",
                                      "persist": False}]})
        out, evs = t.run(sid, "echo e > eph.txt; cat eph.txt")
        assert out == ["e"], evs
        st, h, data = t.d.request("GET", ISO + "/session/%s/diff" % sid)
        ch = [c["path"] for o in json.loads(data)["overlays"]
              for c in o["changes"]]
        assert ch == [t.ws + "/eph.txt"], data
        assert not os.path.exists(os.path.join(t.ws, "eph.txt"))
        st, h, data = t.d.request("DELETE", ISO + "/session/" + sid)
        assert st == 200, data
        assert wait_for(lambda: os.listdir(t.upper) == [])


def test_isolated_shells_get_the_session_limits_and_a_cgroup():
    """Every child's limits and cgroup, the isolated shells' too, in
    both modes; the cgroup goes with the session."""
    with Iso("--limit", "session.processes=64,session.memory=256MiB,"
             "session.open_files=512") as t:
        for mode in ("setpriv", "userns"):
            sid = t.create({"workspace": {"path": t.ws}, "uid": 1000,
                            "uid_mode": mode})
            out, evs = t.run(sid, "ulimit -n; ulimit -c; "
                             "cat /proc/self/cgroup")
            assert out[:2] == ["512", "0"], (mode, out)
            # v1: "N:pids:/execd-P/job-J"; v2: "0::/.../job-J".
            jobs = {line.split(":")[1]: line.split(":", 2)[2]
                    for line in out[2:] if "/job-" in line}
            if not jobs:
                # No writable cgroup here: rlimits only, as for any job.
                assert "rlimits only" in t.d.read_log(), out
                continue
            pids = ("/sys/fs/cgroup/pids" + jobs["pids"]) if "pids" in \
                jobs else ("/sys/fs/cgroup" + jobs[""])
            with open(pids + "/pids.max") as f:
                assert int(f.read()) >= 64, pids
            st, h, data = t.d.request("DELETE", ISO + "/session/" + sid)
            assert st == 200, data
            assert wait_for(lambda: not os.path.exists(pids)), pids
