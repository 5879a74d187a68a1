"""Bash sessions, the hard cases: output that imitates the end of a run,
a shell that ends (exit, exec, set -e) and is reset, heredocs, runs that
queue, timeouts (the shell survives unless the loop was its own),
DELETE and the shell's process group, parallel sessions, stdin, and
many runs without leaks.  The basics are in test_session.py."""
import json
import os
import re
import shutil
import signal
import socket
import tempfile
import threading
import time

from lib import UUID_RE, Execd, children_of, expect_error, kinds, wait_for

ID_RE = UUID_RE  # a session id: upstream's form
RESET_RE = re.compile(r"restarted with fresh state")


# -- helpers ---------------------------------------------------------------

def new_session(d, cwd=None):
    """POST /session; the new session's id."""
    body = {} if cwd is None else {"cwd": cwd}
    st, h, data = d.request("POST", "/session", body=body)
    assert st == 200, (st, data)
    sid = json.loads(data)["session_id"]
    assert ID_RE.match(sid), sid
    return sid


class Run:
    """POST /session/{id}/run, read event by event.  Every read is bounded
    by one deadline for the whole stream (pings keep a plain socket
    timeout from ever firing)."""

    def __init__(self, d, sid, command, wait=30, **opts):
        self.deadline = time.monotonic() + wait
        self.t0 = time.monotonic()
        self.t_end = None
        body = dict(opts)
        if command is not None:
            body["command"] = command
        self.c = d.conn(wait)
        self.c.request("POST", "/session/%s/run" % sid,
                       body=json.dumps(body),
                       headers={"Content-Type": "application/json"})
        self.r = self.c.getresponse()
        self.status = self.r.status
        self.error = None
        self.evs = []
        self.ended = False
        if self.status != 200:
            self.error = json.loads(self.r.read())
            self.ended = True
            self.c.close()
        else:
            ct = self.r.getheader("Content-Type", "")
            assert ct.startswith("text/event-stream"), ct

    def next(self):
        """The next event; None once the stream has ended."""
        while not self.ended:
            left = self.deadline - time.monotonic()
            assert left > 0, "run still going at its deadline: %r" % (
                self.evs,)
            self.c.sock.settimeout(left)
            try:
                line = self.r.readline()
            except socket.timeout:
                raise AssertionError("run still going at its deadline: %r"
                                     % (self.evs,))
            if not line:
                self.ended = True
                self.t_end = time.monotonic()
                self.c.close()
                break
            if line.strip():
                ev = json.loads(line)
                self.evs.append(ev)
                return ev
        return None

    def until(self, pred):
        while True:
            ev = self.next()
            assert ev is not None, "stream ended early: %r" % (self.evs,)
            if pred(ev):
                return ev

    def rest(self):
        while self.next() is not None:
            pass
        return self.evs

    def close(self):
        self.c.close()

    @property
    def elapsed(self):
        return (self.t_end or time.monotonic()) - self.t0


def run(d, sid, command, wait=30, **opts):
    """One run to its end: (status, [events]) or (status, error object)."""
    r = Run(d, sid, command, wait=wait, **opts)
    if r.status != 200:
        return r.status, r.error
    evs = r.rest()
    assert evs and evs[0]["type"] == "init" and evs[0]["text"] == sid, evs
    return r.status, evs


def lines(evs, kind):
    return [e["text"] for e in evs if e["type"] == kind]


def ok(evs):
    """The run ended in success."""
    k = kinds(evs)
    assert k[-1] == "execution_complete" and k.count(
        "execution_complete") == 1 and "error" not in k, evs


def failed(evs, evalue):
    """The run ended in one CommandExecError, evalue given; the error."""
    k = kinds(evs)
    assert k[-1] == "error" and k.count("error") == 1, evs
    assert "execution_complete" not in k, evs
    err = evs[-1]["error"]
    assert err["ename"] == "CommandExecError", err
    assert err["evalue"] == evalue, err
    assert isinstance(err["traceback"], list), err
    return err


