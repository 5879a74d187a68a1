"""Workspace checkpoints: POST /files/checkpoint, POST /files/restore,
DELETE /files/checkpoint/{id}, GET /files/checkpoint."""
import json
import os
import shutil
import stat
import tempfile
import threading
import time

from lib import Execd, events, expect_error, wait_for

OTHER_UID, OTHER_GID = 4321, 5432


def tmpdir():
    return tempfile.mkdtemp(prefix="execd-ckpt-")


def walk(root):
    """Every entry under root (and root): type, mode, owner, content."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in [""] + dirs + files:
            if name == "" and dirpath != root:
                continue
            p = os.path.join(dirpath, name) if name else dirpath
            st = os.lstat(p)
            rel = os.path.relpath(p, root)
            if stat.S_ISLNK(st.st_mode):
                what = os.readlink(p)
            elif stat.S_ISREG(st.st_mode):
                with open(p, "rb") as f:
                    what = f.read()
            else:
                what = None
            out[rel] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode),
                        st.st_uid, st.st_gid, what)
    return out


def write(path, data, mode=0o644):
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)


def build(root):
    os.makedirs(os.path.join(root, "a/b/c"))
    write(os.path.join(root, "top.txt"), b"top\n")
    write(os.path.join(root, "a/run.sh"), b"#!/bin/sh\necho hi\n", 0o755)
    write(os.path.join(root, "a/b/secret"), b"s3cret", 0o600)
    write(os.path.join(root, "a/b/c/deep.bin"), bytes(range(256)) * 300)
    write(os.path.join(root, "a/b/c/edit.txt"), b"0123456789" * 10)
    write(os.path.join(root, "gone.txt"), b"to be deleted\n")
    write(os.path.join(root, "theirs"), b"owned by another user\n", 0o640)
    os.chown(os.path.join(root, "theirs"), OTHER_UID, OTHER_GID)
    os.mkdir(os.path.join(root, "private"), 0o750)
    os.chown(os.path.join(root, "private"), OTHER_UID, OTHER_GID)
    write(os.path.join(root, "private/note"), b"note\n")
    os.symlink("a/b/c/deep.bin", os.path.join(root, "link"))
    os.symlink("nowhere/at/all", os.path.join(root, "dangling"))
    os.symlink("/etc", os.path.join(root, "a/etc"))
    os.mkfifo(os.path.join(root, "a/fifo"), 0o620)


def mutate(root):
    """A file created, one deleted, one modified in place, and more."""
    write(os.path.join(root, "new.txt"), b"created after\n")
    os.makedirs(os.path.join(root, "newdir/x"))
    write(os.path.join(root, "newdir/x/y"), b"y")
    os.unlink(os.path.join(root, "gone.txt"))
    # In place: same inode, same size.
    fd = os.open(os.path.join(root, "a/b/c/edit.txt"), os.O_WRONLY)
    os.write(fd, b"XXXXXXXXXX")
    os.close(fd)
    with open(os.path.join(root, "top.txt"), "ab") as f:
        f.write(b"appended\n")
    os.chmod(os.path.join(root, "a/run.sh"), 0o600)
    os.chown(os.path.join(root, "a/b/secret"), OTHER_UID, OTHER_GID)
    os.chmod(os.path.join(root, "private"), 0o777)
    os.chown(os.path.join(root, "private"), 0, 0)
    os.unlink(os.path.join(root, "link"))
    os.symlink("top.txt", os.path.join(root, "link"))
    shutil.rmtree(os.path.join(root, "a/b/c"))
    os.makedirs(os.path.join(root, "a/b/c"))
    os.unlink(os.path.join(root, "a/fifo"))
    write(os.path.join(root, "a/fifo"), b"now a file")
    # A directory where a file was, and a file where a directory was.
    os.unlink(os.path.join(root, "theirs"))
    os.makedirs(os.path.join(root, "theirs/inside"))
    shutil.rmtree(os.path.join(root, "private"))
    write(os.path.join(root, "private"), b"not a directory")


def take(d, path, **kw):
    st, h, body = d.request("POST", "/files/checkpoint", {"path": path}, **kw)
    assert st == 201, (st, body)
    return json.loads(body)


def restore(d, cid, **kw):
    st, h, body = d.request("POST", "/files/restore", {"id": cid}, **kw)
    assert st == 200, (st, body)
    return json.loads(body)


def test_restore_gives_back_exactly_the_recorded_tree():
    root = tmpdir()
    try:
        build(root)
        want = walk(root)
        with Execd() as d:
            ck = take(d, root)
            assert len(ck["id"]) == 16 and ck["path"] == root, ck
            files = sum(1 for k, v in want.items()
                        if k != "." and not stat.S_ISDIR(v[0]))
            dirs = sum(1 for k, v in want.items()
                       if k != "." and stat.S_ISDIR(v[0]))
            assert ck["files"] == files and ck["dirs"] == dirs, (ck, want)
            assert ck["bytes"] == sum(len(v[4]) for v in want.values()
                                      if stat.S_ISREG(v[0])), ck
            mutate(root)
            assert walk(root) != want
            r = restore(d, ck["id"])
            assert walk(root) == want
            assert r["id"] == ck["id"] and r["path"] == root, r
            assert r["removed"] >= 3 and r["written"] >= 6, r
            # Again, after nothing changed (past the ctime margin): the
            # same tree, and the untouched files are left alone.
            time.sleep(0.3)
            r2 = restore(d, ck["id"])
            assert walk(root) == want
            assert r2["removed"] == 0 and r2["written"] == 0, r2
            assert r2["unchanged"] == files, r2
            # And once more after another round of changes.
            mutate(root)
            restore(d, ck["id"])
            assert walk(root) == want
            # No temporaries left beside the files.
            assert not [p for p in walk(root) if ".execd-restore-" in p]
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_a_removed_root_comes_back_with_its_parents():
    top = tmpdir()
    root = os.path.join(top, "w", "x")
    try:
        os.makedirs(root)
        build(root)
        os.chmod(root, 0o751)
        want = walk(root)
        with Execd() as d:
            ck = take(d, root)
            shutil.rmtree(os.path.join(top, "w"))
            r = restore(d, ck["id"])
            assert walk(root) == want
            assert r["unchanged"] == 0, r
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_restore_while_a_background_command_writes_into_the_tree():
    root = tmpdir()
    try:
        build(root)
        want = walk(root)
        with Execd() as d:
            ck = take(d, root)
            script = ("i=0; while :; do i=$((i+1)); echo $i > %s/top.txt; "
                      "mkdir -p %s/junk/$((i%%7)); echo $i > "
                      "%s/junk/$((i%%7))/f$((i%%13)); rm -f %s/gone.txt; "
                      "done" % (root, root, root, root))
            st, h, body = d.request("POST", "/command",
                                    {"command": script, "background": True})
            assert st == 200, body
            cmd_id = [e for e in events(body) if e["type"] == "init"][0][
                "text"]
            assert wait_for(lambda: os.path.isdir(root + "/junk"), 20)
            for _ in range(5):
                restore(d, ck["id"])
            st, h, body = d.request("DELETE", "/command?id=" + cmd_id)
            assert st == 200, body

            def ended():
                s, b = d.get_json("/command/status/" + cmd_id)
                return b.get("running") is False
            assert wait_for(ended, 30)
            restore(d, ck["id"])
            assert walk(root) == want
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_a_run_that_starts_during_a_restore_waits_for_its_end():
    root = tmpdir()
    try:
        os.mkdir(root + "/many")
        for i in range(3000):
            write("%s/many/f%04d" % (root, i), b"x" * 4096)
        with Execd() as d:
            ck = take(d, root)
            shutil.rmtree(root + "/many")
            done = {}

            def rest():
                done["r"] = restore(d, ck["id"], timeout=120)
            t = threading.Thread(target=rest)
            t.start()
            time.sleep(0.05)
            st, h, body = d.request(
                "POST", "/command",
                {"command": "ls %s/many | wc -l" % root}, timeout=120)
            t.join(120)
            assert st == 200, body
            out = "".join(e.get("text", "") for e in events(body)
                          if e["type"] == "stdout")
            # Before the restore began (a loaded machine may delay it:
            # none), or after it ended (all): never a part of the tree.
            assert out.strip() in ("0", "3000"), out
            assert done["r"]["written"] == 3000, done
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_list_and_delete():
    root = tmpdir()
    try:
        build(root)
        with Execd() as d:
            a, b = take(d, root), take(d, root + "/a")
            assert a["id"] != b["id"]
            st, lst = d.get_json("/files/checkpoint")
            assert st == 200 and [c["id"] for c in lst] == [a["id"],
                                                           b["id"]], lst
            assert lst[1]["path"] == root + "/a", lst
            st, h, body = d.request("DELETE", "/files/checkpoint/" + a["id"])
            assert st == 204 and body == b"", (st, body)
            st, lst = d.get_json("/files/checkpoint")
            assert [c["id"] for c in lst] == [b["id"]], lst
            st, h, body = d.request("DELETE", "/files/checkpoint/" + a["id"])
            expect_error(st, body, 404, "CHECKPOINT_NOT_FOUND")
            st, h, body = d.request("POST", "/files/restore",
                                    {"id": a["id"]})
            expect_error(st, body, 404, "CHECKPOINT_NOT_FOUND")
            # The other one still restores.
            os.unlink(root + "/a/run.sh")
            restore(d, b["id"])
            assert os.path.exists(root + "/a/run.sh")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_bad_requests():
    root = tmpdir()
    try:
        write(root + "/file", b"x")
        os.symlink(root, root + "/selflink")
        with Execd() as d:
            for body, want, code in (
                    ({}, 400, None),
                    ({"path": ""}, 400, None),
                    ({"path": "relative/dir"}, 400, None),
                    ({"path": 7}, 400, None),
                    ({"path": root + "/file"}, 400, None),
                    ({"path": root + "/selflink"}, 400, None),
                    ({"path": root + "/missing"}, 404, "FILE_NOT_FOUND")):
                st, h, b = d.request("POST", "/files/checkpoint", body)
                expect_error(st, b, want, code)
            for body, want, code in (
                    ({}, 400, None),
                    ({"id": 12}, 400, None),
                    ({"id": "nope"}, 404, "CHECKPOINT_NOT_FOUND"),
                    ({"id": "0123456789abcdef"}, 404,
                     "CHECKPOINT_NOT_FOUND")):
                st, h, b = d.request("POST", "/files/restore", body)
                expect_error(st, b, want, code)
            st, h, b = d.request("DELETE", "/files/checkpoint/nope")
            expect_error(st, b, 404, "CHECKPOINT_NOT_FOUND")
            st, lst = d.get_json("/files/checkpoint")
            assert lst == [], lst
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_a_full_store_is_507_until_one_is_deleted():
    root = tmpdir()
    try:
        write(root + "/f", b"x")
        with Execd() as d:
            ids = [take(d, root)["id"] for _ in range(64)]
            st, h, b = d.request("POST", "/files/checkpoint", {"path": root})
            expect_error(st, b, 507, "CHECKPOINT_STORE_FULL")
            st, h, b = d.request("DELETE", "/files/checkpoint/" + ids[0])
            assert st == 204
            take(d, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_store_dir_option_and_idempotency_key():
    root, store = tmpdir(), tmpdir()
    try:
        build(root)
        # A pack an earlier run left goes; anything else is the
        # operator's and stays.
        write(store + "/0123456789abcdef", b"from an earlier run")
        write(store + "/notes.txt", b"the operator's")
        with Execd("--checkpoint-dir", store) as d:
            assert not os.path.exists(store + "/0123456789abcdef")
            assert os.path.exists(store + "/notes.txt")
            os.unlink(store + "/notes.txt")
            hdr = {"Idempotency-Key": "ck-1"}
            a = take(d, root, headers=hdr)
            b = take(d, root, headers=hdr)
            assert a == b, (a, b)
            assert os.listdir(store) == [a["id"]]
            st, lst = d.get_json("/files/checkpoint")
            assert len(lst) == 1, lst
            st, h, body = d.request("POST", "/files/checkpoint",
                                    {"path": root + "/a"}, headers=hdr)
            expect_error(st, body, 422, "IDEMPOTENCY_KEY_REUSED")
            st, h, body = d.request("DELETE", "/files/checkpoint/" + a["id"])
            assert st == 204
            assert os.listdir(store) == []
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(store, ignore_errors=True)


def test_two_daemons_on_one_machine_keep_their_own_stores():
    # The default store is the daemon's own: a second execd starting
    # (which empties its store) leaves the first one's checkpoints alone.
    root = tmpdir()
    try:
        build(root)
        want = walk(root)
        with Execd() as a:
            ck = take(a, root)
            mutate(root)
            with Execd() as b:
                st, _, body = b.request("GET", "/files/checkpoint")
                assert st == 200 and ck["id"] not in body.decode(), body
                restore(a, ck["id"])
                assert walk(root) == want
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_runs_of_every_front_end_wait_for_a_restore():
    """An MCP run_command and a Jupyter client's execute_request sent
    while a restore is seen half done wait for its end, as POST /command
    does: each sees the whole tree."""
    import test_mcp as mcp
    from test_jupyter import Client, start_kernel
    root = tmpdir()
    n = 3000
    try:
        os.mkdir(root + "/many")
        for i in range(n):
            write("%s/many/f%04d" % (root, i), b"x" * 4096)
        with Execd("--access-token", mcp.TOKEN) as d:
            osb = {"X-EXECD-ACCESS-TOKEN": mcp.TOKEN}
            ck = take(d, root, headers=osb)
            sid, _ = mcp.initialize(d)
            kid = start_kernel(d, headers=mcp.BEARER)["id"]
            jc = Client(d, kid, headers=["Authorization: Bearer " +
                                         mcp.TOKEN])
            count = "ls %s/many | wc -l" % root
            for attempt in range(8):
                shutil.rmtree(root + "/many")
                done = {}

                def rest():
                    done["r"] = restore(d, ck["id"], timeout=120,
                                        headers=osb)
                t = threading.Thread(target=rest)
                t.start()
                half = False
                while t.is_alive() and not half:
                    try:
                        half = 0 < len(os.listdir(root + "/many")) < n
                    except FileNotFoundError:
                        pass
                if not half:        # finished before it was seen: again
                    t.join(120)
                    continue
                mid = jc.execute("import subprocess\nprint(subprocess."
                                 "run(%r, shell=True, capture_output=True,"
                                 " text=True).stdout.strip())" % count)
                st, _, r = mcp.post(d, {
                    "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                    "params": {"name": "run_command",
                               "arguments": {"command": count}}}, sid)
                t.join(120)
                assert st == 200, r
                assert done["r"]["written"] == n, done
                assert r["result"]["structuredContent"]["stdout"].strip() \
                    == str(n), r
                got = jc.settle(mid)
                out = "".join(m["content"].get("text", "") for m in got
                              if m["msg_type"] == "stream")
                assert out.strip() == str(n), out
                break
            else:
                raise AssertionError("no restore was seen half done")
            jc.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
