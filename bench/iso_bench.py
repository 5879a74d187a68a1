"""iso_bench.py -- the isolated-session rows of the bench.

/usr/bin/python3, standard library only (and cp); bench/run.sh calls it.
It needs what isolated sessions need (root with CAP_SYS_ADMIN, overlayfs):
where GET /v1/isolated/capabilities says they are unavailable it prints
"skip" and the reason.

  iso_bench.py session EXECD N
      Start EXECD with an upper root of its own and an empty workspace;
      after one warm-up, N rounds, alternating sides:
        iso      POST /v1/isolated/session (one overlay of the
                 workspace), one run of `true`, DELETE of the session;
        command  POST /command of `true`.
      Prints "iso_us command_us", the medians in microseconds.

  iso_bench.py commit EXECD N
      Make a workspace of N files (100 per directory, 4 KiB each, as
      ckpt_bench.py's tree); then 5 rounds, alternating sides:
        commit   a session of the workspace (untimed create), 10 of its
                 files changed in it (untimed), POST .../commit timed,
                 the session deleted (untimed); each round checks that
                 the 10 files changed outside too and nothing conflicted;
        cp       cp -a of the workspace to a directory beside it, timed
                 (removed, untimed).
      Prints "commit_us cp_us create_us", the medians in microseconds
      (create_us: the untimed creates, for information: they record the
      workspace's tree).

Times are CLOCK_MONOTONIC.  execd is stopped by its pid, also on
SIGTERM; the directories are removed.
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

import benchlib
from benchlib import Execd, die, now_us
from ckpt_bench import changed_paths, make_tree

ISO = "/v1/isolated"
ROUNDS = 5
BASES = []      # directories of ours under /var/tmp, removed at the end


def start(binary, tmp):
    # Not under /tmp: the strict profile's /tmp is the session's own.
    base = tempfile.mkdtemp(prefix="execd-iso-bench.", dir="/var/tmp")
    os.chmod(base, 0o755)
    BASES.append(base)
    upper = os.path.join(base, "upper")
    ws = os.path.join(base, "ws")
    os.mkdir(ws)
    d = Execd(binary, tmp, "--isolation-upper-root", upper, timeout=300)
    caps = d.json("GET", ISO + "/capabilities")
    if not caps.get("available"):
        d.close()
        print("skip %s" % caps.get("message", "isolation unavailable"))
        return None, ws
    return d, ws


def run_true(d, sid):
    st, body = d.request("POST", ISO + "/session/%s/run" % sid,
                         {"code": "true"})
    if st != 200 or b"execution_complete" not in body:
        die("isolated run: %d %s" % (st, body[:400]))


def iso_round(d, ws):
    t0 = now_us()
    sid = d.json("POST", ISO + "/session",
                 {"overlays": [{"path": ws, "mode": "overlay"}]},
                 want=201)["session_id"]
    run_true(d, sid)
    st, body = d.request("DELETE", ISO + "/session/" + sid)
    t1 = now_us()
    if st != 200:
        die("DELETE session: %d %s" % (st, body[:200]))
    return t1 - t0


def cmd_round(d):
    t0 = now_us()
    st, body = d.request("POST", "/command", {"command": "true"})
    t1 = now_us()
    if st != 200:
        die("POST /command: %d %s" % (st, body[:200]))
    return t1 - t0


def session(binary, n, tmp):
    d, ws = start(binary, tmp)
    if d is None:
        return
    try:
        iso_round(d, ws)
        cmd_round(d)
        iso, cmd = [], []
        for _ in range(n):
            iso.append(iso_round(d, ws))
            cmd.append(cmd_round(d))
    finally:
        d.close()
    print("%d %d" % (statistics.median(iso), statistics.median(cmd)))


def commit(binary, n, tmp):
    d, ws = start(binary, tmp)
    if d is None:
        return
    make_tree(ws, n)
    paths = changed_paths(ws, n)
    rels = [os.path.relpath(p, ws) for p in paths]
    copy = os.path.join(os.path.dirname(ws), "copy")
    try:
        cm, cp, cr = [], [], []
        for r in range(ROUNDS + 1):
            t0 = now_us()
            sid = d.json("POST", ISO + "/session",
                         {"overlays": [{"path": ws, "mode": "overlay"}]},
                         want=201)["session_id"]
            t1 = now_us()
            mark = "round %d" % r
            code = "".join("printf '%s' > %s\n" % (mark, p) for p in rels)
            st, body = d.request("POST", ISO + "/session/%s/run" % sid,
                                 {"code": code})
            if st != 200 or b"execution_complete" not in body:
                die("isolated run: %d %s" % (st, body[:400]))
            t2 = now_us()
            res = d.json("POST", ISO + "/session/%s/commit" % sid)
            t3 = now_us()
            if res["conflicts"] or res["failed"] or \
                    len(res["applied"]) != len(paths):
                die("commit: %s" % json.dumps(res)[:400])
            for p in paths:
                with open(p) as f:
                    if f.read() != mark:
                        die("%s was not committed" % p)
            st, body = d.request("DELETE", ISO + "/session/" + sid)
            if st != 200:
                die("DELETE session: %d %s" % (st, body[:200]))
            t4 = now_us()
            subprocess.run(["cp", "-a", ws, copy], check=True)
            t5 = now_us()
            shutil.rmtree(copy)
            if r > 0:
                cr.append(t1 - t0)
                cm.append(t3 - t2)
                cp.append(t5 - t4)
    finally:
        d.close()
    print("%d %d %d" % (statistics.median(cm), statistics.median(cp),
                        statistics.median(cr)))


def main():
    try:
        return benchlib.main(sys.argv, {"session": session,
                                        "commit": commit},
                             "usage: iso_bench.py session|commit EXECD N\n")
    finally:
        for base in BASES:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
