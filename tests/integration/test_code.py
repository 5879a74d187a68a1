"""Code contexts and runs on real kernels (Debian's ipykernel)."""
import json
import os
import socket
import signal
import threading
import time

from lib import (Execd, attached_print, events, expect_error,
                 interrupted_run, kinds, UUID_RE, new_context, run_code, texts,
                 user_with_groups, wait_for)


def test_context_lifecycle_and_listing():
    with Execd() as d:
        a = new_context(d)
        assert a["language"] == "python" and UUID_RE.match(a["id"]), a
        b = new_context(d, cwd="/tmp")
        assert b["cwd"] == "/tmp", b
        st, lst = d.get_json("/code/contexts")
        assert {c["id"] for c in lst} == {a["id"], b["id"]}, lst
        st, lst = d.get_json("/code/contexts?language=javascript")
        assert st == 200 and lst == [], lst
        st, got = d.get_json("/code/contexts/" + a["id"])
        assert got == {"id": a["id"], "language": "python"}, got
        st, h, body = d.request("DELETE", "/code/contexts/" + a["id"])
        assert st == 200 and body == b"" and h["content-length"] == "0"
        st, h, body = d.request("GET", "/code/contexts/" + a["id"])
        expect_error(st, body, 404, "CONTEXT_NOT_FOUND")
        st, h, body = d.request("DELETE", "/code/contexts/" + a["id"])
        expect_error(st, body, 404, "CONTEXT_NOT_FOUND")
        st, h, body = d.request("DELETE", "/code/contexts")
        expect_error(st, body, 400, "MISSING_QUERY")
        st, h, body = d.request("DELETE", "/code/contexts?language=python")
        assert st == 200
        st, lst = d.get_json("/code/contexts")
        assert lst == [], lst


def test_run_events_in_upstream_order():
    with Execd() as d:
        c = new_context(d)
        st, evs = run_code(d, "import sys; print('a'); "
                           "print('b', file=sys.stderr); 40+2", id=c["id"])
        assert st == 200, evs
        assert evs[0] == {"type": "init", "text": c["id"],
                          "timestamp": evs[0]["timestamp"]}, evs[0]
        assert evs[1]["type"] == "ping" and evs[1]["text"] == "pong"
        assert texts(evs, "stdout") == "a\n"
        assert texts(evs, "stderr") == "b\n"
        k = kinds(evs)
        assert k[-3:] == ["execution_count", "result",
                          "execution_complete"], k
        res = [e for e in evs if e["type"] == "result"][0]
        assert res["results"] == {"text": "42"}, res
        assert isinstance(evs[-1].get("execution_time", 0), int)
        for e in evs:
            assert isinstance(e["timestamp"], int)


def test_state_kept_and_errors_reported():
    with Execd() as d:
        c = new_context(d)
        run_code(d, "x = 41", id=c["id"])
        st, evs = run_code(d, "x + 1", id=c["id"])
        assert [e for e in evs if e["type"] == "result"][0]["results"] == \
            {"text": "42"}
        st, evs = run_code(d, "1/0", id=c["id"])
        k = kinds(evs)
        assert k[-3:] == ["status", "error", "execution_complete"], k
        err = [e for e in evs if e["type"] == "error"][0]["error"]
        assert err["ename"] == "ZeroDivisionError", err
        assert err["evalue"] == "division by zero"
        assert isinstance(err["traceback"], list) and err["traceback"]


def test_display_data_reaches_the_client():
    png = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
           "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
    with Execd() as d:
        st, evs = run_code(d, "from IPython.display import display\n"
                           "display({'image/png': '%s', 'text/plain': "
                           "'<img>'}, raw=True)" % png, language="python")
        res = [e for e in evs if e["type"] == "result"]
        assert res and res[0]["results"]["image/png"] == png, evs
        assert res[0]["results"]["text"] == "<img>"


def test_default_context_created_once_and_listed():
    with Execd() as d:
        st, evs = run_code(d, "y = 7", language="python")
        cid = evs[0]["text"]
        st, evs = run_code(d, "print(y)", language="python")
        assert evs[0]["text"] == cid
        assert texts(evs, "stdout") == "7\n"
        st, lst = d.get_json("/code/contexts?language=python")
        assert [c["id"] for c in lst] == [cid], lst


