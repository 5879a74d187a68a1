"""The filesystem API over HTTP: every endpoint, and the edges of each.

Each test works in a fresh temporary directory under $TMPDIR (or /tmp)
and removes it.  Uploads are built by hand as the SDKs build them
(multipart with a metadata part per file), sent whole, chunked, cut off
midway or malformed; downloads are compared byte for byte.
"""
import grp
import hashlib
import json
import os
import pwd
import shutil
import socket
import stat
import tempfile
import time
import urllib.parse

from lib import (Execd, answered_amid, expect_error, pings_during,
                 wait_for)


def tmpdir():
    return tempfile.mkdtemp(prefix="execd-files-")


def q(path):
    return urllib.parse.quote(path, safe="")


def multipart(pairs, boundary="----formdata-test-0123456789", extra=b""):
    """pairs: [(metadata dict, bytes)] in the SDKs' layout."""
    out = b""
    for meta, data in pairs:
        if meta is not None:
            out += (b"--%s\r\nContent-Disposition: form-data; "
                    b"name=\"metadata\"; filename=\"metadata\"\r\n"
                    b"Content-Type: application/json\r\n\r\n%s\r\n" % (
                        boundary.encode(), json.dumps(meta).encode()))
        if data is not None:
            out += (b"--%s\r\nContent-Disposition: form-data; name=\"file\";"
                    b" filename=\"blob\"\r\nContent-Type: "
                    b"application/octet-stream\r\n\r\n" % boundary.encode()
                    + data + b"\r\n")
    return out + extra + b"--%s--\r\n" % boundary.encode()


def upload(d, pairs, boundary="----formdata-test-0123456789", conn=None):
    return d.request("POST", "/files/upload", body=multipart(pairs, boundary),
                     headers={"Content-Type": "multipart/form-data; "
                              "boundary=" + boundary}, conn=conn)


def chunked(body, size=1000):
    out = b""
    for i in range(0, len(body), size):
        part = body[i:i + size]
        out += b"%x\r\n%s\r\n" % (len(part), part)
    return out + b"0\r\n\r\n"


def debris(dirpath):
    return [n for n in os.listdir(dirpath) if ".execd-" in n]


def test_upload_then_download_round_trip():
    t = tmpdir()
    with Execd() as d:
        data = bytes(range(256)) * 1000
        st, _, body = upload(d, [({"path": t + "/sub/a.bin"}, data)])
        assert st == 200 and body == b"", (st, body)
        with open(t + "/sub/a.bin", "rb") as f:
            assert f.read() == data
        st, h, body = d.request("GET", "/files/download?path=" +
                                q(t + "/sub/a.bin"))
        assert st == 200 and body == data
        assert h["content-type"] == "application/octet-stream", h
        assert h["content-disposition"] == 'attachment; filename="a.bin"', h
        assert h["accept-ranges"] == "bytes" and "last-modified" in h, h
        assert h["content-length"] == str(len(data)), h
        assert debris(t + "/sub") == []
    shutil.rmtree(t)


def test_upload_many_pairs_in_one_request_with_modes_and_owner():
    t = tmpdir()
    with Execd() as d:
        pairs = [({"path": "%s/f%d.txt" % (t, i), "owner": None,
                   "group": None, "mode": 755 if i % 2 else 600},
                  b"file %d\n" % i) for i in range(20)]
        pairs.append(({"path": t + "/owned", "owner": "nobody",
                       "group": "nogroup", "mode": 640}, b"x"))
        st, _, body = upload(d, pairs)
        assert st == 200, body
        for i in range(20):
            p = "%s/f%d.txt" % (t, i)
            assert open(p, "rb").read() == b"file %d\n" % i
            want = 0o755 if i % 2 else 0o600
            assert stat.S_IMODE(os.stat(p).st_mode) == want
        s = os.stat(t + "/owned")
        assert pwd.getpwuid(s.st_uid).pw_name == "nobody"
        assert grp.getgrgid(s.st_gid).gr_name == "nogroup"
        assert stat.S_IMODE(s.st_mode) == 0o640
    shutil.rmtree(t)


def test_upload_keeps_an_existing_files_mode_and_new_files_get_0755():
    t = tmpdir()
    with open(t + "/old", "w") as f:
        f.write("old")
    os.chmod(t + "/old", 0o640)
    old_umask = os.umask(0o022)
    try:
        with Execd() as d:
            st, _, _ = upload(d, [({"path": t + "/old"}, b"new"),
                                  ({"path": t + "/fresh"}, b"fresh")])
            assert st == 200
    finally:
        os.umask(old_umask)
    assert open(t + "/old").read() == "new"
    assert stat.S_IMODE(os.stat(t + "/old").st_mode) == 0o640
    assert stat.S_IMODE(os.stat(t + "/fresh").st_mode) == 0o755
    shutil.rmtree(t)


def test_upload_with_a_chunked_body_as_the_js_sdk_streams_it():
    t = tmpdir()
    with Execd() as d:
        b = "opensandbox_0123abcd_1700000000000"
        data = os.urandom(300000)
        body = multipart([({"path": t + "/c.bin", "mode": 644}, data)], b)
        resp = d.raw(b"POST /files/upload HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Type: multipart/form-data; boundary=" +
                     b.encode() + b"\r\nTransfer-Encoding: chunked\r\n"
                     b"Connection: close\r\n\r\n" + chunked(body, 4093),
                     timeout=10)
        assert resp.startswith(b"HTTP/1.1 200"), resp[:200]
        assert open(t + "/c.bin", "rb").read() == data
    shutil.rmtree(t)


