"""Additions to shell commands: numbered events (seq), GET
/command/{id}/stream?after=N (reattach and replay), POST
/command/{id}/stdin, and process hygiene over a thousand commands."""
import hashlib
import json
import os
import shutil
import socket
import tempfile
import time

from lib import Execd, children_of, events, expect_error, kinds, wait_for
from test_command import (Stream, assert_failed, assert_ok, background,
                          check_framing, finished, lines, run_cmd, status)


# -- helpers ---------------------------------------------------------------

class Reattach(Stream):
    """A GET /command/{id}/stream read event by event, as Stream reads."""

    def __init__(self, d, cid, after=None, timeout=30):
        path = "/command/%s/stream" % cid
        if after is not None:
            path += "?after=%s" % after
        self.c = d.conn(timeout)
        self.c.request("GET", path)
        self.r = self.c.getresponse()
        assert self.r.status == 200, (self.r.status, self.r.read())
        assert self.r.getheader("content-type") == "text/event-stream"
        self.evs = []
        self.ended = False


def reattach(d, cid, after=None, timeout=30):
    """The whole reattached stream: (status, events or error object)."""
    path = "/command/%s/stream" % cid
    if after is not None:
        path += "?after=%s" % after
    st, h, data = d.request("GET", path, timeout=timeout)
    if st != 200:
        return st, json.loads(data)
    assert h["content-type"] == "text/event-stream", h
    if data:
        check_framing(data)
    return st, events(data)


def numbered(evs):
    """The events that are the command's own (everything but pings)."""
    return [e for e in evs if e["type"] != "ping"]


def assert_numbered(evs, first=1):
    """seq on every event but pings, rising by one from first."""
    got = numbered(evs)
    assert [e.get("seq") for e in got] == list(
        range(first, first + len(got))), [(e["type"], e.get("seq"))
                                          for e in got]
    for e in evs:
        if e["type"] == "ping":
            assert "seq" not in e, e
    # seq is the last field on the wire, after the upstream ones.
    return got


def cmd_files(d, cid, tmpdir):
    """{name: size} of this command's files in execd's directory (execd
    ran with TMPDIR=tmpdir)."""
    base = os.path.join(tmpdir, "execd-%d" % d.proc.pid)
    out = {}
    for name in os.listdir(base):
        if name.startswith(cid):
            out[name] = os.path.getsize(os.path.join(base, name))
    return out


# -- sequence numbers ------------------------------------------------------

def test_every_event_is_numbered_pings_are_not():
    with Execd() as d:
        st, h, data = d.request("POST", "/command", body={
            "command": "echo a; echo b >&2; sleep 0.1; printf 'c'; exit 4"})
        assert st == 200
        evs = events(data)
        got = assert_numbered(evs)
        assert [e["type"] for e in got] == [
            "init", "stdout", "stderr", "stdout", "error"], got
        # Upstream's fields first, in upstream's order; seq last.
        first = data.split(b"\n\n")[0]
        assert first.startswith(b'{"type":"init","text":"') and \
            first.endswith(b',"seq":1}'), first
        assert_failed(evs, "4")
        st, evs = run_cmd(d, "true")
        assert [(e["type"], e["seq"]) for e in numbered(evs)] == [
            ("init", 1), ("execution_complete", 2)], evs


def test_background_answer_numbers_init_only():
    # The execution_complete of a background answer only says the command
    # started: it is not one of its events.
    with Execd() as d:
        st, evs = run_cmd(d, "sleep 0.2", background=True)
        assert kinds(evs) == ["init", "execution_complete"], evs
        assert evs[0]["seq"] == 1 and "seq" not in evs[1], evs


def test_session_runs_are_numbered():
    with Execd() as d:
        st, h, data = d.request("POST", "/session", body={})
        sid = json.loads(data)["session_id"]
        for cmd in ("echo one; echo two >&2", "false"):
            st, h, data = d.request("POST", "/session/%s/run" % sid,
                                    body={"command": cmd})
            assert st == 200, data
            evs = events(data)
            got = assert_numbered(evs)
            assert got[0]["type"] == "init" and got[0]["text"] == sid
            assert got[-1]["type"] in ("execution_complete", "error")


# -- reattach --------------------------------------------------------------