def test_contexts_are_isolated():
    with Execd() as d:
        a, b = new_context(d), new_context(d)
        run_code(d, "v = 'a'", id=a["id"])
        st, evs = run_code(d, "print(v)", id=b["id"])
        assert [e for e in evs if e["type"] == "error"][0]["error"][
            "ename"] == "NameError"


def test_interrupt_a_long_sleep():
    with Execd() as d:
        c = new_context(d)
        evs = interrupted_run(d, c["id"], "import time; time.sleep(100)")
        err = [e for e in evs if e["type"] == "error"][0]["error"]
        assert err["ename"] == "KeyboardInterrupt", evs
        st, h, body = d.request("DELETE", "/code?id=nope")
        expect_error(st, body, 404, "CONTEXT_NOT_FOUND")
        st, h, body = d.request("DELETE", "/code")
        expect_error(st, body, 400, "MISSING_QUERY")


def kernel_pid(d, cid):
    st, conn = d.get_json("/code/contexts/%s/connection" % cid)
    path = conn["connection_file"]
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open("/proc/%s/cmdline" % p, "rb") as f:
                    if path.encode() in f.read():
                        return int(p)
            except OSError:
                pass
    raise AssertionError("no kernel process for " + path)


def test_kernel_killed_mid_run_ends_the_stream_and_restarts():
    with Execd() as d:
        c = new_context(d)
        run_code(d, "z = 1", id=c["id"])
        pid = kernel_pid(d, c["id"])
        out = {}
        t = threading.Thread(target=lambda: out.update(r=run_code(
            d, "import time; time.sleep(100)", id=c["id"])))
        t.start()
        time.sleep(1.0)
        os.kill(pid, signal.SIGKILL)
        t.join(20)
        assert not t.is_alive(), "the stream did not end"
        st, evs = out["r"]
        err = [e for e in evs if e["type"] == "error"][-1]["error"]
        assert "killed by signal 9" in err["evalue"], err
        assert kinds(evs)[-1] == "error", kinds(evs)
        # The context lives on, restarted with fresh state.
        st, evs = run_code(d, "print(z)", id=c["id"])
        assert [e for e in evs if e["type"] == "error"][0]["error"][
            "ename"] == "NameError", evs


def test_a_failed_run_does_not_abort_the_next_queued_one():
    with Execd() as d:
        c = new_context(d)
        res = {}
        t = threading.Thread(target=lambda: res.update(a=run_code(
            d, "import time; time.sleep(1); 1/0", id=c["id"])))
        t.start()
        time.sleep(0.3)
        st, evs = run_code(d, "print('ran')", id=c["id"])
        t.join(30)
        assert texts(evs, "stdout") == "ran\n", evs
        assert [e for e in res["a"][1] if e["type"] == "error"]


def test_runs_on_one_context_queue_in_order():
    with Execd() as d:
        c = new_context(d)
        res = {}

        def go(name, code):
            res[name] = (time.monotonic(), run_code(d, code, id=c["id"]))
        t1 = threading.Thread(target=go, args=(
            "first", "import time; time.sleep(1.5); print('first')"))
        t1.start()
        time.sleep(0.3)
        t2 = threading.Thread(target=go, args=("second", "print('second')"))
        t2.start()
        t1.join(30)
        t2.join(30)
        assert texts(res["first"][1][1], "stdout") == "first\n"
        assert texts(res["second"][1][1], "stdout") == "second\n"
        assert res["first"][0] <= res["second"][0]


def test_runs_on_two_contexts_run_in_parallel():
    with Execd() as d:
        a, b = new_context(d), new_context(d)
        res = {}
        t = threading.Thread(target=lambda: res.update(a=run_code(
            d, "import time; time.sleep(4)", id=a["id"])))
        t.start()
        time.sleep(0.5)
        st, evs = run_code(d, "print('quick')", id=b["id"])
        assert texts(evs, "stdout") == "quick\n"
        assert t.is_alive(), "b waited for a"
        t.join(30)