def out(d, sid, command, **kw):
    """Run a command that must succeed; its stdout lines."""
    st, evs = run(d, sid, command, **kw)
    assert st == 200, evs
    ok(evs)
    return lines(evs, "stdout")


def pid_alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def kill_quietly(pids):
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass


# -- the end of a run cannot be faked --------------------------------------

def test_output_imitating_markers_cannot_end_or_fake_a_run():
    with Execd() as d:
        sid = new_session(d)
        assert out(d, sid, "V=before; cd /") == []
        spoof = (
            "echo __EXIT_CODE__:0; echo __PWD__:/tmp; "
            "echo __ENV_DUMP_START__; echo 'export V=\"spoofed\"'; "
            "echo __ENV_DUMP_END__; echo __EXIT_CODE__:0 >&2; "
            # Guesses at a status line, on every stream a run can reach.
            "printf '%032x 0\\n' 0; printf '%032x 0\\n' 0 >&2; "
            "echo '0' ; { echo 0 >&3; } 2>/dev/null; "
            "printf 'no newline __EXIT_CODE__:0'; "
            "sleep 0.6; echo real-end; V=after; (exit 5)")
        st, evs = run(d, sid, spoof)
        assert st == 200, evs
        stdout = lines(evs, "stdout")
        assert stdout == [
            "__EXIT_CODE__:0", "__PWD__:/tmp", "__ENV_DUMP_START__",
            'export V="spoofed"', "__ENV_DUMP_END__", "0" * 32 + " 0", "0",
            "no newline __EXIT_CODE__:0real-end"], evs
        assert lines(evs, "stderr") == ["__EXIT_CODE__:0", "0" * 32 + " 0"], \
            evs
        failed(evs, "5")
        # The real end came after the sleep, not at the first fake marker.
        assert evs[-1]["timestamp"] - evs[0]["timestamp"] >= 500, evs
        # The shell's state is what the code did, not what it printed.
        assert out(d, sid, "echo $V; pwd") == ["after", "/"]


def test_a_background_job_printing_markers_during_a_later_run():
    with Execd() as d:
        sid = new_session(d)
        # The job outlives its run and prints fakes while the next runs
        # (from 0.3 s to 0.7 s; the next run takes 1 s).
        bg = out(d, sid, "(sleep 0.3; for i in 1 2 3 4 5; do "
                 "echo __EXIT_CODE__:0; echo 0 >&2; sleep 0.1; done) & "
                 "echo $!")
        try:
            assert len(bg) == 1 and bg[0].isdigit(), bg
            t0 = time.monotonic()
            st, evs = run(d, sid, "sleep 1; echo mine")
            assert time.monotonic() - t0 >= 0.9, evs
            ok(evs)
            assert lines(evs, "stdout")[-1] == "mine", evs
            assert "__EXIT_CODE__:0" in lines(evs, "stdout"), evs
        finally:
            kill_quietly([int(bg[0])])


# -- the shell ends: the session is reset ----------------------------------

