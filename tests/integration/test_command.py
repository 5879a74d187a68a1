"""Shell commands: POST /command (foreground streams and background runs),
GET /command/status/{id}, GET /command/{id}/logs, DELETE /command and
DELETE /code on command ids, and POST /code with no language."""
import datetime
import json
import os
import pwd
import re
import shutil
import signal
import socket
import tempfile
import threading
import time

from lib import Execd, children_of, events, expect_error, kinds, wait_for

ID_RE = re.compile(r"^[0-9a-f]{32}$")
TIME_RE = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?"
                     r"(Z|[+-]\d\d:\d\d)$")
CURSOR = "execd-commands-tail-cursor"


# -- helpers ---------------------------------------------------------------

def run_cmd(d, command, wait=30, path="/command", **opts):
    """POST /command (or /code); (status, [events]) once the stream has
    ended, or (status, error object) for a plain JSON error.  wait is the
    client's bound; opts go into the request body."""
    body = dict(opts)
    if command is not None:
        body["code" if path == "/code" else "command"] = command
    st, h, data = d.request("POST", path, body=body, timeout=wait)
    if st != 200:
        return st, json.loads(data)
    assert h["content-type"].startswith("text/event-stream"), h
    assert h.get("transfer-encoding") == "chunked", h
    check_framing(data)
    return st, events(data)


def check_framing(data):
    """Each event: one compact JSON object on one line, then a blank line."""
    assert data.endswith(b"}\n\n"), data[-200:]
    for part in data[:-2].split(b"\n\n"):
        assert part.startswith(b"{") and b"\n" not in part, data
        ev = json.loads(part)
        assert isinstance(ev["type"], str), ev
        assert isinstance(ev["timestamp"], int), ev


def lines(evs, kind):
    """The text of every event of one kind, as a list (one per line)."""
    return [e["text"] for e in evs if e["type"] == kind]


def errors(evs):
    return [e["error"] for e in evs if e["type"] == "error"]


def assert_ok(evs):
    """A foreground stream that ended in success."""
    k = kinds(evs)
    assert k[0] == "init" and ID_RE.match(evs[0]["text"]), evs[:2]
    assert k[-1] == "execution_complete", evs
    assert k.count("execution_complete") == 1 and "error" not in k, evs


def assert_failed(evs, evalue):
    """A foreground stream that ended in one error event, evalue given;
    returns that error."""
    k = kinds(evs)
    assert k[0] == "init" and ID_RE.match(evs[0]["text"]), evs[:2]
    assert k[-1] == "error" and k.count("error") == 1, evs
    assert "execution_complete" not in k, evs
    err = errors(evs)[0]
    assert set(err) == {"ename", "evalue", "traceback"}, err
    assert err["ename"] == "CommandExecError", err
    assert err["evalue"] == evalue, err
    assert isinstance(err["traceback"], list) and err["traceback"], err
    return err


def status(d, cid):
    st, obj = d.get_json("/command/status/" + cid)
    assert st == 200, (st, obj)
    assert obj["id"] == cid, obj
    assert isinstance(obj["running"], bool), obj
    return obj


def parse_time(s):
    m = TIME_RE.match(s)
    assert m, "not RFC 3339: %r" % s
    frac = (m.group(2) or "0")[:6].ljust(6, "0")
    tz = "+00:00" if m.group(3) == "Z" else m.group(3)
    return datetime.datetime.fromisoformat(
        "%s.%s%s" % (m.group(1), frac, tz))


def finished(d, cid, timeout=10):
    """Wait until the command is no longer running; its status."""
    st = wait_for(lambda: (lambda s: s if not s["running"] else None)(
        status(d, cid)), timeout=timeout, step=0.05)
    assert st and not st["running"], "still running: %r" % (status(d, cid),)
    return st


def logs(d, cid, cursor=None):
    """GET /command/{id}/logs; (body bytes, cursor header as int)."""
    path = "/command/%s/logs" % cid
    if cursor is not None:
        path += "?cursor=%d" % cursor
    st, h, body = d.request("GET", path)
    assert st == 200, (st, body)
    assert h["content-type"].startswith("text/plain"), h
    assert CURSOR in h, h
    return body, int(h[CURSOR])


def background(d, command, **opts):
    """Start a background command; its id."""
    t0 = time.monotonic()
    st, evs = run_cmd(d, command, background=True, **opts)
    dt = time.monotonic() - t0
    assert st == 200, evs
    assert kinds(evs) == ["init", "execution_complete"], evs
    assert ID_RE.match(evs[0]["text"]), evs[0]
    # The stream closes at once; the command goes on by itself (the
    # background commands of these tests that run long run far longer).
    assert dt < 5, "background request took %.2fs" % dt
    return evs[0]["text"]


def procs_in_group(pgid):
    """pids (any state) whose process group is pgid."""
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % p) as f:
                st = f.read()
        except OSError:
            continue
        rest = st[st.rindex(")") + 2:].split()
        if int(rest[2]) == pgid:
            out.append(int(p))
    return out