def test_timeout_interrupts_with_an_error_event():
    with Execd() as d:
        st, h, body = d.request("POST", "/code", body={
            "code": "import time; time.sleep(30)", "timeout": 500,
            "context": {"language": "python"}}, timeout=30)
        assert st == 200, body
        evs = events(body)
        errs = [e["error"] for e in evs if e["type"] == "error"]
        assert [e["ename"] for e in errs] == ["TimeoutError"], evs
        assert kinds(evs)[-1] == "execution_complete", evs
        # The context is usable at once.
        st, evs = run_code(d, "print('next')", language="python")
        assert texts(evs, "stdout") == "next\n", evs


def test_output_cap_marks_the_cut():
    with Execd("--max-output", "1K") as d:
        st, evs = run_code(d, "print('x' * 5000)", language="python")
        out = texts(evs, "stdout")
        assert len(out) == 1024, len(out)
        assert "bytes dropped" in texts(evs, "stderr"), evs


def test_invalid_utf8_output_never_breaks_json():
    with Execd() as d:
        # A lone surrogate (what undecodable bytes become in Python)
        # reaches us as a raw invalid byte in the kernel's JSON.
        st, evs = run_code(d, "print('ok' + '\\udcff')", language="python")
        assert texts(evs, "stdout") == "ok\ufffd\n", evs


def test_request_errors_before_any_event():
    with Execd() as d:
        st, h, body = d.request("POST", "/code", body={
            "code": "1", "context": {"language": "cobol"}})
        obj = expect_error(st, body, 400, "INVALID_REQUEST_BODY")
        assert "python" in obj["message"], obj
        st, h, body = d.request("POST", "/code", body={
            "code": "1", "context": {"id": "nope"}})
        expect_error(st, body, 404, "CONTEXT_NOT_FOUND")
        st, h, body = d.request("POST", "/code", body={
            "context": {"language": "python"}})
        obj = expect_error(st, body, 400, "INVALID_REQUEST_BODY")
        assert "'code'" in obj["message"]
        st, h, body = d.request("POST", "/code", body={
            "code": "1", "timeout": "soon",
            "context": {"language": "python"}})
        obj = expect_error(st, body, 400, "INVALID_REQUEST_BODY")
        assert "'timeout'" in obj["message"]
        st, h, body = d.request("POST", "/code/context",
                                body={"language": "cobol"})
        expect_error(st, body, 400, "INVALID_REQUEST_BODY")
        st, h, body = d.request("POST", "/code/context", body={
            "language": "python", "cwd": "relative"})
        expect_error(st, body, 400, "INVALID_REQUEST_BODY")


def test_connection_info_lets_jupyter_client_attach():
    # As execd, and as the default user, whose kernel it is then.
    for pw in (None, user_with_groups()[0]):
        with Execd(*(("--user", pw.pw_name) if pw else ())) as d:
            attach_as(d, pw)


def attach_as(d, pw):
    """A Jupyter client, run as pw (None: as this test), joins a kernel."""
    c = new_context(d)
    run_code(d, "shared = 'from-execd'", id=c["id"])
    st, conn = d.get_json("/code/contexts/%s/connection" % c["id"])
    assert st == 200
    for k in ("shell_port", "iopub_port", "key", "transport",
              "signature_scheme", "connection_file"):
        assert k in conn, conn
    fst = os.stat(conn["connection_file"])
    assert fst.st_mode & 0o777 == 0o600
    assert fst.st_uid == (pw.pw_uid if pw else os.getuid()), (fst, pw)
    assert conn["transport"] == "ipc", conn     # ipykernel: ipc
    who = {}
    if pw:
        who = dict(user=pw.pw_uid, group=pw.pw_gid, extra_groups=[],
                   env=dict(os.environ, HOME=pw.pw_dir), cwd="/")
    out, r = attached_print(conn["connection_file"], "shared", **who)
    assert out == "from-execd", r


def test_shutdown_ends_runs_and_stops_kernels():
    d = Execd().start()
    c = new_context(d)
    pid = kernel_pid(d, c["id"])
    out = {}
    t = threading.Thread(target=lambda: out.update(r=run_code(
        d, "import time; time.sleep(100)", id=c["id"])))
    t.start()
    time.sleep(1.0)
    assert d.stop() == 0
    t.join(10)
    st, evs = out["r"]
    errs = [e["error"]["ename"] for e in evs if e["type"] == "error"]
    assert errs == ["Shutdown"], evs
    assert wait_for(lambda: not os.path.exists("/proc/%d" % pid), 5)


