"""JavaScript and TypeScript code runs on real kernels (tslab, from npm).

tests/kernels/setup.sh installs the pinned tslab and writes the jslab and
tslab kernelspecs into build/jupyter; the daemons here find them through
JUPYTER_PATH, and Debian's python3 kernel as usual.

What tslab sends is not what ipykernel sends, and these tests pin it:
- the value of a last expression is printed with console.log: a stdout
  stream ("42\\n"), no execute_result, so no result or execution_count
  event;
- an exception or a type error is printed on stderr and the
  execute_reply says "error", but no iopub error message is sent: execd
  turns the failed reply into an error event (ename "Error");
- for 200 ms after a failed run tslab aborts (does not run) any code
  that reaches it: the tests wait that out before the next run;
- it binds "<transport>://<ip>:<port>" whatever the transport, which
  fits only tcp: execd's automatic transport gives it tcp (ipc is for
  ipykernel);
- interrupt is by signal: SIGINT breaks running code and tslab prints
  the error on stderr; an interrupt_request message is not known.
"""
import json
import os
import subprocess
import time

import lib
from lib import (EXECD, Execd, interrupted_run, kinds, new_context, run_code,
                 texts)

_specs = []
FAILED_RUN_SETTLE = 0.5     # tslab aborts runs for 200 ms after a failure


