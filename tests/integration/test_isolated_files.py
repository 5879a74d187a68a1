"""The eleven file routes on an isolated session's merged view
(/v1/isolated/session/{id}/files/..., .../directories...): the ordinary
file routes' bodies, statuses and errors, with every path resolved
beneath the session's root.  As root: execd makes the namespaces."""
import json
import os
import tempfile
import urllib.parse

from lib import expect_error
from test_files import multipart
from test_isolated import ISO, Iso


def q(path):
    return urllib.parse.quote(path, safe="")


def route(sid, rest):
    return ISO + "/session/%s/%s" % (sid, rest)


def upload(t, sid, pairs):
    b = "----iso-files-0123456789"
    return t.d.request("POST", route(sid, "files/upload"),
                       body=multipart(pairs, b),
                       headers={"Content-Type": "multipart/form-data; "
                                "boundary=" + b})


def outside(t, name):
    with open(os.path.join(t.ws, name), "rb") as f:
        return f.read()


def test_overlay_every_route_lands_in_the_upper():
    with Iso() as t:
        sid = t.create()
        ws = t.ws
        st, _, body = upload(t, sid, [({"path": ws + "/up/new.txt"},
                                       b"0123456789\nline two\n")])
        assert st == 200, body
        # Seen by the session's runs, not outside.
        out, evs = t.run(sid, "cat up/new.txt")
        assert out == ["0123456789", "line two"], evs
        assert not os.path.exists(ws + "/up")
        # Download, whole and by Range.
        st, h, body = t.d.request("GET", route(sid, "files/download?path=" +
                                               q(ws + "/up/new.txt")))
        assert st == 200 and body == b"0123456789\nline two\n", (st, body)
        st, h, body = t.d.request("GET", route(
            sid, "files/download?path=" + q(ws + "/up/new.txt")),
            headers={"Range": "bytes=2-5"})
        assert st == 206 and body == b"2345", (st, body)
        assert h["content-range"] == "bytes 2-5/20", h
        # A file changed inside only: the session's content, not the real.
        t.run(sid, "echo inside > kept.txt")
        st, _, body = t.d.request("GET", route(sid, "files/download?path=" +
                                               q(ws + "/kept.txt")))
        assert body == b"inside\n", body
        assert outside(t, "kept.txt") == b"original\n"
        # Info and listing.
        st, info = t.d.get_json(route(sid, "files/info?path=" +
                                      q(ws + "/up/new.txt")))
        assert st == 200, info
        assert info[ws + "/up/new.txt"]["size"] == 20, info
        st, lst = t.d.get_json(route(sid, "directories/list?path=" +
                                     q(ws) + "&depth=2"))
        assert st == 200, lst
        assert sorted(e["path"][len(ws) + 1:] for e in lst) == [
            "kept.txt", "up", "up/new.txt"], lst
        # Search.
        st, lst = t.d.get_json(route(sid, "files/search?path=%s&pattern=%s"
                                     % (q(ws), q("*.txt"))))
        assert st == 200, lst
        assert sorted(e["path"] for e in lst) == [
            ws + "/kept.txt", ws + "/up/new.txt"], lst
        # Replace, verbose.
        st, _, body = t.d.request("POST", route(
            sid, "files/replace?verbose=true"), body={
                ws + "/up/new.txt": {"old": "line", "new": "row"}})
        assert st == 200, body
        assert json.loads(body) == {ws + "/up/new.txt": {"replacedCount": 1}}
        out, evs = t.run(sid, "cat up/new.txt")
        assert out == ["0123456789", "row two"], evs
        # Directories, mv, permissions, delete.
        st, _, body = t.d.request("POST", route(sid, "directories"),
                                  body={ws + "/d1/d2": {"mode": 750}})
        assert st == 200, body
        st, _, body = t.d.request("POST", route(sid, "files/mv"), body=[
            {"src": ws + "/up/new.txt", "dest": ws + "/d1/d2/moved.txt"}])
        assert st == 200, body
        st, _, body = t.d.request("POST", route(sid, "files/permissions"),
                                  body={ws + "/d1/d2/moved.txt":
                                        {"mode": 600}})
        assert st == 200, body
        out, evs = t.run(sid, "stat -c '%a %n' d1/d2 d1/d2/moved.txt; "
                         "ls up | wc -l")
        assert out == ["750 d1/d2", "600 d1/d2/moved.txt", "0"], evs
        st, _, body = t.d.request("DELETE", route(sid, "files?path=" +
                                                  q(ws + "/kept.txt")))
        assert st == 200, body
        st, _, body = t.d.request("DELETE", route(sid, "directories?path=" +
                                                  q(ws + "/d1")))
        assert st == 200, body
        out, evs = t.run(sid, "ls -A | wc -l; ls -d d1 kept.txt 2>&1 | "
                         "grep -c 'No such'")
        assert out == ["1", "2"], evs
        # Outside, the workspace is as it was.
        assert sorted(os.listdir(ws)) == ["kept.txt"]
        assert outside(t, "kept.txt") == b"original\n"
        # The session's own /tmp (strict), not execd's.
        st, _, body = upload(t, sid, [({"path": "/tmp/iso-files-tmp"},
                                       b"t")])
        assert st == 200, body
        assert not os.path.exists("/tmp/iso-files-tmp")
        out, evs = t.run(sid, "cat /tmp/iso-files-tmp")
        assert out == ["t"], evs