def test_warm_pool_hands_out_ready_kernels_and_refills():
    with Execd("--pool", "python=1") as d:
        assert wait_for(lambda: " ready" in d.read_log(), 60), d.read_log()
        st, lst = d.get_json("/code/contexts")
        assert lst == [], lst          # pooled kernels are not contexts
        c = new_context(d)
        log = d.read_log()
        assert "context=%s language=python taken from the pool" % c["id"] \
            in log, log
        # A replacement starts at once.
        assert wait_for(lambda: d.read_log().count(" ready") >= 2, 60)
        st, evs = run_code(d, "print(1 + 1)", id=c["id"])
        assert texts(evs, "stdout") == "2\n"
        # With a cwd, a fresh kernel starts there instead.
        c2 = new_context(d, cwd="/tmp")
        st, evs = run_code(d, "import os; print(os.getcwd())", id=c2["id"])
        assert texts(evs, "stdout") == "/tmp\n", evs


def test_idle_contexts_are_culled_but_not_while_running():
    with Execd("--context-idle-timeout", "2") as d:
        idle = new_context(d)
        busy = new_context(d)
        out = {}
        t = threading.Thread(target=lambda: out.update(r=run_code(
            d, "import time; time.sleep(5); print('done')", id=busy["id"])))
        t.start()
        assert wait_for(lambda: idle["id"] not in [
            c["id"] for c in d.get_json("/code/contexts")[1]], 10)
        ids = [c["id"] for c in d.get_json("/code/contexts")[1]]
        assert busy["id"] in ids, ids
        t.join(30)
        assert texts(out["r"][1], "stdout") == "done\n"
        assert wait_for(lambda: d.get_json("/code/contexts")[1] == [], 10)


def test_bash_interrupts_never_let_the_next_command_run():
    # The shell is signalled before what it runs: a child that died first
    # would let it reap the child and start the next command.  Under load
    # the old order let "not-reached" through a few times in a hundred.
    with Execd() as d:
        st, evs = run_code(d, "true", language="bash")
        cid = evs[0]["text"]
        for _ in range(40):
            evs = interrupted_run(d, cid, "sleep 100; echo not-reached",
                                  after=0.05)
            assert "not-reached" not in texts(evs, "stdout"), evs
            assert [e for e in evs if e["type"] == "error"], evs
        st, evs = run_code(d, "echo still-here", id=cid)
        assert texts(evs, "stdout") == "still-here\n", evs


def test_bash_contexts_are_shell_sessions_without_a_bash_kernel():
    with Execd() as d:
        st, evs = run_code(d, "x=42; cd /tmp; f() { echo fn; }",
                           language="bash")
        assert kinds(evs) == ["init", "execution_complete"], evs
        cid = evs[0]["text"]
        st, evs = run_code(d, "echo $x; pwd; f", language="bash")
        assert evs[0]["text"] == cid
        assert texts(evs, "stdout") == "42\n/tmp\nfn\n", evs
        st, evs = run_code(d, "echo oops >&2; false", id=cid)
        assert texts(evs, "stderr") == "oops\n", evs
        err = [e for e in evs if e["type"] == "error"][0]["error"]
        assert err["evalue"] == "1", err
        evs = interrupted_run(d, cid, "sleep 100; echo not-reached")
        assert "not-reached" not in texts(evs, "stdout"), evs
        assert [e for e in evs if e["type"] == "error"], evs
        c = new_context(d, "bash", cwd="/usr")
        st, evs = run_code(d, "pwd", id=c["id"])
        assert texts(evs, "stdout") == "/usr\n", evs
        st, h, body = d.request("GET", "/code/contexts/%s/connection"
                                % c["id"])
        expect_error(st, body, 409)
        st, lst = d.get_json("/code/contexts?language=bash")
        assert {x["id"] for x in lst} == {cid, c["id"]}, lst
        st, h, body = d.request("DELETE", "/code/contexts?language=bash")
        assert st == 200
        assert d.get_json("/code/contexts")[1] == []


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def slow_run(d, code, chunk=65536, pause=0.001, on_read=None):
    """POST /code read chunk bytes at a time with a pause between reads
    (a slow client that still reads); the run's events."""
    body = json.dumps({"code": code, "context": {"language": "python"}})
    s = socket.create_connection((d.host, d.port), 90)
    s.sendall(("POST /code HTTP/1.1\r\nHost: x\r\nContent-Type: "
               "application/json\r\nContent-Length: %d\r\n\r\n%s"
               % (len(body), body)).encode())
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    data = b""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        b = s.recv(chunk)
        if not b:
            break
        data += b
        if on_read:
            on_read()
        if data.endswith(b"\r\n0\r\n\r\n"):
            break
        time.sleep(pause)
    s.close()
    head, _, rest = data.partition(b"\r\n\r\n")
    assert b" 200 " in head.split(b"\r\n")[0], head
    out = b""
    while rest:
        size, _, rest = rest.partition(b"\r\n")
        n = int(size, 16)
        if n == 0:
            break
        out += rest[:n]
        rest = rest[n + 2:]
    return events(out)


