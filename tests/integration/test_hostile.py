"""Hostile input and leaks out of the daemon: fds execd inherited, the
access token in /proc, client strings in the log, downloads of files
shorter than their size."""
import json
import os
import tempfile
import time

from lib import Execd, events, new_context, run_code, texts, wait_for

SECRET = "not-for-children-4f1c"


def stdout_of(evs):
    return "".join(e["text"] + "\n" for e in evs if e["type"] == "stdout")


def run_cmd(d, command, **opts):
    st, h, data = d.request("POST", "/command",
                            body=dict(command=command, **opts), timeout=30)
    assert st == 200, data
    return events(data)


def session_run(d, command):
    st, h, data = d.request("POST", "/session", body={})
    assert st == 200, data
    sid = json.loads(data)["session_id"]
    st, h, data = d.request("POST", "/session/%s/run" % sid,
                            body={"command": command}, timeout=30)
    assert st == 200, data
    return events(data)


# What a command's process holds: the shell execs ls, which lists its own
# fds; the one it reads the listing through points into /proc.
FDS = "exec ls -l /proc/self/fd/"


def open_fds(out):
    """{fd: target} from FDS's output, ls's own directory left out."""
    fds = {}
    for line in out.split("\n"):
        if " -> " in line:
            left, target = line.split(" -> ", 1)
            if not target.startswith("/proc/"):
                fds[int(left.split()[-1])] = target
    return fds


def test_children_inherit_no_fd_that_execd_was_started_with():
    with tempfile.TemporaryDirectory() as tmp:
        secret = os.path.join(tmp, "secret")
        with open(secret, "w") as f:
            f.write(SECRET)
        os.chmod(secret, 0o600)
        # fds 7 and 9 are open in execd, as a careless launcher leaves them.
        wrap = "exec 7<'%s' 9>>'%s'; exec" % (secret, secret)
        with Execd(wrapper=wrap) as d:
            fds = os.listdir("/proc/%d/fd" % d.proc.pid)
            assert "7" in fds and "9" in fds, fds   # the test holds
            out = stdout_of(run_cmd(d, FDS))
            assert sorted(open_fds(out)) == [0, 1, 2], out
            out = stdout_of(run_cmd(d, "cat <&7; echo x >&9; echo done"))
            assert SECRET not in out and "done" in out, out
            if os.geteuid() == 0:
                out = stdout_of(run_cmd(d, FDS, uid=65534, cwd="/"))
                assert sorted(open_fds(out)) == [0, 1, 2], out
            out = stdout_of(session_run(d, "ls -l /proc/$$/fd/"))
            assert " 0 -> " in out and secret not in out, out
            ctx = new_context(d)
            st, evs = run_code(d, "import os\nprint(sorted(os.listdir("
                               "'/proc/self/fd')))\nprint([os.readlink("
                               "'/proc/self/fd/%d' % n) for n in (7, 9) "
                               "if os.path.exists('/proc/self/fd/%d' % n)])",
                               id=ctx["id"])
            assert st == 200, evs
            assert secret not in texts(evs, "stdout"), evs
        with open(secret) as f:
            assert f.read() == SECRET


def test_client_strings_in_the_log_are_escaped():
    with Execd("--access-token", "tok", "--listen", "127.0.0.1:0") as d:
        out = d.raw(b"GET /\x1b[2J\x1b]0;owned\x07/x%0d%0aforged HTTP/1.1\r\n"
                    b"Host: x\r\nConnection: close\r\n\r\n")
        assert out.startswith(b"HTTP/1.1 401"), out
        assert wait_for(lambda: "x1b[2J" in d.read_log()), d.read_log()
        log = d.read_log()
    for bad in ("\x1b", "\x07", "\r"):
        assert bad not in log, repr(log)
    assert all(line[:4].isdigit() for line in log.splitlines()), log


def authed_out(d, command, token):
    """The stdout of command, run with the access token."""
    st, h, body = d.request("POST", "/command", body={"command": command},
                            headers={"X-EXECD-ACCESS-TOKEN": token})
    assert st == 200, body
    return stdout_of(events(body))