def test_upload_cut_off_midway_leaves_the_old_file_and_no_debris():
    t = tmpdir()
    with open(t + "/keep", "wb") as f:
        f.write(b"the old content")
    with Execd() as d:
        body = multipart([({"path": t + "/keep"}, b"N" * 1000000)])
        s = socket.create_connection((d.host, d.port), 5)
        s.sendall(b"POST /files/upload HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Type: multipart/form-data; boundary="
                  b"----formdata-test-0123456789\r\nContent-Length: %d\r\n"
                  b"\r\n" % len(body) + body[:len(body) // 2])
        # The temporary file exists while the body arrives...
        assert wait_for(lambda: debris(t) != [], 5), os.listdir(t)
        s.close()
        # ...and goes when the client does.
        assert wait_for(lambda: debris(t) == [], 5), os.listdir(t)
        assert open(t + "/keep", "rb").read() == b"the old content"
        assert d.request("GET", "/ping")[0] == 200
    shutil.rmtree(t)


def test_upload_errors_are_400_with_the_upstream_codes_and_write_nothing():
    t = tmpdir()
    with Execd() as d:
        hdr = {"Content-Type": "multipart/form-data; boundary=XyZ"}
        st, _, body = d.request("POST", "/files/upload", body=b"{}",
                                headers={"Content-Type": "application/json"})
        expect_error(st, body, 400, "INVALID_FILE")
        st, _, body = upload(d, [(None, b"data")])
        expect_error(st, body, 400, "INVALID_FILE_METADATA")
        st, _, body = upload(d, [({"path": t + "/x"}, None)])
        expect_error(st, body, 400, "INVALID_FILE_CONTENT")
        st, _, body = upload(d, [({"path": t + "/a"}, b"a"),
                                 ({"path": t + "/b"}, None)])
        obj = expect_error(st, body, 400, "INVALID_FILE")
        assert "mismatch: 2 vs 1" in obj["message"], obj
        st, _, body = upload(d, [({"path": ""}, b"a")])
        expect_error(st, body, 400, "INVALID_FILE_METADATA")
        st, _, body = upload(d, [({"path": "relative/x"}, b"a")])
        expect_error(st, body, 400, "INVALID_FILE_METADATA")
        st, _, body = upload(d, [({"path": t + "/m", "mode": 789}, b"a")])
        expect_error(st, body, 400, "INVALID_FILE_METADATA")
        st, _, body = upload(d, [({"path": t + "/o", "owner": "no-such-u"},
                                  b"a")])
        expect_error(st, body, 400, "INVALID_FILE_METADATA")
        bad = multipart([({"path": t + "/j"}, b"a")]).replace(
            b'{"path"', b'{path"')
        st, _, body = d.request("POST", "/files/upload", body=bad,
                                headers={"Content-Type": "multipart/"
                                         "form-data; boundary=----formdata-"
                                         "test-0123456789"})
        expect_error(st, body, 400, "INVALID_FILE_METADATA")
        # Malformed multipart: no closing delimiter, garbage, bad headers.
        whole = multipart([({"path": t + "/z"}, b"zzz")], "XyZ")
        st, _, body = d.request("POST", "/files/upload",
                                body=whole[:-9], headers=hdr)
        expect_error(st, body, 400, "INVALID_FILE")
        st, _, body = d.request("POST", "/files/upload",
                                body=b"not multipart at all", headers=hdr)
        expect_error(st, body, 400, "INVALID_FILE")
        st, _, body = d.request("POST", "/files/upload", body=b"--XyZ\r\n"
                                b"X" * 70000 + b"\r\n\r\n", headers=hdr)
        expect_error(st, body, 400, "INVALID_FILE")
        # A mistake anywhere writes nothing, not even the good files.
        assert os.listdir(t) == [], os.listdir(t)
    shutil.rmtree(t)


def test_upload_cut_off_before_execd_read_it_all():
    # The client sends half a body and closes at once, so execd reads the
    # rest and the end of the stream from a socket that says nothing new
    # when it is done.  The upload must still end within a second or so.
    t = tmpdir()
    with Execd() as d:
        for i in range(4):
            body = multipart([({"path": "%s/f%d" % (t, i)},
                               b"N" * 2000000)])
            s = socket.create_connection((d.host, d.port), 5)
            s.sendall(b"POST /files/upload HTTP/1.1\r\nHost: x\r\n"
                      b"Content-Type: multipart/form-data; boundary="
                      b"----formdata-test-0123456789\r\n"
                      b"Content-Length: %d\r\n\r\n" % len(body) +
                      body[:len(body) // 2])
            s.close()
            ended = i + 1
            assert wait_for(lambda: d.read_log().count(
                "(not completed)") >= ended, 5), d.read_log()[-2000:]
            assert wait_for(lambda: debris(t) == [], 5), os.listdir(t)
        assert os.listdir(t) == []
        assert d.request("GET", "/ping")[0] == 200
    shutil.rmtree(t)


def test_upload_over_the_cap_is_413_and_writes_nothing():
    t = tmpdir()
    with Execd("--max-upload-size", "64K") as d:
        st, _, body = upload(d, [({"path": t + "/big"}, b"x" * 70000)])
        expect_error(st, body, 413, "REQUEST_TOO_LARGE")
        big = multipart([({"path": t + "/big2"}, b"y" * 200000)])
        resp = d.raw(b"POST /files/upload HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Type: multipart/form-data; boundary="
                     b"----formdata-test-0123456789\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n" + chunked(big),
                     timeout=5)
        assert resp.startswith(b"HTTP/1.1 413"), resp[:100]
        st, _, _ = upload(d, [({"path": t + "/small"}, b"ok")])
        assert st == 200
        assert wait_for(lambda: sorted(os.listdir(t)) == ["small"], 5), \
            os.listdir(t)
    shutil.rmtree(t)


def test_download_ranges():
    t = tmpdir()
    data = bytes(range(100))
    with open(t + "/r", "wb") as f:
        f.write(data)
    with Execd() as d:
        url = "/files/download?path=" + q(t + "/r")

        def get(rng):
            return d.request("GET", url, headers={"Range": rng})
        st, h, body = get("bytes=10-19")
        assert st == 206 and body == data[10:20], (st, body)
        assert h["content-range"] == "bytes 10-19/100", h
        assert h["content-length"] == "10"
        st, h, body = get("bytes=90-")
        assert st == 206 and body == data[90:]
        st, h, body = get("bytes=-5")
        assert st == 206 and body == data[95:]
        st, h, body = get("bytes=95-1000")
        assert st == 206 and body == data[95:], h
        # Upstream 1.1.1 clamps a huge end to the file before computing
        # the length (it used to answer a negative one).
        st, h, body = get("bytes=0-9223372036854775807")
        assert st == 206 and body == data, (st, h)
        assert h["content-range"] == "bytes 0-99/100", h
        assert h["content-length"] == "100", h
        st, h, body = get("bytes=90-9223372036854775807")
        assert st == 206 and body == data[90:], (st, h)
        assert h["content-range"] == "bytes 90-99/100", h
        assert h["content-length"] == "10", h
        st, h, body = get("bytes=0-0, 5-9")  # only the first is served
        assert st == 206 and body == data[0:1]
        for bad in ("bytes=x-y", "bytes=5-2", "items=0-1", "bytes=",
                    "bytes=-", "bytes=99999999999999999999999-"):
            st, h, body = get(bad)
            expect_error(st, body, 416, "INVALID_RANGE")
            assert h["content-range"] == "bytes */100", (bad, h)
        st, h, body = get("bytes=100-")
        expect_error(st, body, 416)
        assert h["content-range"] == "bytes */100"
        st, h, body = get("bytes=1000000000000-2000000000000")
        expect_error(st, body, 416)
        st, _, body = d.request("GET", url + "&offset=1",
                                headers={"Range": "bytes=0-1"})
        expect_error(st, body, 400, "INVALID_REQUEST_BODY")
    shutil.rmtree(t)


def test_download_line_windows():
    t = tmpdir()
    with open(t + "/l", "wb") as f:
        f.write(b"line1\nline2\r\nline3\n\nline5")
    with Execd() as d:
        url = "/files/download?path=" + q(t + "/l")
        cases = {"&offset=2&limit=2": b"line2\nline3",
                 "&offset=1": b"line1\nline2\nline3\n\nline5",
                 "&limit=1": b"line1",
                 "&offset=4&limit=1": b"",
                 "&offset=3&limit=3": b"line3\n\nline5",
                 "&offset=5": b"line5",
                 "&offset=6": b"",
                 "&offset=100&limit=5": b""}
        for qs, want in cases.items():
            st, h, body = d.request("GET", url + qs)
            assert st == 200 and body == want, (qs, st, body)
            assert h["content-type"] == "text/plain; charset=utf-8", h
            assert "content-disposition" not in h
        for qs in ("&offset=0", "&limit=-1", "&offset=x", "&limit="):
            st, _, body = d.request("GET", url + qs)
            expect_error(st, body, 400, "INVALID_REQUEST_BODY")
    shutil.rmtree(t)


def test_download_edges():
    t = tmpdir()
    name = t + "/\u00e9t\u00e9 r\u00e9sum\u00e9.txt"
    with open(name, "w") as f:
        f.write("x")
    with open(t + '/say "hi".txt', "w") as f:
        f.write("y")
    os.mkfifo(t + "/fifo")
    with Execd() as d:
        st, h, body = d.request("GET", "/files/download?path=" + q(name))
        assert st == 200 and body == b"x"
        enc = "%C3%A9t%C3%A9%20r%C3%A9sum%C3%A9.txt"
        assert h["content-disposition"] == (
            'attachment; filename="%s"; filename*=UTF-8\'\'%s' % (enc, enc)), h
        st, h, body = d.request("GET", "/files/download?path=" +
                                q(t + '/say "hi".txt'))
        assert h["content-disposition"] == \
            'attachment; filename="say \\"hi\\".txt"', h
        st, _, body = d.request("GET", "/files/download?path=" + q(t))
        obj = expect_error(st, body, 400, "INVALID_REQUEST_BODY")
        assert "directory" in obj["message"]
        st, _, body = d.request("GET", "/files/download?path=" +
                                q(t + "/fifo"))
        expect_error(st, body, 400, "INVALID_REQUEST_BODY")
        st, _, body = d.request("GET", "/files/download?path=" +
                                q(t + "/missing"))
        expect_error(st, body, 404, "FILE_NOT_FOUND")
        st, _, body = d.request("GET", "/files/download")
        expect_error(st, body, 400, "MISSING_QUERY")
        # A NUL byte never cuts a path short: "/t%00/y" is not "/t".
        st, _, body = d.request("GET", "/files/download?path=" +
                                q(name) + "%00y")
        expect_error(st, body, 400, "INVALID_REQUEST_BODY")
        st, _, body = d.request("DELETE", "/directories?path=" + q(t) +
                                "%00/sub")
        expect_error(st, body, 400, "INVALID_REQUEST_BODY")
        assert os.path.exists(name)
        st, _, body = d.request("POST", "/files/mv", body=[
            {"src": name + "\u0000x", "dest": t + "/moved"}])
        expect_error(st, body, 400, "INVALID_REQUEST_BODY")
        st, _, body = upload(d, [({"path": name + "\u0000x"}, b"new")])
        expect_error(st, body, 400, "INVALID_FILE_METADATA")
        assert open(name).read() == "x"
        st, _, body = d.request("GET", "/files/download?path=relative")
        expect_error(st, body, 400, "INVALID_REQUEST_BODY")
        # Conditional requests.
        st, h, _ = d.request("GET", "/files/download?path=" + q(name))
        st, _, body = d.request("GET", "/files/download?path=" + q(name),
                                headers={"If-Modified-Since":
                                         h["last-modified"]})
        assert st == 304 and body == b""
    shutil.rmtree(t)


def test_a_gib_upload_and_download_with_flat_memory():
    t = tmpdir()
    size = 1 << 30
    block = hashlib.sha256(b"seed").digest() * 2048   # 64 KiB
    with Execd() as d:
        rss0 = rss_kib(d.proc.pid)
        b = "----formdata-big"
        head = (b"--%s\r\nContent-Disposition: form-data; name=\"metadata\";"
                b" filename=\"metadata\"\r\n\r\n%s\r\n--%s\r\nContent-"
                b"Disposition: form-data; name=\"file\"; filename=\"f\"\r\n"
                b"\r\n" % (b.encode(), json.dumps({"path": t + "/big"})
                           .encode(), b.encode()))
        tail = b"\r\n--%s--\r\n" % b.encode()
        s = socket.create_connection((d.host, d.port), 60)
        s.sendall(b"POST /files/upload HTTP/1.1\r\nHost: x\r\nContent-Type: "
                  b"multipart/form-data; boundary=%s\r\nContent-Length: %d"
                  b"\r\n\r\n" % (b.encode(), len(head) + size + len(tail)))
        s.sendall(head)
        h = hashlib.sha256()
        peak = 0
        for i in range(size // len(block)):
            s.sendall(block)
            h.update(block)
            if i % 2048 == 0:
                peak = max(peak, rss_kib(d.proc.pid))
        s.sendall(tail)
        resp = s.recv(4096)
        s.close()
        assert resp.startswith(b"HTTP/1.1 200"), resp
        assert os.path.getsize(t + "/big") == size
        # Download and compare.
        c = d.conn(timeout=60)
        c.request("GET", "/files/download?path=" + q(t + "/big"))
        r = c.getresponse()
        h2 = hashlib.sha256()
        n = 0
        while True:
            chunk = r.read(1 << 20)
            if not chunk:
                break
            h2.update(chunk)
            n += len(chunk)
            if n % (64 << 20) < (1 << 20):
                peak = max(peak, rss_kib(d.proc.pid))
        c.close()
        assert n == size and h2.digest() == h.digest()
        print("rss before %d KiB, peak %d KiB" % (rss0, peak))
        assert peak - rss0 < 32 * 1024, (rss0, peak)
    shutil.rmtree(t)


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def test_info_list_and_fileinfo_format():
    t = tmpdir()
    os.makedirs(t + "/alpha")
    for p in ("alpha/x.txt", "alpha/y.txt", "bravo.txt", "charlie.txt"):
        with open(os.path.join(t, p), "w") as f:
            f.write("12345")
    os.chmod(t + "/bravo.txt", 0o640)
    os.symlink("/etc", t + "/link")
    with Execd() as d:
        st, info = d.get_json("/files/info?path=%s&path=%s" % (
            q(t + "/bravo.txt"), q(t + "/link")))
        assert st == 200, info
        b = info[t + "/bravo.txt"]
        assert sorted(b) == ["created_at", "group", "mode", "modified_at",
                             "owner", "path", "size", "type"], b
        assert b["type"] == "file" and b["size"] == 5 and b["mode"] == 640
        assert b["owner"] == pwd.getpwuid(os.getuid()).pw_name
        assert b["modified_at"].endswith("Z") or "+" in b["modified_at"]
        assert info[t + "/link"]["type"] == "symlink"
        st, info = d.get_json("/files/info")
        assert st == 200 and info == {}
        st, _, body = d.request("GET", "/files/info?path=" + q(t + "/nope"))
        expect_error(st, body, 404, "FILE_NOT_FOUND")
        st, lst = d.get_json("/directories/list?path=%s&depth=2" % q(t))
        assert st == 200
        assert [e["path"][len(t) + 1:] for e in lst] == [
            "alpha", "alpha/x.txt", "alpha/y.txt", "bravo.txt",
            "charlie.txt", "link"], lst
        assert lst[0]["type"] == "directory" and lst[5]["type"] == "symlink"
        st, lst = d.get_json("/directories/list?path=%s" % q(t))
        assert len(lst) == 4, lst
        st, lst = d.get_json("/directories/list?path=%s&depth=0" % q(t))
        assert lst == []
        st, _, body = d.request("GET", "/directories/list?path=" +
                                q(t + "/link"))
        expect_error(st, body, 400, "INVALID_REQUEST_BODY")
        st, _, body = d.request("GET", "/directories/list?path=" +
                                q(t + "/bravo.txt"))
        expect_error(st, body, 400, "INVALID_REQUEST_BODY")
        st, _, body = d.request("GET", "/directories/list?path=%s&depth=-1"
                                % q(t))
        expect_error(st, body, 400, "INVALID_REQUEST_BODY")
        st, _, body = d.request("GET", "/directories/list")
        expect_error(st, body, 400, "MISSING_QUERY")
    shutil.rmtree(t)


def test_search_with_globs():
    t = tmpdir()
    for p in ("a.py", "b.txt", "sub/c.py", "sub/deep/d.PY", "sub/.hidden.py",
              "x1.md", "x22.md", "$HOME.txt"):
        os.makedirs(os.path.dirname(os.path.join(t, p)), exist_ok=True)
        open(os.path.join(t, p), "w").close()
    os.symlink("/etc", t + "/etc-link")
    with Execd() as d:
        def names(pattern):
            st, lst = d.get_json("/files/search?path=%s&pattern=%s" % (
                q(t), q(pattern)))
            assert st == 200, lst
            return sorted(e["path"][len(t) + 1:] for e in lst)
        assert names("*.py") == ["a.py", "sub/.hidden.py", "sub/c.py"]
        assert names("**/*.py") == names("*.py")
        assert names("x?.md") == ["x1.md"]
        assert names("x[0-9]*.md") == ["x1.md", "x22.md"]
        assert names("*.{py,PY}") == ["a.py", "sub/.hidden.py", "sub/c.py",
                                      "sub/deep/d.PY"]
        assert names("[!a]*.py") == ["sub/.hidden.py", "sub/c.py"]
        assert names("$HOME.txt") == ["$HOME.txt"]
        assert "etc-link" in names("**")
        assert names("nothing") == []
        st, _, body = d.request("GET", "/files/search?path=%s&pattern=%s" % (
            q(t), q("[unclosed")))
        expect_error(st, body, 400, "INVALID_REQUEST_BODY")
        st, _, body = d.request("GET", "/files/search?path=" +
                                q(t + "/missing"))
        expect_error(st, body, 404, "FILE_NOT_FOUND")
        st, lst = d.get_json("/files/search?path=%s&pattern=*.py" %
                             q(t + "/a.py"))
        assert [e["path"] for e in lst] == [t + "/a.py"]
    shutil.rmtree(t)


def test_replace_is_literal_counted_and_keeps_mode():
    t = tmpdir()
    with open(t + "/r.txt", "w") as f:
        f.write("a.b a.b axb $x (a.b)")
    os.chmod(t + "/r.txt", 0o604)
    os.chown(t + "/r.txt", 65534, 65534)
    with open(t + "/s.txt", "w") as f:
        f.write("nothing here")
    with Execd() as d:
        st, h, body = d.request("POST", "/files/replace?verbose=true", body={
            t + "/r.txt": {"old": "a.b", "new": "$1"},
            t + "/s.txt": {"old": "zzz", "new": "y"}})
        assert st == 200, body
        assert json.loads(body) == {t + "/r.txt": {"replacedCount": 3},
                                    t + "/s.txt": {"replacedCount": 0}}
        assert open(t + "/r.txt").read() == "$1 $1 axb $x ($1)"
        s = os.stat(t + "/r.txt")
        assert stat.S_IMODE(s.st_mode) == 0o604 and s.st_uid == 65534
        st, _, body = d.request("POST", "/files/replace", body={
            t + "/r.txt": {"old": "$1", "new": ""}})
        assert st == 200 and body == b""
        assert open(t + "/r.txt").read() == "  axb $x ()"
        st, _, body = d.request("POST", "/files/replace", body={
            t + "/r.txt": {"old": "", "new": "x"}})
        expect_error(st, body, 400, "INVALID_REQUEST_BODY")
        st, _, body = d.request("POST", "/files/replace", body={
            t + "/missing": {"old": "a", "new": "x"}})
        expect_error(st, body, 404, "FILE_NOT_FOUND")
        st, _, body = d.request("POST", "/files/replace", body={
            t: {"old": "a", "new": "x"}})
        expect_error(st, body, 400)
        assert debris(t) == []
    shutil.rmtree(t)


def test_move_delete_and_permissions():
    t = tmpdir()
    with open(t + "/a", "w") as f:
        f.write("a")
    with open(t + "/b", "w") as f:
        f.write("b")
    with Execd() as d:
        st, _, body = d.request("POST", "/files/mv", body=[
            {"src": t + "/a", "dest": t + "/new/dir/a2"}])
        assert st == 200, body
        assert open(t + "/new/dir/a2").read() == "a"
        st, _, body = d.request("POST", "/files/mv", body=[
            {"src": t + "/b", "dest": t + "/new/dir/a2"}])
        expect_error(st, body, 409)
        assert open(t + "/b").read() == "b"
        st, _, body = d.request("POST", "/files/mv", body=[
            {"src": t + "/nope", "dest": t + "/x"}])
        expect_error(st, body, 404, "FILE_NOT_FOUND")
        st, _, body = d.request("POST", "/files/mv", body={"src": "x"})
        expect_error(st, body, 400, "INVALID_REQUEST_BODY")
        st, _, body = d.request("POST", "/files/permissions", body={
            t + "/b": {"mode": 600, "owner": "nobody", "group": "nogroup"}})
        assert st == 200, body
        s = os.stat(t + "/b")
        assert stat.S_IMODE(s.st_mode) == 0o600 and s.st_uid == 65534
        assert s.st_gid == 65534
        st, _, body = d.request("POST", "/files/permissions", body={
            t + "/b": {"mode": 999}})
        expect_error(st, body, 400, "INVALID_REQUEST_BODY")
        st, _, body = d.request("POST", "/files/permissions", body={
            t + "/b": {"owner": "no-such-user-x"}})
        expect_error(st, body, 400, "INVALID_REQUEST_BODY")
        st, _, body = d.request("POST", "/files/permissions", body={
            t + "/missing": {"mode": 644}})
        expect_error(st, body, 404, "FILE_NOT_FOUND")
        st, _, body = d.request("DELETE", "/files?path=%s&path=%s" % (
            q(t + "/b"), q(t + "/never-existed")))
        assert st == 200 and body == b""
        assert not os.path.exists(t + "/b")
        st, _, body = d.request("DELETE", "/files?path=" + q(t + "/new"))
        expect_error(st, body, 400)
    shutil.rmtree(t)


def test_rm_rf_never_follows_a_symlink_out_of_the_tree():
    t = tmpdir()
    outside = tmpdir()
    with open(outside + "/precious", "w") as f:
        f.write("keep me")
    os.makedirs(t + "/victim/sub")
    os.symlink(outside, t + "/victim/sub/link")
    os.symlink(outside + "/precious", t + "/victim/flink")
    with Execd() as d:
        st, _, body = d.request("DELETE", "/directories?path=%s&path=%s" % (
            q(t + "/victim"), q(t + "/never")))
        assert st == 200, body
        assert not os.path.exists(t + "/victim")
        assert open(outside + "/precious").read() == "keep me"
        st, _, body = d.request("DELETE", "/directories?path=/")
        expect_error(st, body, 403)
    shutil.rmtree(t)
    shutil.rmtree(outside)


def test_mkdir_with_modes():
    t = tmpdir()
    with Execd() as d:
        st, _, body = d.request("POST", "/directories", body={
            t + "/p/q/r": {"mode": 700, "owner": "nobody"},
            t + "/s": {"mode": 751}})
        assert st == 200, body
        assert stat.S_IMODE(os.stat(t + "/p/q/r").st_mode) == 0o700
        assert os.stat(t + "/p/q/r").st_uid == 65534
        assert stat.S_IMODE(os.stat(t + "/s").st_mode) == 0o751
    shutil.rmtree(t)


def test_permission_denied_is_403():
    t = tmpdir()
    os.chmod(t, 0o755)
    with open(t + "/rootonly", "w") as f:
        f.write("secret")
    os.chmod(t + "/rootonly", 0o600)
    env = {"HOME": "/tmp", "TMPDIR": "/tmp"}
    with Execd(wrapper="exec setpriv --reuid=65534 --regid=65534 "
               "--clear-groups", env=env) as d:
        st, _, body = d.request("GET", "/files/download?path=" +
                                q(t + "/rootonly"))
        expect_error(st, body, 403, "PERMISSION_DENIED")
        st, _, body = upload(d, [({"path": t + "/new"}, b"x")])
        expect_error(st, body, 403, "PERMISSION_DENIED")
        st, _, body = d.request("DELETE", "/files?path=" +
                                q(t + "/rootonly"))
        expect_error(st, body, 403, "PERMISSION_DENIED")
    shutil.rmtree(t)


def test_archive_is_a_tar_of_the_tree():
    import io
    import tarfile
    t = tmpdir()
    os.makedirs(t + "/proj/src")
    with open(t + "/proj/src/main.c", "w") as f:
        f.write("int main;\n")
    os.symlink("/etc/passwd", t + "/proj/pw")
    with Execd() as d:
        st, h, body = d.request("GET", "/files/archive?path=" +
                                q(t + "/proj"))
        assert st == 200, body[:200]
        assert h["content-type"] == "application/x-tar", h
        assert 'filename="proj.tar"' in h["content-disposition"], h
        tf = tarfile.open(fileobj=io.BytesIO(body))
        names = sorted(m.name.rstrip("/") for m in tf.getmembers())
        assert names == ["proj", "proj/pw", "proj/src", "proj/src/main.c"], \
            names
        assert tf.getmember("proj/pw").issym()
        assert tf.getmember("proj/pw").linkname == "/etc/passwd"
        assert tf.extractfile("proj/src/main.c").read() == b"int main;\n"
        st, _, body = d.request("GET", "/files/archive?path=" +
                                q(t + "/none"))
        expect_error(st, body, 404, "FILE_NOT_FOUND")
    shutil.rmtree(t)


def test_grep_finds_lines():
    t = tmpdir()
    with open(t + "/a.txt", "w") as f:
        f.write("alpha\nbeta\nALPHA beta\n")
    os.makedirs(t + "/sub")
    with open(t + "/sub/b.txt", "w") as f:
        f.write("no\nalphabet\n")
    with open(t + "/bin", "wb") as f:
        f.write(b"alpha\0\n")
    with Execd() as d:
        st, r = d.get_json("/files/grep?path=%s&pattern=%s" % (
            q(t), q("^alpha")))
        assert st == 200, r
        assert r == {"matches": [
            {"path": t + "/a.txt", "line": 1, "text": "alpha"},
            {"path": t + "/sub/b.txt", "line": 2, "text": "alphabet"}],
            "truncated": False}, r
        st, r = d.get_json("/files/grep?path=%s&pattern=alpha&ignoreCase="
                           "true&maxMatches=2" % q(t))
        assert len(r["matches"]) == 2 and r["truncated"] is True, r
        st, _, body = d.request("GET", "/files/grep?path=%s&pattern=%s" % (
            q(t), q("(unclosed")))
        expect_error(st, body, 400, "INVALID_REQUEST_BODY")
        st, _, body = d.request("GET", "/files/grep?path=" + q(t))
        expect_error(st, body, 400, "MISSING_QUERY")
    shutil.rmtree(t)


def test_watch_streams_events_until_the_client_leaves():
    t = tmpdir()
    with Execd() as d:
        d.request("GET", "/ping")
        n0 = d.fds()
        s = socket.create_connection((d.host, d.port), 5)
        s.sendall(b"GET /files/watch?path=%s&recursive=true HTTP/1.1\r\n"
                  b"Host: x\r\n\r\n" % q(t).encode())
        buf = b""
        while b"\r\n\r\n" not in buf:
            buf += s.recv(4096)
        assert buf.startswith(b"HTTP/1.1 200"), buf
        os.makedirs(t + "/sub")
        time.sleep(0.2)
        with open(t + "/sub/f", "w") as f:
            f.write("x")
        os.rename(t + "/sub/f", t + "/g")
        os.unlink(t + "/g")
        want = [("create", t + "/sub"), ("create", t + "/sub/f"),
                ("modify", t + "/sub/f"), ("moved_from", t + "/sub/f"),
                ("moved_to", t + "/g"), ("delete", t + "/g")]
        deadline = time.monotonic() + 5
        got = []
        while time.monotonic() < deadline and len(got) < len(want):
            buf += s.recv(4096)
            got = [(e["type"], e["path"]) for e in parse_events(buf)]
            got = [g for g in got if g in want]
        assert got == want, got
        s.close()
        # The inotify descriptor goes with the client, by the next ping.
        assert wait_for(lambda: d.fds() <= n0, 10), (n0, fd_links(d))
    shutil.rmtree(t)


def test_shutdown_ends_watch_with_a_final_event_and_terminator():
    # Like every other stream, a file watch open at shutdown ends with an
    # error event saying why, then the end of the chunked body.
    t = tmpdir()
    d = Execd().start()
    s = socket.create_connection((d.host, d.port), 5)
    s.sendall(b"GET /files/watch?path=%s HTTP/1.1\r\nHost: x\r\n\r\n" %
              q(t).encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += s.recv(4096)
    assert buf.startswith(b"HTTP/1.1 200"), buf
    d.send(15)
    s.settimeout(10)
    buf += b"".join(iter(lambda: s.recv(65536), b""))   # to the close
    assert buf.endswith(b"0\r\n\r\n"), buf
    evs = parse_events(buf)
    assert evs and evs[-1] == {"type": "error",
                               "error": "execd is shutting down"}, evs
    assert d.stop() == 0
    shutil.rmtree(t)


def test_watch_pings_a_quiet_stream_as_other_streams_do():
    t = tmpdir()
    with Execd() as d:
        s = socket.create_connection((d.host, d.port), 10)
        s.sendall(b"GET /files/watch?path=%s HTTP/1.1\r\nHost: x\r\n"
                  b"\r\n" % q(t).encode())
        buf = b""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and b'"pong"' not in buf:
            buf += s.recv(4096)
        s.close()
        pings = [e for e in parse_events(buf) if e["type"] == "ping"]
        assert pings and sorted(pings[0]) == ["text", "timestamp", "type"]
        assert pings[0]["text"] == "pong", pings
        # The same bytes as every stream's ping: type first.
        assert b'{"type":"ping","text":"pong","timestamp":' in buf, buf
    shutil.rmtree(t)


def test_watch_setup_does_not_stall_other_requests():
    # A recursive watch scans the whole tree first (8000 directories
    # here); that runs on a worker thread, so the loop keeps answering.
    t = tmpdir()
    for i in range(80):
        for j in range(100):
            sub = "%s/d%d/s%d" % (t, i, j)
            os.makedirs(sub)
            for k in range(5):
                open("%s/f%d" % (sub, k), "wb").close()
    q = urllib.parse.quote(t)
    with Execd() as d:
        setups = []

        def watch():
            for _ in range(3):
                s = socket.create_connection(("127.0.0.1", d.port),
                                             timeout=60)
                t0 = time.monotonic()
                windows.append(t0)
                s.sendall(b"GET /files/watch?recursive=true&path=" +
                          q.encode() + b" HTTP/1.1\r\nHost: x\r\n\r\n")
                buf = b""
                while b"\r\n\r\n" not in buf:
                    got = s.recv(4096)
                    if not got:
                        break
                    buf += got
                setups.append((time.monotonic() - t0, buf[:15]))
                s.close()
        windows = []
        spans = pings_during(d, watch)
        assert [b for _, b in setups] == [b"HTTP/1.1 200 OK"] * 3, setups
        fastest = min(secs for secs, _ in setups)
        assert fastest > 0.03, setups       # long enough to tell
        assert any(answered_amid(spans, t0, t0 + secs) for t0, (secs, _)
                   in zip(windows, setups)), (setups, len(spans))
    shutil.rmtree(t)


def fd_links(d):
    fdir = "/proc/%d/fd" % d.proc.pid
    return sorted(os.readlink(os.path.join(fdir, n)) for n in os.listdir(fdir))


def parse_events(raw):
    body = raw.split(b"\r\n\r\n", 1)[1]
    out = []
    for line in body.split(b"\n"):
        line = line.strip()
        if line.startswith(b"{"):
            out.append(json.loads(line))
    return out


def test_long_file_work_does_not_stall_other_requests():
    # Rewriting ~200 MB takes a while; it runs on a worker thread, so
    # the loop keeps answering in the meantime.
    t = tmpdir()
    path = t + "/big.txt"
    with open(path, "wb") as f:
        chunk = b"hello world foo bar baz\n" * 4096
        for _ in range(2000):
            f.write(chunk)
    with Execd() as d:
        done = {}

        def replace():
            t0 = done["t0"] = time.monotonic()
            st, _, body = d.request("POST", "/files/replace?verbose=true",
                                    body={path: {"old": "foo",
                                                 "new": "quux"}},
                                    timeout=120)
            done["secs"] = time.monotonic() - t0
            done["st"], done["body"] = st, body
        spans = pings_during(d, replace)
        assert done["st"] == 200, done
        assert json.loads(done["body"]) == {
            path: {"replacedCount": 2000 * 4096}}
        assert done["secs"] > 0.1, done     # long enough to tell
        assert answered_amid(spans, done["t0"], done["t0"] + done["secs"]), \
            (done["secs"], len(spans))
    shutil.rmtree(t)


# Costs the most per byte that a grep pattern may: seven bounded runs
# (about 3500 instructions once expanded), over lines of 64 KiB.
HEAVY = "[a-z]{1,255}" * 7 + "0"


def heavy_tree(lines=100):
    t = tmpdir()
    with open(t + "/big.txt", "wb") as f:
        for _ in range(lines):
            f.write(b"a" * 65535 + b"\n")
    return t


def start_grep(d, path, pattern):
    """Send a grep and leave it running: the socket, to close later."""
    s = socket.create_connection((d.host, d.port), timeout=60)
    s.sendall(b"GET /files/grep?path=%s&pattern=%s HTTP/1.1\r\nHost: x"
              b"\r\n\r\n" % (q(path).encode(), q(pattern).encode()))
    return s


def test_grep_backreference_is_refused_at_once():
    t = tmpdir()
    with open(t + "/line.txt", "w") as f:
        f.write("a" * 80 + "\n")
    with Execd() as d:
        t0 = time.monotonic()
        st, _, body = d.request("GET", "/files/grep?path=%s&pattern=%s" % (
            q(t), q(r"(.*)(.*)(.*)(.*)(.*)\5\4\3\2\1x")), timeout=60)
        secs = time.monotonic() - t0
        expect_error(st, body, 400, "INVALID_REQUEST_BODY")
        assert b"backreference" in body, body
        assert secs < 5, secs
        # Too large once expanded, or nested too deep: 400 as well.
        for pat in ("((a{1,100}){1,100}){1,100}", "(" * 100 + ")" * 100):
            st, _, body = d.request("GET", "/files/grep?path=%s&pattern="
                                    "%s" % (q(t), q(pat)))
            expect_error(st, body, 400, "INVALID_REQUEST_BODY")
        # The dialect otherwise: ERE, with the GNU word escapes.
        with open(t + "/w.txt", "w") as f:
            f.write("foo bar\nfoobar\n")
        st, r = d.get_json("/files/grep?path=%s&pattern=%s" % (
            q(t + "/w.txt"), q(r"\bbar\b|^(fo+)b{1,2}a[[:alpha:]]$")))
        assert st == 200 and [m["line"] for m in r["matches"]] == [1, 2], r
    shutil.rmtree(t)


def test_heavy_greps_leave_search_and_ping_answering():
    t = heavy_tree()
    with Execd() as d:
        socks = [start_grep(d, t, HEAVY) for _ in range(3)]
        time.sleep(0.5)         # let them reach the workers
        for _ in range(3):
            t0 = time.monotonic()
            st, _, _ = d.request("GET", "/ping", timeout=30)
            assert st == 200 and time.monotonic() - t0 < 5
            t0 = time.monotonic()
            st, r = d.get_json("/files/search?path=%s&pattern=*.txt" %
                               q(t), timeout=30)
            assert st == 200 and len(r) == 1, r
            assert time.monotonic() - t0 < 5, time.monotonic() - t0
        # SIGTERM does not wait for the patterns.
        t0 = time.monotonic()
        rc = d.stop(timeout=30)
        assert rc == 0, rc
        assert time.monotonic() - t0 < 5, time.monotonic() - t0
        for s in socks:
            s.close()
    shutil.rmtree(t)


def test_a_grep_whose_client_left_stops():
    t = heavy_tree(lines=400)
    with Execd() as d:
        # The heavy one holds the one worker greps may take, until its
        # budget runs out (30 s) -- unless its client's leaving stops it.
        s = start_grep(d, t, HEAVY)
        time.sleep(0.5)
        s.close()
        t0 = time.monotonic()
        st, _, body = d.request("GET", "/files/grep?path=%s&pattern=%s" % (
            q(t), q("^b")), timeout=60)
        assert st == 200, body
        assert time.monotonic() - t0 < 15, time.monotonic() - t0
    shutil.rmtree(t)


def test_many_entries_run_off_the_loop_and_a_cap_holds():
    t = tmpdir()
    with Execd() as d:
        dirs = {"%s/d%05d" % (t, i): {"mode": 700} for i in range(10000)}
        done = {}

        def mkdirs():
            done["t0"] = time.monotonic()
            done["st"], _, done["body"] = d.request(
                "POST", "/directories", body=dirs, timeout=120)
            done["t1"] = time.monotonic()
        spans = pings_during(d, mkdirs)
        assert done["st"] == 200, done
        assert len(os.listdir(t)) == 10000
        assert stat.S_IMODE(os.stat(t + "/d09999").st_mode) == 0o700
        assert answered_amid(spans, done["t0"], done["t1"]), len(spans)
        st, _, body = d.request("POST", "/files/permissions", body={
            p: {"mode": 755} for p in dirs})
        assert st == 200, body
        assert stat.S_IMODE(os.stat(t + "/d00000").st_mode) == 0o755
        st, _, body = d.request("POST", "/files/mv", body=[
            {"src": p, "dest": p + "m"} for p in list(dirs)[:5000]])
        assert st == 200, body
        assert os.path.isdir(t + "/d00000m") and os.path.isdir(t + "/d05000")
        # Past the cap: 400 naming it, and nothing done.
        over = dict(dirs)
        over[t + "/extra"] = {}
        for method, path, body in (
                ("POST", "/directories", over),
                ("POST", "/files/permissions", over),
                ("POST", "/files/replace", {p: {"old": "a"} for p in over}),
                ("POST", "/files/mv", [{"src": p, "dest": p + "x"}
                                       for p in over])):
            st, _, rb = d.request(method, path, body=body)
            expect_error(st, rb, 400, "INVALID_REQUEST_BODY")
            assert b"10000" in rb, rb
        assert not os.path.exists(t + "/extra")
        # Owners are looked up before anything changes.
        st, _, rb = d.request("POST", "/directories", body={
            t + "/x1": {}, t + "/x2": {"owner": "no-such-user-here"}})
        expect_error(st, rb, 400, "INVALID_REQUEST_BODY")
        assert not os.path.exists(t + "/x1")
        # Info and DELETE /files answer from a worker too.
        open(t + "/f", "w").close()
        st, r = d.get_json("/files/info?path=%s&path=%s" % (
            q(t + "/f"), q(t + "/d05001")))
        assert st == 200 and r[t + "/f"]["type"] == "file", r
        st, _, rb = d.request("DELETE", "/files?path=%s&path=%s" % (
            q(t + "/f"), q(t + "/d05001")))
        expect_error(st, rb, 400, "INVALID_REQUEST_BODY")
        assert not os.path.exists(t + "/f")
        st, _, rb = d.request("GET", "/files/info?path=" + q(t + "/nope"))
        expect_error(st, rb, 404, "FILE_NOT_FOUND")
    shutil.rmtree(t)


def test_names_that_are_not_utf8_are_reported_and_reachable():
    import base64
    t = tmpdir()
    raw = t.encode() + b"/f\xffx.txt"
    with open(raw, "wb") as f:
        f.write(b"hello\n")
    # A valid name that reads like an escape is escaped itself.
    with open(t + "/a\\xffb", "wb") as f:
        f.write(b"literal\n")
    text = t + "/f\\xffx.txt"
    b64 = base64.b64encode(raw).decode()
    with Execd() as d:
        st, r = d.get_json("/directories/list?path=" + q(t))
        assert st == 200, r
        got = sorted((e["path"], e.get("path_base64")) for e in r)
        assert got == [(t + "/a\\x5cxffb", base64.b64encode(
            (t + "/a\\xffb").encode()).decode()), (text, b64)], got
        st, r = d.get_json("/files/search?path=%s&pattern=f*" % q(t))
        assert st == 200 and [e["path"] for e in r] == [text], r
        st, r = d.get_json("/files/grep?path=%s&pattern=hello" % q(t))
        assert r["matches"] == [{"path": text, "path_base64": b64,
                                 "line": 1, "text": "hello"}], r
        # The text form goes back in, and so do the raw bytes (%FF).
        for given in (q(text), urllib.parse.quote_from_bytes(raw, safe="")):
            st, r = d.get_json("/files/info?path=" + given)
            assert st == 200 and list(r) == [text], r
            assert r[text]["path"] == text and r[text]["size"] == 6, r
        st, r = d.get_json("/files/info?path=" + q(t + "/a\\x5cxffb"))
        assert st == 200 and r[t + "/a\\x5cxffb"]["size"] == 8, r
        st, _, body = d.request("GET", "/files/download?path=" + q(text))
        assert st == 200 and body == b"hello\n", (st, body)
        st, _, body = d.request("DELETE", "/files?path=" + q(text))
        assert st == 200, body
        assert not os.path.exists(raw)
    shutil.rmtree(t)