def test_a_print_over_the_stream_buffer_reaches_the_client_whole():
    with Execd() as d:
        st, evs = run_code(d, "print('x' * 4200000)", language="python")
        errs = [e for e in evs if e["type"] == "error"]
        assert errs == [], errs
        assert texts(evs, "stdout") == "x" * 4200000 + "\n"
        assert kinds(evs)[-1] == "execution_complete", kinds(evs)[-5:]
        # Events stay small, however large one message is.
        assert max(len(e.get("text", "")) for e in evs) <= 1 << 20


def test_a_huge_loop_is_cut_to_head_marker_and_tail():
    # About 100 MB in a few messages, some over the 64 MiB frame cap.
    code = ("for i in range(1000):\n"
            "    print('%09d' % i + 'x' * 99990)\n")
    with Execd("--max-output", "1M") as d:
        st, evs = run_code(d, code, language="python", timeout=120)
        k = kinds(evs)
        assert k[-1] == "execution_complete", k[-5:]
        assert "error" not in k, [e for e in evs if e["type"] == "error"]
        marks = [i for i, e in enumerate(evs) if e["type"] == "stderr"]
        assert len(marks) == 1, [evs[i] for i in marks]
        m = evs[marks[0]]["text"]
        head = texts(evs[:marks[0]], "stdout")
        tail = texts(evs[marks[0]:], "stdout")
        assert head.startswith("000000000xxx"), head[:20]
        assert tail.endswith("000000999" + "x" * 99990 + "\n"), tail[-20:]
        assert len(head) + len(tail) == 1 << 20, (len(head), len(tail))
        cut = 100000000 - (1 << 20)
        assert "%d bytes dropped" % cut in m, m


def test_rss_stays_flat_while_a_slow_client_reads_a_huge_run():
    # 300 MB at up to 50 MB/s: as fast as code that computes what it
    # prints, and slower than execd decodes even in a sanitizer build (a
    # kernel's PUB socket drops what its subscriber cannot take).
    code = ("import sys, time\n"
            "for i in range(3000):\n"
            "    sys.stdout.write('%09d' % i + 'y' * 99991)\n"
            "    sys.stdout.flush()\n"
            "    time.sleep(0.002)\n")
    # Under AddressSanitizer, freed memory waits in a quarantine (256 MB)
    # before it is used again: without one, RSS means what it means in
    # the other builds (the option is ignored by them).
    asan = os.environ.get("ASAN_OPTIONS", "")
    env = {"ASAN_OPTIONS": asan + (":" if asan else "") +
           "quarantine_size_mb=0:allocator_release_to_os_interval_ms=0"}
    with Execd(env=env) as d:
        st, evs = run_code(d, "print('warm')", language="python")
        assert texts(evs, "stdout") == "warm\n", evs
        base = rss_kib(d.proc.pid)
        peak = [base]
        evs = slow_run(d, code, on_read=lambda: peak.append(
            rss_kib(d.proc.pid)))
        k = kinds(evs)
        assert k[-1] == "execution_complete", k[-5:]
        assert "error" not in k, [e for e in evs if e["type"] == "error"]
        out = texts(evs, "stdout")
        assert out.startswith("000000000yyy") and out.endswith(
            "000002999" + "y" * 99991), (out[:12], out[-12:])
        # What execd keeps is bounded by --max-output (16M here), and it
        # decodes faster than the kernel prints, so libzmq's iopub queue
        # stays short.  Unbounded, this was 300 MB.
        grew = max(peak) - base
        assert grew < 64 << 10, "execd grew by %d KiB" % grew


