"""Isolated sessions' diff and commit (GET .../diff, POST .../commit) and
the upper-size cap (--isolation-upper-max).  As root: execd makes the
namespaces and overlays itself."""
import json
import os
import urllib.parse

from lib import expect_error
from test_isolated import ISO, Iso


def diff(t, sid, path=None):
    q = "" if path is None else "?path=" + urllib.parse.quote(path)
    st, obj = t.d.get_json(ISO + "/session/%s/diff%s" % (sid, q))
    assert st == 200, obj
    return obj


def changes(t, sid):
    obj = diff(t, sid)
    return {c["path"]: c for ov in obj["overlays"] for c in ov["changes"]}


def commit(t, sid, paths=None, want=200):
    body = {"paths": paths} if paths is not None else None
    st, h, data = t.d.request("POST", ISO + "/session/%s/commit" % sid,
                              body=body)
    assert st == want, (st, data)
    return json.loads(data)


def prepare(ws):
    """A workspace with something of every kind to change."""
    def w(rel, text, mode=0o644):
        p = os.path.join(ws, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)
        os.chmod(p, mode)
    w("mod.txt", "old\n")
    w("gone.txt", "bye\n")
    w("chmod.sh", "echo hi\n", 0o644)
    w("olddir/a.txt", "a\n")
    w("olddir/sub/b.txt", "b\n")
    w("opaque/x.txt", "x\n")
    w("opaque/y.txt", "y\n")
    w("keep/k.txt", "k\n")


SCRIPT = """
set -e
echo new > mod.txt
rm gone.txt
chmod 755 chmod.sh
rm -rf olddir
mkdir -p newdir/deep && echo n > newdir/deep/n.txt
ln -s mod.txt link
rm -rf opaque && mkdir opaque && echo z > opaque/z.txt
echo added > added.txt
"""


def test_diff_lists_every_kind_of_change():
    with Iso() as t:
        prepare(t.ws)
        sid = t.create()
        assert changes(t, sid) == {}
        out, evs = t.run(sid, SCRIPT)
        assert evs[-1]["type"] == "execution_complete", evs
        ch = changes(t, sid)
        p = lambda rel: os.path.join(t.ws, rel)  # noqa: E731
        assert ch[p("mod.txt")]["change"] == "modified", ch
        assert ch[p("mod.txt")]["size"] == 4, ch
        assert ch[p("mod.txt")]["old_size"] == 4, ch
        assert ch[p("gone.txt")]["change"] == "deleted", ch
        assert ch[p("gone.txt")]["type"] == "file", ch
        assert ch[p("chmod.sh")]["change"] == "modified", ch
        assert ch[p("chmod.sh")]["mode"] == 755, ch
        assert ch[p("chmod.sh")]["old_mode"] == 644, ch
        assert ch[p("olddir")]["change"] == "deleted", ch
        assert ch[p("olddir")]["type"] == "dir", ch
        # Deleted as a whole: nothing listed under it.
        assert not any(k.startswith(p("olddir/")) for k in ch), ch
        assert ch[p("newdir")]["change"] == "added", ch
        assert ch[p("newdir")]["type"] == "dir", ch
        assert ch[p("newdir/deep/n.txt")]["change"] == "added", ch
        assert ch[p("link")] == dict(ch[p("link")], change="added",
                                     type="symlink", target="mod.txt"), ch
        # rm -rf && mkdir: an opaque directory, the lower's entries gone.
        assert ch[p("opaque")]["opaque"] is True, ch
        assert ch[p("opaque/x.txt")]["change"] == "deleted", ch
        assert ch[p("opaque/y.txt")]["change"] == "deleted", ch
        assert ch[p("opaque/z.txt")]["change"] == "added", ch
        assert ch[p("added.txt")]["change"] == "added", ch
        # Untouched entries are not listed, nor parents of changes only.
        for rel in ("keep", "keep/k.txt", "newdir/deep/n.txt/x"):
            assert p(rel) not in ch, ch
        # One path, with contents.
        one = diff(t, sid, p("mod.txt"))
        assert one["old_content"] == "old\n", one
        assert one["new_content"] == "new\n", one
        assert one["text"] is True, one
        one = diff(t, sid, p("olddir/sub/b.txt"))
        assert one["change"] == "deleted", one
        assert one["type"] == "file" and one["old_content"] == "b\n", one
        # Under a deleted directory, but never in the real tree either.
        one = diff(t, sid, p("olddir/sub/never"))
        assert one == {"path": p("olddir/sub/never"), "change": "none"}, one
        one = diff(t, sid, p("keep/k.txt"))
        assert one == {"path": p("keep/k.txt"), "change": "none"}, one
        # Nothing is visible outside yet.
        with open(p("mod.txt")) as f:
            assert f.read() == "old\n"