def test_set_e_failure_resets_the_session():
    tmp = tempfile.mkdtemp(prefix="execd-sess-")
    try:
        with Execd() as d:
            sid = new_session(d, cwd=tmp)
            assert out(d, sid, "X=kept; f() { echo fn; }; cd /; echo $X") \
                == ["kept"]
            st, evs = run(d, sid,
                          "set -e; echo before; false; echo after")
            assert lines(evs, "stdout") == ["before"], evs
            err = failed(evs, "1")
            assert len(err["traceback"]) == 2, err
            assert err["traceback"][0] == "exit status 1", err
            assert RESET_RE.search(err["traceback"][1]), err
            # A fresh shell: no variable, no function, no errexit, and the
            # session's own directory again.
            st, evs = run(d, sid, "echo x=$X; type f >/dev/null 2>&1 || "
                          "echo no-f; case $- in *e*) echo errexit;; esac; "
                          "pwd -P; false; echo still-here")
            ok(evs)
            assert lines(evs, "stdout") == [
                "x=", "no-f", os.path.realpath(tmp), "still-here"], evs
            # The reset shell is a session like any other.
            assert out(d, sid, "Y=2") == []
            assert out(d, sid, "echo $Y") == ["2"]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_exec_and_exit_reset_the_session():
    with Execd() as d:
        sid = new_session(d)
        assert out(d, sid, "Y=1; echo $$") != []
        # exec replaces the shell: its status is the run's.
        st, evs = run(d, sid, "Y=2; exec sh -c 'echo in-exec; exit 4'")
        assert lines(evs, "stdout") == ["in-exec"], evs
        err = failed(evs, "4")
        assert err["traceback"][0] == "exit status 4", err
        assert len(err["traceback"]) == 2, err
        assert RESET_RE.search(err["traceback"][1]), err
        assert out(d, sid, "echo y=$Y") == ["y="]
        # exec of a command that succeeds: status 0, and a fresh shell.
        assert out(d, sid, "Y=3") == []
        st, evs = run(d, sid, "exec true")
        ok(evs)
        assert out(d, sid, "echo y=$Y") == ["y="]
        # exit with an EXIT trap: the trap's output belongs to the run.
        assert out(d, sid, "Y=4; trap 'echo bye' EXIT") == []
        st, evs = run(d, sid, "echo going; exit 7")
        assert lines(evs, "stdout") == ["going", "bye"], evs
        err = failed(evs, "7")
        assert RESET_RE.search(err["traceback"][-1]), err
        st, evs = run(d, sid, "echo y=$Y")
        ok(evs)
        # The fresh shell has no EXIT trap left to print "bye".
        assert lines(evs, "stdout") == ["y="], evs
        # Killed by a signal: reset too, and still usable.
        st, evs = run(d, sid, "kill -KILL $$")
        err = failed(evs, "137")
        assert RESET_RE.search(err["traceback"][-1]), err
        assert out(d, sid, "echo alive") == ["alive"]


def test_return_and_errors_do_not_reset():
    with Execd() as d:
        sid = new_session(d)
        assert out(d, sid, "K=kept") == []
        # return at the top of a run ends the run, not the shell.
        st, evs = run(d, sid, "echo a; return 3; echo b")
        assert lines(evs, "stdout") == ["a"], evs
        err = failed(evs, "3")
        assert err["traceback"] == ["exit status 3"], err
        # A failing command and a syntax error: the state survives.
        st, evs = run(d, sid, "ls /no/such/path")
        err = failed(evs, "2")
        assert err["traceback"] == ["exit status 2"], err
        assert lines(evs, "stderr") and "/no/such/path" in lines(
            evs, "stderr")[0], evs
        st, evs = run(d, sid, "echo 'unterminated")
        assert evs[-1]["type"] == "error", evs
        assert evs[-1]["error"]["evalue"] != "0", evs
        st, evs = run(d, sid, "if then fi")
        assert evs[-1]["type"] == "error", evs
        assert out(d, sid, "echo $K") == ["kept"]


# -- what a run's code can be -----------------------------------------------