def pid_alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


class Stream:
    """A POST /command stream read event by event."""

    def __init__(self, d, body, path="/command", timeout=30):
        self.c = d.conn(timeout)
        self.c.request("POST", path, body=json.dumps(body),
                       headers={"Content-Type": "application/json"})
        self.r = self.c.getresponse()
        assert self.r.status == 200, (self.r.status, self.r.read())
        self.evs = []
        self.ended = False

    def next(self):
        """The next event; None once the stream has ended."""
        while not self.ended:
            line = self.r.readline()
            if not line:
                self.ended = True
                break
            if line.strip():
                ev = json.loads(line)
                self.evs.append(ev)
                return ev
        return None

    def until(self, pred):
        while True:
            ev = self.next()
            assert ev is not None, "stream ended early: %r" % self.evs
            if pred(ev):
                return ev

    def rest(self):
        while self.next() is not None:
            pass
        self.c.close()
        return self.evs

    @property
    def id(self):
        return self.evs[0]["text"]


# -- foreground streams ----------------------------------------------------

def test_foreground_events_in_order():
    with Execd() as d:
        st, evs = run_cmd(d, "echo hello; echo errline >&2")
        assert st == 200, evs
        assert evs[0]["type"] == "init" and ID_RE.match(evs[0]["text"]), evs
        assert evs[1] == {"type": "ping", "text": "pong",
                          "timestamp": evs[1]["timestamp"]}, evs[1]
        assert lines(evs, "stdout") == ["hello"], evs
        assert lines(evs, "stderr") == ["errline"], evs
        assert_ok(evs)
        done = evs[-1]
        assert isinstance(done.get("execution_time", 0), int), done
        assert "text" not in done and "error" not in done, done
        assert evs[0]["timestamp"] <= done["timestamp"]
        # Every run gets its own id.
        st, evs2 = run_cmd(d, "true")
        assert evs2[0]["text"] != evs[0]["text"]


def test_execution_time_is_measured():
    with Execd() as d:
        st, evs = run_cmd(d, "sleep 0.3")
        assert_ok(evs)
        assert 250 <= evs[-1]["execution_time"] < 5000, evs[-1]


def test_output_arrives_one_event_per_line():
    with Execd() as d:
        st, evs = run_cmd(d, r"printf 'a\n\nb\n\n\nc\n'")
        assert lines(evs, "stdout") == ["a", "\n", "b", "\n", "\n", "c"], evs
        assert_ok(evs)
        st, evs = run_cmd(
            d, r"printf 'line1\nprog 10%%\rprog 20%%\rprog 30%%\nlast\n'")
        assert lines(evs, "stdout") == [
            "line1", "prog 10%", "prog 20%", "prog 30%", "last"], evs
        # CRLF is one terminator, also when \r and \n come apart in time.
        st, evs = run_cmd(d, r"printf 'x\r\ny\r\n'; printf 'p\r'; "
                          r"sleep 0.4; printf '\nq\n'")
        assert lines(evs, "stdout") == ["x", "y", "p", "q"], evs
        # An unterminated last line is flushed at exit, on both streams.
        st, evs = run_cmd(d, r"printf 'one\ntwo'; printf 'e1\ne2' >&2")
        assert lines(evs, "stdout") == ["one", "two"], evs
        assert lines(evs, "stderr") == ["e1", "e2"], evs
        assert_ok(evs)
        # A line written in pieces is one event.
        st, evs = run_cmd(d, "printf 'par'; sleep 0.3; printf 'tial\\n'")
        assert lines(evs, "stdout") == ["partial"], evs
        # No output: no stdout/stderr events at all.
        st, evs = run_cmd(d, "true")
        assert kinds(evs) == ["init", "execution_complete"], evs


def test_a_long_line_is_one_event():
    with Execd() as d:
        st, evs = run_cmd(d, "head -c 100000 /dev/zero | tr '\\0' x; echo")
        assert lines(evs, "stderr") == [] and not errors(evs), \
            [e for e in evs if e["type"] != "stdout"]
        out = lines(evs, "stdout")
        assert out == ["x" * 100000], [len(x) for x in out]
        assert_ok(evs)


def test_output_faster_than_the_client_reads_is_not_lost():
    # More than a pipe's worth at once: the command must block on its
    # output, never fail to write it.
    with Execd() as d:
        st, evs = run_cmd(d, "seq 1 20000", wait=60)
        assert lines(evs, "stderr") == [] and not errors(evs), \
            [e for e in evs if e["type"] != "stdout"]
        out = lines(evs, "stdout")
        assert out == [str(i) for i in range(1, 20001)], (len(out), out[-3:])
        assert_ok(evs)
        want = "".join("%d\n" % i for i in range(1, 20001)).encode()
        cid = background(d, "seq 1 20000")
        s = finished(d, cid)
        assert s["exit_code"] == 0 and not s.get("error"), s
        body, cur = logs(d, cid)
        assert body == want and cur == len(want), (len(body), body[-40:])


