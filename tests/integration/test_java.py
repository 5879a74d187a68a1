"""Java contexts through execd-repl-kernel driving jshell.

The kernelspec is repl/kernels/java/kernel.json, installed for each test
in a directory of its own on JUPYTER_PATH, with its argv[0] pointed at the
execd-repl-kernel built next to the execd under test.  The scenarios are
those upstream's Java end-to-end tests check, in our words: output,
values, runtime and compile errors, state kept between runs, interrupts,
a REPL that dies or never becomes ready, and a Jupyter client attached to
a context seeing its state.  jshell comes from
openjdk-17-jdk-headless (scripts/deps.sh).  A JVM takes seconds to start:
each test uses one context for as much as it can.
"""
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time

from jupyter_client import BlockingKernelClient

from lib import (Execd, ReplContext, alive, error_of, install_repl_kernel,
                 interrupted_run, new_context, of_type, run_code, texts)

RUN_BOUND = 120      # seconds in which a run must end, even under ASan


def install(top, name="java", repl=None):
    """The tree's java kernelspec under top/kernels/name (lib.py)."""
    install_repl_kernel(top, "java", name, repl)


class Java(ReplContext):
    """An execd with the java kernelspec installed, and one context."""

    def __init__(self):
        super().__init__("java", "jshell", RUN_BOUND)