def test_commit_makes_changes_visible_outside():
    with Iso() as t:
        prepare(t.ws)
        sid = t.create()
        t.run(sid, SCRIPT)
        res = commit(t, sid)
        assert res["conflicts"] == [] and res["failed"] == [], res
        p = lambda rel: os.path.join(t.ws, rel)  # noqa: E731
        assert p("mod.txt") in res["applied"], res
        with open(p("mod.txt")) as f:
            assert f.read() == "new\n"
        assert not os.path.exists(p("gone.txt"))
        assert os.stat(p("chmod.sh")).st_mode & 0o777 == 0o755
        assert not os.path.exists(p("olddir"))
        with open(p("newdir/deep/n.txt")) as f:
            assert f.read() == "n\n"
        assert os.readlink(p("link")) == "mod.txt"
        assert sorted(os.listdir(p("opaque"))) == ["z.txt"]
        with open(p("added.txt")) as f:
            assert f.read() == "added\n"
        with open(p("keep/k.txt")) as f:
            assert f.read() == "k\n"
        # No temporary left beside the files.
        assert not [n for n in os.listdir(t.ws) if n.startswith(".execd")]
        # The session goes on; what was committed is no longer a change.
        left = changes(t, sid)
        assert left == {}, left
        out, evs = t.run(sid, "cat mod.txt; echo again > mod.txt")
        assert out == ["new"], evs
        ch = changes(t, sid)
        assert list(ch) == [p("mod.txt")], ch
        res = commit(t, sid)
        assert res["applied"] == [p("mod.txt")], res
        assert res["conflicts"] == [], res
        with open(p("mod.txt")) as f:
            assert f.read() == "again\n"


def test_conflict_reported_not_overwritten():
    with Iso() as t:
        prepare(t.ws)
        sid = t.create()
        t.run(sid, "echo mine > mod.txt; echo mine > keep/k.txt; "
              "rm -rf olddir; echo fresh > fresh.txt")
        # Meanwhile, outside the session:
        with open(os.path.join(t.ws, "mod.txt"), "w") as f:
            f.write("theirs\n")
        with open(os.path.join(t.ws, "olddir/sub/b.txt"), "w") as f:
            f.write("theirs too\n")
        with open(os.path.join(t.ws, "fresh.txt"), "w") as f:
            f.write("theirs as well\n")
        res = commit(t, sid)
        p = lambda rel: os.path.join(t.ws, rel)  # noqa: E731
        conflicted = sorted(c["path"] for c in res["conflicts"])
        assert conflicted == [p("fresh.txt"), p("mod.txt"), p("olddir")], res
        assert all("outside" in c["reason"] for c in res["conflicts"]), res
        assert res["applied"] == [p("keep/k.txt")], res
        for rel, text in (("mod.txt", "theirs\n"),
                          ("olddir/sub/b.txt", "theirs too\n"),
                          ("fresh.txt", "theirs as well\n"),
                          ("keep/k.txt", "mine\n")):
            with open(p(rel)) as f:
                assert f.read() == text, rel


