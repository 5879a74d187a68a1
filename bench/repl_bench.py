"""repl_bench.py -- the Java and Go rows of the bench: a trivial
evaluation through POST /code against the same evaluation done by the
bare interpreter, and a context's start to ready.

/usr/bin/python3, standard library only; bench/run.sh calls it.

  repl_bench.py java|go EXECD KERNEL N STARTS
      Install the tree's kernelspec (repl/kernels/LANG) in a directory
      of its own with argv[0] KERNEL (execd-repl-kernel), start EXECD on
      127.0.0.1 with JUPYTER_PATH there, and create a context.  After 5
      warm-ups of each, N times each, in alternating blocks of 10:
        code   POST /code on that context, to the end of its stream;
        bare   java: the same line written to a jshell of our own
               (started as the kernelspec starts it, with its init
               lines), then the spec's end line, to the end marker on
               its stdout; go: `yaegi run` of the same program written
               to a file, to its exit;
      both checked to print "2".  Then STARTS times: POST
      /code/context, and the first evaluation on it (the JVM starts with
      the first run: ready is when that run has ended), then the
      context deleted.
      Go's bare runs are timed by a helper in a session of its own, as
      the kernel's runs are in the kernel's (execd starts each kernel in
      one); N more bare runs from a helper in the bench's own session give
      the last number (0 for java).
      Prints "code_med code_min bare_med bare_min create_med ready_med
      bare_same_session_med" in microseconds.

Times are CLOCK_MONOTONIC.  Every wait is bounded; execd and jshell are
stopped by their pids, also on SIGTERM.
"""

import json
import os
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile

import benchlib
from benchlib import Execd, die, now_us

WARMUPS = 5
BLOCK = 10
TIMEOUT = 120       # seconds for one answer (a JVM's first run)
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

CODE = {
    "java": "System.out.println(1 + 1);",
    "go": 'package main\n\nimport "fmt"\n\nfunc main() {\n'
          '\tfmt.Println(1 + 1)\n}\n',
}


def spec_of(lang):
    with open(os.path.join(ROOT, "repl", "kernels", lang,
                           "kernel.json")) as f:
        return json.load(f)


def install(top, lang, kernel):
    spec = spec_of(lang)
    spec["argv"][0] = kernel
    d = os.path.join(top, "kernels", lang)
    os.makedirs(d)
    with open(os.path.join(d, "kernel.json"), "w") as f:
        json.dump(spec, f)


def post_code(ex, code, cid):
    """POST /code to the end of its stream; its stdout."""
    st, body = ex.request("POST", "/code", {"code": code,
                                            "context": {"id": cid}})
    if st != 200:
        die("POST /code: %d %r" % (st, body[:300]))
    out = ""
    for line in body.split(b"\n"):
        if line.strip():
            ev = json.loads(line)
            if ev["type"] == "stdout":
                out += ev["text"]
            elif ev["type"] == "error":
                die("POST /code: error %r" % ev)
    return out


