"""The same checks on every language execd is tested with: one row each.

A row (LANGS below) names a context language and says, for each check,
what code to run in it and what must come back.  The checks, all in one
context per language (R and Octave take seconds to start):
- state: a value set by one run is seen by the next;
- streams: text written to stdout and to stderr arrives as such;
- result: the value of an expression (an execute_result, or printed);
- rich: a plot or image arrives as a result event with an image type;
- error: a failing run ends with an error event naming the error;
- interrupt: DELETE /code ends a long run with the interrupted error,
  and the context runs the next cell with its state intact;
- restart: a kernel killed mid-run ends the run with an error, and the
  context starts a fresh kernel (state gone) for the next run.
Adding a language is adding a row.

The kernels come from scripts/deps.sh (Debian's ipykernel, IRkernel,
octave and octave_kernel) and tests/kernels/setup.sh (tslab, from npm).
A row whose kernel is not installed fails; EXECD_TEST_SKIP_LANGS (names
separated by commas) skips rows on a machine that lacks them, and says
so in the output.
"""
import base64
import os
import signal
import tempfile
import threading
import time

import lib
from lib import Execd, interrupted_run, kinds, new_context, run_code, texts

RUN_BOUND = 60       # seconds in which a run must end, even under ASan


def of_type(evs, kind):
    return [e for e in evs if e["type"] == kind]


def png_ok(v):
    return base64.b64decode(v).startswith(b"\x89PNG\r\n\x1a\n")


def svg_ok(v):
    return "<svg" in v and v.rstrip().endswith("</svg>")


# Each check is (code, what must come back); None only where the language
# cannot do it at all, with the reason beside the row.
#   state:     (set code, get code, text the get run prints or returns)
#   streams:   (code, stdout, stderr); stderr None: the kernel merges both
#              streams into stdout (a pty), and both texts are looked for
#   result:    (code, "result" or "stdout", text): where the value comes
#   rich:      (code, MIME type, check of the value)
#   error:     (code, ename, text in evalue or stdout)
#   interrupt: (long-running code, ename or None, text in the output)
#   settle:    seconds to wait after a failed run (tslab aborts code that
#              reaches it within 200 ms of a failure)
#   env:       for the daemon, and so for the kernel
LANGS = {
    "python": dict(
        spec="python3",
        state=("x = 41", "print(x + 1)", "42\n"),
        streams=("import sys; print('out-1'); "
                 "print('err-1', file=sys.stderr)", "out-1\n", "err-1\n"),
        result=("6 * 7", "result", "42"),
        rich=("from IPython.display import display, Image\n"
              "import base64\n"
              "display(Image(data=base64.b64decode('%s')))" % (
                  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4"
                  "2mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="),
              "image/png", png_ok),
        error=("1/0", "ZeroDivisionError", "division by zero"),
        interrupt=("import time; time.sleep(300)", "KeyboardInterrupt", ""),
    ),
    "javascript": dict(
        spec="jslab",
        state=("let x = 41", "console.log(x + 1)", "42\n"),
        streams=('console.log("out-1"); console.error("err-1")',
                 "out-1\n", "err-1\n"),
        # tslab prints the value of the last expression.
        result=("6 * 7", "stdout", "42\n"),
        rich=('const tslab = require("tslab");\n'
              'tslab.display.png(Buffer.from("%s", "base64"))' % (
                  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4"
                  "2mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="),
              "image/png", png_ok),
        # No iopub error: execd makes the event from the failed reply.
        error=('throw new TypeError("boom")', "Error", "TypeError: boom"),
        interrupt=("while (true) {}", "Error",
                   "Script execution was interrupted"),
        settle=0.5,
    ),
    "typescript": dict(
        spec="tslab",
        state=("const x: number = 41", "console.log(x + 1)", "42\n"),
        streams=('console.log("out-1"); console.error("err-1")',
                 "out-1\n", "err-1\n"),
        result=("const y: number = 6; y * 7", "stdout", "42\n"),
        rich=('import * as tslab from "tslab";\n'
              'tslab.display.png(Buffer.from("%s", "base64"))' % (
                  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4"
                  "2mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="),
              "image/png", png_ok),
        error=('const s: string = 5', "Error",
               "Type 'number' is not assignable to type 'string'"),
        interrupt=("while (true) {}", "Error",
                   "Script execution was interrupted"),
        settle=0.5,
    ),
    "bash": dict(
        spec=None,          # served by execd itself, no kernel
        state=("x=41", "echo $((x + 1))", "42\n"),
        streams=("echo out-1; echo err-1 >&2", "out-1\n", "err-1\n"),
        result=("echo $((6 * 7))", "stdout", "42\n"),
        rich=None,          # a shell has no display channel
        # The error of a failed command is its exit status.
        error=("(exit 3)", "CommandExecError", "3"),
        interrupt=("sleep 300; echo not-reached", None, ""),
    ),
    "r": dict(
        spec="ir",
        state=("x <- 41", "cat(x + 1, '\\n')", "42 \n"),
        # IRkernel ends a message() with one newline more.
        streams=("cat('out-1\\n'); message('err-1')", "out-1\n",
                 "err-1\n\n"),
        result=("6 * 7", "result", "[1] 42"),
        rich=("plot(1:10)", "image/png", png_ok),
        error=('stop("boom")', "ERROR", "boom"),
        interrupt=("Sys.sleep(300)", None, ""),
    ),
    "octave": dict(
        spec="octave",
        # octave_kernel drives octave-cli through a pty: without line
        # editing, readline's bracketed-paste codes stay out of the output.
        env={"OCTAVE_CLI_OPTIONS": "--no-line-editing"},
        state=("x = 41;", "disp(x + 1)", "42\r\n"),
        streams=('disp("out-1"); fputs(stderr, "err-1\\n");',
                 "out-1\r\n", None),
        result=("6 * 7", "stdout", "ans = 42\r\n"),
        # SVG, through gnuplot (PNG would need ghostscript too).
        rich=("%plot -f svg\nplot(1:10)", "image/svg+xml", svg_ok),
        # octave_kernel replies "ok" to a failed statement and prints
        # Octave's message: there is no error event to name.
        error=('error("boom")', None, "error: boom"),
        interrupt=("pause(300)", None, ""),
    ),
}