def test_invalid_utf8_output_is_valid_json():
    with Execd() as d:
        st, evs = run_cmd(d, r"printf 'ok\377\n'")
        assert lines(evs, "stdout") == ["ok\ufffd"], evs


def test_stdin_is_empty():
    with Execd() as d:
        st, evs = run_cmd(d, "cat; echo end", wait=10)
        assert lines(evs, "stdout") == ["end"], evs
        assert_ok(evs)


def test_nonzero_exit_is_an_error_event():
    with Execd() as d:
        st, evs = run_cmd(d, "echo before; exit 3")
        assert st == 200
        assert lines(evs, "stdout") == ["before"], evs
        err = assert_failed(evs, "3")
        assert err["traceback"] == ["exit status 3"], err
        st, evs = run_cmd(d, "false")
        assert assert_failed(evs, "1")["traceback"] == ["exit status 1"]


def test_killed_by_a_signal():
    with Execd() as d:
        st, evs = run_cmd(d, "echo x; kill -KILL $$")
        err = assert_failed(evs, "-1")
        assert err["traceback"] == ["signal: killed"], err
        st, evs = run_cmd(d, "kill -TERM $$")
        err = assert_failed(evs, "-1")
        assert err["traceback"] == ["signal: terminated"], err


def test_stream_ends_right_after_the_last_event():
    # Upstream lingers 1 s after every command; execd must not.
    with Execd() as d:
        run_cmd(d, "true")       # warm up
        for cmd in ("true", "false"):
            took = []
            for _ in range(3):
                t0 = time.monotonic()
                st, evs = run_cmd(d, cmd)
                took.append(time.monotonic() - t0)
                assert st == 200 and kinds(evs)[-1] in (
                    "execution_complete", "error"), evs
            # A linger would be in every run; load is not.
            assert min(took) < 0.8, "%r took %r" % (cmd, took)


def test_commands_run_in_parallel():
    with Execd() as d:
        out = {}
        t = threading.Thread(target=lambda: out.update(r=run_cmd(
            d, "sleep 4; echo slow")))
        t.start()
        time.sleep(0.2)
        st, evs = run_cmd(d, "echo fast")
        assert lines(evs, "stdout") == ["fast"], evs
        assert t.is_alive(), "the fast command waited for the slow one"
        t.join(15)
        assert lines(out["r"][1], "stdout") == ["slow"], out


# -- timeouts --------------------------------------------------------------

def test_timeout_ends_the_command_with_an_error():
    with Execd("--grace-period", "500") as d:
        t0 = time.monotonic()
        st, evs = run_cmd(d, "echo started; sleep 30", wait=20,
                          timeout=300)
        dt = time.monotonic() - t0
        assert 0.25 < dt < 5, dt
        assert lines(evs, "stdout") == ["started"], evs
        err = assert_failed(evs, "-1")
        assert "timeout" in " ".join(err["traceback"]).lower(), err
        s = status(d, evs[0]["text"])
        assert s["running"] is False and s["exit_code"] == -1, s
        assert s.get("error"), s
        # 0 means no timeout.
        st, evs = run_cmd(d, "sleep 0.2; echo fine", timeout=0)
        assert lines(evs, "stdout") == ["fine"]
        assert_ok(evs)


def test_timeout_kills_a_tree_that_ignores_sigterm():
    with Execd("--grace-period", "500") as d:
        t0 = time.monotonic()
        st, evs = run_cmd(
            d, "echo $$; (trap '' TERM; exec sleep 100) & echo $!; wait",
            wait=30, timeout=500)
        assert time.monotonic() - t0 < 10
        out = lines(evs, "stdout")
        assert len(out) == 2 and all(x.isdigit() for x in out), evs
        err = assert_failed(evs, "-1")
        assert "timeout" in " ".join(err["traceback"]).lower(), err
        leader, grandchild = int(out[0]), int(out[1])
        assert wait_for(lambda: not procs_in_group(leader), timeout=8), \
            procs_in_group(leader)
        assert not pid_alive(grandchild)
        assert d.request("GET", "/ping")[0] == 200


# -- process hygiene -------------------------------------------------------

def test_no_leaks_after_many_commands():
    with Execd() as d:
        c = d.conn(30)
        run_cmd(d, "true")
        run_cmd(d, "false")
        run_cmd(d, "echo warm")
        assert wait_for(lambda: not children_of(d.proc.pid), timeout=5)
        base = d.fds()
        for i in range(300):
            kind = i % 3
            cmd = ("true", "false", "echo n%d" % i)[kind]
            # Half on one keep-alive connection, half on new ones.
            st, h, data = d.request("POST", "/command", body={"command": cmd},
                                    conn=c if i % 2 else None, timeout=30)
            assert st == 200, data
            evs = events(data)
            if kind == 0:
                assert_ok(evs)
            elif kind == 1:
                assert_failed(evs, "1")
            else:
                assert lines(evs, "stdout") == ["n%d" % i], evs
        c.close()
        assert wait_for(lambda: not children_of(d.proc.pid), timeout=5), \
            children_of(d.proc.pid)
        assert wait_for(lambda: d.fds() <= base, timeout=5), (d.fds(), base)


