"""command_bench.py -- the /command rows of the bench that hold many
commands or stream a lot, each against a baseline measured in the same run.

Run with /usr/bin/python3 (standard library only); bench/run.sh calls it.

  command_bench.py hold EXECD N
      Start EXECD on 127.0.0.1 at a free port.  Sample its RSS and open
      descriptors idle, then start N background `sleep 30` commands, one
      POST /command after the other on one keep-alive connection, and time
      that from the first request to the last answer.  While they run,
      sample execd's RSS and descriptors again, and ask GET
      /command/status/{id} of each: all must say running.  Then DELETE
      /command?id= each and time until every one has been reaped (no child
      left, every status finished).  The baseline: N `/bin/bash -c "sleep
      30"` spawned directly (posix_spawn, each in its own session, as execd
      does), timed the same way, then killed and reaped.  Prints
      "start_us base_us rss_idle_kib rss_held_kib fds_idle fds_held
      running stop_us".
  command_bench.py stream EXECD MIB
      Start EXECD and stream MIB MiB of 100-byte lines (`head -c BYTES
      /dev/zero | tr '\\0' x | fold -w 99`) through a foreground POST
      /command, read by this client as fast as it can; execd's RSS is
      sampled every 10 ms meanwhile.  The stream is checked: one stdout
      event per line, then execution_complete.  The baseline: the same
      generator piped to /dev/null by the shell.  Prints "execd_us base_us
      rss_idle_kib rss_peak_kib events stream_bytes".
  command_bench.py unread EXECD MIB [SECS]
      Start EXECD and make MIB MiB of output that its client does not
      read for SECS seconds (default 20), sampling execd's RSS every 10
      ms from before the request until all is read: first through a
      foreground POST /command (the stream generator's lines), then
      through POST /code in a python context (a warm-up run first): a
      cell that writes MIB MiB in 100 KiB lines, each flushed, 2 ms
      apart (about 50 MB/s, as fast as code that computes what it prints;
      a kernel's PUB socket drops what its subscriber does not take in
      time).  Then each stream is read whole and checked: every line of
      the command, and of the cell the --max-output cut (8 MiB of head,
      the marker counting what was dropped, 8 MiB of tail ending in the
      last line).  Prints "cmd_rss_idle_kib cmd_rss_peak_kib
      code_rss_idle_kib code_rss_peak_kib".
  command_bench.py isolation EXECD N [GAP_MS]
      Start two EXECDs: one as shipped (the default seccomp profile, and
      each command with a memory and a process limit, so with a cgroup
      of its own where execd can make one), one with isolation off
      (--seccomp off --cgroups off --limit core=unlimited, no request
      limits).  Run N foreground POST /command `true` on each, in
      alternating pairs on keep-alive connections, each timed to the end
      of its stream, GAP_MS (default 0) after the one before: an agent's
      commands come far apart, and the kernel's cgroup moves cost most
      after a quiet spell.  Prints "on_median_us off_median_us
      mechanism".

Times are CLOCK_MONOTONIC.  Every wait is bounded; every process started
here is stopped by its pid, also on SIGTERM.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import benchlib
from benchlib import Execd, children, die, fds, now_us, rss_kib

TIMEOUT = 120


def start_execd(binary, tmp):
    """An execd of ours, its temporary files under tmp."""
    return Execd(binary, tmp, "--log-level", "warn", env={"TMPDIR": tmp},
                 timeout=TIMEOUT)


def wait_until(pred, what, timeout=60):
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            die("timed out waiting for " + what)
        time.sleep(0.01)


# --- hold: N background sleeps ---------------------------------------------

def spawn_direct(n):
    """n bash -c "sleep 30" spawned directly: (microseconds, pids)."""
    pids = []
    t0 = now_us()
    for _ in range(n):
        pids.append(os.posix_spawn("/bin/bash",
                                   ["/bin/bash", "-c", "sleep 30"],
                                   os.environ, setsid=True))
    return now_us() - t0, pids


def cmd_hold(binary, n, tmp):
    # The baseline first, so execd's run does not share the machine with
    # a thousand of its sleeps.
    base_us, pids = spawn_direct(n)
    try:
        time.sleep(0.2)
    finally:
        for p in pids:
            try:
                os.killpg(p, signal.SIGKILL)
            except OSError:
                pass
        for p in pids:
            os.waitpid(p, 0)
    ex = start_execd(binary, tmp)
    try:
        st, _ = ex.request("GET", "/ping")
        time.sleep(0.2)
        rss_idle, fds_idle = rss_kib(ex.proc.pid), fds(ex.proc.pid)
        ids = []
        t0 = now_us()
        for _ in range(n):
            st, data = ex.request("POST", "/command", {
                "command": "sleep 30", "background": True})
            if st != 200 or b'"execution_complete"' not in data:
                die("POST /command: %d %r" % (st, data[-300:]))
            ids.append(json.loads(data.split(b"\n\n")[0])["text"])
        start_us = now_us() - t0
        time.sleep(0.2)
        rss_held, fds_held = rss_kib(ex.proc.pid), fds(ex.proc.pid)
        running = 0
        for cid in ids:
            st, data = ex.request("GET", "/command/status/" + cid)
            if st == 200 and json.loads(data)["running"]:
                running += 1
        t0 = now_us()
        for cid in ids:
            st, data = ex.request("DELETE", "/command?id=" + cid)
            if st != 200:
                die("DELETE /command: %d %r" % (st, data))
        wait_until(lambda: not children(ex.proc.pid), "the sleeps to be "
                   "reaped")
        stop_us = now_us() - t0
        for cid in ids:
            st, data = ex.request("GET", "/command/status/" + cid)
            if st != 200 or json.loads(data)["running"]:
                die("still running after the interrupt: " + cid)
    finally:
        ex.close()
    print("%d %d %d %d %d %d %d %d" % (start_us, base_us, rss_idle,
                                       rss_held, fds_idle, fds_held,
                                       running, stop_us))


# --- stream: MIB MiB of 100-byte lines ---------------------------------------

def generator(mib):
    return "head -c %d /dev/zero | tr '\\0' x | fold -w 99" % (mib << 20)


def cmd_stream(binary, mib, tmp):
    gen = generator(mib)
    t0 = now_us()
    subprocess.run(["/bin/sh", "-c", gen + " >/dev/null"], check=True,
                   timeout=TIMEOUT)
    base_us = now_us() - t0
    ex = start_execd(binary, tmp)
    peak = [0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            try:
                peak[0] = max(peak[0], rss_kib(ex.proc.pid))
            except (OSError, RuntimeError):
                return
            time.sleep(0.01)

    try:
        ex.request("GET", "/ping")
        time.sleep(0.2)
        rss_idle = rss_kib(ex.proc.pid)
        th = threading.Thread(target=sample)
        th.start()
        c = ex.conn
        try:
            t0 = now_us()
            c.request("POST", "/command", body=json.dumps({"command": gen}),
                      headers={"Content-Type": "application/json"})
            r = c.getresponse()
            if r.status != 200:
                die("POST /command: %d %r" % (r.status, r.read()[:300]))
            total = nstdout = 0
            tail = b""
            key = b'"type":"stdout"'
            while True:
                chunk = r.read1(1 << 20)
                if not chunk:
                    break
                total += len(chunk)
                both = tail + chunk
                nstdout += both.count(key) - tail.count(key)
                tail = both[-512:]
            execd_us = now_us() - t0
        finally:
            done.set()
            th.join()
        want = -(-(mib << 20) // 99)
        if nstdout != want or b'"type":"execution_complete"' not in tail:
            die("stream: %d stdout events (want %d), ends %r"
                % (nstdout, want, tail))
    finally:
        ex.close()
    print("%d %d %d %d %d %d" % (execd_us, base_us, rss_idle, peak[0],
                                 nstdout, total))


# --- unread: output a client does not read for a while ----------------------

class Peak(threading.Thread):
    """The highest VmRSS (KiB) of pid, sampled every 10 ms until stop()."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid = pid
        self.idle = self.peak = rss_kib(pid)
        self.done = threading.Event()

    def run(self):
        while not self.done.is_set():
            try:
                self.peak = max(self.peak, rss_kib(self.pid))
            except (OSError, RuntimeError):
                return
            time.sleep(0.01)

    def stop(self):
        self.done.set()
        self.join()
        return self.idle, self.peak