def test_readonly_writes_are_refused_reads_work():
    with Iso() as t:
        sid = t.create({"workspace": {"path": t.ws, "mode": "ro"}})
        ws = t.ws
        st, _, body = upload(t, sid, [({"path": ws + "/x"}, b"x")])
        expect_error(st, body, 403)
        st, _, body = t.d.request("POST", route(sid, "directories"),
                                  body={ws + "/dir": {"mode": 755}})
        expect_error(st, body, 403)
        st, _, body = t.d.request("POST", route(sid, "files/replace"), body={
            ws + "/kept.txt": {"old": "original", "new": "x"}})
        expect_error(st, body, 403)
        st, _, body = t.d.request("DELETE", route(sid, "files?path=" +
                                                  q(ws + "/kept.txt")))
        expect_error(st, body, 403)
        st, _, body = t.d.request("POST", route(sid, "files/mv"), body=[
            {"src": ws + "/kept.txt", "dest": ws + "/moved"}])
        expect_error(st, body, 403)
        st, _, body = t.d.request("POST", route(sid, "files/permissions"),
                                  body={ws + "/kept.txt": {"mode": 600}})
        expect_error(st, body, 403)
        assert sorted(os.listdir(ws)) == ["kept.txt"]
        assert outside(t, "kept.txt") == b"original\n"
        assert os.stat(ws + "/kept.txt").st_mode & 0o777 != 0o600
        st, _, body = t.d.request("GET", route(sid, "files/download?path=" +
                                               q(ws + "/kept.txt")))
        assert st == 200 and body == b"original\n", (st, body)


def test_symlinks_inside_cannot_reach_outside_the_sessions_view():
    fd, secret = tempfile.mkstemp(prefix="execd-iso-secret-", dir="/tmp")
    os.write(fd, b"host only\n")
    os.close(fd)
    try:
        with Iso() as t:
            sid = t.create()
            ws = t.ws
            # The strict profile's /tmp is the session's own: the host's
            # file is not in its view, whatever the path.
            t.run(sid, "ln -s %s abs; ln -s ../../../../../../../..%s up; "
                  "ln -s / root; echo mine > /tmp/mine" % (secret, secret))
            for p in (ws + "/abs", ws + "/up", ws + "/root" + secret,
                      secret):
                st, _, body = t.d.request(
                    "GET", route(sid, "files/download?path=" + q(p)))
                expect_error(st, body, 404, "FILE_NOT_FOUND")
            for p in (ws + "/root" + secret, secret):
                st, _, body = t.d.request(
                    "GET", route(sid, "files/info?path=" + q(p)))
                expect_error(st, body, 404, "FILE_NOT_FOUND")
            # What the links name in the session's view is what is read.
            for p in (ws + "/root/tmp/mine",
                      ws + "/../../../../../tmp/mine"):
                st, _, body = t.d.request(
                    "GET", route(sid, "files/download?path=" + q(p)))
                assert st == 200 and body == b"mine\n", (p, st, body)
            # Writing through a link stays in the view too.
            st, _, body = upload(t, sid, [({"path": ws + "/root/tmp/w"},
                                           b"w")])
            assert st == 200, body
            assert not os.path.exists("/tmp/w")
            # A search from a link to "/" does not find the host's file.
            st, lst = t.d.get_json(route(
                sid, "files/search?path=%s&pattern=%s" % (
                    q(ws + "/root/tmp"), q(os.path.basename(secret)))))
            assert st == 200 and lst == [], lst
            with open(secret, "rb") as f:
                assert f.read() == b"host only\n"
    finally:
        os.unlink(secret)


