"""benchlib.py -- the helpers the Python scripts of the bench share.

Standard library only, for /usr/bin/python3 and for the Python with the
kernel packages alike; the scripts import it from their own directory.

Clocks: now_us() is CLOCK_MONOTONIC.  /proc: rss_kib(), fds(),
children(), gone().  Processes: spawn() and Execd start them and note
them in `procs`; stop() ends one by its pid (SIGTERM, then SIGKILL, and
its left-behind children), stop_all() whatever is still noted.  A script
installs on_signal for SIGTERM so that its finally blocks run and stop
everything it started.  die() raises RuntimeError, which a script's main
reports.
"""

import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

START_TIMEOUT = 30  # seconds for a server started here to answer
procs = []          # Popen objects started here and not yet stopped


def now_us():
    """CLOCK_MONOTONIC in microseconds."""
    return time.monotonic_ns() // 1000


def die(msg):
    """Give up on this measurement: raise RuntimeError(msg)."""
    raise RuntimeError(msg)


def on_signal(signum, frame):
    """SIGTERM/SIGINT/SIGHUP: unwind, so that every finally runs."""
    raise SystemExit(128 + signum)


def read(path):
    """The text of a file, undecodable bytes replaced."""
    with open(path, "rb") as f:
        return f.read().decode("utf-8", "replace")


# --- /proc ------------------------------------------------------------------

def rss_kib(pid):
    """VmRSS of pid in KiB (OSError when it is gone)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    die("no VmRSS for pid %d" % pid)


def fds(pid):
    """How many descriptors pid has open."""
    return len(os.listdir("/proc/%d/fd" % pid))


def children(pid):
    """Pids whose parent is pid, zombies included."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
        except OSError:
            continue
        if int(st[st.rindex(")") + 2:].split()[1]) == pid:
            out.append(int(d))
    return out


def gone(pid):
    """True when pid no longer runs (or is a zombie)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            st = f.read()
    except OSError:
        return True
    return st[st.rindex(")") + 2] == "Z"


# --- processes ---------------------------------------------------------------

def spawn(argv, log_path, env=None):
    """Start argv, stdin /dev/null, stdout and stderr into log_path."""
    log = open(log_path, "wb")
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=log, env=env)
    finally:
        log.close()
    procs.append(proc)
    return proc


def stop(proc, grace=10.0):
    """SIGTERM, wait at most grace seconds, then SIGKILL; reap it, and
    SIGKILL the children it leaves behind.  Its exit status."""
    procs[:] = [p for p in procs if p is not proc]
    if proc.poll() is not None:
        return proc.returncode
    kids = children(proc.pid)
    proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(grace)
    # Kernels or commands it started and left behind (execd reaps its
    # own; this is for a server that did not).
    deadline = time.monotonic() + 2
    for k in kids:
        while not gone(k) and time.monotonic() < deadline:
            time.sleep(0.02)
        if not gone(k):
            try:
                os.kill(k, signal.SIGKILL)
            except OSError:
                pass
    return proc.returncode


def stop_all():
    """stop() every process started here and not stopped yet."""
    for proc in list(procs):
        stop(proc)


def free_port():
    """A TCP port of 127.0.0.1 that was free a moment ago."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# --- execd -------------------------------------------------------------------

class Execd:
    """One execd on 127.0.0.1 at a port it picks, with one keep-alive
    HTTP connection (self.conn, not yet connected).

    argv is BINARY --listen 127.0.0.1:0 ARGS...; its log goes to
    TMP/NAME.log; its environment is ours less EXECD_*, plus env."""

    def __init__(self, binary, tmp, *args, name="execd", env=None,
                 timeout=30):
        self.log_path = os.path.join(tmp, name + ".log")
        penv = {k: v for k, v in os.environ.items()
                if not k.startswith("EXECD_")}
        penv.update(env or {})
        self.proc = spawn([binary, "--listen", "127.0.0.1:0"] + list(args),
                          self.log_path, penv)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)",
                          read(self.log_path))
            if m:
                self.port = int(m.group(1))
                break
            if self.proc.poll() is not None:
                die("execd exited with %s at start: %s"
                    % (self.proc.returncode, read(self.log_path)[-600:]))
            if time.monotonic() > deadline:
                die("execd did not start: " + read(self.log_path)[-600:])
            time.sleep(0.01)
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port,
                                               timeout=timeout)

    def request(self, method, path, body=None):
        """(status, body bytes) on the keep-alive connection; body, when
        given, is sent as JSON."""
        hdrs = {}
        if body is not None:
            body = json.dumps(body).encode()
            hdrs["Content-Type"] = "application/json"
        self.conn.request(method, path, body=body, headers=hdrs)
        r = self.conn.getresponse()
        return r.status, r.read()

    def json(self, method, path, body=None, want=200):
        """The decoded JSON answer of a request that must answer want."""
        st, data = self.request(method, path, body)
        if st != want:
            die("execd: %s %s: %d %s" % (method, path, st, data[:400]))
        return json.loads(data) if data else None

    def close(self):
        """Close the connection, stop execd; its exit status."""
        self.conn.close()
        return stop(self.proc)


# --- entry point ---------------------------------------------------------------

def main(argv, modes, usage):
    """The main of a script run as NAME MODE EXECD N [ARG]: modes maps each
    MODE to fn(execd, n, tmp[, arg]), tmp a fresh directory removed
    afterwards.
    SIGTERM, SIGINT and SIGHUP unwind; whatever was started is stopped.
    Exit status: 0, 1 when a measurement failed (die), 2 on bad usage."""
    prog = os.path.basename(argv[0])
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, on_signal)
    if len(argv) not in (4, 5) or argv[1] not in modes:
        sys.stderr.write(usage)
        return 2
    tmp = tempfile.mkdtemp(prefix="execd-%s." % prog.split(".")[0])
    try:
        modes[argv[1]](argv[2], int(argv[3]), tmp, *argv[4:])
    except RuntimeError as e:
        sys.stderr.write("%s: %s\n" % (prog, e))
        return 1
    finally:
        stop_all()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0
