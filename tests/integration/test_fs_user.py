"""The file routes as another user: /v1/filesystem/{uid}/{gid}/...

execd runs as root here; the requests name an unprivileged uid and gid.
Whatever the route, the kernel must decide as it would for that user: a
root-only file stays unread, a file created belongs to uid:gid, a file
readable through one of the account's supplementary groups is readable.
The work a route hands to execd's worker threads (listing, search, the
upload's final rename) runs as the user too, and once a request is
answered execd is root again for the plain routes.

UID 4242 must have no passwd entry (a uid the user database does not
know); the supplementary-group case uses an account of this machine that
has one (lib.user_with_groups).  Each test works in a fresh directory
under /tmp and removes it.
"""
import grp
import json
import os
import pwd
import shutil
import stat
import tempfile
import urllib.parse

from lib import Execd, expect_error, user_with_groups
from test_files import multipart

UID = 4242
GID = 4243


def tmpdir():
    t = tempfile.mkdtemp(prefix="execd-fsuser-", dir="/tmp")
    os.chmod(t, 0o755)
    return t


def q(path):
    return urllib.parse.quote(path, safe="")


def pre(uid=UID, gid=GID):
    return "/v1/filesystem/%s/%s" % (uid, gid)


def upload(d, prefix, pairs, boundary="----formdata-fsuser-0123456789"):
    return d.request("POST", prefix + "/files/upload",
                     body=multipart(pairs, boundary),
                     headers={"Content-Type": "multipart/form-data; "
                              "boundary=" + boundary})


def no_account(uid):
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return
    raise AssertionError("uid %d has an account here" % uid)


def test_root_only_file_stays_unread():
    no_account(UID)
    t = tmpdir()
    with open(t + "/secret", "w") as f:
        f.write("root only")
    os.chmod(t + "/secret", 0o600)
    os.mkdir(t + "/closed", 0o700)
    with open(t + "/closed/inner", "w") as f:
        f.write("x")
    with Execd() as d:
        st, _, body = d.request("GET", pre() + "/files/download?path=" +
                                q(t + "/secret"))
        expect_error(st, body, 403, "PERMISSION_DENIED")
        # Lines and Range go through the same open.
        st, _, body = d.request("GET", pre() + "/files/download?path=" +
                                q(t + "/secret") + "&offset=1&limit=1")
        expect_error(st, body, 403, "PERMISSION_DENIED")
        # lstat of a name in a readable directory is allowed, as for the
        # user; in a 0700 directory of root's it is not.
        st, info = d.get_json(pre() + "/files/info?path=" + q(t + "/secret"))
        assert st == 200 and info[t + "/secret"]["owner"] == "root", info
        st, _, body = d.request("GET", pre() + "/files/info?path=" +
                                q(t + "/closed/inner"))
        expect_error(st, body, 403, "PERMISSION_DENIED")
        # Listing and search run on a worker thread: as the user too.
        st, _, body = d.request("GET", pre() + "/directories/list?path=" +
                                q(t + "/closed"))
        assert st == 403, (st, body)
        st, _, body = d.request("GET", pre() + "/files/search?path=" +
                                q(t + "/closed") + "&pattern=*")
        assert st >= 400 or json.loads(body) == [], (st, body)
        assert b"inner" not in body
        # Nothing of root's may be removed, moved or rewritten.
        st, _, body = d.request("DELETE", pre() + "/files?path=" +
                                q(t + "/secret"))
        expect_error(st, body, 403, "PERMISSION_DENIED")
        st, _, body = d.request("POST", pre() + "/files/mv", body=[
            {"src": t + "/secret", "dest": t + "/moved"}])
        expect_error(st, body, 403, "PERMISSION_DENIED")
        st, _, body = d.request("POST", pre() + "/files/replace", body={
            t + "/secret": {"old": "root", "new": "user"}})
        assert st == 403, (st, body)
        st, _, body = d.request("POST", pre() + "/files/permissions", body={
            t + "/secret": {"mode": 644}})
        expect_error(st, body, 403, "PERMISSION_DENIED")
        st, _, body = d.request("DELETE", pre() + "/directories?path=" +
                                q(t + "/closed"))
        assert st == 403, (st, body)
        assert os.path.exists(t + "/closed/inner")
        with open(t + "/secret") as f:
            assert f.read() == "root only"
        assert stat.S_IMODE(os.stat(t + "/secret").st_mode) == 0o600
        # The plain routes, on the same loop and workers, are root's again.
        st, _, body = d.request("GET", "/files/download?path=" +
                                q(t + "/secret"))
        assert st == 200 and body == b"root only", (st, body)
        st, _, body = d.request("GET", "/directories/list?path=" +
                                q(t + "/closed"))
        assert st == 200 and b"inner" in body, (st, body)
    shutil.rmtree(t)


