"""execd-repl-kernel with a REPL that is not Java: SQLite's shell, with
the description docs/kernels.md gives, to show the description is
general.  sqlite3 comes from scripts/deps.sh."""
import json
import os
import shutil
import tempfile

import lib
from lib import Execd, new_context, run_code, texts

SQLITE = {
    "argv": ["sh", "-c", "exec sqlite3 -batch 2>&1"],
    "end": ".print {marker}",
    "errors": [
        {"prefix": "Parse error", "ename": "SQLError", "continue": "  "},
        {"prefix": "Runtime error", "ename": "SQLError", "continue": "  "},
    ],
    "language": "sql", "file_extension": ".sql",
}


def sqlite_daemon(top, repl):
    """An execd whose kernelspec "sql" is execd-repl-kernel on repl."""
    assert shutil.which("sqlite3"), "no sqlite3: run scripts/deps.sh"
    kbin = os.path.join(os.path.dirname(os.path.abspath(lib.EXECD)),
                        "execd-repl-kernel")
    os.makedirs(os.path.join(top, "kernels", "sql"))
    with open(os.path.join(top, "kernels", "sql", "kernel.json"),
              "w") as f:
        json.dump({"argv": [kbin, "{connection_file}", "{resource_dir}"],
                   "display_name": "SQLite", "language": "sql",
                   "interrupt_mode": "message",
                   "metadata": {"repl": repl}}, f)
    return Execd(env={"JUPYTER_PATH": top})


def test_sqlite_shell_as_a_kernel():
    top = tempfile.mkdtemp(prefix="execd-sql-")
    try:
        with sqlite_daemon(top, SQLITE) as d:
            c = new_context(d, "sql")
            st, evs = run_code(d, "create table t(x);\n"
                               "insert into t values (20), (22);", id=c["id"])
            assert not [e for e in evs if e["type"] == "error"], evs
            st, evs = run_code(d, "select sum(x) from t;", id=c["id"])
            assert texts(evs, "stdout") == "42\n", evs
            st, evs = run_code(d, "select nope from t;", id=c["id"])
            err = [e for e in evs if e["type"] == "error"][0]["error"]
            assert err["ename"] == "SQLError", err
            assert "no such column: nope" in err["evalue"], err
            st, evs = run_code(d, "select count(*) from t;", id=c["id"])
            assert texts(evs, "stdout") == "2\n", evs
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_a_run_ends_when_stderr_closed_before_its_marker():
    # end_stderr asks for the marker on stderr too; a REPL whose stderr
    # is closed cannot print it, and its runs must end all the same.
    repl = dict(SQLITE, argv=["sh", "-c", "exec sqlite3 -batch 2>&-"],
                end_stderr=True)
    top = tempfile.mkdtemp(prefix="execd-sql-")
    try:
        with sqlite_daemon(top, repl) as d:
            c = new_context(d, "sql")
            st, evs = run_code(d, "select 6 * 7;", id=c["id"], timeout=30)
            assert texts(evs, "stdout") == "42\n", evs
    finally:
        shutil.rmtree(top, ignore_errors=True)