def test_grandchild_holding_stdout_does_not_hold_the_stream():
    with Execd() as d:
        t0 = time.monotonic()
        st, evs = run_cmd(d, "sleep 30 & echo $!; echo done", wait=20)
        dt = time.monotonic() - t0
        out = lines(evs, "stdout")
        try:
            assert out[1:] == ["done"] and out[0].isdigit(), evs
            assert_ok(evs)
            assert dt < 10, "stream took %.2fs" % dt    # not 30
        finally:
            if out and out[0].isdigit():
                try:
                    os.kill(int(out[0]), signal.SIGKILL)
                except OSError:
                    pass
        assert wait_for(lambda: not children_of(d.proc.pid), timeout=5), \
            children_of(d.proc.pid)


def test_client_disconnect_does_not_break_the_daemon():
    tmp = tempfile.mkdtemp(prefix="execd-cmd-")
    try:
        marker = os.path.join(tmp, "marker")
        with Execd() as d:
            run_cmd(d, "echo warm")
            base = d.fds()
            body = json.dumps({"command": (
                "for i in $(seq 1 30); do echo line $i; echo err $i >&2; "
                "sleep 0.05; done; echo done > %s" % marker)}).encode()
            s = socket.create_connection((d.host, d.port), 10)
            s.sendall(b"POST /command HTTP/1.1\r\nHost: x\r\n"
                      b"Content-Type: application/json\r\n"
                      b"Content-Length: %d\r\n\r\n" % len(body) + body)
            data = b""
            while not re.search(rb'"init".*?\n\n', data, re.S):
                chunk = s.recv(4096)
                assert chunk, data
                data += chunk
            assert data.startswith(b"HTTP/1.1 200"), data
            cid = re.search(rb'"text":"([0-9a-f]{32})"', data).group(1)
            s.close()
            cid = cid.decode()
            assert d.request("GET", "/ping")[0] == 200
            # The command goes on and ends by itself.
            s1 = status(d, cid)
            assert s1["content"].startswith("for i in"), s1
            s2 = finished(d, cid, timeout=15)
            assert s2["exit_code"] == 0, s2
            assert read(marker) == "done\n"
            st, evs = run_cmd(d, "echo after")
            assert lines(evs, "stdout") == ["after"], evs
            assert wait_for(lambda: d.fds() <= base, timeout=5), \
                (d.fds(), base)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# -- background commands, status and logs ----------------------------------

def test_background_command_status_and_logs():
    with Execd() as d:
        cmd = ("echo bg-out; sleep 0.2; echo bg-err >&2; sleep 1.2; "
               "printf 'tail\\r\\nno-newline'; exit 3")
        cid = background(d, cmd)
        s = status(d, cid)
        assert s["running"] is True, s
        assert s["content"] == cmd, s
        assert "exit_code" not in s and "finished_at" not in s, s
        started = parse_time(s["started_at"])
        # Output so far, while it runs.
        first = wait_for(lambda: (lambda r: r if b"bg-err" in r[0] else None)(
            logs(d, cid, 0)), timeout=5)
        assert first, logs(d, cid, 0)
        body, cur = first
        assert body == b"bg-out\nbg-err\n", body
        assert cur == len(body), (cur, body)
        assert logs(d, cid) == (body, cur)          # cursor defaults to 0
        assert logs(d, cid, cur) == (b"", cur)      # nothing new yet
        s = finished(d, cid)
        assert s["exit_code"] == 3 and s["error"] == "exit status 3", s
        assert s["content"] == cmd, s
        assert parse_time(s["finished_at"]) >= started, s
        assert parse_time(s["started_at"]) == started, s
        # The rest, raw (CR kept), from the cursor; then nothing more.
        rest, cur2 = logs(d, cid, cur)
        assert rest == b"tail\r\nno-newline", rest
        assert cur2 == cur + len(rest), (cur, cur2)
        assert logs(d, cid, cur2) == (b"", cur2)
        full, end = logs(d, cid, 0)
        assert full == body + rest and end == cur2, full
        assert logs(d, cid, 4) == (full[4:], end)
        # A cursor past the end is clamped to it, as upstream 1.1.
        assert logs(d, cid, end + 1000) == (b"", end)
        assert logs(d, cid, 2 ** 62) == (b"", end)