def test_files_created_belong_to_the_user():
    no_account(UID)
    t = tmpdir()
    os.mkdir(t + "/home")
    os.chown(t + "/home", UID, GID)
    h = t + "/home"
    with Execd() as d:
        st, _, body = upload(d, pre(), [({"path": h + "/a/b.txt"}, b"data")])
        assert st == 200, (st, body)
        for p in (h + "/a", h + "/a/b.txt"):
            s = os.stat(p)
            assert (s.st_uid, s.st_gid) == (UID, GID), (p, s)
        with open(h + "/a/b.txt", "rb") as f:
            assert f.read() == b"data"
        st, _, body = d.request("POST", pre() + "/directories", body={
            h + "/x/y": {"mode": 750}})
        assert st == 200, (st, body)
        s = os.stat(h + "/x/y")
        assert (s.st_uid, s.st_gid) == (UID, GID)
        # Its own files: read, listed, moved, rewritten, removed.
        st, _, body = d.request("GET", pre() + "/files/download?path=" +
                                q(h + "/a/b.txt"),
                                headers={"Range": "bytes=1-2"})
        assert st == 206 and body == b"at", (st, body)
        st, _, body = d.request("GET", pre() + "/directories/list?path=" +
                                q(h))
        assert st == 200 and [e["path"] for e in json.loads(body)] == [
            h + "/a", h + "/x"], (st, body)
        st, _, body = d.request("POST", pre() + "/files/replace", body={
            h + "/a/b.txt": {"old": "data", "new": "news"}})
        assert st == 200, (st, body)
        s = os.stat(h + "/a/b.txt")
        assert (s.st_uid, s.st_gid) == (UID, GID), s
        st, _, body = d.request("POST", pre() + "/files/mv", body=[
            {"src": h + "/a/b.txt", "dest": h + "/c.txt"}])
        assert st == 200, (st, body)
        st, _, body = d.request("POST", pre() + "/files/permissions", body={
            h + "/c.txt": {"mode": 600}})
        assert st == 200, (st, body)
        assert stat.S_IMODE(os.stat(h + "/c.txt").st_mode) == 0o600
        # Giving a file away needs a privilege the user does not have.
        st, _, body = d.request("POST", pre() + "/files/permissions", body={
            h + "/c.txt": {"owner": "root"}})
        expect_error(st, body, 403, "PERMISSION_DENIED")
        st, _, body = upload(d, pre(), [({"path": h + "/given",
                                          "owner": "root"}, b"x")])
        assert st == 403, (st, body)
        assert not os.path.exists(h + "/given")
        # Where the user may not write, nothing is created.
        st, _, body = upload(d, pre(), [({"path": t + "/nope"}, b"x")])
        obj = expect_error(st, body, 403)
        assert "permission" in obj["message"].lower(), obj
        assert not os.path.exists(t + "/nope")
        assert [n for n in os.listdir(h) if ".execd-" in n] == []
        st, _, body = d.request("DELETE", pre() + "/files?path=" +
                                q(h + "/c.txt"))
        assert st == 200 and not os.path.exists(h + "/c.txt"), (st, body)
        st, _, body = d.request("DELETE", pre() + "/directories?path=" +
                                q(h + "/x"))
        assert st == 200 and not os.path.exists(h + "/x"), (st, body)
        # A plain upload after all that is root's.
        st, _, body = upload(d, "", [({"path": t + "/rootfile"}, b"r")])
        assert st == 200, (st, body)
        assert os.stat(t + "/rootfile").st_uid == 0
    shutil.rmtree(t)


def test_supplementary_groups_of_the_account():
    pw, g = user_with_groups()
    other = [x for x in grp.getgrall() if x.gr_gid not in (
        g.gr_gid, pw.pw_gid, 0) and pw.pw_name not in x.gr_mem][0]
    t = tmpdir()
    for name, gid in (("ours", g.gr_gid), ("theirs", other.gr_gid)):
        with open(t + "/" + name, "w") as f:
            f.write(name)
        os.chown(t + "/" + name, 0, gid)
        os.chmod(t + "/" + name, 0o640)
    with Execd() as d:
        # The account's own uid, its primary gid: the supplementary group
        # g comes from the group database.
        p = pre(pw.pw_uid, pw.pw_gid)
        st, _, body = d.request("GET", p + "/files/download?path=" +
                                q(t + "/ours"))
        assert st == 200 and body == b"ours", (st, body)
        st, _, body = d.request("GET", p + "/files/download?path=" +
                                q(t + "/theirs"))
        expect_error(st, body, 403, "PERMISSION_DENIED")
        # A uid without an account gets no groups, whatever its gid.
        st, _, body = d.request("GET", pre() + "/files/download?path=" +
                                q(t + "/ours"))
        expect_error(st, body, 403, "PERMISSION_DENIED")
        # The gid of the path is the group, as a primary group.
        st, _, body = d.request("GET", pre(UID, other.gr_gid) +
                                "/files/download?path=" + q(t + "/theirs"))
        assert st == 200 and body == b"theirs", (st, body)
    shutil.rmtree(t)