# Delays after init at which DELETE /code is sent, in ms: the upstream SDK
# tests interrupt from inside their init handler, and ipykernel loses a
# SIGINT that comes before it runs the cell, or goes idle without ever
# replying to one that comes just as it starts it.
INIT_DELAYS_MS = (0, 0.5, 1, 1.5, 2, 3, 4, 5)
RUN_BOUND = 20      # seconds in which every interrupted run must end


def interrupt_after_init(d, cid, code, delay_ms):
    """POST code to context cid and send DELETE /code?id=cid delay_ms after
    the init event; returns (events, DELETE status, seconds from the
    DELETE to the end of the stream).  Fails if the run outlives
    RUN_BOUND."""
    c = d.conn(timeout=RUN_BOUND)
    c.request("POST", "/code", body=json.dumps(
        {"code": code, "context": {"id": cid}}),
        headers={"Content-Type": "application/json"})
    r = c.getresponse()
    assert r.status == 200, r.read()
    # Connected and written ahead, so the DELETE leaves at once.
    s = socket.create_connection((d.host, d.port), 5)
    req = ("DELETE /code?id=%s HTTP/1.1\r\nHost: execd\r\n"
           "Connection: close\r\n\r\n" % cid).encode()
    evs = []
    while not evs or evs[-1]["type"] != "init":
        line = r.readline()
        assert line, "the stream ended before init"
        if line.strip():
            evs.append(json.loads(line))
    t_init = time.monotonic()
    while time.monotonic() - t_init < delay_ms / 1000.0:
        pass            # sub-millisecond: no sleep is that fine
    s.sendall(req)
    t_del = time.monotonic()
    got = b""
    while b"\r\n" not in got:
        b = s.recv(4096)
        if not b:
            break
        got += b
    s.close()
    status = int(got.split(b" ")[1]) if got.count(b" ") >= 1 else 0
    while True:
        line = r.readline()
        if not line:
            break
        if line.strip():
            evs.append(json.loads(line))
        assert time.monotonic() - t_del < RUN_BOUND, (
            "the run did not end within %d s: %s" % (RUN_BOUND, kinds(evs)))
    took = time.monotonic() - t_del
    c.close()
    return evs, status, took


def sweep_interrupts_after_init(d, cid, code, next_code, next_out, trials,
                                settle=0.0, may_die=False):
    """Every delay in INIT_DELAYS_MS, trials times: the run ends within
    RUN_BOUND with an error and without its end marker, and the context
    then runs next_code normally.  First, uninterrupted, code must print
    its end marker (or the sweep would prove nothing).  may_die: the
    kernel may die of the signal (its run ends with KernelError, and the
    context runs on in a new kernel)."""
    st, evs = run_code(d, code, id=cid, timeout=RUN_BOUND)
    assert texts(evs, "stdout") == "cell-end\n", evs
    for delay in INIT_DELAYS_MS:
        for i in range(trials):
            where = "delay %.1f ms, trial %d" % (delay, i + 1)
            evs, st, took = interrupt_after_init(d, cid, code, delay)
            assert st == 200, (where, st)
            k = kinds(evs)
            assert "cell-end" not in texts(evs, "stdout"), (where, evs)
            assert "error" in k, (where, k)
            errs = [e["error"] for e in evs if e["type"] == "error"]
            died = [e for e in errs if e["ename"] == "KernelError"]
            # Dying of the signal shows as "signal 2", or as an exit
            # after ipykernel's loop caught the KeyboardInterrupt and
            # returned (its stderr says so; the code is then 0).
            assert not died or (may_die and any(
                w in died[0]["evalue"] for w in (
                    "signal 2", "KeyboardInterrupt"))), (where, errs)
            assert died or k[-1] == "execution_complete", (where, k)
            time.sleep(settle)
            st, evs = run_code(d, next_code, id=cid, timeout=RUN_BOUND)
            # Interrupted in its bookkeeping, IPython may say on stdout
            # that it moved its history to a new session: the kernel's
            # own words, not a failure of the run, and they may come
            # between a print's text and its newline.
            assert st == 200 and next_out in texts(evs, "stdout"), (
                where, evs)
            assert kinds(evs)[-1] == "execution_complete", (where, evs)
            assert "error" not in kinds(evs), (where, evs)