def test_heredocs_and_multiline_code():
    tmp = tempfile.mkdtemp(prefix="execd-sess-")
    try:
        with Execd() as d:
            sid = new_session(d, cwd=tmp)
            code = (
                "V='a value'\n"
                "cat <<'EOF'\n"
                "literal $V `date`\n"
                "  indented\n"
                "\n"
                "EOF\n"
                "cat <<EOF >out.txt\n"
                "expanded $V\n"
                "EOF\n"
                "cat <<-EOF\n"
                "\t\ttabs stripped $V\n"
                "\tEOF\n"
                "greet() {\n"
                "  echo \"hello $1\"\n"
                "}\n"
                "for i in 1 2; do\n"
                "  echo \"loop $i\"\n"
                "done")
            st, evs = run(d, sid, code)
            ok(evs)
            assert lines(evs, "stdout") == [
                "literal $V `date`", "  indented", "\n",
                "tabs stripped a value", "loop 1", "loop 2"], evs
            with open(os.path.join(tmp, "out.txt")) as f:
                assert f.read() == "expanded a value\n"
            # The function and an alias defined in one run work in the next;
            # a heredoc fed to a function too.
            assert out(d, sid, "alias ll='echo aliased'") == []
            st, evs = run(d, sid, "greet world; ll; "
                          "greet \"$(cat <<X\nfrom heredoc\nX\n)\"")
            ok(evs)
            assert lines(evs, "stdout") == [
                "hello world", "aliased", "hello from heredoc"], evs
            # A heredoc whose end marker is missing still ends the run.
            st, evs = run(d, sid, "cat <<NEVER\nbody line", wait=10)
            assert "body line" in lines(evs, "stdout"), evs
            assert out(d, sid, "echo next") == ["next"]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_output_edges():
    with Execd() as d:
        sid = new_session(d)
        st, evs = run(d, sid, r"printf 'a\n\nb\n'; printf 'e1\n\ne2\n' >&2")
        ok(evs)
        assert lines(evs, "stdout") == ["a", "\n", "b"], evs
        assert lines(evs, "stderr") == ["e1", "\n", "e2"], evs
        # A last line without "\n" belongs to its own run, not the next.
        st, evs = run(d, sid, "printf tail; printf etail >&2")
        assert lines(evs, "stdout") == ["tail"], evs
        assert lines(evs, "stderr") == ["etail"], evs
        assert out(d, sid, "echo next") == ["next"]
        # More than a pipe holds, ended right away: nothing is lost or
        # left for the next run.
        st, evs = run(d, sid, "seq 1 50000; seq 1 3000 >&2", wait=60)
        ok(evs)
        got = lines(evs, "stdout")
        assert got == [str(i) for i in range(1, 50001)], (len(got), got[-2:])
        assert len(lines(evs, "stderr")) == 3000, len(lines(evs, "stderr"))
        st, evs = run(d, sid, "echo only-this")
        assert lines(evs, "stdout") == ["only-this"], evs[:5]


# -- runs queue -------------------------------------------------------------

def test_runs_on_one_session_queue_in_order():
    with Execd() as d:
        sid = new_session(d)
        a = Run(d, sid, "sleep 1; V=fromA; cd /; echo A-done")
        assert a.status == 200
        a.until(lambda e: e["type"] == "init")
        b = Run(d, sid, "echo \"B sees $V in $(pwd)\"; V=fromB")
        assert b.status == 200
        b.until(lambda e: e["type"] == "init")
        c = Run(d, sid, "echo \"C sees $V\"")
        assert c.status == 200
        evc = c.rest()
        evb = b.rest()
        eva = a.rest()
        ok(eva)
        ok(evb)
        ok(evc)
        assert lines(eva, "stdout") == ["A-done"], eva
        assert lines(evb, "stdout") == ["B sees fromA in /"], evb
        assert lines(evc, "stdout") == ["C sees fromB"], evc
        # Each waited for the one before it.
        ta, tb, tc = (x[-1]["timestamp"] for x in (eva, evb, evc))
        assert ta <= tb <= tc, (ta, tb, tc)
        assert tb - evb[0]["timestamp"] >= 700, (evb[0], evb[-1])


def test_a_queued_run_waits_for_a_failing_and_a_resetting_run():
    with Execd() as d:
        sid = new_session(d)
        assert out(d, sid, "W=1") == []
        a = Run(d, sid, "sleep 0.5; exit 9")
        a.until(lambda e: e["type"] == "init")
        b = Run(d, sid, "echo w=$W")
        evb = b.rest()
        eva = a.rest()
        err = failed(eva, "9")
        assert RESET_RE.search(err["traceback"][-1]), err
        # b ran in the fresh shell that replaced a's.
        ok(evb)
        assert lines(evb, "stdout") == ["w="], evb