def test_uid_without_an_account():
    no_account(UID)
    t = tmpdir()
    os.chmod(t, 0o777)
    with Execd() as d:
        # "~" is "/" for it, as upstream.
        st, info = d.get_json(pre() + "/files/info?path=~")
        assert st == 200 and info["~"]["path"] == "/", info
        st, _, body = upload(d, pre(), [({"path": t + "/f"}, b"x")])
        assert st == 200, (st, body)
        s = os.stat(t + "/f")
        assert (s.st_uid, s.st_gid) == (UID, GID), s
        # The largest id there is, too.
        st, info = d.get_json(pre(4294967294, 4294967294) +
                              "/files/info?path=" + q(t + "/f"))
        assert st == 200, info
    shutil.rmtree(t)


def test_bad_ids_are_400():
    with Execd() as d:
        for uid, gid, what, why in (
                ("abc", "0", "uid", "must be a decimal integer"),
                ("-1", "0", "uid", "must be a decimal integer"),
                ("+1", "0", "uid", "must be a decimal integer"),
                ("0x10", "0", "uid", "must be a decimal integer"),
                ("1.0", "0", "uid", "must be a decimal integer"),
                ("4294967295", "0", "uid", "must be between 0 and "
                 "4294967294"),
                ("99999999999999999999", "0", "uid", "must be between 0 "
                 "and 4294967294"),
                ("0", "nobody", "gid", "must be a decimal integer"),
                ("0", "4294967295", "gid", "must be between 0 and "
                 "4294967294")):
            st, _, body = d.request("GET", pre(uid, gid) +
                                    "/files/info?path=/")
            obj = expect_error(st, body, 400, "INVALID_REQUEST_BODY")
            assert obj["message"] == "invalid %s: identity %s" % (
                what, why), obj
        # The other routes refuse the same way, before their own checks.
        st, _, body = d.request("POST", pre("x", 0) + "/files/upload",
                                body=b"", headers={"Content-Type":
                                                   "text/plain"})
        obj = expect_error(st, body, 400, "INVALID_REQUEST_BODY")
        assert obj["message"].startswith("invalid uid"), obj
    with Execd("--access-token", "tok") as d:
        # The token first.
        st, _, body = d.request("GET", pre("abc", 0) + "/files/info?path=/")
        assert st == 401, (st, body)
        st, _, body = d.request("GET", pre() + "/files/info?path=/",
                                headers={"X-EXECD-ACCESS-TOKEN": "tok"})
        assert st == 200, (st, body)


def test_root_identity_is_the_plain_routes():
    t = tmpdir()
    with open(t + "/secret", "w") as f:
        f.write("root only")
    os.chmod(t + "/secret", 0o600)
    with Execd() as d:
        for path in ("/files/info?path=" + q(t + "/secret"),
                     "/files/download?path=" + q(t + "/secret"),
                     "/directories/list?path=" + q(t),
                     "/files/search?path=" + q(t) + "&pattern=*"):
            a = d.request("GET", path)
            b = d.request("GET", pre(0, 0) + path)
            assert a[0] == b[0] == 200 and a[2] == b[2], (path, a, b)
        st, _, body = upload(d, pre(0, 0), [({"path": t + "/up"}, b"u")])
        assert st == 200, (st, body)
        s = os.stat(t + "/up")
        assert (s.st_uid, s.st_gid) == (0, 0), s
    shutil.rmtree(t)


def test_execd_not_root_cannot_act_as_another_user():
    """Without CAP_SETUID the prefix answers 503, never as execd itself;
    its own identity (with its account's groups) needs no privilege."""
    t = tmpdir()
    with open(t + "/f", "w") as f:
        f.write("x")
    env = {"HOME": "/tmp", "TMPDIR": "/tmp"}
    with Execd(wrapper="exec setpriv --reuid=65534 --regid=65534 "
               "--init-groups", env=env) as d:
        st, _, body = d.request("GET", pre(0, 0) + "/files/download?path=" +
                                q(t + "/f"))
        expect_error(st, body, 503, "FILESYSTEM_IDENTITY_UNAVAILABLE")
        st, _, body = upload(d, pre(0, 0), [({"path": "/tmp/x"}, b"x")])
        expect_error(st, body, 503, "FILESYSTEM_IDENTITY_UNAVAILABLE")
        st, _, body = d.request("GET", pre(65534, 65534) +
                                "/files/download?path=" + q(t + "/f"))
        assert st == 200 and body == b"x", (st, body)
    shutil.rmtree(t)