class BareJshell:
    """jshell as the java kernelspec starts it, driven through pipes."""

    def __init__(self):
        repl = spec_of("java")["metadata"]["repl"]
        self.marker = "@bench%d@" % os.getpid()

        def sub(s):
            return s.replace("{marker}", self.marker)
        self.end = sub(repl["end"])
        self.mark = sub(repl["marker"])
        self.proc = subprocess.Popen(repl["argv"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        benchlib.procs.append(self.proc)
        self.buf = b""
        self.seq = 0
        for line in repl.get("init", []):
            self.proc.stdin.write((sub(line) + "\n").encode())
        self.eval("")

    def eval(self, code):
        """Write code and the end line; the output before the marker."""
        self.seq += 1
        end = self.end.replace("{seq}", str(self.seq))
        self.proc.stdin.write((code + "\n" + end + "\n").encode())
        self.proc.stdin.flush()
        want = (self.mark + str(self.seq) + "\n").encode()
        fd = self.proc.stdout.fileno()
        while want not in self.buf:
            r, _, _ = select.select([fd], [], [], TIMEOUT)
            if not r:
                die("jshell did not answer")
            chunk = os.read(fd, 65536)
            if not chunk:
                die("jshell ended")
            self.buf += chunk
        out, self.buf = self.buf.split(want, 1)
        return out.decode()


def bare_go(path):
    r = subprocess.run(["yaegi", "run", path], capture_output=True,
                       timeout=TIMEOUT)
    if r.returncode != 0:
        die("yaegi run: %r" % r.stderr[-300:])
    return r.stdout.decode()


def bare_go_block(path, k, session=True):
    """k runs of `yaegi run path`, timed by a helper (this script) that
    runs in a session of its own, as the kernel's runs do: execd starts
    each kernel in a session, and with the scheduler's autogroups where
    a process runs changes how fast it starts on a loaded machine.  The
    times in microseconds."""
    r = subprocess.run([sys.executable, os.path.abspath(__file__),
                        "bare-go", path, str(k)], capture_output=True,
                       timeout=TIMEOUT * k, start_new_session=session)
    if r.returncode != 0:
        die("bare-go: %r" % r.stderr[-300:])
    return [int(v) for v in r.stdout.split()]


def main():
    if sys.argv[1] == "bare-go":
        times = []
        for _ in range(int(sys.argv[3])):
            t0 = now_us()
            if bare_go(sys.argv[2]).strip() != "2":
                die("yaegi run printed no 2")
            times.append(now_us() - t0)
        print(" ".join(str(t) for t in times))
        return 0
    lang, execd, kernel, n, starts = (sys.argv[1], sys.argv[2], sys.argv[3],
                                      int(sys.argv[4]), int(sys.argv[5]))
    if lang not in CODE:
        die("language: java or go")
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, benchlib.on_signal)
    tmp = tempfile.mkdtemp(prefix="execd-bench-repl-")
    try:
        install(tmp, lang, kernel)
        ex = Execd(execd, tmp, env={"JUPYTER_PATH": tmp}, timeout=TIMEOUT)
        cid = ex.json("POST", "/code/context", {"language": lang})["id"]
        code = CODE[lang]
        if lang == "java":
            bare = BareJshell()
            bare_eval = lambda: bare.eval(code)      # noqa: E731
        else:
            path = os.path.join(tmp, "main.go")
            with open(path, "w") as f:
                f.write(code)
            bare_eval = lambda: bare_go(path)        # noqa: E731
        sides = {"code": lambda: post_code(ex, code, cid),
                 "bare": bare_eval}
        times = {"code": [], "bare": []}
        for name, fn in sides.items():
            for _ in range(WARMUPS):
                if fn().strip() != "2":
                    die("%s printed %r" % (name, fn()))
        while len(times["bare"]) < n:
            for name, fn in sides.items():
                k = min(BLOCK, n - len(times[name]))
                if lang == "go" and name == "bare":
                    times[name] += bare_go_block(path, k)
                    continue
                for _ in range(k):
                    t0 = now_us()
                    out = fn()
                    times[name].append(now_us() - t0)
                    if out.strip() != "2":
                        die("%s printed %r" % (name, out))
        create, ready = [], []
        for _ in range(starts):
            t0 = now_us()
            c = ex.json("POST", "/code/context", {"language": lang})["id"]
            create.append(now_us() - t0)
            if post_code(ex, code, c).strip() != "2":
                die("the first run of a new context printed no 2")
            ready.append(now_us() - t0)
            ex.request("DELETE", "/code/contexts/" + c)
        same = 0
        if lang == "go":
            same = statistics.median(bare_go_block(path, n, session=False))
        print(" ".join(str(int(v)) for v in (
            statistics.median(times["code"]), min(times["code"]),
            statistics.median(times["bare"]), min(times["bare"]),
            statistics.median(create), statistics.median(ready), same)))
    except RuntimeError as e:
        print("repl_bench: %s" % e, file=sys.stderr)
        return 1
    finally:
        benchlib.stop_all()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