def unread(ex, path, body, secs):
    """POST path, read nothing for secs, then all of it: (idle, peak
    RSS in KiB, the body)."""
    time.sleep(0.5)
    peak = Peak(ex.proc.pid)
    peak.start()
    try:
        c = ex.conn
        c.request("POST", path, body=json.dumps(body),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        if r.status != 200:
            die("POST %s: %d %r" % (path, r.status, r.read()[:300]))
        time.sleep(secs)
        data = r.read()
    finally:
        idle, top = peak.stop()
    return idle, top, data


CELL_LINE = 100 << 10


def cell(mib):
    """Code writing mib MiB in flushed 100 KiB lines, 2 ms apart."""
    return ("import sys, time\n"
            "for i in range(%d):\n"
            "    sys.stdout.write('%%09d' %% i + 'y' * %d + '\\n')\n"
            "    sys.stdout.flush()\n"
            "    time.sleep(0.002)\n" % ((mib << 20) // CELL_LINE,
                                          CELL_LINE - 10))


def cmd_unread(binary, mib, tmp, secs="20"):
    secs = float(secs)
    ex = start_execd(binary, tmp)
    try:
        ex.request("GET", "/ping")
        c_idle, c_peak, data = unread(ex, "/command",
                                      {"command": generator(mib)}, secs)
        want = -(-(mib << 20) // 99)
        got = data.count(b'"type":"stdout"')
        if got != want or b'"type":"execution_complete"' not in data[-600:]:
            die("/command: %d stdout events (want %d), ends %r"
                % (got, want, data[-300:]))
        del data
        ctx = ex.json("POST", "/code/context", {"language": "python"})
        st, data = ex.request("POST", "/code", {
            "code": "print('warm')", "context": {"id": ctx["id"]}})
        if st != 200 or b"warm" not in data:
            die("POST /code warm-up: %d %r" % (st, data[-300:]))
        k_idle, k_peak, data = unread(ex, "/code", {
            "code": cell(mib), "context": {"id": ctx["id"]}}, secs)
        evs = [json.loads(x) for x in data.split(b"\n") if x.strip()]
        marks = [i for i, e in enumerate(evs) if e["type"] == "stderr"]
        if len(marks) != 1 or evs[-1]["type"] != "execution_complete":
            die("/code: %d stderr events, ends %r" % (len(marks),
                                                        evs[-1:]))
        head = "".join(e["text"] for e in evs[:marks[0]]
                       if e["type"] == "stdout")
        tail = "".join(e["text"] for e in evs[marks[0]:]
                       if e["type"] == "stdout")
        last = "%09d" % ((mib << 20) // CELL_LINE - 1)
        dropped = "%d bytes dropped" % (
            (mib << 20) // CELL_LINE * CELL_LINE - len(head) - len(tail))
        if (len(head) != 8 << 20 or len(tail) != 8 << 20 or
                not head.startswith("000000000y") or
                not tail.endswith(last + "y" * (CELL_LINE - 10) + "\n") or
                dropped not in evs[marks[0]]["text"]):
            die("/code: head %d bytes, tail %d, marker %r" % (
                len(head), len(tail), evs[marks[0]]["text"][:200]))
        ex.request("DELETE", "/code/contexts/" + ctx["id"])
    finally:
        ex.close()
    print("%d %d %d %d" % (c_idle, c_peak, k_idle, k_peak))


# --- isolation: POST /command true, isolation on and off ---------------------

LIMITS = {"memory": "256MiB", "processes": 64}


def run_true(ex, limits):
    """One POST /command `true` to the end of its stream; microseconds."""
    body = {"command": "true"}
    if limits:
        body["limits"] = limits
    t0 = now_us()
    st, data = ex.request("POST", "/command", body)
    dt = now_us() - t0
    if st != 200 or b"execution_complete" not in data:
        die("POST /command true: %d %s" % (st, data[:300]))
    return dt


def cmd_isolation(binary, n, tmp, gap_ms="0"):
    on = start_execd(binary, tmp)
    off = Execd(binary, tmp, "--log-level", "warn", "--seccomp", "off",
                "--cgroups", "off", "--limit", "core=unlimited",
                name="execd-off", env={"TMPDIR": tmp}, timeout=TIMEOUT)
    try:
        mech = on.json("GET", "/metrics")["isolation"]["limits"]
        for _ in range(20):  # warm both up
            run_true(on, LIMITS)
            run_true(off, None)
        t_on, t_off = [], []
        gap = float(gap_ms) / 1000

        def one(ex, limits):
            time.sleep(gap)
            return run_true(ex, limits)
        for i in range(n):
            if i % 2:
                t_on.append(one(on, LIMITS))
                t_off.append(one(off, None))
            else:
                t_off.append(one(off, None))
                t_on.append(one(on, LIMITS))
    finally:
        on.close()
        off.close()
    t_on.sort()
    t_off.sort()
    print("%d %d %s" % (t_on[n // 2], t_off[n // 2],
                        mech.replace(" ", "-")))


if __name__ == "__main__":
    sys.exit(benchlib.main(sys.argv, {"hold": cmd_hold,
                                      "stream": cmd_stream,
                                      "unread": cmd_unread,
                                      "isolation": cmd_isolation},
                           "usage: command_bench.py hold EXECD N | "
                           "stream EXECD MIB | unread EXECD MIB [SECS] | "
                           "isolation EXECD N [GAP_MS]\n"))