def test_commit_of_a_subset():
    with Iso() as t:
        prepare(t.ws)
        sid = t.create()
        t.run(sid, "echo new > mod.txt; mkdir -p a/b && echo 1 > a/b/one; "
              "echo 2 > two; rm gone.txt")
        p = lambda rel: os.path.join(t.ws, rel)  # noqa: E731
        res = commit(t, sid, [p("a/b/one"), p("gone.txt")])
        assert sorted(res["applied"]) == [p("a/b/one"), p("gone.txt")], res
        with open(p("a/b/one")) as f:
            assert f.read() == "1\n"
        assert not os.path.exists(p("gone.txt"))
        assert not os.path.exists(p("two"))
        with open(p("mod.txt")) as f:
            assert f.read() == "old\n"
        left = changes(t, sid)
        assert p("two") in left and p("mod.txt") in left, left
        assert p("a/b/one") not in left and p("gone.txt") not in left, left


def test_persist_false_upper_read_from_the_shells_namespace():
    with Iso() as t:
        prepare(t.ws)
        sid = t.create({"overlays": [{"path": t.ws, "mode": "overlay",
                                      "persist": False}]})
        t.run(sid, "echo tmp > mod.txt; echo t > t.txt")
        ch = changes(t, sid)
        assert sorted(ch) == [os.path.join(t.ws, "mod.txt"),
                              os.path.join(t.ws, "t.txt")], ch
        res = commit(t, sid)
        assert len(res["applied"]) == 2 and res["conflicts"] == [], res
        with open(os.path.join(t.ws, "t.txt")) as f:
            assert f.read() == "t\n"


def test_upper_size_cap_enospc_inside():
    with Iso("--isolation-upper-max", "1MiB") as t:
        for persist in (True, False):
            sid = t.create({"overlays": [{"path": t.ws, "mode": "overlay",
                                          "persist": persist}]})
            out, evs = t.run(sid, "head -c 4M /dev/zero > big 2>/dev/null;"
                             " echo rc=$?; head -c 100K /dev/zero > small "
                             "&& echo small-ok")
            assert out[0] != "rc=0", (persist, evs)
            st, caps = t.d.get_json("/ping")
            assert st == 200
            # Within the cap, the session still writes.
            t.run(sid, "rm -f big")
            out, evs = t.run(sid, "head -c 100K /dev/zero > small2 && "
                             "echo ok")
            assert out == ["ok"], (persist, evs)
            out, evs = t.run(sid, "dd if=/dev/zero of=big2 bs=64K count=64 "
                             "2>&1 | grep -c 'No space left'")
            assert out == ["1"], (persist, evs)
            st, h, data = t.d.request("DELETE", ISO + "/session/" + sid)
            assert st == 200, data
        assert not os.path.exists(os.path.join(t.ws, "big"))


def test_bad_input():
    with Iso() as t:
        nope = "0" * 8 + "-0000-4000-8000-" + "0" * 12
        st, h, data = t.d.request("GET", ISO + "/session/%s/diff" % nope)
        expect_error(st, data, 404, "SESSION_NOT_FOUND")
        st, h, data = t.d.request("POST", ISO + "/session/%s/commit" % nope)
        expect_error(st, data, 404, "SESSION_NOT_FOUND")
        sid = t.create()
        base = ISO + "/session/%s/" % sid
        for q in ("/etc/passwd", t.ws + "/../etc", "rel", t.ws + "/./x",
                  t.ws + "x", ""):
            st, h, data = t.d.request(
                "GET", base + "diff?path=" + urllib.parse.quote(q))
            expect_error(st, data, 400, "INVALID_REQUEST_BODY")
        for body in ({"paths": "x"}, {"paths": [1]}, {"paths": []},
                     {"paths": ["/etc"]}, {"paths": [t.ws + "/../x"]}, [1]):
            st, h, data = t.d.request("POST", base + "commit", body=body)
            expect_error(st, data, 400, "INVALID_REQUEST_BODY")
        st, h, data = t.d.request("POST", base + "commit", body="{",
                                  headers={"Content-Type":
                                           "application/json"})
        expect_error(st, data, 400, "INVALID_REQUEST_BODY")
        # Nothing changed, nothing committed: an empty answer.
        assert commit(t, sid) == {"applied": [], "conflicts": [],
                                  "failed": [], "stripped": []}


