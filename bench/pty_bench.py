"""pty_bench.py -- the terminal row of the bench: a keystroke's echo round
trip through execd's WebSocket terminal against the same through a local
pty with no execd, in the same run.

Run with /usr/bin/python3 and Debian's python3-websocket (websocket-client);
bench/run.sh calls it.

  pty_bench.py echo EXECD N
      Start EXECD on 127.0.0.1 at a free port, POST /pty with the command
      `stty raw -echo; echo READY; exec cat` (a program that echoes each
      byte it reads, as a TUI does), connect to /pty/{id}/ws and wait for
      READY.  Then N times: send one keystroke (binary 0x00 + byte) and
      wait for the 0x01 frame that carries it back.  The baseline: the same
      command on a pty opened here (openpty, bash in its own session with
      the terminal as its controlling tty), one byte written to the master
      and read back N times.  Prints "execd_med_us base_med_us
      execd_p99_us base_p99_us".

Times are CLOCK_MONOTONIC.  Every wait is bounded; every process started
here is stopped by its pid, also on SIGTERM.
"""

import json
import os
import select
import socket
import subprocess
import sys
import time

import websocket

import benchlib
from benchlib import Execd, die, now_us, procs, stop

TIMEOUT = 10
COMMAND = "stty raw -echo; echo READY; exec cat"


def percentiles(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2], xs[min(len(xs) - 1, len(xs) * 99 // 100)]


def keys(n):
    return [bytes([ord("a") + i % 26]) for i in range(n)]


def via_execd(binary, n, tmp):
    ex = Execd(binary, tmp, "--log-level", "warn", env={"TMPDIR": tmp},
               timeout=TIMEOUT)
    try:
        conn, port = ex.conn, ex.port
        conn.request("POST", "/pty", body=json.dumps({"command": COMMAND}))
        r = conn.getresponse()
        body = r.read()
        if r.status != 201:
            die("POST /pty: %d %r" % (r.status, body))
        sid = json.loads(body)["session_id"]
        ws = websocket.create_connection(
            "ws://127.0.0.1:%d/pty/%s/ws" % (port, sid), timeout=TIMEOUT)
        ws.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        seen = b""
        deadline = time.monotonic() + TIMEOUT
        while b"READY" not in seen:
            if time.monotonic() > deadline:
                die("the terminal never said READY: %r" % seen[-200:])
            op, data = ws.recv_data()
            if op == websocket.ABNF.OPCODE_BINARY and data[:1] in (
                    b"\x01", b"\x03"):
                seen += data[9:] if data[:1] == b"\x03" else data[1:]
        times = []
        for k in keys(n):
            t0 = now_us()
            ws.send_binary(b"\x00" + k)
            got = b""
            while k not in got:
                op, data = ws.recv_data()
                if op == websocket.ABNF.OPCODE_BINARY and data[:1] == b"\x01":
                    got += data[1:]
            times.append(now_us() - t0)
        ws.close()
        conn.request("DELETE", "/pty/" + sid)
        conn.getresponse().read()
        conn.close()
        return times
    finally:
        ex.close()


def via_local_pty(n):
    m, s = os.openpty()
    proc = subprocess.Popen(
        ["/bin/bash", "--norc", "--noprofile", "-c", COMMAND],
        stdin=s, stdout=s, stderr=s, start_new_session=True,
        close_fds=True)
    procs.append(proc)
    os.close(s)
    try:
        poller = select.poll()
        poller.register(m, select.POLLIN)
        seen = b""
        deadline = time.monotonic() + TIMEOUT
        while b"READY" not in seen:
            if time.monotonic() > deadline or not poller.poll(TIMEOUT * 1000):
                die("the local pty never said READY: %r" % seen[-200:])
            seen += os.read(m, 4096)
        times = []
        for k in keys(n):
            t0 = now_us()
            os.write(m, k)
            got = b""
            while k not in got:
                if not poller.poll(TIMEOUT * 1000):
                    die("no echo from the local pty")
                got += os.read(m, 4096)
            times.append(now_us() - t0)
        return times
    finally:
        stop(proc)
        os.close(m)


def cmd_echo(binary, n, tmp):
    base = via_local_pty(n)
    ours = via_execd(binary, n, tmp)
    e_med, e_p99 = percentiles(ours)
    b_med, b_p99 = percentiles(base)
    print(e_med, b_med, e_p99, b_p99)


if __name__ == "__main__":
    sys.exit(benchlib.main(sys.argv, {"echo": cmd_echo}, __doc__))
