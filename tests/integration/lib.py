"""Helpers for integration tests: start a real execd, talk HTTP to it.

Every daemon listens on 127.0.0.1 at a port the kernel picks; its stderr
goes to a file that the runner prints when a test fails.  Daemons still
running when a test ends are killed by their pid.
"""
import grp
import http.client
import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

EXECD = os.environ.get("EXECD_BIN", "build/execd")
# Context, kernel and bash session ids: dashed v4 UUIDs, as upstream's.
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}"
                     r"-[0-9a-f]{12}$")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
_live = []


class Execd:
    """One daemon process.  Use start() or the with-statement."""

    def __init__(self, *args, env=None, argv0=None, wrapper=None):
        self.args = list(args)
        self.env = dict(os.environ)
        for k in list(self.env):
            if k.startswith("EXECD_") and k != "EXECD_BIN":
                del self.env[k]
        self.env.update(env or {})
        self.wrapper = wrapper
        self.proc = None
        self.port = None
        self.host = None
        fd, self.log_path = tempfile.mkstemp(prefix="execd-log-")
        os.close(fd)

    def start(self, timeout=10):
        cmd = [EXECD] + self.args
        if not any(a.startswith("--listen") or a.startswith("--port")
                   for a in self.args) and "EXECD_LISTEN" not in self.env:
            cmd += ["--listen", "127.0.0.1:0"]
        # The Jupyter listener's default port is one for the whole
        # machine: only the tests of it open it.
        # (First: arguments after the options are ignored.)
        if not any(a.startswith("--jupyter-listen") for a in self.args) \
                and "EXECD_JUPYTER_LISTEN" not in self.env:
            cmd[1:1] = ["--jupyter-listen", "off"]
        if self.wrapper:
            cmd = ["/bin/sh", "-c", self.wrapper + ' "$@"', "sh"] + cmd
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                     stdout=self.log, stderr=self.log,
                                     env=self.env)
        _live.append(self)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = re.search(r"listening on (?:\[([0-9a-f:]+)\]|([0-9.]+)):"
                          r"(\d+)", self.read_log())
            if m:
                self.host = m.group(1) or m.group(2)
                self.port = int(m.group(3))
                if self.host in ("0.0.0.0", "::"):
                    self.host = "127.0.0.1"
                self._wait_answering(deadline)
                return self
            if self.proc.poll() is not None:
                raise AssertionError("execd exited with %s at start:\n%s"
                                     % (self.proc.returncode,
                                        self.read_log()))
            time.sleep(0.01)
        raise AssertionError("execd did not start:\n" + self.read_log())

    def _wait_answering(self, deadline):
        """execd logs where it listens before the rest of its start-up
        (workers, directories, kernels): once it answers a request, all
        of that is done, and what a test measures (its fds) is settled."""
        while time.monotonic() < deadline:
            try:
                s = socket.create_connection((self.host, self.port), 5)
                s.sendall(b"GET /ping HTTP/1.1\r\nHost: x\r\n"
                          b"Connection: close\r\n\r\n")
                got = s.recv(64)
                s.close()
                if got.startswith(b"HTTP/1.1 "):
                    return
            except OSError:
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.01)
        raise AssertionError("execd does not answer:\n" + self.read_log())

    def __enter__(self):
        return self.start() if self.proc is None else self

    def __exit__(self, etype, *exc):
        if self.proc and self.proc.poll() is None:
            rc = self.stop()
            if etype is None:
                assert rc == 0, "execd exited with %s:\n%s" % (
                    rc, self.read_log()[-3000:])

    def read_log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def conn(self, timeout=10):
        return http.client.HTTPConnection(self.host, self.port,
                                          timeout=timeout)

    def request(self, method, path, body=None, headers=None, conn=None,
                timeout=10):
        """One request; returns (status, headers dict lower-cased, body)."""
        c = conn or self.conn(timeout)
        hdrs = dict(headers or {})
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
            hdrs.setdefault("Content-Type", "application/json")
        c.request(method, path, body=body, headers=hdrs)
        r = c.getresponse()
        data = r.read()
        h = {k.lower(): v for k, v in r.getheaders()}
        if conn is None:
            c.close()
        return r.status, h, data

    def get_json(self, path, **kw):
        st, h, data = self.request("GET", path, **kw)
        return st, json.loads(data) if data else None

    def raw(self, data, timeout=5, read_until_close=True):
        """Send raw bytes on a new connection, return all bytes read."""
        s = socket.create_connection((self.host, self.port), timeout)
        s.sendall(data)
        out = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                out += chunk
                if not read_until_close and b"\r\n\r\n" in out:
                    break
        except socket.timeout:
            pass
        s.close()
        return out

    def send(self, sig):
        self.proc.send_signal(sig)

    def stop(self, sig=signal.SIGTERM, timeout=15):
        """Signal the daemon, wait, and return its exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("execd did not stop within %ss" % timeout)
        self.log.close()
        if self in _live:
            _live.remove(self)
        return rc

    def fds(self):
        return len(os.listdir("/proc/%d/fd" % self.proc.pid))


def kill_all():
    """Kill every daemon a test left running; used by the runner."""
    for d in list(_live):
        if d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait()
        _live.remove(d)


def expect_error(status, body, want_status, want_code=None):
    """A non-2xx answer must carry {"code","message"}."""
    assert status == want_status, "status %d, want %d: %r" % (
        status, want_status, body)
    obj = json.loads(body)
    assert isinstance(obj.get("code"), str) and obj["code"], obj
    assert isinstance(obj.get("message"), str) and obj["message"], obj
    if want_code:
        assert obj["code"] == want_code, obj
    return obj


def children_of(pid):
    """(pid, state) of every process whose parent is pid."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
        except OSError:
            continue
        rest = st[st.rindex(")") + 2:].split()
        if int(rest[1]) == pid:
            out.append((int(d), rest[0]))
    return out