def test_a_client_that_goes_away_leaves_the_session_usable():
    tmp = tempfile.mkdtemp(prefix="execd-sess-")
    try:
        mark = os.path.join(tmp, "mark")
        with Execd() as d:
            sid = new_session(d)
            base = None
            assert out(d, sid, "echo warm") == ["warm"]
            base = d.fds()
            a = Run(d, sid, "echo started; sleep 0.8; Z=set; echo done > %s"
                    % mark)
            a.until(lambda e: e["type"] == "stdout")
            a.close()
            assert d.request("GET", "/ping")[0] == 200
            # The next run comes after the abandoned one, whatever it did.
            st, evs = run(d, sid, "echo z=$Z", wait=20)
            ok(evs)
            assert lines(evs, "stdout") in (["z=set"], ["z="]), evs
            if lines(evs, "stdout") == ["z=set"]:
                with open(mark) as f:
                    assert f.read() == "done\n"
            assert out(d, sid, "echo again") == ["again"]
            assert wait_for(lambda: d.fds() <= base, timeout=5), \
                (d.fds(), base)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# -- timeouts ---------------------------------------------------------------

def test_timeout_stops_the_run_and_keeps_the_state():
    with Execd("--grace-period", "500") as d:
        sid = new_session(d)
        assert out(d, sid, "V=keep; cd /tmp; f() { echo fn-ok; }") == []
        st, evs = run(d, sid, "echo started; sh -c 'echo $$; exec sleep 30'",
                      wait=15, timeout=300)
        dt = (evs[-1]["timestamp"] - evs[0]["timestamp"]) / 1000.0
        assert 0.25 <= dt < 5, dt
        stdout = lines(evs, "stdout")
        assert stdout[0] == "started" and stdout[1].isdigit(), evs
        assert evs[-1]["type"] == "error", evs
        err = evs[-1]["error"]
        assert err["ename"] == "CommandExecError", err
        assert "timeout" in " ".join(err["traceback"]).lower(), err
        assert not any(RESET_RE.search(t) for t in err["traceback"]), err
        assert "execution_complete" not in kinds(evs), evs
        assert wait_for(lambda: not pid_alive(int(stdout[1])), timeout=5)
        # Same shell, same state.
        assert out(d, sid, "echo $V; pwd; f") == ["keep", "/tmp", "fn-ok"]
        # A timeout that is not reached changes nothing.
        st, evs = run(d, sid, "sleep 0.2; echo in-time", timeout=5000)
        ok(evs)
        assert lines(evs, "stdout") == ["in-time"], evs


def test_an_interrupt_that_comes_after_the_run_changes_nothing():
    # A timeout's SIGINT can reach the shell after the run's code has
    # ended (execd descheduled between signalling the child and the
    # shell).  The shell is then between runs: the signal must not
    # print an error, nor end the next run early.
    with Execd() as d:
        sid = new_session(d)
        assert out(d, sid, "V=kept; (sleep 0.3; kill -INT $$) "
                   ">/dev/null 2>&1 &") == []
        time.sleep(1)
        st, evs = run(d, sid, "echo $V; echo next")
        assert st == 200, evs
        ok(evs)
        assert lines(evs, "stdout") == ["kept", "next"], evs
        assert lines(evs, "stderr") == [], evs


def test_timeout_stops_a_subshell_that_holds_the_output():
    # Upstream 1.1.1 (#2079): a timed-out run's whole group is killed, so a
    # subshell such as `(sleep 30; echo late)` cannot hold the run open.
    with Execd("--grace-period", "500") as d:
        sid = new_session(d)
        assert out(d, sid, "V=keep") == []
        st, evs = run(d, sid, "(sh -c 'echo $$; exec sleep 30'; echo late)",
                      wait=15, timeout=300)
        assert evs[-1]["type"] == "error", evs
        assert "timeout" in " ".join(
            evs[-1]["error"]["traceback"]).lower(), evs
        dt = (evs[-1]["timestamp"] - evs[0]["timestamp"]) / 1000.0
        assert dt < 8, dt
        stdout = lines(evs, "stdout")
        assert stdout[0].isdigit() and "late" not in stdout, evs
        assert wait_for(lambda: not pid_alive(int(stdout[0])), timeout=5)
        assert out(d, sid, "echo $V") == ["keep"]