def installed():
    """Kernelspec names execd finds with the test environment."""
    import subprocess
    top = jupyter_path()
    r = subprocess.run([lib.EXECD, "--kernels"], capture_output=True,
                       text=True, timeout=30,
                       env=dict(os.environ, JUPYTER_PATH=top))
    assert r.returncode == 0, r
    return {line.split()[0] for line in r.stdout.splitlines()
            if line.strip()}


_top = []


def jupyter_path():
    """tslab's kernelspecs, written once per process (test_code_js)."""
    if not _top:
        import test_code_js
        _top.append(test_code_js.jupyter_path())
    return _top[0]


def skipped(name):
    skip = os.environ.get("EXECD_TEST_SKIP_LANGS", "")
    if name in [s.strip() for s in skip.split(",")]:
        print("SKIPPED: %s (EXECD_TEST_SKIP_LANGS)" % name, flush=True)
        return True
    return False


def kernel_pid(d, cid):
    st, conn = d.get_json("/code/contexts/%s/connection" % cid)
    assert st == 200, conn
    path = conn["connection_file"].encode()
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open("/proc/%s/cmdline" % p, "rb") as f:
                    if path in f.read():
                        return int(p)
            except OSError:
                pass
    raise AssertionError("no kernel process for %r" % path)


def shell_pid(d, cid):
    st, evs = run_code(d, "echo $$", id=cid)
    return int(texts(evs, "stdout"))


def outputs(evs):
    return texts(evs, "stdout") + texts(evs, "stderr")


def check_state(d, cid, row):
    set_code, get_code, want = row["state"]
    st, evs = run_code(d, set_code, id=cid, timeout=RUN_BOUND)
    assert st == 200 and kinds(evs)[-1] == "execution_complete", evs
    assert of_type(evs, "error") == [], evs
    st, evs = run_code(d, get_code, id=cid, timeout=RUN_BOUND)
    assert texts(evs, "stdout") == want, ("state", evs)


def check_streams(d, cid, row):
    code, out, err = row["streams"]
    st, evs = run_code(d, code, id=cid, timeout=RUN_BOUND)
    assert kinds(evs)[-1] == "execution_complete", evs
    if err is None:
        got = texts(evs, "stdout")
        assert out in got and "err-1" in got, ("streams", evs)
        assert texts(evs, "stderr") == "", ("streams", evs)
    else:
        assert texts(evs, "stdout") == out, ("stdout", evs)
        assert texts(evs, "stderr") == err, ("stderr", evs)


def check_result(d, cid, row):
    code, where, want = row["result"]
    st, evs = run_code(d, code, id=cid, timeout=RUN_BOUND)
    res = of_type(evs, "result")
    if where == "result":
        assert len(res) == 1 and res[0]["results"]["text"] == want, evs
    else:
        assert res == [] and texts(evs, "stdout") == want, ("result", evs)


def check_rich(d, cid, row):
    code, mime, ok = row["rich"]
    st, evs = run_code(d, code, id=cid, timeout=RUN_BOUND)
    assert kinds(evs)[-1] == "execution_complete", evs
    got = [e["results"][mime] for e in of_type(evs, "result")
           if mime in e["results"]]
    assert len(got) == 1 and ok(got[0]), ("rich", kinds(evs),
                                          outputs(evs)[:2000])