def test_reattach_mid_run_replays_then_follows():
    with Execd() as d:
        s = Stream(d, {"command": "for i in 1 2 3 4 5 6; do echo out$i; "
                       "echo err$i >&2; sleep 0.15; done; exit 3"})
        s.until(lambda e: e.get("text") == "err2")
        seen = s.evs[-1]["seq"]
        # Two readers at once, from the start and from what was seen.
        a = Reattach(d, s.id, after=0)
        b = Reattach(d, s.id, after=seen)
        a.until(lambda e: e["type"] == "stdout")
        orig = numbered(s.rest())
        ra, rb = numbered(a.rest()), numbered(b.rest())
        assert_failed(orig, "3")
        # The same events, byte for byte: timestamps included.
        assert ra == orig, (ra, orig)
        assert rb == [e for e in orig if e["seq"] > seen], (rb, seen)
        assert rb[0]["seq"] == seen + 1
        assert lines(ra, "stdout") == ["out%d" % i for i in range(1, 7)]


def test_reattach_after_the_command_finished():
    with Execd() as d:
        st, orig = run_cmd(d, "printf 'a\\n\\nb\\r\\nc'; echo e >&2")
        orig = numbered(orig)
        cid = orig[0]["text"]
        last = orig[-1]["seq"]
        for after in (None, 0, 1, 3, last - 1):
            st, evs = reattach(d, cid, after)
            assert st == 200, evs
            want = [e for e in orig if e["seq"] > (after or 0)]
            assert numbered(evs) == want, (after, evs, want)
        # Everything seen: the stream just ends.
        for after in (last, last + 100):
            t0 = time.monotonic()
            st, evs = reattach(d, cid, after)
            assert st == 200 and evs == [], (after, evs)
            assert time.monotonic() - t0 < 5    # ended, not held open
        # A failed command replays its error event.
        st, orig = run_cmd(d, "echo x; exit 7")
        st, evs = reattach(d, orig[0]["text"], 1)
        assert numbered(evs) == numbered(orig)[1:], evs
        assert_failed(orig, "7")


def test_reattach_to_a_background_command_gives_its_lines():
    with Execd() as d:
        cid = background(d, "echo one; echo two >&2; sleep 0.6; "
                         "printf 'three\\n\\nfour'; exit 2")
        r = Reattach(d, cid)
        ev = r.until(lambda e: e["type"] != "ping")
        assert ev["type"] == "init" and ev["text"] == cid and ev["seq"] == 1
        r.until(lambda e: e.get("text") == "two")
        assert status(d, cid)["running"] is True
        evs = numbered(r.rest())
        # One file holds stdout and stderr: every line is a stdout event.
        assert [(e["type"], e.get("text")) for e in evs[:-1]] == [
            ("init", cid), ("stdout", "one"), ("stdout", "two"),
            ("stdout", "three"), ("stdout", "\n"), ("stdout", "four")], evs
        assert_numbered(evs)
        err = evs[-1]["error"]
        assert err["evalue"] == "2" and err["traceback"] == [
            "exit status 2"], err
        # After it ended: the same numbers, from any point.
        st, again = reattach(d, cid)
        again = numbered(again)
        assert [(e["type"], e.get("text"), e["seq"]) for e in again] == [
            (e["type"], e.get("text"), e["seq"]) for e in evs], again
        assert again[-1] == evs[-1]
        st, tail = reattach(d, cid, 4)
        assert [e["seq"] for e in numbered(tail)] == [5, 6, 7], tail
        # A background command that succeeded completes.
        cid = background(d, "echo fine")
        finished(d, cid)
        st, evs = reattach(d, cid)
        assert [e["type"] for e in numbered(evs)] == [
            "init", "stdout", "execution_complete"], evs
        assert evs[-1].get("execution_time", 0) < 5000, evs[-1]


def test_a_reader_that_leaves_does_not_touch_the_command():
    with Execd() as d:
        run_cmd(d, "echo warm")
        base = d.fds()
        s = Stream(d, {"command": "for i in $(seq 1 8); do echo $i; "
                       "sleep 0.1; done"})
        s.until(lambda e: e["type"] == "stdout")
        # A reader leaves mid-stream, without a word.
        sock = socket.create_connection((d.host, d.port), 10)
        sock.sendall(b"GET /command/%s/stream?after=0 HTTP/1.1\r\n"
                     b"Host: x\r\n\r\n" % s.id.encode())
        data = b""
        while b'"seq":2' not in data:
            chunk = sock.recv(4096)
            assert chunk, data
            data += chunk
        assert data.startswith(b"HTTP/1.1 200"), data
        sock.close()
        # A reattached reader that leaves, and the original one too.
        r = Reattach(d, s.id)
        r.until(lambda e: e.get("text") == "3")
        r.c.close()
        s.c.close()
        st = finished(d, s.id)
        assert st["exit_code"] == 0 and not st.get("error"), st
        st, evs = reattach(d, s.id)
        assert lines(evs, "stdout") == [str(i) for i in range(1, 9)], evs
        assert_ok(evs)
        assert wait_for(lambda: d.fds() <= base, timeout=5), (d.fds(), base)