def test_timeout_escalates_to_sigkill():
    with Execd("--grace-period", "500") as d:
        sid = new_session(d)
        assert out(d, sid, "V=keep") == []
        t0 = time.monotonic()
        # A command deaf to the polite signals (TERM, INT, HUP).
        st, evs = run(d, sid, "sh -c 'trap \"\" TERM INT HUP; echo $$; "
                      "exec sleep 30'", wait=15, timeout=300)
        dt = time.monotonic() - t0
        # 300 ms, then the grace period before SIGKILL.
        assert 0.7 <= dt < 8, dt
        pid = int(lines(evs, "stdout")[0])
        assert evs[-1]["type"] == "error", evs
        assert "timeout" in " ".join(
            evs[-1]["error"]["traceback"]).lower(), evs
        assert wait_for(lambda: not pid_alive(pid), timeout=5)
        assert out(d, sid, "echo $V") == ["keep"]


def test_timeout_of_a_loop_that_starts_commands():
    # Each command the loop starts dies at the timeout, but the loop would
    # start the next one: the run must still end.
    with Execd("--grace-period", "500") as d:
        sid = new_session(d)
        assert out(d, sid, "V=keep") == []
        st, evs = run(d, sid, "while :; do sleep 1; done", wait=20,
                      timeout=300)
        assert evs[-1]["type"] == "error", evs
        assert "timeout" in " ".join(
            evs[-1]["error"]["traceback"]).lower(), evs
        dt = (evs[-1]["timestamp"] - evs[0]["timestamp"]) / 1000.0
        assert dt < 8, dt
        assert out(d, sid, "echo alive", wait=10) == ["alive"]
        # Commands one after another: the ones after the timeout must not
        # run.
        st, evs = run(d, sid, "sleep 30; sleep 30; sleep 30; echo after",
                      wait=20, timeout=300)
        assert evs[-1]["type"] == "error", evs
        assert "after" not in lines(evs, "stdout"), evs
        assert out(d, sid, "echo alive", wait=10) == ["alive"]


def test_timeout_inside_a_function_ends_the_whole_run():
    # The run is stopped, not just the function it was in: what follows
    # the call must not run.
    with Execd("--grace-period", "500") as d:
        sid = new_session(d)
        for code in ("f() { sleep 30; }; f; echo after-f",
                     "g() { while :; do :; done; }; g; echo after-g",
                     "h() { sleep 30; }; k() { h; echo in-k; }; k; "
                     "echo after-k"):
            st, evs = run(d, sid, code, wait=20, timeout=300)
            assert evs[-1]["type"] == "error", (code, evs)
            assert "timeout" in " ".join(
                evs[-1]["error"]["traceback"]).lower(), (code, evs)
            assert lines(evs, "stdout") == [], (code, evs)
            assert out(d, sid, "echo alive", wait=10) == ["alive"]


def test_timeout_spares_background_jobs_of_earlier_runs():
    with Execd("--grace-period", "300") as d:
        sid = new_session(d)
        bg = out(d, sid, "sleep 300 & echo $!")
        try:
            pid = int(bg[0])
            st, evs = run(d, sid, "sleep 30", wait=15, timeout=300)
            assert evs[-1]["type"] == "error", evs
            time.sleep(0.8)     # past the grace period
            assert pid_alive(pid), \
                "the timeout of a later run killed an earlier run's job"
        finally:
            kill_quietly([int(x) for x in bg if x.isdigit()])


def test_timeout_of_the_shells_own_loop():
    # A builtin loop has no process to stop: the shell's INT trap ends it,
    # and the shell, with its state, stays.
    with Execd("--grace-period", "500") as d:
        sid = new_session(d)
        assert out(d, sid, "V=before") == []
        t0 = time.monotonic()
        st, evs = run(d, sid, "echo spinning; while :; do :; done",
                      wait=20, timeout=300)
        assert time.monotonic() - t0 < 10
        assert lines(evs, "stdout") == ["spinning"], evs
        assert evs[-1]["type"] == "error", evs
        err = evs[-1]["error"]
        assert err["ename"] == "CommandExecError", err
        tb = " ".join(err["traceback"])
        assert "timeout" in tb.lower(), err
        assert not RESET_RE.search(tb), err
        assert "execution_complete" not in kinds(evs), evs
        st, evs = run(d, sid, "echo v=$V", wait=10)
        ok(evs)
        assert lines(evs, "stdout") == ["v=before"], evs