def test_background_output_is_not_streamed_and_survives_the_request():
    tmp = tempfile.mkdtemp(prefix="execd-cmd-")
    try:
        marker = os.path.join(tmp, "bg")
        with Execd() as d:
            cid = background(d, "echo now; sleep 0.7; echo later > " + marker)
            assert not os.path.exists(marker)
            assert wait_for(lambda: read(marker) == "later\n", timeout=10)
            s = finished(d, cid)
            assert s["exit_code"] == 0 and not s.get("error"), s
            assert logs(d, cid, 0)[0] == b"now\n"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_status_of_a_foreground_command():
    with Execd() as d:
        st, evs = run_cmd(d, "true")
        cid = evs[0]["text"]
        s = status(d, cid)
        assert s["content"] == "true" and s["running"] is False, s
        assert s["exit_code"] == 0 and not s.get("error"), s
        assert parse_time(s["started_at"]) <= parse_time(s["finished_at"])
        st, evs = run_cmd(d, "exit 3")
        s = status(d, evs[0]["text"])
        assert s["exit_code"] == 3 and s["error"] == "exit status 3", s
        assert s["running"] is False and "finished_at" in s, s


def gone(d, cid):
    """Whether the command is forgotten: status and logs are 404."""
    st, h, body = d.request("GET", "/command/status/" + cid)
    if st != 404:
        return False
    st, h, body = d.request("GET", "/command/%s/logs" % cid)
    return st == 404


def test_finished_commands_are_kept_within_a_count():
    tmp = tempfile.mkdtemp(prefix="execd-keep-")
    try:
        with Execd("--keep-commands", "3", env={"TMPDIR": tmp}) as d:
            ids = []
            for i in range(6):
                ids.append(background(d, "echo out-%d" % i))
                finished(d, ids[-1])
            # The three oldest go, with their files; the others stay.
            assert wait_for(lambda: all(gone(d, c) for c in ids[:3]),
                            timeout=10), [status(d, c) for c in ids[:3]
                                          if not gone(d, c)]
            for i, c in enumerate(ids[3:], 3):
                assert status(d, c)["exit_code"] == 0
                assert logs(d, c) == (b"out-%d\n" % i, 6)
            files = os.listdir("%s/execd-%d" % (tmp, d.proc.pid))
            assert sorted(f for f in files if f.endswith(".output")) == \
                sorted(c + ".output" for c in ids[3:]), files
            # Foreground ones count too, and a running one is never
            # forgotten, whatever its age.
            runner = background(d, "sleep 30")
            for i in range(4):
                st, evs = run_cmd(d, "echo fg-%d" % i)
                assert_ok(evs)
            assert wait_for(lambda: all(gone(d, c) for c in ids),
                            timeout=10)
            assert status(d, runner)["running"] is True
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_finished_commands_are_kept_within_a_size():
    tmp = tempfile.mkdtemp(prefix="execd-keep-")
    try:
        with Execd("--keep-commands-size", "100K",
                   env={"TMPDIR": tmp}) as d:
            ids = []
            for i in range(3):
                ids.append(background(d, "head -c 40000 /dev/zero"))
                finished(d, ids[-1])
            # 120000 bytes over 102400: the oldest goes, 80000 stay.
            assert wait_for(lambda: gone(d, ids[0]), timeout=10)
            for c in ids[1:]:
                assert logs(d, c) == (b"\0" * 40000, 40000)
            # A foreground command's history counts as well.
            st, evs = run_cmd(d, "head -c 60000 /dev/zero | tr '\\0' a")
            assert_ok(evs)
            assert wait_for(lambda: gone(d, ids[1]), timeout=10)
            assert not gone(d, ids[2])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_status_and_logs_errors():
    with Execd() as d:
        st, h, body = d.request("GET", "/command/status/" + "0" * 32)
        expect_error(st, body, 404, "INVALID_REQUEST_BODY")
        assert h["content-type"].startswith("application/json"), h
        st, h, body = d.request("GET", "/command/status/nope")
        expect_error(st, body, 404, "INVALID_REQUEST_BODY")
        st, h, body = d.request("GET", "/command/%s/logs" % ("0" * 32))
        expect_error(st, body, 404)
        # Logs are for background commands only.
        st, evs = run_cmd(d, "echo fg")
        st, h, body = d.request("GET", "/command/%s/logs" % evs[0]["text"])
        expect_error(st, body, 400)
        cid = background(d, "echo bg")
        assert wait_for(lambda: logs(d, cid)[0] == b"bg\n", timeout=5)
        st, h, body = d.request("GET", "/command/%s/logs?cursor=-1" % cid)
        expect_error(st, body, 400)


# -- interrupt -------------------------------------------------------------