def test_bad_input():
    with Iso() as t:
        sid = t.create()
        st, _, body = t.d.request("GET", route(
            "00000000-0000-4000-8000-000000000000",
            "files/info?path=" + q(t.ws)))
        expect_error(st, body, 404, "SESSION_NOT_FOUND")
        st, _, body = upload(t, "no-such-session",
                             [({"path": t.ws + "/x"}, b"x")])
        expect_error(st, body, 404, "SESSION_NOT_FOUND")
        st, _, body = t.d.request("GET", route(sid, "files/info?path=" +
                                               q("relative/x")))
        expect_error(st, body, 400, "INVALID_REQUEST_BODY")
        st, _, body = upload(t, sid, [({"path": "relative/x"}, b"x")])
        expect_error(st, body, 400, "INVALID_FILE_METADATA")
        st, _, body = t.d.request("GET", route(sid, "directories/list"))
        expect_error(st, body, 400, "MISSING_QUERY")
        st, _, body = t.d.request("GET", route(sid, "files/download?path=" +
                                               q(t.ws + "/missing")))
        expect_error(st, body, 404, "FILE_NOT_FOUND")
        # A deleted session's routes are 404 too.
        st, _, _ = t.d.request("DELETE", ISO + "/session/" + sid)
        assert st in (200, 204), st
        st, _, body = t.d.request("GET", route(sid, "files/info?path=" +
                                               q(t.ws)))
        expect_error(st, body, 404, "SESSION_NOT_FOUND")


def test_routes_act_as_the_sessions_uid():
    with Iso() as t:
        ws = t.ws
        with open(ws + "/secret", "w") as f:
            f.write("root only\n")
        os.chmod(ws + "/secret", 0o600)
        os.mkdir(ws + "/private", 0o700)
        with open(ws + "/private/in", "w") as f:
            f.write("x\n")
        sid = t.create({"workspace": {"path": ws}, "uid": 1000,
                        "gid": 1000})
        # What the session's shell cannot read, its file routes cannot.
        out, evs = t.run(sid, "cat secret 2>&1; ls private 2>&1")
        assert all("Permission denied" in o for o in out), out
        st, _, body = t.d.request("GET", route(sid, "files/download?path=" +
                                               q(ws + "/secret")))
        expect_error(st, body, 403, "PERMISSION_DENIED")
        assert b"root only" not in body
        st, _, body = t.d.request("GET", route(sid, "directories/list?path=" +
                                               q(ws + "/private")))
        expect_error(st, body, 403, "PERMISSION_DENIED")
        st, _, body = t.d.request("POST", route(sid, "files/replace"), body={
            ws + "/secret": {"old": "root", "new": "user"}})
        expect_error(st, body, 403, "PERMISSION_DENIED")
        # Nor write where the shell cannot.
        st, _, body = upload(t, sid, [({"path": ws + "/private/new"}, b"n")])
        expect_error(st, body, 403, "PERMISSION_DENIED")
        st, _, body = t.d.request("POST", route(sid, "directories"),
                                  body={ws + "/private/d": {"mode": 755}})
        expect_error(st, body, 403, "PERMISSION_DENIED")
        st, _, body = t.d.request("DELETE", route(sid, "files?path=" +
                                                  q(ws + "/private/in")))
        expect_error(st, body, 403, "PERMISSION_DENIED")
        st, _, body = t.d.request("POST", route(sid, "files/permissions"),
                                  body={ws + "/secret": {"mode": 644}})
        expect_error(st, body, 403, "PERMISSION_DENIED")
        # What it writes is the session uid's, as the shell's own files.
        st, _, body = upload(t, sid, [({"path": ws + "/up.txt"}, b"u")])
        assert st == 200, body
        st, _, body = t.d.request("POST", route(sid, "directories"),
                                  body={ws + "/mine": {"mode": 755}})
        assert st == 200, body
        out, evs = t.run(sid, "stat -c '%u:%g %n' up.txt mine")
        assert out == ["1000:1000 up.txt", "1000:1000 mine"], evs
        st, info = t.d.get_json(route(sid, "files/info?path=" +
                                      q(ws + "/up.txt")))
        assert st == 200, info
        # Outside, nothing changed.
        assert sorted(os.listdir(ws)) == ["kept.txt", "private", "secret"]
        assert os.stat(ws + "/secret").st_mode & 0o777 == 0o600


def test_root_session_routes_read_root_only_files():
    with Iso() as t:
        ws = t.ws
        with open(ws + "/secret", "w") as f:
            f.write("root only\n")
        os.chmod(ws + "/secret", 0o600)
        sid = t.create()
        st, _, body = t.d.request("GET", route(sid, "files/download?path=" +
                                               q(ws + "/secret")))
        assert st == 200 and body == b"root only\n", (st, body)
        st, _, body = upload(t, sid, [({"path": ws + "/r.txt"}, b"r")])
        assert st == 200, body
        out, evs = t.run(sid, "stat -c '%u' r.txt")
        assert out == ["0"], evs