def test_timeout_of_a_loop_deaf_to_signals_resets_the_session():
    # Nothing to interrupt and a shell that ignores the polite signals:
    # the only way out is a fresh shell, and the run says so.
    with Execd("--grace-period", "500") as d:
        sid = new_session(d)
        assert out(d, sid, "V=lost") == []
        t0 = time.monotonic()
        st, evs = run(d, sid, "trap '' INT TERM HUP QUIT; echo spinning; "
                      "while :; do :; done", wait=20, timeout=300)
        dt = time.monotonic() - t0
        assert dt < 10, dt
        assert lines(evs, "stdout") == ["spinning"], evs
        assert evs[-1]["type"] == "error", evs
        err = evs[-1]["error"]
        assert err["ename"] == "CommandExecError", err
        tb = " ".join(err["traceback"])
        assert "timeout" in tb.lower(), err
        assert RESET_RE.search(tb), err
        st, evs = run(d, sid, "echo v=$V; sleep 30", wait=10, timeout=300)
        assert lines(evs, "stdout") == ["v="], evs
        # The fresh shell does not ignore the signals the old one did:
        # this timeout keeps it.
        assert not RESET_RE.search(" ".join(evs[-1]["error"]["traceback"]))
        assert out(d, sid, "echo alive", wait=10) == ["alive"]


# -- DELETE and the process group ------------------------------------------

def test_delete_kills_the_shells_process_group():
    with Execd() as d:
        sid = new_session(d)
        got = out(d, sid, "echo $$; sleep 300 & echo $!; "
                  "(sleep 300; echo never) & echo $!; "
                  "sleep 300 >/dev/null 2>&1 </dev/null & echo $!")
        pids = [int(x) for x in got]
        try:
            assert len(pids) == 4, got
            assert all(pid_alive(p) for p in pids), pids
            st, h, body = d.request("DELETE", "/session/" + sid)
            assert st == 200, body
            assert wait_for(lambda: not any(pid_alive(p) for p in pids),
                            timeout=5), [p for p in pids if pid_alive(p)]
            st, err = run(d, sid, "echo hi")
            expect_error(st, json.dumps(err), 404, "CONTEXT_NOT_FOUND")
            st, h, body = d.request("DELETE", "/session/" + sid)
            expect_error(st, body, 404, "CONTEXT_NOT_FOUND")
            # No zombie or stray child of execd is left behind.
            assert wait_for(lambda: not children_of(d.proc.pid),
                            timeout=5), children_of(d.proc.pid)
        finally:
            kill_quietly(pids)


def test_delete_ends_the_running_and_queued_runs():
    with Execd() as d:
        sid = new_session(d)
        a = Run(d, sid, "echo $$; sleep 300", wait=15)
        shell = int(a.until(lambda e: e["type"] == "stdout")["text"])
        b = Run(d, sid, "echo queued", wait=15)
        b.until(lambda e: e["type"] == "init")
        t0 = time.monotonic()
        st, h, body = d.request("DELETE", "/session/" + sid)
        assert st == 200, body
        eva, evb = a.rest(), b.rest()
        assert time.monotonic() - t0 < 5
        assert eva[-1]["type"] == "error", eva
        assert evb[-1]["type"] == "error", evb
        assert "queued" not in lines(evb, "stdout"), evb
        assert "execution_complete" not in kinds(eva) + kinds(evb)
        assert wait_for(lambda: not pid_alive(shell), timeout=5)


def test_delete_command_with_a_session_id_deletes_it():
    with Execd() as d:
        sid = new_session(d)
        pid = int(out(d, sid, "sleep 300 & echo $!")[0])
        try:
            st, h, body = d.request("DELETE", "/command?id=" + sid)
            assert st == 200, body
            assert wait_for(lambda: not pid_alive(pid), timeout=5)
            st, err = run(d, sid, "true")
            expect_error(st, json.dumps(err), 404, "CONTEXT_NOT_FOUND")
        finally:
            kill_quietly([pid])


