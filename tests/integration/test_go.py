"""Go contexts through execd-repl-kernel in its "program" mode on yaegi.

The kernelspec is repl/kernels/go/kernel.json, installed for each test in
a directory of its own on JUPYTER_PATH with its argv[0] pointed at the
execd-repl-kernel built next to the execd under test.  The scenarios are
those upstream's Go end-to-end tests check, with gonb's semantics, in our
words: a cell with `package main` and `func main` runs main; main and
other functions may be declared again, replacing the old ones;
declarations without a main are kept for later cells; compile errors and
panics are error events with the interpreter's message; output comes as
it is printed; an endless loop is interrupted and the context runs on;
code that is not UTF-8; 100 MB of output cut as every run's.  yaegi comes
from scripts/deps.sh.
"""
import json
import os
import shutil
import subprocess
import tempfile

import lib
from lib import (Execd, ReplContext, error_of, install_repl_kernel,
                 interrupted_run, new_context, of_type, run_code, texts)

RUN_BOUND = 120      # seconds in which a run must end, even under ASan


def install(top, name="go", repl=None):
    """The tree's go kernelspec under top/kernels/name (lib.py)."""
    install_repl_kernel(top, "go", name, repl)


class Go(ReplContext):
    """An execd with the go kernelspec installed, and one context; each
    run must end with execution_complete."""

    def __init__(self):
        super().__init__("go", "yaegi", RUN_BOUND)

    def run(self, code):
        evs = super().run(code)
        assert evs[-1]["type"] == "execution_complete", evs[-3:]
        return evs


def test_go_main_runs_and_is_redefined_declarations_kept():
    with Go() as g:
        evs = g.run('package main\n\nimport "fmt"\n\n'
                    'func main() {\n\tfmt.Println("Hello from Go!")\n'
                    '\tfor i := 0; i < 3; i++ {\n\t\tfmt.Printf("%d;", i)\n'
                    '\t}\n}\n')
        assert texts(evs, "stdout") == "Hello from Go!\n0;1;2;", evs
        assert not of_type(evs, "error"), evs

        # A main declared again replaces the first; the import is kept.
        evs = g.run('package main\n\nfunc main() {\n'
                    '\tfmt.Println("second main")\n}\n')
        assert texts(evs, "stdout") == "second main\n", evs

        # Declarations without a main are kept and run nothing.
        evs = g.run('import "strings"\n\n'
                    'type Point struct{ X, Y int }\n\n'
                    'func (p Point) Sum() int { return p.X + p.Y }\n\n'
                    'const (\n\tOne = iota + 1\n\tTwo\n)\n\n'
                    'func shout(s string) string {\n'
                    '\treturn strings.ToUpper(s) + "!"\n}\n')
        assert texts(evs, "stdout") == "", evs
        assert not of_type(evs, "error"), evs
        # Plain statements run as a main, with what was kept.
        evs = g.run('p := Point{One, Two}\n'
                    'fmt.Println(p.Sum(), shout("go"))')
        assert texts(evs, "stdout") == "3 GO!\n", evs
        # A function declared again replaces the old one.
        g.run('func shout(s string) string { return s + "?" }')
        evs = g.run('func main() { fmt.Println(shout("go")) }')
        assert texts(evs, "stdout") == "go?\n", evs
        # Globals start afresh at each run (the program runs again).
        g.run("var counter int")
        for _ in range(2):
            evs = g.run("counter++\nfmt.Println(counter)")
            assert texts(evs, "stdout") == "1\n", evs
        # stderr is its own stream.
        evs = g.run('import "os"\nfmt.Fprintln(os.Stderr, "to stderr")')
        assert texts(evs, "stderr") == "to stderr\n", evs
        assert texts(evs, "stdout") == "", evs