def refused(st, body):
    """A 4xx with the routes' JSON error, and nothing of the host's."""
    assert 400 <= st < 500, (st, body)
    obj = json.loads(body)
    assert obj.get("code") and "message" in obj, obj
    assert b"host only" not in body, body


def test_magic_links_through_proc_are_refused():
    fd, secret = tempfile.mkstemp(prefix="execd-iso-magic-", dir="/tmp")
    os.write(fd, b"host only\n")
    os.close(fd)
    hostdir = tempfile.mkdtemp(prefix="execd-iso-magicdir-", dir="/tmp")
    name = os.path.basename(secret)
    try:
        with Iso() as t:
            sid = t.create()
            ws = t.ws
            # Links through procfs: to execd's root as its threads see
            # /proc/self, to execd's by pid, to a descriptor table.
            out, evs = t.run(sid, "ln -s /proc/self/root/tmp self_tmp; "
                             "ln -s /proc/%d/root/tmp execd_tmp; "
                             "ln -s /proc/self/fd fds; echo ok"
                             % t.d.proc.pid)
            assert out == ["ok"], evs
            for p in (ws + "/self_tmp/" + name, ws + "/execd_tmp/" + name,
                      "/proc/self/root" + secret):
                st, _, body = t.d.request(
                    "GET", route(sid, "files/download?path=" + q(p)))
                refused(st, body)
                st, _, body = t.d.request(
                    "GET", route(sid, "files/info?path=" + q(p)))
                refused(st, body)
            for p in (ws + "/self_tmp", ws + "/execd_tmp", ws + "/fds"):
                st, _, body = t.d.request(
                    "GET", route(sid, "directories/list?path=" + q(p)))
                refused(st, body)
            st, _, body = upload(t, sid, [({"path": ws + "/self_tmp/up"},
                                           b"planted")])
            refused(st, body)
            st, _, body = t.d.request("POST", route(sid, "directories"),
                                      body={ws + "/execd_tmp/mk":
                                            {"mode": 755}})
            refused(st, body)
            st, _, body = t.d.request("POST", route(sid, "files/mv"), body=[
                {"src": ws + "/kept.txt", "dest": ws + "/self_tmp/mv"}])
            refused(st, body)
            st, _, body = t.d.request("POST", route(sid, "files/mv"), body=[
                {"src": ws + "/self_tmp/" + name, "dest": ws + "/got"}])
            refused(st, body)
            st, _, body = t.d.request("POST", route(sid, "files/permissions"),
                                      body={ws + "/self_tmp/" + name:
                                            {"mode": 777}})
            refused(st, body)
            st, _, body = t.d.request("POST", route(sid, "files/replace"),
                                      body={ws + "/self_tmp/" + name:
                                            {"old": "host", "new": "gone"}})
            refused(st, body)
            st, _, body = t.d.request("GET", route(
                sid, "files/search?path=%s&pattern=%s" % (
                    q(ws + "/self_tmp"), q(name))))
            assert st >= 400 or json.loads(body) == [], (st, body)
            if st >= 400:
                refused(st, body)
            # A delete of what is not there succeeds, as ever (the file
            # and the directory are checked to be still there below).
            st, _, body = t.d.request("DELETE", route(
                sid, "files?path=" + q(ws + "/self_tmp/" + name)))
            if st != 200:
                refused(st, body)
            st, _, body = t.d.request("DELETE", route(
                sid, "directories?path=" + q(ws + "/execd_tmp/" +
                                             os.path.basename(hostdir))))
            if st != 200:
                refused(st, body)
            # execd goes on, and the session's own files still work.
            st, _, body = t.d.request("GET", route(sid, "files/download?"
                                                   "path=" + q(ws +
                                                               "/kept.txt")))
            assert st == 200 and body == b"original\n", (st, body)
            st, _ = t.d.get_json("/ping")
            assert st == 200
            # The session's own /proc is untouched.
            out, evs = t.run(sid, "head -1 /proc/self/status; "
                             "readlink self_tmp")
            assert out == ["Name:\thead", "/proc/self/root/tmp"], evs
        # Nothing outside was read or written.
        with open(secret, "rb") as f:
            assert f.read() == b"host only\n"
        assert os.stat(secret).st_mode & 0o777 == 0o600
        assert os.path.isdir(hostdir)
        for n in ("up", "mk", "mv", "got"):
            assert not os.path.exists(os.path.join("/tmp", n)), n
    finally:
        os.unlink(secret)
        os.rmdir(hostdir)