def check_error(d, cid, row):
    code, ename, text = row["error"]
    st, evs = run_code(d, code, id=cid, timeout=RUN_BOUND)
    assert st == 200 and kinds(evs)[-1] == "execution_complete", evs
    errs = [e["error"] for e in of_type(evs, "error")]
    if ename is None:
        assert errs == [], evs
        assert text in texts(evs, "stdout"), ("error", evs)
    else:
        assert [e["ename"] for e in errs] == [ename], ("error", evs)
        assert text in errs[0]["evalue"] + outputs(evs), ("error", evs)
    time.sleep(row.get("settle", 0))


def check_interrupt(d, cid, row):
    code, ename, text = row["interrupt"]
    t0 = time.monotonic()
    evs = interrupted_run(d, cid, code, after=1.0)
    assert time.monotonic() - t0 < RUN_BOUND, "the interrupt took too long"
    assert kinds(evs)[-1] == "execution_complete", ("interrupt", evs)
    assert "not-reached" not in outputs(evs), evs
    errs = [e["error"]["ename"] for e in of_type(evs, "error")]
    if ename is not None:
        assert errs == [ename], ("interrupt", evs)
    assert text in outputs(evs), ("interrupt", evs)
    time.sleep(row.get("settle", 0))
    # The context runs the next cell, its state intact.
    set_code, get_code, want = row["state"]
    st, evs = run_code(d, get_code, id=cid, timeout=RUN_BOUND)
    assert texts(evs, "stdout") == want, ("after the interrupt", evs)


def check_restart(d, cid, row):
    set_code, get_code, want = row["state"]
    pid = shell_pid(d, cid) if row["spec"] is None else kernel_pid(d, cid)
    code = row["interrupt"][0]
    out = {}
    t = threading.Thread(target=lambda: out.update(r=run_code(
        d, code, id=cid, timeout=RUN_BOUND)))
    t.start()
    time.sleep(1.0)
    os.kill(pid, signal.SIGKILL)
    t.join(RUN_BOUND)
    assert not t.is_alive(), "the run did not end when its kernel died"
    st, evs = out["r"]
    errs = [e["error"] for e in of_type(evs, "error")]
    said = errs and errs[-1]["evalue"] + "\n".join(
        errs[-1].get("traceback") or [])
    assert said and "killed by signal 9" in said, ("restart", evs)
    # A fresh kernel: it runs code, and the old state is gone.
    st, evs = run_code(d, row["streams"][0], id=cid, timeout=RUN_BOUND)
    assert "out-1" in texts(evs, "stdout"), ("after the restart", evs)
    st, evs = run_code(d, get_code, id=cid, timeout=RUN_BOUND)
    assert texts(evs, "stdout") != want, ("state survived", evs)


CHECKS = (("state", check_state), ("streams", check_streams),
          ("result", check_result), ("rich", check_rich),
          ("error", check_error), ("interrupt", check_interrupt),
          ("restart", check_restart))


def run_row(name):
    if skipped(name):
        return
    row = LANGS[name]
    if row["spec"] is not None:
        assert row["spec"] in installed(), (
            "kernel %r for %s is not installed: run scripts/deps.sh "
            "(and tests/kernels/setup.sh)" % (row["spec"], name))
    env = dict(row.get("env", {}), JUPYTER_PATH=jupyter_path())
    # A kernel that dies may leave files in its directory (Octave writes
    # octave-workspace): a directory of the test's own, not the tree.
    with Execd(env=env) as d, tempfile.TemporaryDirectory() as cwd:
        c = new_context(d, name, cwd=cwd)
        assert c["language"] == name, c
        for check, fn in CHECKS:
            if row.get(check, check) is None:
                continue        # the language cannot: see its row
            try:
                fn(d, c["id"], row)
            except AssertionError as e:
                raise AssertionError("%s, check %s: %s" % (name, check, e))


def test_python():
    run_row("python")


def test_javascript():
    run_row("javascript")


def test_typescript():
    run_row("typescript")


def test_bash():
    run_row("bash")


def test_r():
    run_row("r")


def test_octave():
    run_row("octave")


def test_every_row_has_a_test():
    names = {k[5:] for k in globals() if k.startswith("test_")}
    assert set(LANGS) <= names, set(LANGS) - names
    for name, row in LANGS.items():
        missing = [c for c, _ in CHECKS if c not in row and
                   c != "restart"]
        assert missing == [], (name, missing)
        assert row["state"] and row["streams"] and row["error"] and \
            row["interrupt"], name