def test_go_compile_errors_and_panics_are_errors():
    with Go() as g:
        g.run('import "fmt"\nfunc twice(n int) int { return 2 * n }')
        evs = g.run("func main() {\n\tfmt.Println(undefinedVar)\n}")
        err = error_of(evs)
        assert err["ename"] == "CompilationError", err
        assert "undefined: undefinedVar" in err["evalue"], err
        assert texts(evs, "stdout") == "", evs

        # A cell that does not compile keeps none of its declarations.
        evs = g.run('func broken() int { return "text" }\n'
                    'func helper() int { return 1 }')
        assert error_of(evs)["ename"] == "CompilationError", evs
        evs = g.run("fmt.Println(helper())")
        err = error_of(evs)
        assert err["ename"] == "CompilationError", err
        assert "helper" in err["evalue"], err
        # What was kept before still works.
        evs = g.run("fmt.Println(twice(21))")
        assert texts(evs, "stdout") == "42\n", evs

        # A panic: output before it arrives, then the panic's message.
        evs = g.run('fmt.Println("before")\npanic("something broke")')
        assert texts(evs, "stdout") == "before\n", evs
        err = error_of(evs)
        assert err["ename"] == "Panic", err
        assert "something broke" in err["evalue"], err
        # yaegi's stack dump is the traceback; stderr has the positions.
        assert any("goroutine" in t for t in err["traceback"]), err
        assert "goroutine" not in texts(evs, "stderr"), evs
        assert "main.go:" in texts(evs, "stderr"), evs
        evs = g.run("var s []int\nfmt.Println(s[3])")
        err = error_of(evs)
        assert err["ename"] == "Panic", err
        assert "index out of range" in err["evalue"], err
        # yaegi's os.Exit panics rather than exit.
        evs = g.run('import "os"\nos.Exit(3)')
        err = error_of(evs)
        assert err["ename"] == "Panic", err
        assert "os.Exit(3)" in err["evalue"], err

        # An unclosed bracket is refused before anything runs.
        evs = g.run("func f() {\n\tfmt.Println(1)\n")
        err = error_of(evs)
        assert err["ename"] == "CompilationError", err
        assert "incomplete" in err["evalue"], err
        evs = g.run("fmt.Println(twice(2))")
        assert texts(evs, "stdout") == "4\n", evs


def test_go_output_comes_as_printed():
    with Go() as g:
        # The program prints, then waits for a file that the test makes
        # only once that output has arrived: a run that held its output
        # until its end would wait its whole minute and fail.
        gate = os.path.join(g.top, "gate")
        code = ('import ("fmt"; "os"; "time")\n'
                'fmt.Println("first")\n'
                'ok := false\n'
                'for i := 0; i < 600 && !ok; i++ {\n'
                '\tif _, err := os.Stat(%s); err == nil {\n'
                '\t\tok = true\n\t}\n'
                '\ttime.Sleep(100 * time.Millisecond)\n}\n'
                'fmt.Println("second", ok)' % json.dumps(gate))
        c = g.d.conn(RUN_BOUND)
        c.request("POST", "/code", body=json.dumps(
            {"code": code, "context": {"id": g.ctx["id"]}}),
            headers={"Content-Type": "application/json"})
        r = c.getresponse()
        assert r.status == 200
        seen = []
        while True:
            line = r.readline()
            assert line, ("the stream ended early", seen)
            if line.strip():
                seen.append(json.loads(line))
                if texts(seen, "stdout") == "first\n":
                    break
        open(gate, "w").close()
        rest = lib.events(r.read())
        c.close()
        assert texts(rest, "stdout") == "second true\n", rest
        assert rest[-1]["type"] == "execution_complete", rest


def test_go_interrupt_stops_an_endless_loop_and_the_context_runs_on():
    with Go() as g:
        g.run('import "fmt"\nfunc greet() string { return "still here" }')
        evs = interrupted_run(g.d, g.ctx["id"],
                              'fmt.Println("looping")\nn := 0\n'
                              'for {\n\tn++\n}', after=2.0)
        err = error_of(evs)
        assert err["ename"] == "KeyboardInterrupt", evs
        assert texts(evs, "stdout") == "looping\n", evs
        evs = g.run("fmt.Println(greet())")
        assert texts(evs, "stdout") == "still here\n", evs
        # An interrupt at once: the run ends all the same.
        evs = interrupted_run(g.d, g.ctx["id"], "for {\n}", after=0.0)
        assert error_of(evs)["ename"] == "KeyboardInterrupt", evs
        evs = g.run("fmt.Println(greet())")
        assert texts(evs, "stdout") == "still here\n", evs