def test_a_slow_client_is_not_cut_off():
    # A client that reads nothing for a while: its events wait in the
    # history on disk, not in execd's memory, and none is lost.
    with Execd() as d:
        run_cmd(d, "echo warm")
        rss0 = rss_kib(d.proc.pid)
        c = d.conn(60)
        c.request("POST", "/command", body=json.dumps(
            {"command": "seq 1 100000"}),
            headers={"Content-Type": "application/json"})
        r = c.getresponse()
        first = r.readline()
        cid = json.loads(first)["text"]
        assert wait_for(lambda: not status(d, cid)["running"], timeout=20)
        peak = rss_kib(d.proc.pid)
        data = first + r.read()
        c.close()
        evs = events(data)
        out = lines(evs, "stdout")
        assert out == [str(i) for i in range(1, 100001)], (len(out),
                                                          out[-2:])
        assert_ok(evs)
        assert_numbered(evs)
        assert peak - rss0 < 8192, (rss0, peak)


def test_history_keeps_head_and_tail_and_says_what_it_lost():
    tmp = tempfile.mkdtemp(prefix="execd-hist-")
    try:
        with Execd(env={"TMPDIR": tmp}) as d:
            # About 28 MB of events: more than the 16 MiB kept.
            st, h, data = d.request(
                "POST", "/command", body={"command": "head -c 16000000 "
                                          "/dev/zero | tr '\\0' x | "
                                          "fold -w 79"}, timeout=60)
            assert st == 200
            orig = [x for x in data.split(b"\n\n")[:-1]
                    if b'"type":"ping"' not in x]
            first, last = json.loads(orig[0]), json.loads(orig[-1])
            assert first["seq"] == 1 and last["type"] == \
                "execution_complete", last
            cid = first["text"]
            nev = last["seq"]
            assert nev == 202534, nev      # 202532 lines of 79 x's
            assert [json.loads(x)["seq"] for x in orig] == list(
                range(1, nev + 1))
            # The first file and the last two are kept: about 16 MiB.
            sizes = cmd_files(d, cid, tmp)
            assert len(sizes) == 3 and cid + ".0.events" in sizes, sizes
            assert sum(sizes.values()) <= (16 << 20) + (1 << 20), sizes
            st, h, data = d.request("GET", "/command/%s/stream" % cid,
                                    timeout=60)
            assert st == 200
            got = [x for x in data.split(b"\n\n")[:-1]
                   if b'"type":"ping"' not in x]
            gaps = [i for i, x in enumerate(got)
                    if b'"type":"history_gap"' in x]
            assert len(gaps) == 1, gaps
            k = gaps[0]
            gap = json.loads(got[k])
            assert "seq" not in gap, gap
            resume = json.loads(got[k + 1])["seq"]
            assert gap["text"].startswith("events %d to %d were not kept"
                                          % (k + 1, resume - 1)), gap
            # The head and the tail are exactly the original's.
            assert got[:k] == orig[:k], k
            assert got[k + 1:] == orig[resume - 1:], (len(got), resume)
            assert 20000 < k < resume < nev - 20000, (k, resume)
            # From a point still kept: no gap; from the gap: the tail.
            st, evs = reattach(d, cid, nev - 3)
            assert [e["seq"] for e in numbered(evs)] == [
                nev - 2, nev - 1, nev], evs
            st, evs = reattach(d, cid, k + 5)
            evs = numbered(evs)
            assert evs[0]["type"] == "history_gap" and evs[0][
                "text"].startswith("events %d to %d " % (k + 6,
                                                         resume - 1)), evs[0]
            assert evs[1]["seq"] == resume and evs[-1] == last
        assert not os.listdir(tmp), os.listdir(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_reattach_far_into_a_long_history_answers_at_once():
    # Skipping most of a long history takes more than one turn of the
    # loop (a turn pulls only so much); the events after the skip must go
    # out then, not wait for the stream's next ping 3 s later.
    with Execd() as d:
        st, h, data = d.request("POST", "/command",
                                body={"command": "seq 1 100000"},
                                timeout=60)
        assert st == 200
        evs = [json.loads(x) for x in data.split(b"\n\n")[:-1]]
        cid, nev = evs[0]["text"], evs[-1]["seq"]
        took = []
        for _ in range(3):
            t0 = time.monotonic()
            st, got = reattach(d, cid, nev - 3)
            took.append(time.monotonic() - t0)
            assert st == 200
            assert [e["seq"] for e in numbered(got)] == [
                nev - 2, nev - 1, nev], got
        assert min(took) < 2, took


def test_stream_errors():
    with Execd() as d:
        st, h, body = d.request("GET", "/command/%s/stream" % ("0" * 32))
        expect_error(st, body, 404)
        assert h["content-type"].startswith("application/json"), h
        st, evs = run_cmd(d, "true")
        cid = evs[0]["text"]
        for bad in ("-1", "x", "1.5", "+1", "0x10", "99999999999999999999",
                    "%201"):
            st, h, body = d.request("GET", "/command/%s/stream?after=%s"
                                    % (cid, bad))
            obj = expect_error(st, body, 400)
            assert "after" in obj["message"], obj
        st, evs = reattach(d, cid, "")
        assert numbered(evs)[0]["type"] == "init", evs


# -- stdin -----------------------------------------------------------------

def stdin(d, cid, body=b"", close=None, conn=None):
    path = "/command/%s/stdin" % cid
    if close is not None:
        path += "?close=%s" % close
    return d.request("POST", path, body=body, conn=conn,
                     headers={"Content-Type": "application/octet-stream"})


def test_stdin_lines_reach_the_command_and_close_ends_it():
    with Execd() as d:
        s = Stream(d, {"command": "cat; echo done", "stdin": True})
        s.until(lambda e: e["type"] == "init")
        st, h, body = stdin(d, s.id, b"line one\nline ")
        assert st == 200 and body == b"", (st, body)
        s.until(lambda e: e.get("text") == "line one")
        st, h, body = stdin(d, s.id, b"two\n\nthree")
        assert st == 200, body
        # Closing (here with the last bytes) ends cat with status 0.
        st, h, body = stdin(d, s.id, b" and more\n", close="true")
        assert st == 200, body
        evs = s.rest()
        assert lines(evs, "stdout") == [
            "line one", "line two", "\n", "three and more", "done"], evs
        assert_ok(evs)
        assert_numbered(evs)
        # It is over: 409.
        st, h, body = stdin(d, s.id, b"late")
        expect_error(st, body, 409)


def test_stdin_takes_any_bytes():
    with Execd() as d:
        blob = bytes(range(256)) * 300 + b"\r\n\x00end"
        s = Stream(d, {"command": 'f=$(mktemp); cat > "$f"; '
                       'sha256sum < "$f"; wc -c < "$f"; rm -f "$f"',
                       "stdin": True})
        s.until(lambda e: e["type"] == "init")
        for i in range(0, len(blob), 10000):
            st, h, body = stdin(d, s.id, blob[i:i + 10000])
            assert st == 200, body
        st, h, body = stdin(d, s.id, close="1")
        assert st == 200, body
        out = lines(s.rest(), "stdout")
        assert out[0].split()[0] == hashlib.sha256(blob).hexdigest(), out
        assert out[1].strip() == str(len(blob)), out


def test_stdin_of_a_background_command():
    tmp = tempfile.mkdtemp(prefix="execd-stdin-")
    try:
        path = os.path.join(tmp, "got")
        with Execd() as d:
            cid = background(d, "cat > " + path, stdin=True)
            st, h, body = stdin(d, cid, b"to the file\n", close="true")
            assert st == 200, body
            s = finished(d, cid)
            assert s["exit_code"] == 0, s
            with open(path, "rb") as f:
                assert f.read() == b"to the file\n"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_stdin_errors():
    with Execd() as d:
        st, h, body = stdin(d, "0" * 32, b"x")
        expect_error(st, body, 404)
        # Without "stdin": true, stdin is /dev/null and cannot be written.
        s = Stream(d, {"command": "sleep 30"})
        s.until(lambda e: e["type"] == "init")
        st, h, body = stdin(d, s.id, b"x")
        obj = expect_error(st, body, 409)
        assert '"stdin": true' in obj["message"], obj
        st, h, body = stdin(d, s.id, close="true")
        expect_error(st, body, 409)
        d.request("DELETE", "/command?id=" + s.id)
        s.rest()
        # A command that does not read: the pipe fills, then the queue.
        s = Stream(d, {"command": "sleep 30", "stdin": True})
        s.until(lambda e: e["type"] == "init")
        st, h, body = stdin(d, s.id, b"x", close="maybe")
        expect_error(st, body, 400)
        st, h, body = stdin(d, s.id, b"y" * ((1 << 20) + 1))
        expect_error(st, body, 413)
        t0 = time.monotonic()
        st, h, body = stdin(d, s.id, b"z" * (900 << 10))
        assert st == 200, body
        st, h, body = stdin(d, s.id, b"z" * (400 << 10))
        obj = expect_error(st, body, 503)
        assert "try again" in obj["message"], obj
        assert time.monotonic() - t0 < 5       # never waited on the pipe
        st, h, body = stdin(d, s.id, close="true")
        assert st == 200, body
        st, h, body = stdin(d, s.id, b"more")
        expect_error(st, body, 409)
        st, h, body = stdin(d, s.id, close="true")
        expect_error(st, body, 409)
        d.request("DELETE", "/command?id=" + s.id)
        assert_failed(s.rest(), "-1")
        # A command that exits without reading everything.
        s = Stream(d, {"command": "head -c 3; echo", "stdin": True})
        s.until(lambda e: e["type"] == "init")
        st, h, body = stdin(d, s.id, b"abcdef" * 50000)
        assert st in (200, 409), body
        evs = s.rest()
        assert lines(evs, "stdout") == ["abc"], evs
        assert d.request("GET", "/ping")[0] == 200


def test_stdin_pipe_does_not_leak():
    with Execd() as d:
        run_cmd(d, "true", stdin=True)
        base = d.fds()
        c = d.conn(30)
        for i in range(30):
            s = Stream(d, {"command": "cat", "stdin": True})
            s.until(lambda e: e["type"] == "init")
            if i % 3:
                stdin(d, s.id, b"x\n" * i, close="true", conn=c)
            else:
                d.request("DELETE", "/command?id=" + s.id, conn=c)
            s.rest()
        c.close()
        assert wait_for(lambda: d.fds() <= base, timeout=5), (d.fds(), base)
        assert wait_for(lambda: not children_of(d.proc.pid), timeout=5)


# -- hygiene ---------------------------------------------------------------

def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def zombies(pid):
    return [p for p, state in children_of(pid) if state == "Z"]


def test_a_thousand_commands_leave_no_descriptor_or_zombie():
    with Execd() as d:
        c = d.conn(30)

        def post(body):
            c.request("POST", "/command", body=json.dumps(body),
                      headers={"Content-Type": "application/json"})
            r = c.getresponse()
            data = r.read()
            assert r.status == 200, data
            return events(data)

        post({"command": "true"})
        post({"command": "echo warm >&2; false"})
        assert wait_for(lambda: not children_of(d.proc.pid), timeout=5)
        base = d.fds()
        t0 = time.monotonic()
        last = None
        for i in range(1000):
            kind = i % 10
            if kind < 4:
                evs = post({"command": "true"})
                assert_ok(evs)
            elif kind < 6:
                evs = post({"command": "echo n%d; exit %d" % (i, kind)})
                assert lines(evs, "stdout") == ["n%d" % i], evs
                assert_failed(evs, str(kind))
            elif kind == 6:
                evs = post({"command": "echo o; echo e >&2",
                            "stdin": True})
                assert lines(evs, "stderr") == ["e"], evs
            elif kind == 7:
                evs = post({"command": "echo bg", "background": True})
                assert kinds(evs) == ["init", "execution_complete"], evs
            elif kind == 8:
                # Reattach to the one before, on the same connection.
                c.request("GET", "/command/%s/stream?after=1" % last)
                r = c.getresponse()
                evs = events(r.read())
                assert r.status == 200 and evs[-1]["type"] in (
                    "execution_complete", "error"), evs
            else:
                evs = post({"command": "exec 0<&-; echo closed",
                            "timeout": 5000})
                assert_ok(evs)
            last = evs[0]["text"] if kind != 8 else last
        dt = time.monotonic() - t0
        c.close()
        assert wait_for(lambda: not children_of(d.proc.pid), timeout=10), \
            children_of(d.proc.pid)
        assert not zombies(d.proc.pid)
        assert wait_for(lambda: d.fds() <= base, timeout=10), (d.fds(), base)
        assert dt < 50, "1000 commands took %.1fs" % dt
