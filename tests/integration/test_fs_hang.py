"""A file system that stops answering costs the requests on it, not the
daemon: with a FUSE mount whose server never answers under stuck/
(helpers/hangfs.py), every file route on a path there ends with a 504
after --fs-timeout, while /ping, /command and the file routes elsewhere
answer; once the mount's server is gone, no worker, thread or fd of
execd stays behind.

Needs root and /dev/fuse (Debian's fuse3 and python3-fusepy): the test
fails, never skips, where they are missing, since CI has them.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

from lib import Execd, wait_for
from test_files import multipart

BOUNDARY = "----hang-boundary"

HERE = os.path.dirname(os.path.abspath(__file__))
FS_TIMEOUT = 2
# A stuck request must have its 504 well within this, however loaded the
# machine: the deadline is FS_TIMEOUT.
ANSWER_WITHIN = 40


def q(path):
    return urllib.parse.quote(path, safe="")


class HangMount:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="execd-hang-", dir="/tmp")
        self.mnt = os.path.join(self.dir, "mnt")
        os.mkdir(self.mnt)
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "helpers", "hangfs.py"),
             self.mnt], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        ok = os.path.join(self.mnt, "ok.txt")
        if not wait_for(lambda: os.path.exists(ok), timeout=20):
            self.close()
            raise AssertionError("hangfs did not mount: %s" %
                                 self.proc.stderr.read()[-2000:])
        self.stuck = os.path.join(self.mnt, "stuck")

    def close(self):
        """End the server: the kernel fails what waits on it."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
        subprocess.run(["umount", "-l", self.mnt], stderr=subprocess.DEVNULL)
        for name in ("mnt",):
            try:
                os.rmdir(os.path.join(self.dir, name))
            except OSError:
                pass
        try:
            os.rmdir(self.dir)
        except OSError:
            pass


def stuck_requests(m, sid):
    """(name, method, path, body, headers) on paths under the hung dir;
    sid is a bash session's."""
    s = m.stuck
    jh = {"Content-Type": "application/json"}
    return [
        # A working directory there: checked (or made) before the start.
        ("command-cwd", "POST", "/command", json.dumps(
            {"command": "true", "cwd": s}), jh),
        ("command-cwd-uid", "POST", "/command", json.dumps(
            {"command": "true", "cwd": s + "/w", "uid": 0}), jh),
        ("session-create-cwd", "POST", "/session", json.dumps(
            {"cwd": s + "/new"}), jh),
        ("session-run-cwd", "POST", "/session/%s/run" % sid, json.dumps(
            {"command": "true", "cwd": s}), jh),
        ("context-cwd", "POST", "/code/context", json.dumps(
            {"language": "python", "cwd": s + "/ctx"}), jh),
        ("info", "GET", "/files/info?path=" + q(s + "/a"), None, {}),
        ("list", "GET", "/directories/list?path=" + q(s), None, {}),
        ("download", "GET", "/files/download?path=" + q(s + "/a"), None, {}),
        ("delete", "DELETE", "/files?path=" + q(s + "/a"), None, {}),
        ("move", "POST", "/files/mv", json.dumps(
            [{"src": s + "/a", "dest": m.dir + "/b"}]), jh),
        ("permissions", "POST", "/files/permissions", json.dumps(
            {s + "/a": {"mode": 644}}), jh),
        ("mkdir", "POST", "/directories", json.dumps(
            {s + "/d": {"mode": 755}}), jh),
        ("search", "GET", "/files/search?path=%s&pattern=*" % q(s), None, {}),
        ("grep", "GET", "/files/grep?path=%s&pattern=x" % q(s), None, {}),
        ("archive", "GET", "/files/archive?path=" + q(s), None, {}),
        ("watch", "GET", "/files/watch?path=" + q(s), None, {}),
        ("upload", "POST", "/files/upload", multipart(
            [({"path": s + "/up"}, b"x" * 100000)], BOUNDARY),
         {"Content-Type": "multipart/form-data; boundary=" + BOUNDARY}),
        # More than execd holds while a worker is stuck: the body is
        # paused, then read and dropped once the 504 is due.
        ("upload-big", "POST", "/files/upload", multipart(
            [({"path": s + "/up2"}, b"y" * (8 << 20))], BOUNDARY),
         {"Content-Type": "multipart/form-data; boundary=" + BOUNDARY}),
    ]


def test_a_hung_mount_costs_its_requests_not_the_daemon():
    assert os.geteuid() == 0, "needs root to mount FUSE"
    assert os.path.exists("/dev/fuse"), "needs /dev/fuse"
    m = HangMount()
    try:
        with Execd("--fs-timeout", str(FS_TIMEOUT)) as d:
            st, _, sess = d.request("POST", "/session", body={})
            assert st == 200, sess
            sess = json.loads(sess)
            fds0, threads0 = d.fds(), threads_of(d.proc.pid)
            got = {}
            reqs = stuck_requests(m, sess["session_id"])

            def one(req):
                name, method, path, body, hdrs = req
                t0 = time.monotonic()
                try:
                    st, _, data = d.request(method, path, body=body,
                                            headers=hdrs,
                                            timeout=ANSWER_WITHIN)
                except Exception as e:  # noqa: BLE001 - reported below
                    st, data = None, repr(e).encode()
                got[name] = (st, data, time.monotonic() - t0)

            threads = [threading.Thread(target=one, args=(r,))
                       for r in reqs]
            for t in threads:
                t.start()
            # While they wait on the mount, everything else answers.
            time.sleep(0.5)
            st, _, _ = d.request("GET", "/ping", timeout=10)
            assert st == 200
            st, _, body = d.request("POST", "/command",
                                    body={"command": "echo alive"},
                                    timeout=20)
            assert st == 200 and b"alive" in body, body
            st, info = d.get_json("/files/info?path=" +
                                  q(m.mnt + "/ok.txt"), timeout=20)
            assert st == 200, info
            for t in threads:
                t.join(ANSWER_WITHIN + 5)
            for name, (st, data, took) in sorted(got.items()):
                assert st == 504, "%s: %s %r" % (name, st, data[-300:])
                err = json.loads(data)
                assert err["code"] == "TIMEOUT", (name, err)
                assert "%d s" % FS_TIMEOUT in err["message"], (name, err)
            assert len(got) == len(reqs)
            m.close()
            # The mount's server is gone: what waited on it has ended,
            # and more requests than execd has workers all succeed.
            t = tempfile.mkdtemp(prefix="execd-hang-after-", dir="/tmp")
            try:
                for i in range(12):
                    st, info = d.get_json("/files/info?path=" + q(t),
                                          timeout=20)
                    assert st == 200, info
                assert wait_for(lambda: d.fds() <= fds0 + 1, timeout=20), (
                    "fds: %d at start, %d now" % (fds0, d.fds()))
            finally:
                os.rmdir(t)
            assert wait_for(lambda: threads_of(d.proc.pid) <= threads0,
                            timeout=20), (threads0, threads_of(d.proc.pid))
    finally:
        m.close()


def threads_of(pid):
    return len(os.listdir("/proc/%d/task" % pid))