def test_go_code_not_utf8_and_huge_output():
    with Go() as g:
        # Text beyond ASCII passes both ways.
        evs = g.run('import "fmt"\nfmt.Println("h\u00e9llo, \u4e16\u754c")')
        assert texts(evs, "stdout") == "h\u00e9llo, \u4e16\u754c\n", evs
        # Code that is not UTF-8 (a lone surrogate escape in the JSON, or
        # raw bytes) is refused whole, and the context runs on.
        body = ('{"code": "fmt.Println(\\"a\\ud800b\\")",'
                ' "context": {"id": "%s"}}' % g.ctx["id"])
        st, h, data = g.d.request("POST", "/code", body=body,
                                  headers={"Content-Type":
                                           "application/json"},
                                  timeout=RUN_BOUND)
        assert st == 400, (st, data)
        # Raw bytes that are not UTF-8 in the body are refused whole.
        body = (b'{"code": "fmt.Println(\\"\xff\xfe\\")", "context": '
                b'{"id": "' + g.ctx["id"].encode() + b'"}}')
        st, h, data = g.d.request("POST", "/code", body=body,
                                  headers={"Content-Type":
                                           "application/json"},
                                  timeout=RUN_BOUND)
        assert 400 <= st < 500, (st, data)
        evs = g.run('fmt.Println("fine")')
        assert texts(evs, "stdout") == "fine\n", evs

        # 100 MB of output: cut as every run's (--max-output 16M: the
        # first and the last 8 MiB, a stderr note of what was dropped).
        lines, size = 100000, 1000
        evs = g.run('import "strings"\nfill := strings.Repeat("y", %d)\n'
                    'for i := 0; i < %d; i++ {\n'
                    '\tfmt.Printf("%%09d%%s\\n", i, fill)\n}'
                    % (size - 10, lines))
        marks = [i for i, e in enumerate(evs) if e["type"] == "stderr"]
        assert len(marks) == 1, [evs[i]["text"][:300] for i in marks]
        assert "bytes dropped" in evs[marks[0]]["text"], evs[marks[0]]
        head = texts(evs[:marks[0]], "stdout")
        tail = texts(evs[marks[0]:], "stdout")
        line = "y" * (size - 10) + "\n"
        assert head.startswith("000000000" + line + "000000001"), head[:20]
        assert tail.endswith("%09d" % (lines - 1) + line), tail[-20:]
        assert not of_type(evs, "error"), [e for e in evs
                                           if e["type"] == "error"]


def test_go_missing_interpreter_fails_clearly():
    top = tempfile.mkdtemp(prefix="execd-go-")
    try:
        install(top, "nogo", {"argv": ["no-such-yaegi-here", "run",
                                       "{file}"]})
        with Execd(env={"JUPYTER_PATH": top}) as d:
            st, h, body = d.request("POST", "/code/context",
                                    body={"language": "nogo"},
                                    timeout=90)
            # The kernel exits at its start, saying why.
            assert st == 500, (st, body)
            assert "no-such-yaegi-here: not found on PATH" in \
                body.decode(), body
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_program_mode_whole_file_exit_status_and_leftovers():
    # The same mode with each cell a whole shell script: a non-zero exit
    # is an ExitError, and what the program left running is ended with
    # it (yaegi cannot start processes, sh can).
    top = tempfile.mkdtemp(prefix="execd-go-")
    try:
        install(top, "shprog", {"program": "whole", "argv": ["sh", "{file}"],
                                "errors": [], "language": "sh",
                                "file_extension": ".sh"})
        with Execd(env={"JUPYTER_PATH": top}) as d:
            c = new_context(d, "shprog")
            st, evs = run_code(d, "echo one; exit 3", id=c["id"],
                               timeout=RUN_BOUND)
            assert texts(evs, "stdout") == "one\n", evs
            err = error_of(evs)
            assert err["ename"] == "ExitError", err
            assert "status 3" in err["evalue"], err
            st, evs = run_code(d, "sleep 4322 &\necho started",
                               id=c["id"], timeout=RUN_BOUND)
            assert texts(evs, "stdout") == "started\n", evs
            assert not of_type(evs, "error"), evs
            assert lib.wait_for(lambda: not any(
                _cmdline(p) == b"sleep\x004322\x00"
                for p in os.listdir("/proc") if p.isdigit()), timeout=10), \
                "the program's child was left running"
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _cmdline(pid):
    try:
        with open("/proc/%s/cmdline" % pid, "rb") as f:
            return f.read()
    except OSError:
        return b""


def test_execd_kernels_lists_go():
    top = tempfile.mkdtemp(prefix="execd-go-")
    try:
        install(top)
        out = subprocess.run([lib.EXECD, "--kernels"], capture_output=True,
                             env=dict(os.environ, JUPYTER_PATH=top),
                             timeout=30, check=True).stdout.decode()
        rows = [line.split() for line in out.splitlines()]
        assert ["go", "go", os.path.join(top, "kernels", "go")] in rows, out
    finally:
        shutil.rmtree(top, ignore_errors=True)