def test_interrupt_right_after_init_python():
    # may_die: ipykernel swaps in Python's SIGINT handler before it enters
    # the cell, and a signal that lands in between kills it (an uncaught
    # KeyboardInterrupt); rare, and execd then runs the context on anew.
    with Execd() as d:
        c = new_context(d)
        run_code(d, "import time", id=c["id"])
        sweep_interrupts_after_init(
            d, c["id"], "for i in range(15):\n    time.sleep(0.2)\n"
            "print('cell-end')", "print('next-ok')", "next-ok", trials=4,
            may_die=True)


def test_interrupt_right_after_init_javascript():
    from test_code_js import FAILED_RUN_SETTLE, daemon
    with daemon() as d:
        c = new_context(d, "javascript")
        run_code(d, "let n = 0", id=c["id"])
        sweep_interrupts_after_init(
            d, c["id"], "{\n  const t0 = Date.now();\n"
            "  while (Date.now() - t0 < 3000) {}\n"
            "  console.log('cell-end');\n}", "console.log('next-ok')",
            "next-ok\n", trials=3, settle=FAILED_RUN_SETTLE, may_die=True)


def fake_kernel_daemon(tmp, interrupt_mode="signal", args=(), flags=""):
    """An execd whose "fake" language is tests/fakekernel/ (a scriptable
    kernel for the faults a real one will not produce on request), with
    execd's args and the kernel's FAKEKERNEL_FLAGS."""
    import lib
    d = os.path.join(tmp, "kernels", "fake")
    os.makedirs(d)
    with open(os.path.join(d, "kernel.json"), "w") as f:
        json.dump({"argv": ["/usr/bin/python3", os.path.join(
            lib.ROOT, "tests", "fakekernel", "fakekernel.py"), "-f",
            "{connection_file}"], "display_name": "Fake",
            "language": "fake", "interrupt_mode": interrupt_mode}, f)
    return Execd(*args, env={"JUPYTER_PATH": tmp, "FAKEKERNEL_FLAGS": flags})