def test_access_token_is_not_in_proc():
    tok = "tok-" + SECRET
    with Execd("--access-token", tok) as d:
        out = authed_out(d, "tr '\\0' ' ' </proc/%d/cmdline" % d.proc.pid,
                         tok)
        assert "--access-token" in out and tok not in out, out
        st, h, body = d.request("GET", "/metrics")
        assert st == 401, body      # the token still guards every route
    with Execd(env={"EXECD_ACCESS_TOKEN": tok}) as d:
        out = authed_out(d, "tr '\\0' ' ' </proc/%d/environ; echo; env"
                         % d.proc.pid, tok)
        assert "PATH=" in out and tok not in out, out
    with tempfile.NamedTemporaryFile("w") as f:
        f.write(tok + "\n")
        f.flush()
        with Execd("--access-token-file", f.name) as d:
            assert authed_out(d, "echo ok", tok) == "ok\n"
            st, h, body = d.request("GET", "/metrics")
            assert st == 401, body


def download(d, path, timeout=10, headers=None):
    return d.request("GET", "/files/download?path=" + path,
                     headers=headers, timeout=timeout)


def test_proc_and_sys_files_download_whole_and_end():
    with Execd() as d:
        # sysfs says 4096 bytes and has 4; procfs says 0 and has more.
        st, h, body = download(d, "/sys/devices/system/cpu/online")
        assert st == 200, body
        with open("/sys/devices/system/cpu/online", "rb") as f:
            assert body == f.read()
        assert h.get("transfer-encoding") == "chunked", h
        st, h, body = download(d, "/proc/%d/status" % d.proc.pid)
        assert st == 200, body
        assert b"\nPid:\t%d\n" % d.proc.pid in body, body
        assert h.get("transfer-encoding") == "chunked", h
        # A range of an unknown size: the whole file, as HTTP allows.
        st, h, body = download(d, "/proc/%d/status" % d.proc.pid,
                               headers={"Range": "bytes=0-3"})
        assert st == 200 and body.startswith(b"Name:"), (st, body)


def test_a_file_truncated_while_it_is_sent_ends_the_response():
    with tempfile.TemporaryDirectory() as tmp, Execd() as d:
        path = os.path.join(tmp, "big")
        with open(path, "wb") as f:
            f.truncate(64 << 20)
        c = d.conn(timeout=30)
        c.request("GET", "/files/download?path=" + path)
        r = c.getresponse()
        assert r.status == 200 and r.getheader("Content-Length") == \
            str(64 << 20)
        got = len(r.read(1 << 20))
        os.truncate(path, 1 << 20)      # shorter than what was promised
        t0 = time.monotonic()
        try:
            while True:
                chunk = r.read(1 << 16)
                if not chunk:
                    break
                got += len(chunk)
        except Exception:               # the connection was closed
            pass
        # Ended, not held until the idle timeout (120 s).
        assert time.monotonic() - t0 < 20, time.monotonic() - t0
        assert got < 64 << 20, got
        c.close()
        assert wait_for(lambda: "truncated" in d.read_log()), d.read_log()
        st, h, body = d.request("GET", "/ping")
        assert st == 200


def test_error_messages_with_bytes_that_are_not_utf8():
    long_name = "\u00e9" * 600          # cut mid-character in the message
    with Execd() as d:
        for method, path, body in (
                ("GET", "/files/info?path=/nonexistent%ff", None),
                ("GET", "/command/%ff/logs", None),
                ("GET", "/files/download?path=/no%c3", None),
                ("POST", "/command", {"command": "true",
                                      "envs": {long_name: 1}})):
            st, h, data = d.request(method, path, body=body)
            assert 400 <= st < 500, (path, st, data)
            obj = json.loads(data)
            assert obj["code"] and obj["message"], obj
        st, obj = d.get_json("/files/info?path=/nonexistent%ff")
        assert "\\xff" in obj["message"], obj
        assert d.request("GET", "/ping")[0] == 200