def test_commit_never_writes_through_a_link_out_of_the_tree():
    with Iso() as t:
        outside = os.path.join(t.base, "outside")
        os.mkdir(outside)
        sid = t.create()
        t.run(sid, "ln -s %s esc" % outside)
        res = commit(t, sid)
        assert res["applied"] == [os.path.join(t.ws, "esc")], res
        assert os.readlink(os.path.join(t.ws, "esc")) == outside
        # The link made real, the session puts a directory in its place
        # and commits a file under it alone: not through the real link.
        out, evs = t.run(sid, "rm esc && mkdir esc && echo x > esc/f "
                         "&& echo ok")
        assert out == ["ok"], evs
        f = os.path.join(t.ws, "esc", "f")
        res = commit(t, sid, [f])
        assert res["applied"] == [], res
        assert [x["path"] for x in res["failed"] + res["conflicts"]] == [f]
        assert os.listdir(outside) == []
        # The whole change (the link replaced by a directory) is fine.
        res = commit(t, sid)
        assert res["conflicts"] == [] and res["failed"] == [], res
        assert os.path.isdir(os.path.join(t.ws, "esc")) and \
            not os.path.islink(os.path.join(t.ws, "esc"))
        with open(f) as fh:
            assert fh.read() == "x\n"
        assert os.listdir(outside) == []


CAP_XATTR = "security.capability"


def test_commit_strips_setuid_setgid_and_file_capabilities():
    """A root session can make setuid, setgid and capable files in its
    upper; a commit writes them into the real workspace without those
    bits or the capability, and says so."""
    with Iso() as t:
        ws = t.ws
        p = lambda rel: os.path.join(ws, rel)  # noqa: E731
        sid = t.create()
        # A file capability as setcap writes it (revision 2, effective,
        # cap_net_raw permitted).
        cap = "\\x01\\x00\\x00\\x02\\x00\\x20\\x00\\x00" + "\\x00" * 12
        out, evs = t.run(sid, (
            "cp /bin/true suid && chmod 4755 suid; "
            "cp /bin/true sgid && chmod 2750 sgid; "
            "cp /bin/true both && chmod 6711 both; "
            "echo plain > plain && chmod 755 plain; "
            "mkdir gdir && chmod 2775 gdir; "
            "cp /bin/true capped && /usr/bin/python3 -c \"import os; "
            "os.setxattr('capped', '%s', b'%s')\" && echo capped; "
            "stat -c '%%a %%n' suid sgid both gdir") % (CAP_XATTR, cap))
        assert out == ["capped", "4755 suid", "2750 sgid", "6711 both",
                       "2775 gdir"], evs
        res = commit(t, sid)
        assert res["conflicts"] == [] and res["failed"] == [], res
        assert sorted(res["applied"]) == sorted(
            p(n) for n in ("suid", "sgid", "both", "plain", "gdir",
                           "capped")), res
        stripped = {e["path"]: e for e in res["stripped"]}
        assert stripped == {
            p("suid"): {"path": p("suid"), "mode": 4755,
                        "committed_mode": 755},
            p("sgid"): {"path": p("sgid"), "mode": 2750,
                        "committed_mode": 750},
            p("both"): {"path": p("both"), "mode": 6711,
                        "committed_mode": 711}}, res
        for name, mode in (("suid", 0o755), ("sgid", 0o750),
                           ("both", 0o711), ("plain", 0o755),
                           ("capped", 0o755)):
            st = os.stat(p(name))
            assert st.st_mode & 0o7777 == mode, (name, oct(st.st_mode))
            assert st.st_uid == 0, name
        # A directory's setgid (its files take its group) is no privilege.
        assert os.stat(p("gdir")).st_mode & 0o7777 == 0o2775
        try:
            os.getxattr(p("capped"), CAP_XATTR)
            raise AssertionError("file capability committed")
        except OSError:
            pass
        # The session's own copy keeps what it made.
        out, evs = t.run(sid, "stat -c '%a' suid")
        assert out == ["4755"], evs