def test_a_context_is_not_culled_while_its_kernel_starts():
    """Idle time counts from the kernel's ready, not its launch: a kernel
    slower to start than --context-idle-timeout (a loaded machine, a
    JVM) is not deleted before it could ever be used."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp, fake_kernel_daemon(
            tmp, args=("--context-idle-timeout", "2"),
            flags="--slow-start 4") as d:
        c = new_context(d, "fake")
        st, evs = run_code(d, "print still-here", id=c["id"])
        assert texts(evs, "stdout") == "still-here\n", evs
        # Once used and left alone, it goes as any idle context.
        assert wait_for(lambda: d.get_json("/code/contexts")[1] == [], 15)


def test_interrupted_kernel_that_never_replies_ends_the_run():
    import tempfile
    for mode in ("signal", "message"):
        with tempfile.TemporaryDirectory() as tmp, \
                fake_kernel_daemon(tmp, mode) as d:
            c = new_context(d, "fake")
            t0 = time.monotonic()
            evs = interrupted_run(d, c["id"], "nointerrupt 0.5\nnoreply",
                                  after=0.1)
            assert time.monotonic() - t0 < 10, mode
            k = kinds(evs)
            assert k[-3:] == ["status", "error", "execution_complete"], k
            err = [e for e in evs if e["type"] == "error"][0]["error"]
            assert err["ename"] == "KeyboardInterrupt", err
            assert err["evalue"] == "the kernel was interrupted", err
            st, evs = run_code(d, "print next", id=c["id"])
            assert texts(evs, "stdout") == "next\n", evs


def test_reply_without_idle_ends_the_run_with_a_note():
    import tempfile
    with tempfile.TemporaryDirectory() as tmp, fake_kernel_daemon(tmp) as d:
        c = new_context(d, "fake")
        st, evs = run_code(d, "print a\nnoidle", id=c["id"], timeout=20)
        assert texts(evs, "stdout") == "a\n", evs
        assert "output may be incomplete" in texts(evs, "stderr"), evs
        assert kinds(evs)[-1] == "execution_complete", evs
        assert "error" not in kinds(evs), evs


def test_kernel_deaf_to_interrupts_is_restarted():
    import tempfile
    with tempfile.TemporaryDirectory() as tmp, fake_kernel_daemon(tmp) as d:
        c = new_context(d, "fake")
        run_code(d, "print warm", id=c["id"])
        out = {}
        t = threading.Thread(target=lambda: out.update(r=run_code(
            d, "nointerrupt 60\nprint cell-end", id=c["id"], timeout=30)))
        t.start()
        time.sleep(0.3)
        st, h, body = d.request("DELETE", "/code?id=" + c["id"])
        assert st == 200, body
        t.join(20)
        assert not t.is_alive(), "the run did not end"
        evs = out["r"][1]
        assert "cell-end" not in texts(evs, "stdout"), evs
        err = [e for e in evs if e["type"] == "error"][-1]["error"]
        assert "interrupts" in err["evalue"], err
        assert "restarted" in err["evalue"], err
        st, evs = run_code(d, "print next", id=c["id"], timeout=60)
        assert texts(evs, "stdout") == "next\n", evs


def write_fake_spec(top, name, language):
    """A kernelspec for tests/fakekernel/ at top/kernels/name."""
    import lib
    d = os.path.join(top, "kernels", name)
    os.makedirs(d)
    with open(os.path.join(d, "kernel.json"), "w") as f:
        json.dump({"argv": ["/usr/bin/python3", os.path.join(
            lib.ROOT, "tests", "fakekernel", "fakekernel.py"), "-f",
            "{connection_file}"], "display_name": name,
            "language": language}, f)


def test_kernelspecs_installed_after_start_are_found():
    """An image's entrypoint may install kernelspecs after execd starts,
    on $JUPYTER_PATH or under a Python's prefix (--sys-prefix): a language
    not known sends execd to the disk again."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        jp = os.path.join(tmp, "jp")
        venv = os.path.join(tmp, "venv")
        os.makedirs(jp)
        os.makedirs(os.path.join(venv, "bin"))
        os.symlink("/usr/bin/python3", os.path.join(venv, "bin", "python3"))
        env = {"JUPYTER_PATH": jp, "PATH": os.path.join(venv, "bin") + ":"
               + os.environ.get("PATH", "/usr/bin:/bin")}
        with Execd(env=env) as d:
            for lang in ("late", "venvlang"):
                st, h, body = d.request("POST", "/code/context",
                                        body={"language": lang})
                expect_error(st, body, 400, "INVALID_REQUEST_BODY")
            # A broken spec installed late is no kernel, and no crash.
            os.makedirs(os.path.join(jp, "kernels", "broken"))
            with open(os.path.join(jp, "kernels", "broken", "kernel.json"),
                      "w") as f:
                f.write("{not json")
            st, h, body = d.request("POST", "/code/context",
                                    body={"language": "broken"})
            expect_error(st, body, 400, "INVALID_REQUEST_BODY")
            write_fake_spec(jp, "late", "late")
            write_fake_spec(os.path.join(venv, "share", "jupyter"),
                            "venvkernel", "venvlang")
            for lang in ("late", "venvlang"):
                c = new_context(d, lang)
                assert c["language"] == lang, c
                st, evs = run_code(d, "print found-" + lang, id=c["id"])
                assert texts(evs, "stdout") == "found-%s\n" % lang, evs
            # Both now in the message that lists what is installed.
            st, h, body = d.request("POST", "/code/context",
                                    body={"language": "cobol"})
            obj = expect_error(st, body, 400, "INVALID_REQUEST_BODY")
            assert "late (late)" in obj["message"], obj
            assert "venvlang (venvkernel)" in obj["message"], obj
            assert "kernelspec late (language late) found in" \
                in d.read_log()