def test_interrupt_a_foreground_command():
    with Execd() as d:
        s = Stream(d, {"command": "echo ready; sleep 30"})
        s.until(lambda e: e["type"] == "stdout" and e["text"] == "ready")
        cid = s.id
        assert status(d, cid)["running"] is True
        t0 = time.monotonic()
        st, h, body = d.request("DELETE", "/command?id=" + cid)
        assert st == 200 and body == b"", (st, body)
        evs = s.rest()
        assert time.monotonic() - t0 < 5
        err = assert_failed(evs, "-1")
        assert err["traceback"][0].startswith("signal: "), err
        s2 = status(d, cid)
        assert s2["running"] is False and s2["exit_code"] == -1, s2
        # Finished: 409; unknown: 404; no id: 400.
        st, h, body = d.request("DELETE", "/command?id=" + cid)
        expect_error(st, body, 409)
        st, h, body = d.request("DELETE", "/command?id=" + "0" * 32)
        expect_error(st, body, 404)
        st, h, body = d.request("DELETE", "/command")
        expect_error(st, body, 400, "MISSING_QUERY")
        st, h, body = d.request("DELETE", "/command?id=")
        expect_error(st, body, 400, "MISSING_QUERY")


def test_interrupt_a_command_that_traps_sigterm():
    with Execd() as d:
        s = Stream(d, {"command": "trap 'echo got-term; exit 7' TERM; "
                       "echo ready; sleep 30 & wait"})
        s.until(lambda e: e["type"] == "stdout" and e["text"] == "ready")
        st, h, body = d.request("DELETE", "/command?id=" + s.id)
        assert st == 200 and body == b"", (st, body)
        evs = s.rest()
        assert lines(evs, "stdout") == ["ready", "got-term"], evs
        err = assert_failed(evs, "7")
        assert err["traceback"] == ["exit status 7"], err


def test_interrupt_background_commands_by_command_and_code():
    with Execd() as d:
        for path in ("/command", "/code"):
            cid = background(d, "sleep 30")
            assert status(d, cid)["running"] is True
            st, h, body = d.request("DELETE", "%s?id=%s" % (path, cid))
            assert st == 200 and body == b"", (path, st, body)
            s = finished(d, cid, timeout=5)
            assert s["exit_code"] == -1 and "signal" in s["error"], s
            st, h, body = d.request("DELETE", "%s?id=%s" % (path, cid))
            expect_error(st, body, 409)
        st, h, body = d.request("DELETE", "/code")
        expect_error(st, body, 400, "MISSING_QUERY")


def test_interrupt_escalates_to_sigkill():
    with Execd("--grace-period", "500") as d:
        cid = background(d, "trap '' TERM; echo armed; sleep 30; echo nope")
        assert wait_for(lambda: logs(d, cid)[0] == b"armed\n", timeout=5)
        t0 = time.monotonic()
        st, h, body = d.request("DELETE", "/command?id=" + cid)
        assert st == 200, body
        s = finished(d, cid, timeout=8)
        assert time.monotonic() - t0 < 8
        assert s["exit_code"] != 0, s
        assert logs(d, cid)[0] == b"armed\n"
        assert wait_for(lambda: not children_of(d.proc.pid), timeout=5), \
            children_of(d.proc.pid)


def test_interrupt_a_foreground_command_through_delete_code():
    with Execd() as d:
        s = Stream(d, {"command": "echo ready; sleep 30"})
        s.until(lambda e: e["type"] == "stdout")
        st, h, body = d.request("DELETE", "/code?id=" + s.id)
        assert st == 200, body
        assert_failed(s.rest(), "-1")


# -- a stopped command's whole tree ---------------------------------------

def sleepers(secs):
    """pids of live `sleep SECS` processes (SECS unique to one test)."""
    want = b"sleep\0%d\0" % secs
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % p, "rb") as f:
                if f.read() == want and pid_alive(int(p)):
                    out.append(int(p))
        except OSError:
            continue
    return out


def kill_pids(pids):
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass


def tree_command(secs):
    """32 sleepers: 10 in the job's group, 10 under set -m (groups of
    their own), 5 under setsid with the shell as parent, 5 under setsid
    whose parent exits at once (orphans, adopted by execd), and 2 such
    orphans that ignore SIGTERM."""
    s = "sleep %d" % secs
    return ("for i in 1 2 3 4 5 6 7 8 9 10; do %s & done; "
            "set -m; for i in 1 2 3 4 5 6 7 8 9 10; do %s & done; set +m; "
            "for i in 1 2 3 4 5; do setsid %s & done; "
            "for i in 1 2 3 4 5; do (setsid %s &); done; "
            "for i in 1 2; do (trap '' TERM; setsid %s &); done; "
            "echo ready; wait" % (s, s, s, s, s))


def wait_all_running(secs, n=32):
    """Wait until the n sleepers of tree_command(secs) all run."""
    assert wait_for(lambda: len(sleepers(secs)) >= n, timeout=10), \
        sleepers(secs)