def free_port():
    """A loopback port free now (for a server that must be told one)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def under_asan(d):
    """Whether d runs an AddressSanitizer build (libasan in its maps):
    its allocator's own overhead (shadow, redzones, size classes) adds
    to RSS, so figures of the product's hold only in the other builds,
    and the bench's."""
    with open("/proc/%d/maps" % d.proc.pid) as f:
        return "libasan" in f.read()


def wait_for(pred, timeout=10, step=0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()


def events(body):
    """Parse a stream body: one JSON object per line, blank lines between."""
    out = []
    for line in body.split(b"\n"):
        if line.strip():
            out.append(json.loads(line))
    return out


def run_code(d, code, timeout=60, **ctx):
    """POST /code; returns (status, [events]) once the stream ends."""
    body = {"code": code}
    if ctx:
        body["context"] = ctx
    st, h, data = d.request("POST", "/code", body=body, timeout=timeout)
    if st != 200:
        return st, json.loads(data)
    assert h["content-type"] == "text/event-stream", h
    return st, events(data)


def kinds(evs):
    """Event types, without pings."""
    return [e["type"] for e in evs if e["type"] != "ping"]


def new_context(d, language="python", **kw):
    """POST /code/context; returns the context object."""
    st, h, body = d.request("POST", "/code/context",
                            body=dict(language=language, **kw), timeout=90)
    assert st == 200, body
    return json.loads(body)


def texts(evs, kind):
    """The text of every event of one kind, joined."""
    return "".join(e["text"] for e in evs if e["type"] == kind)


def interrupted_run(d, cid, code, after=1.0):
    """Run code in context cid and interrupt it (DELETE /code?id=) after
    a while, again each second until the run ends (a kernel may still be
    compiling when the first signal comes); the run's events."""
    import threading
    out = {}
    t = threading.Thread(target=lambda: out.update(r=run_code(
        d, code, id=cid)))
    t.start()
    time.sleep(after)
    deadline = time.monotonic() + 15
    while t.is_alive() and time.monotonic() < deadline:
        st, h, body = d.request("DELETE", "/code?id=" + cid)
        assert st == 200, body
        t.join(1.0)
    assert not t.is_alive(), "the run did not end"
    return out["r"][1]


def pings_during(d, work):
    """Run work() in a thread and GET /ping until it is done; when each
    ping was sent and answered (time.monotonic())."""
    th = threading.Thread(target=work)
    th.start()
    c = d.conn()
    spans = []
    while th.is_alive():
        t0 = time.monotonic()
        st, _, _ = d.request("GET", "/ping", conn=c)
        assert st == 200
        spans.append((t0, time.monotonic()))
    th.join()
    return spans


def answered_amid(spans, start, end):
    """Whether a ping was sent and answered within the middle half of
    [start, end]: work that held the loop thread there would leave none,
    however fast or slow the machine."""
    a, b = start + (end - start) / 4, end - (end - start) / 4
    return any(a <= s and e <= b for s, e in spans)


def user_with_groups():
    """A user of this machine with a supplementary group."""
    for g in grp.getgrall():
        for name in g.gr_mem:
            try:
                pw = pwd.getpwnam(name)
            except KeyError:
                continue
            if pw.pw_gid != g.gr_gid:
                return pw, g
    raise AssertionError("no user with a supplementary group here")


def alive(pid):
    """Whether pid runs (a zombie does not)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def attached_print(connection_file, name, timeout=60, **kw):
    """What a Jupyter client (jupyter_client, in a process of its own,
    run with subprocess's kw) attached to the kernel of connection_file
    prints of print(name)."""
    script = (
        "from jupyter_client import BlockingKernelClient\n"
        "c = BlockingKernelClient(connection_file=%r)\n"
        "c.load_connection_file(); c.start_channels()\n"
        "c.wait_for_ready(timeout=30)\n"
        "out = []\n"
        "c.execute_interactive('print(%s)', timeout=30,"
        " output_hook=lambda m: out.append("
        "m['content'].get('text', '')))\n"
        "print(''.join(out).strip())\n" % (connection_file, name))
    r = subprocess.run(["/usr/bin/python3", "-c", script],
                       capture_output=True, text=True, timeout=timeout, **kw)
    return r.stdout.strip(), r


def fork_serving(d, language="python", spec="python3", bound=60):
    """Start the fork server of a language's kernelspec (by making a
    context) and wait until it serves."""
    c = new_context(d, language=language)
    d.request("DELETE", "/code/contexts/" + c["id"])
    assert wait_for(lambda: re.search(r"fork server pid=\d+ for %s: "
                                      r"imports done, serving$" % spec,
                                      d.read_log(), re.M),
                    timeout=bound), d.read_log()[-3000:]


def install_spec(top, name, spec):
    """Kernelspec spec (kernel.json's object) as top/kernels/name, found
    by an execd with JUPYTER_PATH=top."""
    d = os.path.join(top, "kernels", name)
    os.makedirs(d)
    with open(os.path.join(d, "kernel.json"), "w") as f:
        json.dump(spec, f)


# The argv of a kernelspec "pyall", an ipykernel with an option of its own.
PYALL = {"argv": ["/usr/bin/python3", "-m", "ipykernel_launcher", "-f",
                  "{connection_file}",
                  "--InteractiveShell.ast_node_interactivity=all"],
         "display_name": "All", "language": "pyall"}


# --- REPL kernels (execd-repl-kernel and the tree's kernelspecs) ----------

def repl_kernel_bin():
    """The execd-repl-kernel built next to the execd under test."""
    return os.path.join(os.path.dirname(os.path.abspath(EXECD)),
                        "execd-repl-kernel")


def install_repl_kernel(top, language, name=None, repl=None):
    """The tree's kernelspec repl/kernels/<language> under
    top/kernels/<name> (name defaults to language), with argv[0] the built
    kernel and, if given, repl over its description."""
    with open(os.path.join(ROOT, "repl", "kernels", language,
                           "kernel.json")) as f:
        spec = json.load(f)
    spec["argv"][0] = repl_kernel_bin()
    if repl:
        spec["metadata"]["repl"].update(repl)
    d = os.path.join(top, "kernels", name or language)
    os.makedirs(d)
    with open(os.path.join(d, "kernel.json"), "w") as f:
        json.dump(spec, f)


class ReplContext:
    """An execd with the tree's kernelspec of language installed on
    JUPYTER_PATH, and one context of it; tool is the program the REPL
    needs on PATH.  run() returns a run's events, its status checked."""

    def __init__(self, language, tool, run_bound=120):
        self.language = language
        self.tool = tool
        self.run_bound = run_bound

    def __enter__(self):
        assert os.access(repl_kernel_bin(), os.X_OK), repl_kernel_bin()
        assert shutil.which(self.tool), \
            "no %s: run scripts/deps.sh" % self.tool
        self.top = tempfile.mkdtemp(prefix="execd-%s-" % self.language)
        install_repl_kernel(self.top, self.language)
        self.d = Execd(env={"JUPYTER_PATH": self.top}).start()
        self.ctx = new_context(self.d, self.language)
        assert self.ctx["language"] == self.language, self.ctx
        return self

    def run(self, code):
        st, evs = run_code(self.d, code, id=self.ctx["id"],
                           timeout=self.run_bound)
        assert st == 200, evs
        return evs

    def __exit__(self, *exc):
        self.d.__exit__(*exc)
        shutil.rmtree(self.top, ignore_errors=True)


def of_type(evs, kind):
    """The events of one type."""
    return [e for e in evs if e["type"] == kind]


def error_of(evs):
    """The last error event's error; there must be one."""
    errs = of_type(evs, "error")
    assert errs, ("no error event", evs)
    return errs[-1]["error"]