def jupyter_path():
    """Install tslab and write the kernelspecs, once per test process."""
    if not _specs:
        top = os.path.join(lib.ROOT, "build", "jupyter")
        r = subprocess.run(
            ["sh", os.path.join(lib.ROOT, "tests", "kernels", "setup.sh"),
             top], capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, "setup.sh failed (%d):\n%s%s" % (
            r.returncode, r.stdout, r.stderr[-4000:])
        _specs.append(top)
    return _specs[0]


def daemon(*args):
    return Execd(*args, env={"JUPYTER_PATH": jupyter_path()})


def of_type(evs, kind):
    return [e for e in evs if e["type"] == kind]


def test_kernels_lists_jslab_and_tslab():
    top = jupyter_path()
    env = dict(os.environ, JUPYTER_PATH=top)
    r = subprocess.run([EXECD, "--kernels"], capture_output=True,
                       text=True, timeout=10, env=env)
    assert r.returncode == 0, r
    rows = {line.split()[0]: line.split()[1:]
            for line in r.stdout.splitlines() if line.strip()}
    assert rows["jslab"] == ["javascript",
                             os.path.join(top, "kernels", "jslab")], rows
    assert rows["tslab"] == ["typescript",
                             os.path.join(top, "kernels", "tslab")], rows
    for name in ("jslab", "tslab"):
        with open(os.path.join(top, "kernels", name, "kernel.json")) as f:
            spec = json.load(f)
        assert os.path.isabs(spec["argv"][0]), spec
        assert os.path.isfile(spec["argv"][1]), spec
        assert spec["argv"][2:5] == ["kernel", "--config-path",
                                     "{connection_file}"], spec
        assert (spec["argv"][5:] == ["--js"]) == (name == "jslab"), spec


def test_javascript_state_output_and_values():
    with daemon() as d:
        c = new_context(d, "javascript")
        assert c["language"] == "javascript", c
        st, evs = run_code(d, "let x = 41", id=c["id"])
        assert st == 200, evs
        assert evs[0]["type"] == "init" and evs[0]["text"] == c["id"]
        assert kinds(evs) == ["init", "execution_complete"], evs
        # The last expression's value comes as console.log output.
        st, evs = run_code(d, "x + 1", id=c["id"])
        assert kinds(evs) == ["init", "stdout", "execution_complete"], evs
        assert texts(evs, "stdout") == "42\n", evs
        assert of_type(evs, "result") == [], evs
        st, evs = run_code(d, 'console.log("hi")', id=c["id"])
        assert texts(evs, "stdout") == "hi\n", evs
        assert texts(evs, "stderr") == "", evs
        st, evs = run_code(d, '({a: 1, b: [1, 2]})', id=c["id"])
        assert texts(evs, "stdout") == "{ a: 1, b: [ 1, 2 ] }\n", evs
        st, evs = run_code(d, '"s"', id=c["id"])
        assert texts(evs, "stdout") == "s\n", evs
        st, evs = run_code(d, "await new Promise(r => setTimeout("
                           "() => r(x * 2), 50))", id=c["id"])
        assert texts(evs, "stdout") == "82\n", evs


def test_javascript_exception_is_printed_on_stderr():
    with daemon() as d:
        c = new_context(d, "javascript")
        run_code(d, "let kept = 'yes'", id=c["id"])
        st, evs = run_code(d, 'throw new Error("boom")', id=c["id"])
        assert st == 200, evs
        err = texts(evs, "stderr")
        assert "\nError: boom\n    at evalmachine.<anonymous>:" in err, evs
        # tslab replies status "error" but sends no iopub error message:
        # the error event comes from the reply.
        errs = [e["error"] for e in of_type(evs, "error")]
        assert [e["ename"] for e in errs] == ["Error"], evs
        assert kinds(evs)[-3:] == ["status", "error",
                                   "execution_complete"], evs
        assert kinds(evs)[-1] == "execution_complete", evs
        time.sleep(FAILED_RUN_SETTLE)
        st, evs = run_code(d, "kept", id=c["id"])
        assert texts(evs, "stdout") == "yes\n", evs


def test_typescript_types_checked_and_values():
    with daemon() as d:
        c = new_context(d, "typescript")
        st, evs = run_code(d, "const n: number = 5; n * 2", id=c["id"])
        assert kinds(evs) == ["init", "stdout", "execution_complete"], evs
        assert texts(evs, "stdout") == "10\n", evs
        st, evs = run_code(d, "const s: string = n", id=c["id"])
        assert texts(evs, "stderr") == (
            "1:7 - Type 'number' is not assignable to type 'string'.\n"), evs
        assert texts(evs, "stdout") == "", evs
        assert len(of_type(evs, "error")) == 1, evs
        time.sleep(FAILED_RUN_SETTLE)
        # Node's typings are found: console and process type-check.
        st, evs = run_code(d, "console.log(typeof process.pid, n)",
                           id=c["id"])
        assert texts(evs, "stdout") == "number 5\n", evs
        assert texts(evs, "stderr") == "", evs


def test_python_and_javascript_side_by_side():
    with daemon() as d:
        py = new_context(d, "python")
        js = new_context(d, "javascript")
        run_code(d, "v = 'py'", id=py["id"])
        run_code(d, "const v = 'js'", id=js["id"])
        st, evs = run_code(d, "print(v)", id=py["id"])
        assert texts(evs, "stdout") == "py\n", evs
        st, evs = run_code(d, "v", id=js["id"])
        assert texts(evs, "stdout") == "js\n", evs
        # Default contexts by language, next to the explicit ones.
        st, evs = run_code(d, "console.log(1 + 1)", language="javascript")
        assert texts(evs, "stdout") == "2\n", evs
        st, evs = run_code(d, "6 * 7", language="python")
        assert of_type(evs, "result")[0]["results"] == {"text": "42"}, evs
        st, lst = d.get_json("/code/contexts?language=javascript")
        assert len(lst) == 2 and js["id"] in {c["id"] for c in lst}, lst
        st, lst = d.get_json("/code/contexts")
        assert {c["language"] for c in lst} == {"python", "javascript"}


def test_javascript_interrupt_breaks_a_busy_loop():
    with daemon() as d:
        c = new_context(d, "javascript")
        run_code(d, "let before = 1", id=c["id"])
        evs = interrupted_run(d, c["id"], "while (true) {}")
        assert "Script execution was interrupted by `SIGINT`" in texts(
            evs, "stderr"), evs
        assert kinds(evs)[-1] == "execution_complete", evs
        time.sleep(FAILED_RUN_SETTLE)
        st, evs = run_code(d, "before", id=c["id"])
        assert texts(evs, "stdout") == "1\n", evs