def test_delete_stops_the_whole_tree():
    secs = 700000 + os.getpid() % 10000
    try:
        with Execd("--grace-period", "500") as d:
            s = Stream(d, {"command": tree_command(secs)})
            s.until(lambda e: e["type"] == "stdout" and e["text"] == "ready")
            wait_all_running(secs)
            st, h, body = d.request("DELETE", "/command?id=" + s.id)
            assert st == 200, body
            assert_failed(s.rest(), "-1")
            assert wait_for(lambda: not sleepers(secs), timeout=6), \
                "%d left: %r" % (len(sleepers(secs)), sleepers(secs))
            assert d.request("GET", "/ping")[0] == 200
    finally:
        kill_pids(sleepers(secs))


def test_timeout_stops_the_whole_tree():
    secs = 710000 + os.getpid() % 10000
    try:
        with Execd("--grace-period", "500") as d:
            cid = background(d, tree_command(secs), timeout=4000)
            wait_all_running(secs)
            s = finished(d, cid, timeout=20)
            assert s["exit_code"] == -1 and "timeout" in s["error"], s
            assert wait_for(lambda: not sleepers(secs), timeout=6), \
                "%d left: %r" % (len(sleepers(secs)), sleepers(secs))
    finally:
        kill_pids(sleepers(secs))


def test_stop_spares_other_commands_and_their_leftovers():
    # A nohup'd server of a command that ended by itself, and a command
    # still running, both outlive the DELETE of a third command.
    secs = 720000 + os.getpid() % 10000
    try:
        with Execd("--grace-period", "500") as d:
            cid = background(d, "(setsid nohup sleep %d >/dev/null 2>&1 &)"
                             % secs)
            finished(d, cid)
            other = background(d, "(setsid sleep %d &); sleep 60" %
                               (secs + 1))
            victim = background(d, "sleep 60")
            assert wait_for(lambda: sleepers(secs) and sleepers(secs + 1),
                            timeout=5)
            st, h, body = d.request("DELETE", "/command?id=" + victim)
            assert st == 200, body
            finished(d, victim, timeout=5)
            time.sleep(1)
            assert sleepers(secs) and sleepers(secs + 1)
            assert status(d, other)["running"] is True
    finally:
        kill_pids(sleepers(secs) + sleepers(secs + 1))


def test_every_command_gets_its_own_mark():
    with Execd(env={"EXECD_JOB": "inherited"}) as d:
        marks = []
        for i in range(2):
            st, evs = run_cmd(d, 'echo "$EXECD_JOB"; env | grep -c '
                              '"^EXECD_JOB="')
            out = lines(evs, "stdout")
            assert len(out) == 2 and re.match(r"^[0-9a-f]{16}$", out[0]) \
                and out[1] == "1", evs
            marks.append(out[0])
        assert marks[0] != marks[1], marks


def test_a_command_that_ends_by_itself_leaves_its_nohup_server():
    secs = 730000 + os.getpid() % 10000
    try:
        with Execd("--grace-period", "500") as d:
            st, evs = run_cmd(d, "nohup sleep %d >/dev/null 2>&1 & "
                              "echo started" % secs)
            assert lines(evs, "stdout") == ["started"], evs
            assert_ok(evs)
            assert wait_for(lambda: sleepers(secs), timeout=5)
            time.sleep(1.5)
            assert sleepers(secs), "the nohup'd process was killed"
    finally:
        kill_pids(sleepers(secs))


def test_a_background_command_that_ends_leaves_its_nohup_server():
    # Upstream 1.1.1 (#2074): the end of a background command's script no
    # longer kills its process group, so `nohup server &` in it lives on.
    secs = 740000 + os.getpid() % 10000
    try:
        with Execd("--grace-period", "500") as d:
            cid = background(d, "nohup sleep %d >/dev/null 2>&1 & echo $!"
                             % secs)
            s = finished(d, cid)
            assert s["exit_code"] == 0, s
            pid = int(logs(d, cid)[0])
            assert wait_for(lambda: sleepers(secs) == [pid], timeout=5), \
                (sleepers(secs), pid)
            # In the command's own group, not one of its own.
            assert os.getpgid(pid) != pid
            time.sleep(1.5)
            assert sleepers(secs) == [pid], "the nohup'd process was killed"
    finally:
        kill_pids(sleepers(secs))


# -- request validation ----------------------------------------------------

def test_invalid_requests_are_plain_json_errors():
    tmp = tempfile.mkdtemp(prefix="execd-cmd-")
    try:
        afile = os.path.join(tmp, "file")
        open(afile, "w").close()
        with Execd() as d:
            def bad(body, *words):
                st, h, data = d.request("POST", "/command", body=body)
                obj = expect_error(st, data, 400, "INVALID_REQUEST_BODY")
                assert h["content-type"].startswith("application/json"), h
                for w in words:
                    assert w in obj["message"], (w, obj)
                return obj
            bad({})
            bad({"command": ""})
            bad({"command": "true", "timeout": -1})
            bad({"command": "true", "gid": 0})
            bad({"command": "true", "uid": 4000000}, "4000000")
            bad({"command": "true", "cwd": "/no/such/dir-x1"},
                "/no/such/dir-x1")
            bad({"command": "true", "cwd": afile})
            bad({"command": "true", "envs": ["A=1"]}, "envs")
            bad({"command": "true", "envs": {"A": 1}}, "envs")
            bad({"command": "true", "envs": "A=1"}, "envs")
            bad({"command": "true", "timeout": "soon"}, "timeout")
            bad("{bad")
            # Nothing ran, nothing was left behind.
            assert not children_of(d.proc.pid)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# -- environment, working directory, identity ------------------------------

