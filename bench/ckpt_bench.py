"""ckpt_bench.py -- the workspace checkpoint row of the bench.

/usr/bin/python3, standard library only; bench/run.sh calls it.

  ckpt_bench.py tree EXECD N
      Make a tree of N files (100 per directory, 4 KiB of distinct bytes
      each) in a fresh directory and start EXECD, its checkpoint store
      (--checkpoint-dir) beside the tree on the same filesystem.  Then,
      after one warm-up, 5 rounds, alternating sides:
        execd   POST /files/checkpoint of the tree, 10 files changed in
                place (untimed), POST /files/restore; the two requests
                timed; the checkpoint is deleted (untimed);
        tar     tar c of the tree into a file beside it, the same 10
                files changed (untimed), tar x of it over the tree; the
                two tar runs timed.
      Each round checks that the restore put back the 10 files' bytes.
      Prints "execd_us tar_us ck_us rs_us tarc_us tarx_us written", the
      medians in microseconds and the files the last restore wrote.

Times are CLOCK_MONOTONIC.  execd is stopped by its pid, also on
SIGTERM; the tree is removed.
"""

import os
import statistics
import subprocess
import sys
import time

import benchlib
from benchlib import Execd, die, now_us

ROUNDS = 5
CHANGED = 10
PER_DIR = 100
SIZE = 4096


def make_tree(root, n):
    for i in range(n):
        d = os.path.join(root, "d%03d" % (i // PER_DIR))
        if i % PER_DIR == 0:
            os.makedirs(d)
        with open(os.path.join(d, "f%05d" % i), "wb") as f:
            f.write((b"%08d" % i) * (SIZE // 8))


def changed_paths(root, n):
    step = max(1, n // CHANGED)
    return [os.path.join(root, "d%03d" % (i // PER_DIR), "f%05d" % i)
            for i in range(0, step * CHANGED, step)][:CHANGED]


def change(paths):
    for p in paths:
        fd = os.open(p, os.O_WRONLY)
        os.write(fd, b"CHANGED!")
        os.close(fd)


def check(paths):
    for p in paths:
        with open(p, "rb") as f:
            if f.read(8) == b"CHANGED!":
                die("%s was not put back" % p)


def execd_round(d, root, paths):
    t0 = now_us()
    ck = d.json("POST", "/files/checkpoint", {"path": root}, want=201)
    t1 = now_us()
    change(paths)
    time.sleep(0.2)     # a workspace is not written the moment it is saved
    t2 = now_us()
    r = d.json("POST", "/files/restore", {"id": ck["id"]})
    t3 = now_us()
    check(paths)
    st, body = d.request("DELETE", "/files/checkpoint/" + ck["id"])
    if st != 204:
        die("DELETE /files/checkpoint: %d %s" % (st, body[:200]))
    return t1 - t0, t3 - t2, r["written"]


def tar_round(root, tarfile, paths):
    t0 = now_us()
    subprocess.run(["tar", "cf", tarfile, "-C", root, "."], check=True)
    t1 = now_us()
    change(paths)
    time.sleep(0.2)
    t2 = now_us()
    subprocess.run(["tar", "xf", tarfile, "-C", root], check=True)
    t3 = now_us()
    check(paths)
    os.unlink(tarfile)
    return t1 - t0, t3 - t2


def tree(binary, n, tmp):
    root = os.path.join(tmp, "tree")
    store = os.path.join(tmp, "store")
    tarfile = os.path.join(tmp, "tree.tar")
    os.mkdir(root)
    make_tree(root, n)
    paths = changed_paths(root, n)
    time.sleep(0.2)
    d = Execd(binary, tmp, "--checkpoint-dir", store, timeout=300)
    try:
        execd_round(d, root, paths)
        tar_round(root, tarfile, paths)
        ck, rs, tc, tx = [], [], [], []
        written = 0
        for _ in range(ROUNDS):
            time.sleep(0.2)
            a, b, written = execd_round(d, root, paths)
            ck.append(a)
            rs.append(b)
            time.sleep(0.2)
            a, b = tar_round(root, tarfile, paths)
            tc.append(a)
            tx.append(b)
    finally:
        d.close()
    e = [a + b for a, b in zip(ck, rs)]
    t = [a + b for a, b in zip(tc, tx)]
    print("%d %d %d %d %d %d %d" % (
        statistics.median(e), statistics.median(t), statistics.median(ck),
        statistics.median(rs), statistics.median(tc), statistics.median(tx),
        written))


if __name__ == "__main__":
    sys.exit(benchlib.main(sys.argv, {"tree": tree},
                           "usage: ckpt_bench.py tree EXECD N\n"))