def jshell_pids(kernel_pid):
    """The jshell processes whose parent is kernel_pid."""
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % p) as f:
                stat = f.read()
            with open("/proc/%s/cmdline" % p, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == kernel_pid and argv and argv[0].endswith(b"jshell"):
            out.append(int(p))
    return out


def kernel_pid(d, cid):
    st, conn = d.get_json("/code/contexts/%s/connection" % cid)
    path = conn["connection_file"].encode()
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open("/proc/%s/cmdline" % p, "rb") as f:
                    if path in f.read():
                        return int(p)
            except OSError:
                pass
    raise AssertionError("no kernel process")


def test_java_output_values_errors_and_state():
    with Java() as j:
        evs = j.run('System.out.println("Hello from Java!");')
        assert texts(evs, "stdout") == "Hello from Java!\n", evs
        assert not of_type(evs, "error"), evs

        evs = j.run("int result = 2 + 2;\nresult")
        res = of_type(evs, "result")
        assert [r["results"] for r in res] == [{"text": "4"}], evs
        assert texts(evs, "stdout") == "", evs

        evs = j.run('System.err.println("to stderr");')
        assert texts(evs, "stderr") == "to stderr\n", evs

        evs = j.run("int x = 10 / 0;")
        err = error_of(evs)
        assert err["ename"] == "EvalException", err
        assert "ArithmeticException" in err["evalue"], err
        assert "/ by zero" in err["evalue"], err
        assert any("at " in line for line in err["traceback"]), err

        evs = j.run('throw new IllegalStateException("no way");')
        err = error_of(evs)
        assert err["ename"] == "EvalException", err
        assert "IllegalStateException: no way" in err["evalue"], err

        evs = j.run("int y = \"not an int\";")
        err = error_of(evs)
        assert err["ename"] == "CompilationException", err
        assert "incompatible types" in err["evalue"], err

        # Variables, methods and classes persist; a method redefined
        # replaces the old one.
        j.run("int twice(int v) { return 2 * v; }\n"
              "class Box { int v; Box(int v) { this.v = v; } }")
        evs = j.run("twice(result) + new Box(1).v")
        assert [r["results"] for r in of_type(evs, "result")] == [
            {"text": "9"}], evs
        j.run("int twice(int v) { return 3 * v; }")
        evs = j.run("twice(result)")
        assert [r["results"] for r in of_type(evs, "result")] == [
            {"text": "12"}], evs
        # Output printed without a newline, then a value, in order.
        evs = j.run('System.out.print("a"); System.out.print("b");\n'
                    '"s".length()')
        assert texts(evs, "stdout") == "ab", evs
        assert of_type(evs, "result")[0]["results"] == {"text": "1"}, evs


def test_java_huge_output_is_cut_and_incomplete_code_refused():
    with Java() as j:
        # 100 MB of output: cut as every run's (--max-output 16M: the
        # first and the last 8 MiB, a stderr note of what was dropped).
        lines, size = 100000, 1000
        evs = j.run("for (int i = 0; i < %d; i++) System.out.println("
                    "String.format(\"%%09d\", i) + \"y\".repeat(%d));"
                    % (lines, size - 10))
        assert evs[-1]["type"] == "execution_complete", evs[-3:]
        marks = [i for i, e in enumerate(evs) if e["type"] == "stderr"]
        assert len(marks) == 1, len(marks)
        assert "bytes dropped" in evs[marks[0]]["text"], evs[marks[0]]
        head = texts(evs[:marks[0]], "stdout")
        tail = texts(evs[marks[0]:], "stdout")
        line = "y" * (size - 10) + "\n"
        assert head.startswith("000000000" + line + "000000001"), head[:20]
        assert tail.endswith("%09d" % (lines - 1) + line), tail[-20:]

        evs = j.run("for (int i = 0; i < 3; i++) {\n  "
                    "System.out.println(i);")
        err = error_of(evs)
        assert err["ename"] == "CompilationException", err
        assert "incomplete" in err["evalue"], err
        evs = j.run('System.out.println("still here");')
        assert texts(evs, "stdout") == "still here\n", evs


def test_java_interrupt_stops_a_loop_and_keeps_state():
    with Java() as j:
        j.run("long n = 0;")
        j.run("1")      # the JVM has compiled a snippet: warm
        evs = interrupted_run(j.d, j.ctx["id"], "while (true) { n++; }",
                              after=2.0)
        err = error_of(evs)
        assert err["ename"] == "EvaluationInterruptedException", evs
        evs = j.run("System.out.println(n > 0);")
        assert texts(evs, "stdout") == "true\n", evs
        # An interrupt at once may reach jshell while it still reads the
        # code (it then drops what it holds): the run ends all the same,
        # in the same JVM, with the state kept.
        evs = interrupted_run(j.d, j.ctx["id"], "while (true) { n++; }",
                              after=0.0)
        assert error_of(evs)["ename"] == "EvaluationInterruptedException", \
            evs
        evs = j.run("System.out.println(n > 0);")
        assert texts(evs, "stdout") == "true\n", evs
        # A Jupyter client attached to the context sees the same state.
        st, conn = j.d.get_json("/code/contexts/%s/connection"
                                % j.ctx["id"])
        kc = BlockingKernelClient(connection_file=conn["connection_file"])
        kc.load_connection_file()
        kc.start_channels()
        try:
            got = []
            reply = kc.execute_interactive(
                "n > 0", timeout=RUN_BOUND,
                output_hook=lambda m: got.append(m))
            assert reply["content"]["status"] == "ok", reply
            res = [m["content"]["data"]["text/plain"] for m in got
                   if m["msg_type"] == "execute_result"]
            assert res == ["true"], got
        finally:
            kc.stop_channels()


def test_java_repl_killed_mid_run_ends_the_run_and_restarts():
    with Java() as j:
        j.run("int kept = 7;")
        kp = kernel_pid(j.d, j.ctx["id"])
        pids = jshell_pids(kp)
        assert len(pids) == 1, pids
        out = {}
        t = threading.Thread(target=lambda: out.update(r=run_code(
            j.d, "Thread.sleep(100000);", id=j.ctx["id"],
            timeout=RUN_BOUND)))
        t.start()
        time.sleep(2.0)
        os.kill(pids[0], signal.SIGKILL)
        t.join(RUN_BOUND)
        assert not t.is_alive(), "the run did not end"
        evs = out["r"][1]
        err = error_of(evs)
        assert "killed by signal 9" in err["evalue"], err
        assert "jshell" in err["evalue"], err
        # A new kernel, and a new REPL, with fresh state.
        evs = j.run("System.out.println(kept);")
        assert error_of(evs)["ename"] == "CompilationException", evs
        evs = j.run("6 * 7")
        assert of_type(evs, "result")[0]["results"] == {"text": "42"}, evs
        kp2 = kernel_pid(j.d, j.ctx["id"])
        assert kp2 != kp
        # A kernel killed alone takes its REPL with it.
        repl = jshell_pids(kp2)
        assert len(repl) == 1, repl
        os.kill(kp2, signal.SIGKILL)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and alive(repl[0]):
            time.sleep(0.2)
        assert not alive(repl[0]), "jshell outlived its kernel"


def test_java_repl_that_never_gets_ready_fails_clearly():
    top = tempfile.mkdtemp(prefix="execd-java-")
    try:
        # A REPL that reads nothing and prints nothing.
        install(top, "stuck", {"argv": ["sleep", "4321"],
                               "ready_timeout": 2})
        with Execd(env={"JUPYTER_PATH": top}) as d:
            c = new_context(d, "stuck")
            st, evs = run_code(d, "anything", id=c["id"],
                               timeout=RUN_BOUND)
            err = error_of(evs)
            assert "did not print its end marker within 2 s" in \
                err["evalue"], err
            # Its REPL went with it.
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                r = subprocess.run(["pgrep", "-f", "^sleep 4321$"],
                                   capture_output=True)
                if r.returncode != 0:
                    break
                time.sleep(0.2)
            assert r.returncode != 0, "the REPL was left running"
    finally:
        shutil.rmtree(top, ignore_errors=True)