def test_cwd_and_home_expansion():
    home = tempfile.mkdtemp(prefix="execd-home-")
    try:
        os.mkdir(os.path.join(home, "x"))
        real = os.path.realpath(home)
        with Execd(env={"HOME": home}) as d:
            st, evs = run_cmd(d, "pwd -P", cwd="~")
            assert lines(evs, "stdout") == [real], evs
            st, evs = run_cmd(d, "pwd -P", cwd="~/x")
            assert lines(evs, "stdout") == [os.path.join(real, "x")], evs
            st, evs = run_cmd(d, "pwd -P", cwd="/")
            assert lines(evs, "stdout") == ["/"], evs
            cid = background(d, "pwd -P", cwd="~/x")
            finished(d, cid)
            assert logs(d, cid)[0] == (os.path.join(real, "x") + "\n"
                                       ).encode()
            st, evs = run_cmd(d, "true", cwd="~/missing")
            assert st == 400, evs
    finally:
        shutil.rmtree(home, ignore_errors=True)


def test_envs_are_merged_over_execd_environment():
    home = tempfile.mkdtemp(prefix="execd-home-")
    try:
        with Execd(env={"HOME": home, "BASEVAR": "from-daemon",
                        "OVERRIDE": "old"}) as d:
            st, evs = run_cmd(
                d, 'echo $FOO $HOME; echo $BASEVAR; echo $OVERRIDE; '
                'printf "%s\\n" "$SPACED"',
                envs={"FOO": "bar", "OVERRIDE": "new", "SPACED": "a b=c"})
            assert lines(evs, "stdout") == [
                "bar " + home, "from-daemon", "new", "a b=c"], evs
            # Not kept for the next command.
            st, evs = run_cmd(d, 'echo "${FOO-unset}" $OVERRIDE')
            assert lines(evs, "stdout") == ["unset old"], evs
            cid = background(d, "echo $FOO", envs={"FOO": "bg"})
            finished(d, cid)
            assert logs(d, cid)[0] == b"bg\n"
    finally:
        shutil.rmtree(home, ignore_errors=True)


def test_uid_and_gid():
    if os.geteuid() != 0:
        return          # needs root to switch users
    pw = pwd.getpwuid(65534)
    groups = {str(g) for g in os.getgrouplist(pw.pw_name, pw.pw_gid)}
    with Execd() as d:
        st, evs = run_cmd(d, "id -u; id -g; id -G", uid=65534, cwd="/")
        out = lines(evs, "stdout")
        assert out[:2] == ["65534", str(pw.pw_gid)], evs
        assert set(out[2].split()) == groups, (out, groups)
        assert_ok(evs)
        st, evs = run_cmd(d, "id -u; id -g; id -G", uid=65534, gid=65534,
                          cwd="/")
        out = lines(evs, "stdout")
        assert out[:2] == ["65534", "65534"], evs
        assert "0" not in out[2].split(), out
        # An explicit gid other than the user's primary one.
        st, evs = run_cmd(d, "id -u; id -g; id -G", uid=65534, gid=100,
                          cwd="/")
        out = lines(evs, "stdout")
        assert out[:2] == ["65534", "100"], evs
        assert "100" in out[2].split() and "0" not in out[2].split(), out
        cid = background(d, "id -u", uid=65534, cwd="/")
        finished(d, cid)
        assert logs(d, cid)[0] == b"65534\n"


# -- POST /code without a language -----------------------------------------

def test_code_without_language_is_a_shell_command():
    with Execd() as d:
        st, evs = run_cmd(d, "echo hi", path="/code")
        assert st == 200, evs
        assert lines(evs, "stdout") == ["hi"], evs
        assert_ok(evs)
        s = status(d, evs[0]["text"])
        assert s["content"] == "echo hi" and s["exit_code"] == 0, s
        st, evs = run_cmd(d, "printf 'a\\n\\nb\\n'; exit 2", path="/code")
        assert lines(evs, "stdout") == ["a", "\n", "b"], evs
        assert assert_failed(evs, "2")["traceback"] == ["exit status 2"]
        took = []
        for _ in range(3):
            t0 = time.monotonic()
            run_cmd(d, "true", path="/code")
            took.append(time.monotonic() - t0)
        assert min(took) < 0.8, took     # no linger after the command