# -- several sessions -------------------------------------------------------

def test_two_sessions_run_in_parallel_with_their_own_state():
    with Execd() as d:
        s1, s2 = new_session(d), new_session(d)
        assert s1 != s2
        assert out(d, s1, "X=one; cd /") == []
        assert out(d, s2, "X=two; cd /tmp") == []
        res = {}

        # Each run notes when it began and ended its sleep (a file each:
        # stdout is for what the test compares).
        def go(sid):
            res[sid] = run(d, sid, "date +%%s.%%N >%s/%s.t0; sleep 1; "
                           "date +%%s.%%N >%s/%s.t1; echo $X $(pwd)"
                           % (tmp, sid, tmp, sid), wait=15)

        def stamp(sid, which):
            with open("%s/%s.%s" % (tmp, sid, which)) as f:
                return float(f.read())

        tmp = tempfile.mkdtemp()
        try:
            ts = [threading.Thread(target=go, args=(s,)) for s in (s1, s2)]
            for t in ts:
                t.start()
            for t in ts:
                t.join(20)
            assert not any(t.is_alive() for t in ts)
            assert lines(res[s1][1], "stdout") == ["one /"], res[s1]
            assert lines(res[s2][1], "stdout") == ["two /tmp"], res[s2]
            ok(res[s1][1])
            ok(res[s2][1])
            # They overlapped: each began before the other ended.
            begun = max(stamp(s, "t0") for s in (s1, s2))
            ended = min(stamp(s, "t1") for s in (s1, s2))
            assert begun < ended, "the sessions ran one after the other"
        finally:
            shutil.rmtree(tmp)
        # Deleting one leaves the other alone.
        assert d.request("DELETE", "/session/" + s1)[0] == 200
        assert out(d, s2, "echo $X") == ["two"]


# -- stdin, leaks ------------------------------------------------------------

def test_stdin_of_a_run_is_empty():
    with Execd() as d:
        sid = new_session(d)
        t0 = time.monotonic()
        st, evs = run(d, sid, "cat; echo cat-rc=$?; read line; "
                      "echo read-rc=$?; wc -c </dev/stdin", wait=10)
        assert time.monotonic() - t0 < 3
        ok(evs)
        assert [x.strip() for x in lines(evs, "stdout")] == [
            "cat-rc=0", "read-rc=1", "0"], evs
        # Reading stdin cannot swallow what the session itself needs.
        assert out(d, sid, "echo after", wait=10) == ["after"]


def test_many_runs_on_one_session_leak_nothing():
    with Execd() as d:
        sid = new_session(d)
        for i in range(3):
            assert out(d, sid, "n=0; echo warm") == ["warm"]
        base = d.fds()
        kids = len(children_of(d.proc.pid))
        c = d.conn(30)
        for i in range(1, 201):
            # Half on one keep-alive connection, half on new ones.
            st, h, data = d.request(
                "POST", "/session/%s/run" % sid,
                body={"command": "n=$((n+1)); echo $n; "
                      + ("false" if i % 10 == 0 else "true")},
                conn=c if i % 2 else None, timeout=30)
            assert st == 200, data
            evs = [json.loads(x) for x in data.split(b"\n") if x.strip()]
            assert lines(evs, "stdout") == [str(i)], (i, evs)
            if i % 10 == 0:
                failed(evs, "1")
            else:
                ok(evs)
        c.close()
        assert out(d, sid, "echo $n") == ["200"]
        assert wait_for(lambda: d.fds() <= base, timeout=5), (d.fds(), base)
        assert len(children_of(d.proc.pid)) == kids, children_of(d.proc.pid)
        # Sessions made and deleted leave nothing either.
        for i in range(20):
            s = new_session(d)
            assert out(d, s, "echo %d" % i) == [str(i)]
            assert d.request("DELETE", "/session/" + s)[0] == 200
        assert wait_for(lambda: d.fds() <= base, timeout=5), (d.fds(), base)
        assert wait_for(lambda: len(children_of(d.proc.pid)) == kids,
                        timeout=5), children_of(d.proc.pid)
